"""The Chinese co-occurrence detector finds its words in one walk over the text (issue 12's
throughput, issue 15's detector): the walk must see, sentence by sentence, what a search of
each sentence alone sees. ``bench/scan_stage.py compare`` checks the whole scanner's findings
on 14,717 inputs; these tests hold the two conditions that make the walk exact."""

from __future__ import annotations

import re
from itertools import islice

from hypothesis import given, settings
from hypothesis import strategies as st

from kbwatch.plugins.scanning import injection_cooccur as C

SENTENCE_ENDS = "。！？!?\n"


def test_no_word_holds_a_sentence_end_or_is_empty():
    """A word holding 。 or a line end could match across two sentences: the walk would then
    differ from a sentence-by-sentence search. Adding one must fail here, not in production."""
    assert C.ALTERNATIONS, "the detector's word lists are registered"
    for pattern, words in C.ALTERNATIONS:
        for w in words:
            assert w and not set(w) & set(SENTENCE_ENDS), (w, pattern.pattern[:60])
        # the regrouped pattern finds each word whole where it stands alone
        for w in words:
            m = pattern.fullmatch(w.lower()) or pattern.fullmatch(w)
            assert m is not None, w
    assert C._SENTENCE.pattern == "[^" + SENTENCE_ENDS.replace("\n", "\\n") + "]+"


def _reference(pattern: re.Pattern, text: str, shortest: int) -> list:
    """What the detector did before: each sentence searched alone."""
    out = []
    for sm in C._SENTENCE.finditer(text):
        sent = sm.group()
        if not shortest <= len(sent) <= 400:
            continue
        found = [m.span() for m in islice(pattern.finditer(sent), C._MAX_WORDS)]
        if found:
            out.append((*sm.span(), found))
    return out


_PIECES = (["忽略", "忽略之前", "规则", "系统提示", "提示词", "输出", "内容", "设置", "的", "你", "请", "把",
            "ignore", "rules", "system prompt", " ", "，", "文", "字"] + list(SENTENCE_ENDS)
           + ["长" * 390, "很长的句子" * 30, "长" * 394, "长" * 396, "长" * 399])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=80), st.sampled_from([1, 4]))
def test_the_walk_finds_in_each_sentence_what_a_search_of_that_sentence_finds(pieces, shortest):
    text = "".join(pieces)
    for pattern, _ in C.ALTERNATIONS:
        assert list(C._in_sentences(pattern, text, shortest)) == _reference(pattern, text, shortest)


def test_an_adversarial_sentence_is_read_at_most_max_words_deep():
    """Hundreds of act words in one sentence: the walk takes the first twelve and jumps to the
    sentence's end; a sentence too long to look at costs one search."""
    pattern, words = C.ALTERNATIONS[0]
    word = min((w for w in words if pattern.fullmatch(w)), key=len)
    text = ("你" + word) * (300 // (len(word) + 1)) + "。" + ("你" + word) * 200 + "。" + "你" + word + "。"
    sents = [m.span() for m in C._SENTENCE.finditer(text)]
    assert len(sents) == 3 and sents[0][1] - sents[0][0] <= 400 < sents[1][1] - sents[1][0]
    calls = []

    class Counting:
        def search(self, *args):
            calls.append(args[1:])
            return pattern.search(*args)

    got = list(C._in_sentences(Counting(), text, 1))
    assert [(s0, len(found)) for s0, _, found in got] == [(0, C._MAX_WORDS), (sents[2][0], 1)]
    assert got == _reference(pattern, text, 1)
    assert len(calls) <= C._MAX_WORDS + 5, calls


def test_sentences_of_400_characters_are_looked_at_and_of_401_are_not():
    pattern = next(p for p, words in C.ALTERNATIONS if "规则" in words)
    for length in (3, 4, 399, 400, 401, 402, 900):
        for text in ("长" * (length - 2) + "规则。", "规则" + "长" * (length - 2) + "。", "你。" + "长" * (length - 2) + "规则",
                     "长" * (length // 2) + "规则" + "长" * (length - length // 2 - 2) + "\n规则。"):
            for shortest in (1, 4):
                assert list(C._in_sentences(pattern, text, shortest)) == _reference(pattern, text, shortest), (length, text[:8])
