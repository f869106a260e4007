"""Tests for mole_dag.chunk: chunks tile the text byte for byte and cut at good boundaries."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from chunk_reference import reference_chunk_bytes
from hypothesis import given, settings
from hypothesis import strategies as st

from mole_dag.chunk import DEFAULT_MAX_BYTES, MIN_FRACTION, chunk_bytes, chunk_text

# Pieces that stress the boundary logic: CJK (3-byte), emoji (4-byte, ZWJ sequences, skin-tone
# modifiers), combining marks, CRLF, blank lines, sentence ends, long runs without spaces.
_PIECES = [
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\n\n",
    "\r\n\r\n",
    "\n \n",
    ". ",
    "! ",
    "? ",
    ".\u201d ",
    "。",
    "！",
    "？",
    "；",
    "…",
    "」",
    "中文字符",
    "日本語のテキスト",
    "한국어",
    "😀",
    "👍🏽",
    "👨\u200d👩\u200d👧",
    "e\u0301",
    "a\u0308\u0323",
    "\u00a0",
    "\u3000",
    "x" * 40,
    "ä" * 30,
    "漢" * 25,
    "🙂" * 12,
    "word",
    "Sentence",
    "Another one",
]

_chars = st.characters(blacklist_categories=("Cs",))
_text = st.lists(
    st.one_of(st.text(_chars, max_size=12), st.sampled_from(_PIECES)), max_size=60
).map("".join)
_max_bytes = st.integers(min_value=8, max_value=160)


def _check_tiling(text: str, max_bytes: int) -> None:
    data = text.encode("utf-8")
    spans = chunk_text(text, max_bytes)
    assert "".join(s.text for s in spans) == text
    if not data:
        assert spans == []
        return
    assert spans[0].byte_start == 0
    assert spans[-1].byte_end == len(data)
    for i, s in enumerate(spans):
        assert s.ordinal == i
        assert s.byte_start < s.byte_end, "empty chunk"
        assert s.byte_end - s.byte_start <= max_bytes
        # The span decodes on its own: no cut inside a UTF-8 character.
        assert data[s.byte_start : s.byte_end].decode("utf-8") == s.text
    for prev, nxt in zip(spans, spans[1:], strict=False):
        assert prev.byte_end == nxt.byte_start
    assert chunk_bytes(data, max_bytes) == [(s.byte_start, s.byte_end) for s in spans]


@settings(max_examples=300, deadline=None)
@given(_text, _max_bytes)
def test_chunks_tile_text_exactly(text: str, max_bytes: int) -> None:
    _check_tiling(text, max_bytes)


@settings(max_examples=100, deadline=None)
@given(st.text(_chars, min_size=0, max_size=400), _max_bytes)
def test_chunks_tile_arbitrary_unicode(text: str, max_bytes: int) -> None:
    _check_tiling(text, max_bytes)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(["x", "é", "漢", "😀", "e\u0301", "👨\u200d👩\u200d👧"]),
    st.integers(min_value=1, max_value=300),
    _max_bytes,
)
def test_long_runs_without_spaces(unit: str, repeat: int, max_bytes: int) -> None:
    _check_tiling(unit * repeat, max_bytes)


def test_default_max_bytes_tiles_a_long_document() -> None:
    para = ("Green tea is brewed from the leaves of Camellia sinensis. " * 12).strip()
    text = "\n\n".join([para, "绿茶含有儿茶素。" * 80, "😀 " * 300, para])
    _check_tiling(text, DEFAULT_MAX_BYTES)
    assert len(chunk_text(text)) > 1


def test_empty_text_has_no_chunks() -> None:
    assert chunk_text("") == []
    assert chunk_bytes(b"") == []


def test_short_text_is_one_chunk() -> None:
    spans = chunk_text("Short text.", 100)
    assert len(spans) == 1
    assert (spans[0].byte_start, spans[0].byte_end, spans[0].text) == (0, 11, "Short text.")


@pytest.mark.parametrize("bad", [-1, 0, 1, 4, 7])
def test_max_bytes_below_eight_rejected(bad: int) -> None:
    with pytest.raises(ValueError):
        chunk_text("some text that is long enough", bad)
    with pytest.raises(ValueError):
        chunk_bytes(b"some text", bad)


def test_max_bytes_eight_accepted() -> None:
    _check_tiling("😀😀😀😀😀", 8)
    assert [s.text for s in chunk_text("😀😀😀😀😀", 8)] == ["😀😀", "😀😀", "😀"]


def test_paragraph_break_preferred_over_sentence_end() -> None:
    first = "Alpha beta gamma delta epsilon zeta eta theta"  # 45 bytes, well past the floor
    rest = "Iota kappa. Lambda mu nu. Xi omicron pi rho sigma tau upsilon phi chi psi omega."
    text = f"{first}\n\n{rest}"
    spans = chunk_text(text, 80)
    # A sentence end ("Iota kappa. ") lies inside the window after the paragraph break, and a
    # space lies later still; the paragraph break wins.
    assert spans[0].text == f"{first}\n\n"
    _check_tiling(text, 80)


def test_sentence_end_preferred_over_whitespace() -> None:
    text = (
        "The first sentence ends right here. and then lowercase words continue "
        "for a good while without any terminator at all in sight"
    )
    spans = chunk_text(text, 60)
    assert spans[0].text == "The first sentence ends right here. "
    _check_tiling(text, 60)


def test_sentence_end_with_closing_quote() -> None:
    text = 'He said "the trial is over." and then more words follow without stopping here'
    spans = chunk_text(text, 50)
    assert spans[0].text == 'He said "the trial is over." '


def test_whitespace_used_when_no_sentence_end() -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda"
    spans = chunk_text(text, 20)
    for s in spans[:-1]:
        assert s.text.endswith(" ")
        assert not s.text.startswith(" ")
    _check_tiling(text, 20)


def test_boundary_too_close_to_start_is_not_taken() -> None:
    # The only space is 2 bytes in; taking it would leave a runt below MIN_FRACTION, so the
    # chunker hard-cuts at the window's end instead.
    text = "a " + "b" * 200
    max_bytes = 50
    assert max_bytes * MIN_FRACTION > 2
    spans = chunk_text(text, max_bytes)
    assert spans[0].byte_end == max_bytes


@pytest.mark.parametrize("term", ["。", "！", "？"])
def test_cjk_terminators_are_boundaries(term: str) -> None:
    sentence = "绿茶可以降低中风的风险" + term  # 11 ideographs + terminator = 36 bytes
    text = sentence * 10
    spans = chunk_text(text, 60)
    assert len(spans) > 1
    for s in spans[:-1]:
        assert s.text.endswith(term), s.text
    assert all(s.text == sentence for s in spans)
    _check_tiling(text, 60)


def test_cjk_terminator_followed_by_closing_bracket() -> None:
    sentence = "他说「绿茶可以降低中风的风险。」"
    text = sentence * 6
    spans = chunk_text(text, 60)
    for s in spans[:-1]:
        assert s.text.endswith("。」")


def test_hard_cut_never_splits_a_character() -> None:
    text = "漢" * 50  # no boundary at all; 3-byte characters
    spans = chunk_text(text, 10)
    assert all(s.byte_end - s.byte_start == 9 for s in spans[:-1])
    _check_tiling(text, 10)


def test_crlf_paragraph_break() -> None:
    first = "Line one of the first paragraph is here"
    text = f"{first}\r\n\r\nSecond paragraph continues with several more words after it"
    spans = chunk_text(text, 64)
    assert spans[0].text == f"{first}\r\n\r\n"
    _check_tiling(text, 64)


# -- the boundary search against the regex scan it replaced (issue 14) -------------------------
#
# chunk_bytes used to find each window's last paragraph break, sentence end and whitespace run by
# scanning the whole window with a regex (tens of MB/s on text without blank lines). It now
# searches from the window's end. The boundaries must not move: stored chunk offsets, quote
# offsets and cassette prompts all depend on them. The old search is kept as the reference in
# tests/chunk_reference.py.


# Boundary material: every terminator and closer the sentence pattern knows, whitespace of each
# kind, and words, so windows hold several candidate cuts of each kind.
_BOUNDARY_PIECES = [
    ".",
    "!",
    "?",
    "...",
    '."',
    ".'",
    ".)",
    ".]",
    ".\u201d",
    ".\u2019",
    "?\u201d)",
    "\u3002",
    "\uff01",
    "\uff1f",
    "\uff1b",
    "\u2026",
    "\u300d",
    "\u300f",
    "\uff09",
    "\u201d",
    "\u2019",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\n \t\n",
    "\r\n",
    "\t",
    "\f",
    "\v",
    "\x1c",
    "\u00a0",
    "3.5",
    "e.g.",
    "word",
    "Wort",
    "中文",
    "😀",
]
_boundary_text = st.lists(
    st.one_of(st.sampled_from(_BOUNDARY_PIECES), st.text(_chars, max_size=5)), max_size=120
).map("".join)


@settings(max_examples=400, deadline=None)
@given(_boundary_text, st.integers(min_value=8, max_value=120))
def test_boundaries_match_the_regex_scan_on_boundary_heavy_text(text: str, max_bytes: int) -> None:
    data = text.encode("utf-8")
    assert chunk_bytes(data, max_bytes) == reference_chunk_bytes(data, max_bytes)


@settings(max_examples=200, deadline=None)
@given(_text, _max_bytes)
def test_boundaries_match_the_regex_scan(text: str, max_bytes: int) -> None:
    data = text.encode("utf-8")
    assert chunk_bytes(data, max_bytes) == reference_chunk_bytes(data, max_bytes)


_RAW_PIECES = [p.encode("utf-8") for p in _BOUNDARY_PIECES] + [
    b"\xe2\x80",
    b"\x80",
    b"\xbc\x81",
    b"\xe3",
    b"\xef\xbc",
    b"\xff",
]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from(_RAW_PIECES), st.binary(max_size=4)), max_size=100).map(
        b"".join
    ),
    st.integers(min_value=8, max_value=80),
)
def test_boundaries_match_the_regex_scan_on_arbitrary_bytes(data: bytes, max_bytes: int) -> None:
    # chunk_bytes takes bytes: the argument for searching from the right must not lean on the
    # input being valid UTF-8.
    assert chunk_bytes(data, max_bytes) == reference_chunk_bytes(data, max_bytes)


def _fixture_texts() -> list[str]:
    root = Path(__file__).resolve().parent
    folders = (root / "fixtures" / "model_corpus", root.parent / "examples" / "corpus")
    return [p.read_text("utf-8") for f in folders for p in sorted(f.iterdir())]


@pytest.mark.parametrize("max_bytes", [80, 300, 1000, DEFAULT_MAX_BYTES])
def test_boundaries_match_the_regex_scan_on_the_fixture_corpora(max_bytes: int) -> None:
    # As written (blank lines between paragraphs), with each blank line collapsed to one newline
    # (extraction output without blank lines: the slow case), and with no line breaks at all.
    texts = _fixture_texts()
    assert texts
    whole = "\n\n".join(texts)
    for text in (whole, re.sub(r"\n\s*\n", "\n", whole), " ".join(whole.split())):
        data = text.encode("utf-8")
        assert chunk_bytes(data, max_bytes) == reference_chunk_bytes(data, max_bytes)
