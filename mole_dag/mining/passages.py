"""A page as blocks of sentences, with character offsets: what relevance reads a sentence's
context from. A block is a paragraph (text between blank lines); context never crosses one,
since the next paragraph may be about something else entirely."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from mole_dag.text import sentence_spans

_BLOCK = re.compile(r"\n[ \t\r\f\v]*\n")


@dataclass(frozen=True)
class Sentence:
    start: int  # character offsets into the page text
    end: int
    block: int
    text: str


def sentences_of(text: str) -> list[Sentence]:
    out: list[Sentence] = []
    pos = 0
    for block_no, part in enumerate(_BLOCK.split(text)):
        start = text.index(part, pos) if part else pos
        for a, b in sentence_spans(part):
            out.append(Sentence(start + a, start + b, block_no, part[a:b]))
        pos = start + len(part)
    return out


class Passages:
    """Sentences of one page, and the neighbours of any stretch of it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.sentences = sentences_of(text)
        self._starts = [s.start for s in self.sentences]

    def around(self, start: int, end: int, window: int) -> list[str]:
        """Up to `window` sentences either side of the stretch [start, end), same block only."""
        if not self.sentences:
            return []
        first = max(bisect.bisect_right(self._starts, start) - 1, 0)
        last = max(bisect.bisect_left(self._starts, end) - 1, first)
        block_a, block_b = self.sentences[first].block, self.sentences[last].block
        before = [
            s.text for s in self.sentences[max(0, first - window) : first] if s.block == block_a
        ]
        after = [s.text for s in self.sentences[last + 1 : last + 1 + window] if s.block == block_b]
        return before + after


def char_offset(text_bytes: bytes, byte_pos: int) -> int:
    return len(text_bytes[:byte_pos].decode("utf-8", errors="ignore"))
