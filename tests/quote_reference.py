"""The quote check's index as it was before issue 14: every whitespace-separated token's
offsets recorded, and each byte offset computed by encoding the whole source prefix.

Kept as the reference mole_dag/actors/quote.py must agree with exactly (collapsed text, source
map, byte offsets, occurrence counts). Used by tests/test_quote.py and, for before/after
figures in the same run, by bench/quote_chunk_bench.py."""

from __future__ import annotations

import bisect
import re

from mole_dag.actors.quote import (
    MIN_QUOTE_CHARS,
    QuoteMatch,
    QuoteRejected,
    _cuts_cluster,
    collapse,
)

_TOKEN = re.compile(r"\S+")


class ReferenceCollapsedText:
    def __init__(self, source: str) -> None:
        self.source = source
        tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(source)]
        self._orig_starts = [a for a, _ in tokens]
        self._lens = [b - a for a, b in tokens]
        starts, pos = [], 0
        for ln in self._lens:
            starts.append(pos)
            pos += ln + 1
        self._cstarts = starts
        self.text = " ".join(source[a:b] for a, b in tokens)

    def to_source_char(self, cidx: int) -> int:
        t = bisect.bisect_right(self._cstarts, cidx) - 1
        return self._orig_starts[t] + (cidx - self._cstarts[t])

    def _byte(self, char_idx: int) -> int:
        return len(self.source[:char_idx].encode("utf-8"))

    def find(self, quote: str) -> QuoteMatch | None:
        needle = collapse(quote)
        if len(needle) < MIN_QUOTE_CHARS:
            raise QuoteRejected("quote_too_short", f"quote has {len(needle)} characters")
        first, occurrences = -1, 0
        pos = self.text.find(needle)
        while pos >= 0:
            if not _cuts_cluster(self.text, pos, pos + len(needle)):
                occurrences += 1
                if first < 0:
                    first = pos
            pos = self.text.find(needle, pos + 1)
        if first < 0:
            return None
        start_char = self.to_source_char(first)
        end_char = self.to_source_char(first + len(needle) - 1) + 1
        return QuoteMatch(self._byte(start_char), self._byte(end_char), occurrences)


def reference_find_quote(source_text: str, quote: str) -> QuoteMatch | None:
    return ReferenceCollapsedText(source_text).find(quote)
