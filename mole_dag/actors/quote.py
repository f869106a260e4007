"""The quote check: a claim exists only if its quote is in the source, verbatim.

The single most valuable check relative to its cost: deterministic, no model call, and it
catches the dominant failure, a fabricated citation attached to a plausible sentence.

Matching is exact after one documented normalisation: every run of whitespace (Unicode
whitespace, as `str.split` sees it, which includes no-break space) collapses to one space and the
ends are trimmed. Justified because extraction, chunking and a model's copy of a passage
legitimately disagree about line breaks and indentation, never about words. No case folding, no
Unicode normalisation, no fuzzy matching: anything a reader would see as a different character is
a different quote.

For the same reason a match may not cut a character cluster: a quote that stops before a
combining accent ("cafe" against a decomposed "café"), or starts on one, or splits an emoji
joined by a zero-width joiner or modified by a skin tone, is not what the reader of the source
sees. Such an occurrence does not count; a later, whole one still does."""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass

from mole_dag.core import MIN_QUOTE_CHARS  # the schema's floor too (mole_dag.core)

_TOKEN = re.compile(r"\S+")


class QuoteRejected(ValueError):
    def __init__(self, cause: str, message: str) -> None:
        self.cause = cause
        super().__init__(message)


def collapse(text: str) -> str:
    return " ".join(text.split())


_ZWJ = "\u200d"


def extends_previous(ch: str) -> bool:
    """True for a character drawn as part of the one before it: a combining mark, a zero-width
    joiner, a variation selector or an emoji skin-tone modifier."""
    cp = ord(ch)
    return (
        unicodedata.category(ch) in ("Mn", "Mc", "Me")
        or ch == _ZWJ
        or 0xFE00 <= cp <= 0xFE0F
        or 0xE0100 <= cp <= 0xE01EF
        or 0x1F3FB <= cp <= 0x1F3FF
    )


def _cuts_cluster(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] begins or ends inside a character cluster of text."""
    if extends_previous(text[start]) or (start > 0 and text[start - 1] == _ZWJ):
        return True
    return text[end - 1] == _ZWJ or (end < len(text) and extends_previous(text[end]))


@dataclass(frozen=True)
class QuoteMatch:
    """Where the quote is: byte offsets into the UTF-8 source, and how many times it occurs."""

    byte_start: int
    byte_end: int
    occurrences: int


class CollapsedText:
    """A source with its whitespace collapsed, and the map back to source byte offsets.
    Build once per source and check many quotes against it."""

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

    def _to_source_char(self, cidx: int) -> int:
        """Map a collapsed index that falls on a non-space character to its source index."""
        t = bisect.bisect_right(self._cstarts, cidx) - 1
        return self._orig_starts[t] + (cidx - self._cstarts[t])

    def _byte(self, char_idx: int) -> int:
        return len(self.source[:char_idx].encode("utf-8"))

    def find(self, quote: str) -> QuoteMatch | None:
        needle = collapse(quote)
        if len(needle) < MIN_QUOTE_CHARS:
            raise QuoteRejected(
                "quote_too_short",
                f"quote has {len(needle)} characters after collapsing whitespace; "
                f"at least {MIN_QUOTE_CHARS} are required",
            )
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
        start_char = self._to_source_char(first)
        end_char = self._to_source_char(first + len(needle) - 1) + 1
        return QuoteMatch(self._byte(start_char), self._byte(end_char), occurrences)


def find_quote(source_text: str, quote: str) -> QuoteMatch | None:
    """Find `quote` in `source_text` (whitespace-collapsed, otherwise exact).

    Returns the byte span of the first occurrence in the source, or None when absent.
    Raises QuoteRejected when the quote is shorter than MIN_QUOTE_CHARS collapsed characters."""
    return CollapsedText(source_text).find(quote)
