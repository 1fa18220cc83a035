"""Build ``plugins/scanning/data/zh-homophones.json``: for the Chinese words an injection is made
of (忽略, 指令, 系统, 提示词 …), every character that reads the same without tones.

Attackers write 胡略上面的只令 or 洗统提屎词 so that a keyword filter misses 忽略…指令 and 系统提示词;
the scanner reads such a run back as the word it sounds like (``plugins/scanning/homophones.py``).
The readings come from pypinyin's dictionary (MIT, https://github.com/mozillazg/python-pinyin),
needed only to rebuild this file: ``pip install pypinyin && python bench/build_zh_homophones.py``.
"""

from __future__ import annotations

import json
import unicodedata
from collections import defaultdict
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "plugins" / "scanning" / "data" / "zh-homophones.json"

# the words whose sound-alikes are read back (two characters or more: one character alone is too weak)
# acts and the targets they are aimed at; a text is read back only where a disguised act meets a
# disguised or plain target (道德 and 越狱 are left out: 到的 and 粤语 sound the same and are common)
ACTS = ["忽略", "忽视", "无视", "输出", "泄露", "拒绝", "删除"]
TARGETS = ["指令", "指示", "命令", "规则", "系统", "提示", "提示词", "设定", "限制", "密码", "权限", "规定", "约束"]
WORDS = ACTS + TARGETS


def _toneless(reading: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", reading) if not unicodedata.combining(c)).replace("ü", "v")


def main() -> int:
    from pypinyin.pinyin_dict import pinyin_dict  # build time only
    by_sound: dict[str, set[str]] = defaultdict(set)
    for cp, readings in pinyin_dict.items():
        ch = chr(cp)
        if "\u4e00" <= ch <= "\u9fff":
            # each character by its first (common) reading only: 和 is he, not hu; 是 is shi, not ti
            by_sound[_toneless(readings.split(",")[0])].add(ch)
    chars = {}
    for w in WORDS:
        for ch in w:
            if ch not in chars:
                # the word's own reading (its first, the common one: 提 is ti here, not di), and every
                # character that can be read so
                primary = _toneless(pinyin_dict[ord(ch)].split(",")[0])
                chars[ch] = "".join(sorted(by_sound[primary]))
    OUT.write_text(json.dumps({"source": "pypinyin pinyin_dict (MIT), first reading, toneless", "acts": ACTS,
                               "targets": TARGETS, "chars": chars},
                              ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(WORDS)} words, {len(chars)} characters, {sum(len(v) for v in chars.values())} sound-alikes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
