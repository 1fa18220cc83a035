"""Unit tests for plugins/scanning/: normalisation fast paths and the offset map."""

import pytest

from kbwatch.plugins.scanning import mask_runs, normalize
from kbwatch.plugins.scanning.normalise import _slow_norm


@pytest.mark.parametrize("text", [
    "plain ascii Text",
    "全角ＡＢＣ１２３，中文。",                       # full-width, CJK punctuation (1:1 replacements)
    "ig\u200bnore pre\u00advious",                    # ignorables dropped (map needed)
    "the ﬁle ﬂow",                                    # ligatures expand to two letters
    "İstanbul ve Iğdır",                              # 'İ'.lower() is two characters
    "Ign\u043ere \u0430ll",                           # Cyrillic look-alikes folded
])
def test_normalize_matches_reference(text):
    v = normalize(text, despace=False)
    ref, ref_map = _slow_norm(text)
    assert v.text == ref
    for i in range(len(v.text)):
        s, e = v.span(i, i + 1)
        assert ref_map[i] == s and e == s + 1


def test_mask_runs_never_shows_seven_characters_of_a_run():
    key = "Zx9k" + "Lm2Q" + "wP7r" + "Tt5y"
    out = mask_runs(f"short words stay, {key} does not")
    assert "short words stay," in out and all(key[i:i + 7] not in out for i in range(len(key) - 6))
