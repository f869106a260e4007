"""The chunker's boundary search as it was before issue 14: each window scanned in full by a
regex for its last paragraph break, sentence end and whitespace run.

Kept as the reference mole_dag/chunk.py must agree with exactly (stored chunk offsets, quote
offsets and cassette prompts all depend on the boundaries). Used by tests/test_chunk.py and, for
before/after figures in the same run, by bench/quote_chunk_bench.py."""

from __future__ import annotations

import re

from mole_dag.chunk import DEFAULT_MAX_BYTES, MIN_FRACTION, Span

_PARAGRAPH = re.compile(rb"\n[ \t\r\f\v]*\n\s*")
_SENTENCE = re.compile(
    rb"(?:[.!?](?:[\"')\]]|\xe2\x80\x9d|\xe2\x80\x99)*\s+)"
    rb"|(?:(?:\xe3\x80\x82|\xef\xbc\x81|\xef\xbc\x9f|\xef\xbc\x9b|\xe2\x80\xa6)"
    rb"(?:\xe3\x80\x8d|\xe3\x80\x8f|\xe2\x80\x9d|\xef\xbc\x89)*\s*)"
)
_SPACE = re.compile(rb"\s+")


def reference_chunk_bytes(data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> list[tuple[int, int]]:
    def last(pattern: re.Pattern[bytes], lo: int, hi: int) -> int | None:
        best = None
        for m in pattern.finditer(data, lo, hi):
            if m.end() > lo:
                best = m.end()
        return best

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
            got = last(pattern, start, hi)
            if got is not None and got - start >= floor:
                cut = got
                break
        if cut is None:
            cut = hi
            while cut > 0 and cut < n and (data[cut] & 0xC0) == 0x80:
                cut -= 1
            if cut <= start:
                cut = hi
        spans.append((start, cut))
        start = cut
    return spans


def reference_chunk_text(text: str, max_bytes: int = DEFAULT_MAX_BYTES) -> list[Span]:
    data = text.encode("utf-8")
    return [
        Span(i, a, b, data[a:b].decode("utf-8"))
        for i, (a, b) in enumerate(reference_chunk_bytes(data, max_bytes))
    ]
