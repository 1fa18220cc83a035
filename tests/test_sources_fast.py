"""``is_ignored`` (one regex for all patterns), ``name_problem`` (one search) and ``walk_sources``'
relative paths (string prefixes) give what the forms they replace gave."""

from __future__ import annotations

import fnmatch
import os
import random
import string

from kbwatch.pipeline.config import load_defaults
from kbwatch.pipeline.sources import is_ignored, name_problem, walk_sources


def test_is_ignored_and_name_problem_match_the_plain_forms():
    patterns = load_defaults()["ignore"]["patterns"]
    rng = random.Random(12)
    alphabet = string.ascii_letters + "~$.#*?[]-_ \n\t\x7f\x01中é"
    names = ["~$a.docx", ".~lock.x#", "a.tmp", "b.part", "Thumbs.db", "desktop.ini", "x.md", "a.TMP", "@eaDir", "a~"]
    names += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(20_000)]
    for extra in ([], ["*"], ["[a-c]*.md", "x?y", "[!z]*"]):
        for ps in (patterns, patterns + extra, extra):
            for n in names:
                assert is_ignored(n, ps) == (n.startswith(".") or any(fnmatch.fnmatchcase(n, p) for p in ps)), (n, ps)
    for n in names:
        plain = any(ord(c) < 32 or ord(c) == 127 for c in n)
        assert (name_problem(n) is not None) == plain, n


def test_walk_sources_relative_paths(tmp_path):
    src = tmp_path / "p" / "sources"
    for rel in ("a.md", "sub/b.md", "sub/deeper/c d.md", "中文/文件.md", "sub/.hidden", "x.tmp", "sub/deeper/~$lock.docx"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("x", encoding="utf-8")
    os.symlink(src / "a.md", src / "sub" / "link.md")
    got = walk_sources(tmp_path / "p", load_defaults()["ignore"]["patterns"])
    assert [e.rel for e in got] == sorted(["a.md", "sub/b.md", "sub/deeper/c d.md", "中文/文件.md", "sub/link.md"])
    for e in got:
        assert e.rel == e.path.relative_to(src).as_posix()
    assert [e.rel for e in got if e.refused] == ["sub/link.md"]
