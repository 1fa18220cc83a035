"""Seed 003's ``shouldUseKnowledgeBase`` (§5.3): whether a message is a question for the knowledge base.

A blacklist: searching is the default; slash commands, messages under 3
characters, greetings and questions about the assistant itself are skipped;
an explicit ``[[...]]`` reference always searches. Used by
``Knowledge.query(auto=True)``, ``kbwatch ask --auto`` and the MCP tool.
"""

from __future__ import annotations

import re

# seed 003 §5.3: greetings (exact, punctuation ignored) and questions about the assistant itself
GREETINGS = {"你好", "您好", "hi", "hello", "hey", "在吗", "谢谢", "多谢", "thanks", "thankyou", "thx", "ok", "okay",
             "好的", "嗯", "bye", "再见"}
META_PHRASES = ("当前模型", "模型是什么", "怎么设置", "怎么用", "界面", "快捷键", "登录", "api key", "你是谁", "你是什么模型",
                "who are you", "what model are you", "which model are you", "what can you do", "are you an ai",
                "are you chatgpt", "are you claude")
_EXPLICIT_RE = re.compile(r"\[\[(?:[^\[\]\n]|\[(?!\[))+\]\]")  # linear: a reference ends at the next "[["
_PUNCT_RE = re.compile(r"[\s\W_]+", re.UNICODE)


def should_use_knowledge_base(message: str) -> tuple[bool, str]:
    """Seed 003's ``shouldUseKnowledgeBase`` (a blacklist; searching is the default).

    Returns (search?, reason). In order: a slash command is skipped; an explicit
    ``[[...]]`` reference always searches; fewer than 3 characters, a greeting,
    or a question about the assistant itself is skipped."""
    text = (message or "").strip()
    if text.startswith("/"):
        return False, "a slash command is not a question for the knowledge base"
    if _EXPLICIT_RE.search(text):
        return True, "explicit [[...]] reference"
    if len(text) < 3:
        return False, "fewer than 3 characters"
    if _PUNCT_RE.sub("", text).casefold() in GREETINGS:
        return False, "a greeting"
    low = text.casefold()
    for phrase in META_PHRASES:
        if phrase in low:
            return False, f"a question about the assistant itself ({phrase!r})"
    return True, "default: search"
