"""Reading a model's JSON answer without trusting it to be whole.

A model asked for `{"claims": [{...}, {...}]}` may wrap it in a code fence, put a sentence in
front of it, or stop mid-object when it reaches max_tokens. Everything complete is kept: the
array is decoded one element at a time, and decoding stops at the first element that is not
whole. A truncated answer therefore loses its last, unfinished item and nothing else."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?")
_decoder = json.JSONDecoder()
_WS = " \t\r\n"


@dataclass(frozen=True)
class Items:
    items: list[dict[str, Any]]
    complete: bool  # the array (and the answer) closed properly

    @property
    def salvaged(self) -> bool:
        return not self.complete and bool(self.items)


def _skip(text: str, i: int, chars: str = _WS) -> int:
    while i < len(text) and text[i] in chars:
        i += 1
    return i


def _array_start(text: str, key: str) -> int | None:
    """Index just past the `[` that opens `key`'s array, or of the first top-level `[`."""
    m = re.search(r'"' + re.escape(key) + r'"\s*:\s*\[', text)
    if m:
        return m.end()
    brace, bracket = text.find("{"), text.find("[")
    if bracket >= 0 and (brace < 0 or bracket < brace):
        return bracket + 1
    return None


def parse_items(text: str, key: str) -> Items:
    """The objects in the array under `key` (or a bare top-level array), element by element."""
    cleaned = _FENCE.sub("", text)
    # The common case first: the whole answer is valid JSON.
    start = cleaned.find("{")
    bracket = cleaned.find("[")
    for s in sorted(i for i in (start, bracket) if i >= 0):
        try:
            whole, _end = _decoder.raw_decode(cleaned, s)
        except json.JSONDecodeError:
            continue
        arr = whole.get(key) if isinstance(whole, dict) else whole
        if isinstance(arr, list):
            return Items([x for x in arr if isinstance(x, dict)], True)
        if isinstance(whole, dict):
            return Items([], True)
        break
    pos = _array_start(cleaned, key)
    if pos is None:
        return Items([], False)
    items: list[dict[str, Any]] = []
    while True:
        pos = _skip(cleaned, pos, _WS + ",")
        if pos >= len(cleaned):
            return Items(items, False)
        if cleaned[pos] == "]":
            return Items(items, True)
        try:
            value, pos = _decoder.raw_decode(cleaned, pos)
        except json.JSONDecodeError:
            return Items(items, False)  # the unfinished last element: dropped
        if isinstance(value, dict):
            items.append(value)


def first_object(text: str) -> dict[str, Any]:
    """The first complete JSON object in the answer, or {}."""
    cleaned = _FENCE.sub("", text)
    pos = cleaned.find("{")
    while pos >= 0:
        try:
            value, _end = _decoder.raw_decode(cleaned, pos)
        except json.JSONDecodeError:
            pos = cleaned.find("{", pos + 1)
            continue
        return value if isinstance(value, dict) else {}
    return {}


def string_field(item: dict[str, Any], *names: str) -> str:
    """The first of `names` that holds a string, else ''. Numbers and nulls are not text."""
    for n in names:
        v = item.get(n)
        if isinstance(v, str):
            return v
    return ""
