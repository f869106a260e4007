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

# Whitespace runs other than a lone space: from a run's first character that is not a space to
# the run's end (the spaces before it are added back by CollapsedText), and runs of spaces only.
# The first class is every character str.split() and `\s` treat as whitespace except the space
# (Unicode White_Space as CPython's isspace has it), spelled out because a class of literals
# scans about 40 % faster than the `[^\S ]` category test (issue 14). tests/test_quote.py checks
# it against isspace over every code point, so a Unicode update that adds a whitespace
# character fails there instead of silently here.
_OTHER_SPACE = re.compile(
    r"[\t\n\x0b\x0c\r\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]\s*"
)
_SPACES = re.compile(r"  +")
# Characters per stored byte offset in CollapsedText: a byte offset encodes at most this many.
_BLOCK = 4096


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
    Build once per source and check many quotes against it.

    The collapsed text is the source with every whitespace run that is not a lone space (a run
    of two or more, or any other whitespace character) replaced by one space, minus the ends.
    Between those runs source and collapsed text agree character for character, so the map is
    one (source start, collapsed start) pair per such run, not one per word: extracted pages
    have a few per paragraph. Found by two regex scans that stop only at those runs (issue 14:
    a token-by-token index ran at 5-13 MB/s, a tenth of collapsing alone)."""

    def __init__(self, source: str) -> None:
        self.source = source
        lead = len(source) - len(source.lstrip())
        end = len(source.rstrip())
        runs: list[tuple[int, int]] = []
        for m in _OTHER_SPACE.finditer(source, lead, end):
            a = m.start()
            while source[a - 1] == " ":  # the run's spaces before its first other character
                a -= 1
            runs.append((a, m.end()))
        spaces = []
        for m in _SPACES.finditer(source, lead, end):
            a, b = m.span()
            # A run with any other whitespace in it was found above, whole.
            if not (source[a - 1].isspace() or source[b].isspace()):
                spaces.append((a, b))
        if spaces:
            runs = sorted(runs + spaces)
        # Segments of the source that the collapsed text holds verbatim, joined by one space.
        seg_starts = [lead] + [b for _, b in runs]
        seg_ends = [a for a, _ in runs] + [end]
        self.text = " ".join(map(source.__getitem__, map(slice, seg_starts, seg_ends)))
        self._seg_starts = seg_starts
        cstarts, pos = [], 0
        for a, b in zip(seg_starts, seg_ends, strict=True):
            cstarts.append(pos)
            pos += b - a + 1
        self._cstarts = cstarts
        # Byte offsets: the source's UTF-8 length before every _BLOCK-th character, filled in
        # as matches need them, so a byte offset costs one short encode instead of encoding the
        # whole prefix (which made many quotes against one page quadratic in the matches).
        self._block_bytes = [0]

    def _to_source_char(self, cidx: int) -> int:
        """Map a collapsed index that falls on a non-space character to its source index."""
        t = bisect.bisect_right(self._cstarts, cidx) - 1
        return self._seg_starts[t] + (cidx - self._cstarts[t])

    def _byte(self, char_idx: int) -> int:
        source = self.source
        if source.isascii():
            return char_idx
        # Whole blocks before char_idx are encoded once, in order, as far as any call has
        # needed; then only the part of one block. Nothing past char_idx is ever encoded, so a
        # lone surrogate raises exactly when the old whole-prefix encode raised.
        block = char_idx // _BLOCK
        sizes = self._block_bytes
        while len(sizes) <= block:
            i = (len(sizes) - 1) * _BLOCK
            sizes.append(sizes[-1] + len(source[i : i + _BLOCK].encode("utf-8")))
        return sizes[block] + len(source[block * _BLOCK : char_idx].encode("utf-8"))

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
