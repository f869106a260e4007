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


# What a `_SENTENCE` match can start with, one entry per alternative's first character.
_SENTENCE_STARTS = (
    b".",
    b"!",
    b"?",
    b"\xe3\x80\x82",
    b"\xef\xbc\x81",
    b"\xef\xbc\x9f",
    b"\xef\xbc\x9b",
    b"\xe2\x80\xa6",
)
# What `\s` matches in a bytes pattern: the whitespace cut, `\s+`, ends right after one of these.
_SPACE_BYTES = (b" ", b"\n", b"\t", b"\r", b"\f", b"\v")


def _last_sentence_end(data: bytes, lo: int, hi: int) -> int | None:
    """`_last_boundary(_SENTENCE, data, lo, hi)`, found from the right.

    Scanning the whole window with the regex ran at tens of MB/s on text without blank lines
    (issue 14): the engine tries the alternation at every byte. Here the terminators are
    found with rfind (C, from the window's end) and the pattern is tried only where one starts.
    Same answer because a match can only start on a terminator, and whether it matches there
    does not depend on where the scan began: its tail (closing quotes, then whitespace) holds
    no terminator, so no match covers another's start, and finditer finds a match at every
    terminator where one exists. The last such terminator's match is therefore the last
    match."""
    # A three-byte terminator is looked for only where its lead byte occurs in the window
    # (memrchr, fast); most windows of Latin text have no CJK punctuation at all.
    found = [
        data.rfind(t, lo, hi) if len(t) == 1 or data.rfind(t[:1], lo, hi) >= 0 else -1
        for t in _SENTENCE_STARTS
    ]
    while True:
        q = max(found)
        if q < 0:
            return None
        m = _SENTENCE.match(data, q, hi)
        if m is not None:
            return m.end()
        # Only one kind of terminator starts at q; look for its previous occurrence. No
        # terminator overlaps another (each is ASCII or a lead byte followed by continuation
        # bytes, and none starts with a continuation byte), so none ending past q is missed.
        k = found.index(q)
        found[k] = data.rfind(_SENTENCE_STARTS[k], lo, q)


def _last_space_end(data: bytes, lo: int, hi: int) -> int | None:
    r"""The end of the last `\s+` match in data[lo:hi], as `_last_boundary` would find it,
    without the regex (a Python object per whitespace run): that match ends right after the
    window's last whitespace byte, since the run that byte ends is the match containing it,
    wherever the scan began."""
    p = max([data.rfind(c, lo, hi) for c in _SPACE_BYTES])
    return p + 1 if p >= 0 else None


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
        # Paragraph break, then sentence end, then whitespace: the first whose last boundary in
        # the window leaves at least `floor` bytes.
        cut = None
        got = _last_boundary(_PARAGRAPH, data, start, hi)
        if got is None or got - start < floor:
            got = _last_sentence_end(data, start, hi)
            if got is None or got - start < floor:
                got = _last_space_end(data, start, hi)
        if got is not None and got - start >= floor:
            cut = got
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
