"""One scan over a text's word starts for several ``PatternSet`` objects.

The injection scanner runs several pattern sets (sentence rules, frames, other languages) over
the same view of a document. Each set can find the word starts its patterns are to be tried at
itself; a ``WordScan`` made over those sets finds them once, with one C-level regex built from
all the sets' word anchors (:class:`.patterns.AnchorScan`), and hands each set the positions its
patterns are to be tried at: the same positions, in the same order, as the set's own scan.
The last text's positions are kept (by identity), so the sets called one after the other on
one view share the scan; a text over ``KEEP_MAX`` characters is scanned for each set and not
kept (its positions and the text itself would stay in memory until the next document).
"""

from __future__ import annotations

from array import array

from .patterns import AnchorScan

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

    def candidates(self, text: str, k: int) -> list[list[int]]:
        """Word-start positions per pattern of set ``k`` (index-aligned with its patterns;
        the lists are shared: read them, don't change them). For a text over ``KEEP_MAX`` characters
        each is an ``array`` of ints, not a list: a large document has a position for many of its
        words, and a Python int object per position was tens of thousands of small objects alive
        at once (issue 12, the soak)."""
        last = self._last
        if last[0] is not text:
            if len(text) > KEEP_MAX:
                cands: list = [array("q") for _ in range(self.total)]
            else:  # a small text: lists are quicker to make, and few positions
                cands = [[] for _ in range(self.total)]
            for p, ids in self._scan.hits(text):
                for g in ids:
                    cands[g].append(p)
            last = (text, cands)
            if len(text) <= KEEP_MAX:
                self._last = last
        off = self.offsets[k]
        return last[1][off:off + len(self.sets[k].patterns)]
