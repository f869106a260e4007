"""Chunking: split extracted text into contiguous byte-offset slices.

Chunks exist to keep quotes checkable. A chunk that paraphrased, trimmed or reordered text would
make a grounded claim unverifiable, so a chunk is exactly `text_bytes[start:end]` and the chunks'
concatenation is the text, byte for byte. Cuts prefer a paragraph break, then a sentence end
(Latin and CJK terminators), then whitespace, and never fall inside a UTF-8 character."""

from __future__ import annotations

import re
from dataclasses import dataclass

# A guess, flagged as one: big enough to hold a few paragraphs of context for a miner, small
# enough that a cheap model's prompt stays short. Bytes, not characters, so CJK text (3 bytes a
# character) gets proportionally fewer characters per chunk, as a tokenizer would.
DEFAULT_MAX_BYTES = 2400
# A boundary closer to the window's start than this is not worth taking: it would leave a runt.
MIN_FRACTION = 0.3

_PARAGRAPH = re.compile(rb"\n[ \t\r\f\v]*\n\s*")
# Sentence end: Latin terminator (optionally followed by closing quotes/brackets) then whitespace;
# or a CJK full-width terminator, which needs no following space.
_SENTENCE = re.compile(
    rb"(?:[.!?](?:[\"')\]]|\xe2\x80\x9d|\xe2\x80\x99)*\s+)"
    rb"|(?:(?:\xe3\x80\x82|\xef\xbc\x81|\xef\xbc\x9f|\xef\xbc\x9b|\xe2\x80\xa6)"
    rb"(?:\xe3\x80\x8d|\xe3\x80\x8f|\xe2\x80\x9d|\xef\xbc\x89)*\s*)"
)
_SPACE = re.compile(rb"\s+")


@dataclass(frozen=True)
class Span:
    """One chunk: `text` is the UTF-8 decoding of `source_bytes[byte_start:byte_end]`."""

    ordinal: int
    byte_start: int
    byte_end: int
    text: str


def _last_boundary(pattern: re.Pattern[bytes], data: bytes, lo: int, hi: int) -> int | None:
    """The last position in (lo, hi] that ends a match of `pattern` inside data[lo:hi]."""
    best = None
    for m in pattern.finditer(data, lo, hi):
        if m.end() > lo:
            best = m.end()
    return best


def _char_boundary(data: bytes, pos: int) -> int:
    """Move pos back to the start of the UTF-8 character it falls in."""
    while pos > 0 and pos < len(data) and (data[pos] & 0xC0) == 0x80:
        pos -= 1
    return pos


def chunk_bytes(data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> list[tuple[int, int]]:
    """Byte spans that tile `data` exactly."""
    if max_bytes < 8:
        raise ValueError("max_bytes must be at least 8 (a UTF-8 character is up to 4 bytes)")
    spans: list[tuple[int, int]] = []
    start, n = 0, len(data)
    floor = max(1, int(max_bytes * MIN_FRACTION))
    while start < n:
        hi = start + max_bytes
        if hi >= n:
            spans.append((start, n))
            break
        cut = None
        for pattern in (_PARAGRAPH, _SENTENCE, _SPACE):
            got = _last_boundary(pattern, data, start, hi)
            if got is not None and got - start >= floor:
                cut = got
                break
        if cut is None:
            cut = _char_boundary(data, hi)
            if cut <= start:  # cannot happen with max_bytes >= 4, kept as a guard
                cut = hi
        spans.append((start, cut))
        start = cut
    return spans


def chunk_text(text: str, max_bytes: int = DEFAULT_MAX_BYTES) -> list[Span]:
    data = text.encode("utf-8")
    return [
        Span(i, a, b, data[a:b].decode("utf-8"))
        for i, (a, b) in enumerate(chunk_bytes(data, max_bytes))
    ]
