"""One pass over a text's word starts for several ``PatternSet`` objects.

The injection scanner runs several pattern sets (sentence rules, frames, other languages) over
the same view of a document. Each set used to walk every word start of the text itself; a
``WordScan`` made over those sets walks them once, looks each word's first characters up in
one table built from all the sets' word prefixes, and hands each set the positions its
patterns are to be tried at: the same positions, in the same order, as the set's own walk.
The last text's positions are kept (by identity), so the sets called one after the other on
one view share the walk; a text over ``KEEP_MAX`` characters is walked for each set and not
kept (its positions and the text itself would stay in memory until the next document).
"""

from __future__ import annotations

import re
from array import array

__all__ = ["WordScan"]

_WORD_START = re.compile(r"[a-z]+")  # the same walk as PatternSet's
KEEP_MAX = 100_000


class WordScan:
    """Word-start candidates of every pattern of ``sets``, computed in one walk per text."""

    def __init__(self, sets) -> None:
        self.sets = list(sets)
        self.offsets: list[int] = []
        total = 0
        for k, s in enumerate(self.sets):
            self.offsets.append(total)
            total += len(s.patterns)
            s.shared_scan = (self, k)
        self.total = total
        self.width = max((s.word_width for s in self.sets), default=0)
        self._cache: dict[str, tuple[int, ...]] = {}
        self._last: tuple[str | None, list[list[int]]] = (None, [])

    def _ids(self, key: str) -> tuple[int, ...]:
        found: set[int] = set()
        for s, off in zip(self.sets, self.offsets):
            for n in s.word_lens:
                for i in s.word.get(key[:n], ()):
                    found.add(off + i)
        ids = tuple(sorted(found))
        if len(self._cache) > 200_000:
            self._cache.clear()
        self._cache[key] = ids
        return ids

    def candidates(self, text: str, k: int) -> list[list[int]]:
        """Word-start positions per pattern of set ``k`` (index-aligned with its patterns;
        the lists are shared: read them, don't change them). For a text over ``KEEP_MAX`` characters
        each is an ``array`` of ints, not a list: a large document has a position for most of its
        words, and a Python int object per position was tens of thousands of small objects alive
        at once (issue 12, the soak)."""
        last = self._last
        if last[0] is not text:
            if len(text) > KEEP_MAX:
                cands: list = [array("q") for _ in range(self.total)]
            else:  # a small text: lists are quicker to make, and few positions
                cands = [[] for _ in range(self.total)]
            width = self.width
            get = self._cache.get
            for m in _WORD_START.finditer(text):
                p = m.start()
                key = text[p:p + width]
                ids = get(key)
                if ids is None:
                    ids = self._ids(key)
                for g in ids:
                    cands[g].append(p)
            last = (text, cands)
            if len(text) <= KEEP_MAX:
                self._last = last
        off = self.offsets[k]
        return last[1][off:off + len(self.sets[k].patterns)]
