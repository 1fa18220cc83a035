"""One scan over a text's word starts for several ``PatternSet`` objects.

The injection scanner runs several pattern sets (sentence rules, frames, other languages) over
the same view of a document. Each set can find the word starts its patterns are to be tried at
itself; a ``WordScan`` made over those sets finds them once, with one C-level regex built from
all the sets' word anchors (:class:`.patterns.AnchorScan`), and hands each set the positions its
patterns are to be tried at: the same positions, in the same order, as the set's own scan.
The last text's positions are kept (by identity), so the sets called one after the other on
one view share the scan. A text over ``KEEP_MAX`` characters is kept only while the caller holds
it (:meth:`WordScan.held`: the scanner's block that runs the sets on one view), and released when
the block ends: otherwise its positions and the text itself would stay in memory until the next
document; outside such a block it is scanned for each set and not kept.
"""

from __future__ import annotations

import threading
from array import array
from contextlib import contextmanager

from .patterns import _NONE, AnchorScan, _list

__all__ = ["WordScan"]

KEEP_MAX = 100_000


class WordScan:
    """Word-start candidates of every pattern of ``sets``, computed in one scan per text."""

    def __init__(self, sets) -> None:
        self.sets = list(sets)
        self.offsets: list[int] = []
        table: dict[str, list[int]] = {}
        total = 0
        for k, s in enumerate(self.sets):
            self.offsets.append(total)
            for key, ids in s.word.items():
                table.setdefault(key, []).extend(total + i for i in ids)
            total += len(s.patterns)
            s.shared_scan = (self, k)
        self.total = total
        self._scan = AnchorScan(table, word=True)
        self._last: tuple[str | None, list[list[int]]] = (None, [])
        self._held = threading.local()  # .text: the large text this thread's caller holds (see held())

    @contextmanager
    def held(self, text: str):
        """Within the block, ``text``'s positions are kept even when it is over ``KEEP_MAX`` characters
        (the sets run one after the other on it share one scan); at its end they are dropped."""
        self._held.text = text
        try:
            yield
        finally:
            self._held.text = None
            if self._last[0] is text:
                self._last = (None, [])

    def candidates(self, text: str, k: int) -> list[list[int]]:
        """Word-start positions per pattern of set ``k`` (index-aligned with its patterns;
        the lists are shared: read them, don't change them). For a text over ``KEEP_MAX`` characters
        each is an ``array`` of ints, not a list: a large document has a position for many of its
        words, and a Python int object per position was tens of thousands of small objects alive
        at once (issue 12, the soak)."""
        last = self._last
        if last[0] is not text:
            # a sequence is made only for a pattern with a position (an array on a large text, a
            # list on a small one: quicker to make); the others share one empty tuple
            seq = array if len(text) > KEEP_MAX else _list
            cands: list = [_NONE] * self.total
            for p, ids in self._scan.hits(text):
                for g in ids:
                    got = cands[g]
                    if got is _NONE:
                        got = cands[g] = seq("q")
                    got.append(p)
            last = (text, cands)
            if len(text) <= KEEP_MAX or getattr(self._held, "text", None) is text:
                self._last = last
        off = self.offsets[k]
        return last[1][off:off + len(self.sets[k].patterns)]
