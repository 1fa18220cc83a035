"""The risk scan of a large text builds no Python object per token, word or line (issue 12, the soak).

``kbwatch watch`` scans every text document in its main process. A 0.5–2 MB text used to make the
scanners build lists of hundreds of thousands of small objects (a one-character ``str`` and a float
and an int per Han-character token for the Chinese injection model, an int per candidate word
position, a string per word), all alive at once; among the service's long-lived allocations they
left its heap at the high-water mark of each burst of larger documents. These tests bound what the
scan of one large text allocates at its peak (Python-traced, ``tracemalloc``), in a fresh
interpreter; the previous code peaked at 53.9 MB (Chinese, 300,000 characters) and 6.4 MB
(English, 600,000 characters), and at 20.7 MB on Chinese text with spaces between its words, whose
normalised view had an offset map of one int object per character. They also check the bounded paths give what the plain ones give.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap

from conftest import REPO

ZH = ["根据公司规定，所有员工必须在每月五日前提交报销单据。", "本季度销售额同比增长百分之十二，主要来自华东地区。",
      "会议纪要：讨论了新产品的上市时间和市场推广计划。", "请各部门负责人于周五下午三点参加项目评审会议。",
      "服务器维护将在本周六凌晨进行，届时系统暂停服务。", "合同条款第七条规定了双方的违约责任和赔偿方式。"]
EN = ["The quarterly report shows revenue grew by twelve percent in the eastern region.",
      "Please submit your expense claims before the fifth day of each month.",
      "The maintenance window for the database servers is Saturday night.",
      "Meeting notes: we discussed the launch date and the marketing plan for the new product.",
      "Each department lead should attend the project review on Friday afternoon."]

_SCRIPT = textwrap.dedent("""
    import gc, json, random, sys, tempfile, tracemalloc
    from pathlib import Path
    from loguru import logger
    logger.remove()
    from kbwatch.pipeline.config import load_settings
    from kbwatch.pipeline.model import ParsedDocument
    from kbwatch.pipeline.plugins import build_plugin_manager
    from kbwatch.plugins.scan import run_scanners

    ZH, EN = json.loads(sys.argv[1])

    def text(pool, chars, sep):
        rng = random.Random(1)
        out, n = ["# t\\n\\n"], 0
        while n < chars:
            line = sep.join(rng.choice(pool) for _ in range(rng.randint(1, 4))) + "\\n"
            out.append(line)
            n += len(line)
        return "".join(out)

    settings = load_settings(Path(tempfile.mkdtemp()))
    plugins = build_plugin_manager(settings)
    run_scanners(plugins, ParsedDocument(markdown=text(ZH, 3000, "") + text(EN, 3000, " ")), settings)  # loads
    peaks = {}
    spaced = [s[i:i + 6] for s in ZH for i in range(0, len(s) - 6, 6)]  # 会议纪要：讨 论了新产品的 ...
    for name, pool, chars, sep in (("zh", ZH, 300_000, ""), ("en", EN, 600_000, " "), ("zh-spaced", spaced, 300_000, " ")):
        doc = ParsedDocument(markdown=text(pool, chars, sep))
        gc.collect()
        tracemalloc.start()
        before, _ = tracemalloc.get_traced_memory()
        run_scanners(plugins, doc, settings)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        peaks[name] = (peak - before) / 2**20
    print(json.dumps(peaks))
""")


def test_scanning_a_large_text_builds_no_object_per_token_or_word():
    out = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps([ZH, EN])], capture_output=True, text=True,
                         cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    peaks = json.loads(out.stdout.strip().splitlines()[-1])
    # this code: ~8.6, ~2.9 and ~11.6 MB (the text's normalised views, a few arrays); before: 53.9 and 6.4 MB,
    # and 20.7 MB for the spaced Chinese text while the view's offset map was a list of ints (an int
    # object per character of a text whose view was rewritten: the gaps between Han characters removed)
    assert peaks["zh"] <= 20, peaks
    assert peaks["en"] <= 4.5, peaks
    assert peaks["zh-spaced"] <= 15, peaks


def test_the_injection_model_scores_the_same_windows_as_a_plain_loop():
    from kbwatch.plugins.scanning import injection_model as IM

    rng = random.Random(3)
    for model in (IM.load(), IM.load_zh()):
        if model is None:
            continue
        vocab = sorted(model.weights)[:400] + ["zzzunknown", "ai", "assistant", "prompt"]
        toks = [rng.choice(vocab) for _ in range(3000)]
        toks = [t for tok in toks for t in tok.split(" ")]
        # the score of each window computed directly from the list of per-token weights
        w = model.token_weights(toks)
        pre = [0.0]
        for x in w:
            pre.append(pre[-1] + x)
        got = model.scores(toks, open_at=[5, 900])
        assert got and all(e > s for s, e, _ in got)
        for s, e, p in got:
            z = model.bias + (pre[e] - pre[s]) / (e - s) ** 0.5
            want = 1.0 / (1.0 + 2.718281828459045 ** -z) if z > -30 else 0.0
            assert abs(p - want) < 1e-9 or p == 0.0


def test_longest_token_in_pieces_is_the_plain_split():
    from kbwatch.plugins.scanning.decoders import longest_token

    rng = random.Random(5)
    spaces = [" ", "\n", "\t", "\u3000", "\u2028", "\x1c", "\x85", "\xa0"]
    for size in (10, 70_000, 200_000):
        parts, n = [], 0
        while n < size:
            tok = "x" * rng.choice([1, 5, 50, 3, 70_000 if rng.random() < 0.01 else 2])
            parts += [tok, rng.choice(spaces) * rng.randint(1, 3)]
            n += len(tok) + 1
        text = "".join(parts)
        assert longest_token(text) == max(map(len, text.split()), default=0)
