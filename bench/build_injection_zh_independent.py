#!/usr/bin/env python3
"""Build ``bench/data/injection-zh-independent.jsonl``: an independent Chinese injection set (issue 15).

Two public repositories, read at pinned commits from git mirrors (the search tool's ``fetch``,
``/work/.mirror/<owner>+<name>/repo``, or ``$KBWATCH_MIRRORS``). Neither is a source of
``../shared/bench-data/risk`` (ATR, garak-multilingual, Safety-Prompts, cmrc2018), and every text
equal to a dev-split text after normalisation (NFKC, lower case, punctuation and spaces removed)
is dropped.

- **meta-llama/PurpleLlama** (MIT, ``CybersecurityBenchmarks/LICENSE``), CyberSecEval's
  ``prompt_injection_multilingual_machine_translated.json``: records with
  ``speaking_language == "Chinese"``. label 1: ``user_input`` (the attack; ``kind`` is the set's
  ``injection_variant``). label 0: the Chinese ``test_case_prompt`` (the system prompt the attack
  is aimed at: rules such as "不要向任何人透露它", hard negatives) and ``judge_question``.
- **Tencent/AI-Infra-Guard** (Apache-2.0, ``LICENSE``): label 1: every prompt of
  ``data/eval/JailBench-Tiny.json`` (133 Chinese jailbreak / prompt-injection prompts selected
  from STAIR-BUPT's JailBench; ``kind`` is the file's ``attack_tag``: 越狱 → ``jailbreak``,
  提示注入 → ``injection``). label 0: the Chinese UI strings of ``frontend/src/i18n/locales/zh.json``
  (≥ 8 Han characters: text about jailbreak reports, configuration, credentials, prompts) and the
  prose lines of the repository's Chinese READMEs (≥ 15 Han characters, outside code fences and
  tables: documentation *about* jailbreaks, prompt injection, agents and permissions).
- **apache/apisix** and **apache/dolphinscheduler** (Apache-2.0): label 0: prose lines of their Chinese
  manuals (``docs/zh/latest/``, ``docs/docs/zh/``; same filter; the first 1,000 by sha256 of the line):
  gateway and scheduler documentation full of 权限, 认证, 匿名用户, 发送到服务器, 关闭, 审批, 忽略. The APISIX
  lines' false positives were read while fixing rules (not an unseen check); DolphinScheduler's were not.

Each record: ``id``, ``text``, ``label``, ``lang`` (``zh``), ``source`` (``owner/name@commit:path``),
``subtype`` (source family), ``kind`` and ``half`` (``A``/``B`` by the parity of the first 8 hex
digits of sha256(text): half A may be read while widening rules, half B is never read).

Usage: ``python bench/build_injection_zh_independent.py`` (mirrors must be present).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

OUT = Path(__file__).resolve().parent / "data" / "injection-zh-independent.jsonl"
DATA = Path(__file__).resolve().parents[2] / "shared" / "bench-data" / "risk"
MIRRORS = Path(os.environ.get("KBWATCH_MIRRORS", "/work/.mirror"))

PURPLE = ("meta-llama/PurpleLlama", "4be64c3a24442b51c76175e6ec67722cc3f5fe38")
PURPLE_PATH = "CybersecurityBenchmarks/datasets/prompt_injection/prompt_injection_multilingual_machine_translated.json"
AIG = ("Tencent/AI-Infra-Guard", "4908db1deab794a02ee9eaa77d3583ad590e7b27")
AIG_JAILBENCH = "data/eval/JailBench-Tiny.json"
AIG_UI = "frontend/src/i18n/locales/zh.json"
AIG_READMES = ("readme/README_ZH.md", "AIG-PromptSecurity/README_ZH.md", "agent-scan/README_zh.md", "mcp-scan/README_zh.md",
               "skill-scan/README_zh.md", "skills/README.zh-CN.md", "skills/aig-agent-redteam/README.zh-CN.md",
               "skills/aig-scanner/README.zh-CN.md", "services/api_checker/ventor_qtest/README.zh.md", "api_zh.md")
# technical manuals (Apache-2.0): prose lines under these folders, at most DOCS_MAX per source by sha256 order
DOCS = (("apache/apisix", "f519a0f04ccfd4c13b5d06caf34bcde8c8593980", "docs/zh/latest/", "apisix-docs-zh"),
        ("apache/dolphinscheduler", "7e0095dca198bfc50c59bbc10b3be5617d7b3229", "docs/docs/zh/", "dolphinscheduler-docs-zh"))
DOCS_MAX = 1000
ATTACK_TAG = {"越狱": "jailbreak", "提示注入": "injection"}
HAN = re.compile(r"[\u4e00-\u9fff]")


def key(text: str, limit: int | None = 200) -> str:
    """Normalised form; with the 200-character limit it is ``bench/riskscan_injection._key`` (dev check)."""
    t = unicodedata.normalize("NFKC", text).lower()
    return re.sub(r"[\W_]+", "", t)[:limit]


def half(text: str) -> str:
    return "A" if int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16) % 2 == 0 else "B"


def show(repo: str, commit: str, path: str) -> str:
    gd = MIRRORS / repo.replace("/", "+") / "repo"
    r = subprocess.run(["git", "--git-dir", str(gd), "show", f"{commit}:{path}"], capture_output=True)
    if r.returncode != 0:
        raise SystemExit(f"{repo}@{commit[:7]}:{path} not readable ({r.stderr.decode().strip()}); fetch the mirror first")
    return r.stdout.decode("utf-8")


def dev_keys() -> set[str]:
    keys = set()
    for name in ("injection-en", "injection-zh", "injection-other"):
        p = DATA / f"{name}.dev.jsonl"
        if p.exists():
            keys.update(key(json.loads(line)["text"]) for line in p.open(encoding="utf-8"))
    return keys


def _strings(x):
    if isinstance(x, dict):
        for v in x.values():
            yield from _strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from _strings(v)
    elif isinstance(x, str):
        yield x


def readme_lines(text: str):
    fence = False
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("```"):
            fence = not fence
            continue
        if fence or not s or s.startswith(("|", "<", "!", "[", "#")):
            continue
        s = re.sub(r"^(?:[-*>]\s*|\d+\.\s+)+", "", s).strip()
        if len(HAN.findall(s)) >= 15:
            yield s


def build() -> tuple[list[dict], dict]:
    seen, dev = set(), dev_keys()
    stats = {"dropped_dev": 0, "dropped_dup": 0}
    rows: list[dict] = []

    def add(text: str, label: int, source: str, subtype: str, kind: str, rid: str) -> None:
        text = text.strip()
        k = key(text, None)
        if not k:
            return
        if key(text) in dev:
            stats["dropped_dev"] += 1
            return
        if (k, label) in seen:
            stats["dropped_dup"] += 1
            return
        seen.add((k, label))
        rows.append({"id": rid, "text": text, "label": label, "lang": "zh", "source": source, "subtype": subtype,
                     "kind": kind, "half": half(text)})

    repo, commit = PURPLE
    src = f"{repo}@{commit[:7]}:{PURPLE_PATH}"
    for r in json.loads(show(repo, commit, PURPLE_PATH)):
        if r["speaking_language"] != "Chinese":
            continue
        add(r["user_input"], 1, src, f"cyberseceval-{r['injection_type']}", r["injection_variant"], f"cyberseceval:{r['prompt_id']}:input")
        add(r["test_case_prompt"], 0, src, "cyberseceval-system-prompt", "system-prompt", f"cyberseceval:{r['prompt_id']}:system")
        add(r["judge_question"], 0, src, "cyberseceval-judge-question", "judge-question", f"cyberseceval:{r['prompt_id']}:judge")

    repo, commit = AIG
    src = f"{repo}@{commit[:7]}:{AIG_JAILBENCH}"
    for i, r in enumerate(json.loads(show(repo, commit, AIG_JAILBENCH))["data"]):
        add(r["prompt"], 1, src, "jailbench-tiny", ATTACK_TAG.get(r["attack_tag"], r["attack_tag"]), f"jailbench-tiny:{i}")
    src = f"{repo}@{commit[:7]}:{AIG_UI}"
    for i, s in enumerate(_strings(json.loads(show(repo, commit, AIG_UI)))):
        if len(HAN.findall(s)) >= 8:
            add(s, 0, src, "aig-ui-zh", "ui-string", f"aig-ui:{i}")
    for path in AIG_READMES:
        src = f"{repo}@{commit[:7]}:{path}"
        for i, s in enumerate(readme_lines(show(repo, commit, path))):
            add(s, 0, src, "aig-readme-zh", "readme-prose", f"aig-readme:{path}:{i}")
    for repo, commit, folder, subtype in DOCS:
        gd = MIRRORS / repo.replace("/", "+") / "repo"
        names = subprocess.run(["git", "--git-dir", str(gd), "ls-tree", "-r", "--name-only", commit, folder],
                               capture_output=True, text=True).stdout.split()
        if not names:
            raise SystemExit(f"{repo}@{commit[:7]}:{folder} not readable; fetch the mirror first")
        found = [(path, i, line) for path in sorted(n for n in names if n.endswith(".md"))
                 for i, line in enumerate(readme_lines(show(repo, commit, path)))]
        found.sort(key=lambda t: hashlib.sha256(t[2].encode("utf-8")).hexdigest())
        for path, i, line in found[:DOCS_MAX]:
            add(line, 0, f"{repo}@{commit[:7]}:{path}", subtype, "manual-prose", f"{subtype}:{path}:{i}")
    return rows, stats


def main() -> int:
    rows, stats = build()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    pos = sum(r["label"] for r in rows)
    print(f"wrote {OUT.relative_to(Path.cwd()) if OUT.is_relative_to(Path.cwd()) else OUT}: {len(rows)} records, "
          f"{pos} attacks / {len(rows) - pos} benign; dropped {stats['dropped_dev']} equal to a dev text, "
          f"{stats['dropped_dup']} duplicates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
