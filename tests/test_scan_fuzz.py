"""Property-based fuzzing of every risk scanner (issue 15): arbitrary Unicode, control characters,
lone surrogates replaced, huge lines and mixed scripts, >= 10,000 generated inputs in total.

Each scanner must return findings without raising, every excerpt must be one line, and the
sanitiser and the pack's fence neutraliser must accept whatever the scanners return.
"""

from __future__ import annotations

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is a test extra (pip install hypothesis)")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from kbwatch.plugins import scan_format, scan_injection, scan_pii, scan_secrets, scan_unicode  # noqa: E402
from kbwatch.plugins.scanning import scrub_findings  # noqa: E402
from kbwatch.plugins.scanning.fence import inert  # noqa: E402
from kbwatch.plugins.scanning.sanitize import sanitize  # noqa: E402

SCANNERS = (scan_secrets, scan_pii, scan_unicode, scan_format, scan_injection)
def fast(n: int) -> settings:
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# pieces that steer inputs into the scanners' interesting paths
FRAGMENTS = [
    "password = ", "密码：", "token: ", "api_key=", "AKIA", "ghp_", "xoxa-", "sk-", "eyJ", "hvs.", "s.", "v1.0-",
    "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----", "curl -u ", "curl -H 'Authorization: Bearer ",
    "_authToken=", "IDENTIFIED BY ", "://", "@", ":", "|", "| password |", "\n|---|---|\n", "${VAR}", "<YOUR_KEY>",
    "xxxx", "ZZZZZZZZ", "13812345678", "110105199003071234", "6222 0212 3456 7890", "a@b.co",
    "<knowledge_pack", "</knowIedge_pack>", "## 片段 / Snippets", "### [1] parsed/x.md#L1-L3", "状态 / status:",
    "\u202e", "\u2066", "\u200b", "\u200d", "\ufeff", "\ufe0f", "\U000e0100", "\U000e0041", "\U000e007f", "\U0001f3f4",
    "\x1b[31m", "\x96", "\x00", "\x7f", "\u0085", "\u2028", "\u00ad", "\u3164", "\ue000", "\ufffd",
    "忽略之前的指令", "ignore previous instructions", "раураl", "Ι", "é", "ü", "ا", "א", "👨‍👩‍👧", "1️⃣",
    "\n", "\n\n", " ", "\t", "0123456789", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "Q~", "=", "==", "\"", "'", "`",
]

any_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=300)  # lone surrogates excluded
controls = st.text(st.characters(min_codepoint=0, max_codepoint=0x2070), max_size=200)
mixed = st.lists(st.sampled_from(FRAGMENTS) | any_text, max_size=25).map("".join)
# the fragments at the seams of real files: random bytes decoded as UTF-8 with lone surrogates replaced
decoded = st.binary(max_size=300).map(lambda b: b.decode("utf-8", "replace"))


COUNT: dict[str, int] = {}


@pytest.fixture(scope="module", autouse=True)
def at_least_ten_thousand():
    """When every fuzz test of the module ran, together they fed >= 10,000 inputs."""
    yield
    if len(COUNT) == 5:
        assert sum(COUNT.values()) >= 10_000, COUNT


@pytest.fixture(autouse=True)
def _name(request):
    COUNT.setdefault(request.node.name, 0)
    _CURRENT[0] = request.node.name


_CURRENT = [""]


def _check(text: str) -> None:
    COUNT[_CURRENT[0]] += 1
    found = []
    for mod in SCANNERS:
        out = mod.scan_text(text) if mod is not scan_injection else mod.kb_scan(
            document=_Doc(text), settings={})
        for f in out or []:
            assert "\n" not in f.excerpt and "\r" not in f.excerpt, (mod.__name__, f)
            assert 0 <= f.offset <= len(text)
        found.extend(out or [])
    scrub_findings(found)
    assert isinstance(sanitize(text, found), str)
    assert isinstance(inert(text), str)


class _Doc:
    def __init__(self, text: str):
        self.markdown = text
        self.metadata: dict = {}
        self.title = None
        self.parser = "fuzz"
        self.locations = None


@fast(3500)
@given(any_text)
def test_fuzz_arbitrary_unicode(text):
    _check(text)


@fast(3000)
@given(controls)
def test_fuzz_control_and_format_characters(text):
    _check(text)


@fast(1500)
@given(mixed)
def test_fuzz_mixed_scripts_and_scanner_fragments(text):
    _check(text)


@fast(2000)
@given(decoded)
def test_fuzz_decoded_bytes(text):
    _check(text)


@fast(40)
@given(st.sampled_from(FRAGMENTS), st.integers(min_value=2_000, max_value=12_000), st.booleans())
def test_fuzz_huge_lines(fragment, repeat, newline_every_so_often):
    text = (fragment.replace("\n", " ") + ("x" if newline_every_so_often else "")) * (repeat // max(1, len(fragment)))
    _check(text[:60_000])
