"""Tests for mole_dag.output.citations (mechanical citation check) and
mole_dag.sanitize (terminal/bidi control stripping)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mole_dag.output.citations import (
    CitationCheck,
    check_body,
    cite,
    cited_numbers,
    strip_reference_markers,
)
from mole_dag.sanitize import one_line, strip_controls

# --- citations ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "numbers"),
    [
        ("No citations here.", []),
        ("One [1].", [1]),
        ("Two [1][2] and again [1].", [1, 2, 1]),
        ("List [1, 2] and [3,4] and [5 ,6].", [1, 2, 3, 4, 5, 6]),
        ("Semicolons [7; 8] too.", [7, 8]),
        ("Multi-digit [12, 105].", [12, 105]),
        ("Not citations: [a], [1a], [], [ 1 ], [1-3], (1), [1,].", []),
        # A PDF's page (issue 19): as printed now, and as stored reports printed it before.
        ("Paged [3] (p. 12) and [4] (pp. 2-5)[6].", [3, 4, 6]),
        ("Paged before [3, p. 12] and [4, pp. 2-5].", [3, 4]),
    ],
)
def test_cited_numbers(body: str, numbers: list[int]) -> None:
    assert cited_numbers(body) == numbers


# The benchmark's shared scorer, and any script reading a report, finds a citation like this.
PLAIN_CITE = re.compile(r"\[(\d+)\]")


def test_a_page_citation_holds_its_number_alone_in_brackets() -> None:
    # Was "[3, p. 12]": no "[3]" in it, so every finding from a PDF read as uncited.
    assert cite(3, 12) == "[3] (p. 12)" and cite(3) == "[3]"
    assert PLAIN_CITE.findall(cite(3, 12)) == ["3"] and cited_numbers(cite(3, 12)) == [3]
    assert "](" not in cite(3, 12)  # "[3](p. 12)" would be a Markdown link


def test_citations_of_a_finding_put_each_page_after_its_own_number() -> None:
    from mole_dag.output.markdown import _cites

    assert _cites([3, 4]) == "[3][4]"
    assert _cites([3, 4], {3: 12}) == "[3] (p. 12) [4]"
    assert _cites([4, 3], {3: 12}) == "[4] [3] (p. 12)"
    assert PLAIN_CITE.findall(_cites([3, 4, 5], {3: 12, 5: 1})) == ["3", "4", "5"]


def test_a_page_citation_is_no_markdown_link() -> None:
    markdown_it = pytest.importorskip("markdown_it")
    md = markdown_it.MarkdownIt("commonmark")
    line = f"1. Tea helps sleep {cite(3, 12)} {cite(4)} {cite(5, 2)}  "
    html = md.render(line)
    assert "<a" not in html and "[3] (p. 12) [4] [5] (p. 2)" in html


@pytest.mark.parametrize(
    "marker", ["[7]", "[7, p. 3]", "[7] (p. 3)", "[7](p. 3)", "[7, 8]", "[7] (pp. 3-4)"]
)
def test_reference_markers_a_source_carried_are_stripped(marker: str) -> None:
    got = strip_reference_markers(f"Tea helps sleep in adults.{marker} The rest follows.")
    assert got == "Tea helps sleep in adults. The rest follows."


def test_forged_page_citations_flagged_in_both_forms() -> None:
    got = check_body("Tea helps [1] (p. 3). Also [9] (p. 2) and [8, p. 4].", {1, 2}, {1})
    assert not got.ok and got.forged == (8, 9) and got.cited == (1, 9, 8)


def test_valid_body_accepted() -> None:
    got = check_body("Tea helps [1, 2]. Sleep suffers [3].", {1, 2, 3, 4}, {1, 2, 3})
    assert got.ok
    assert got.forged == () and got.unsupported == ()
    assert got.cited == (1, 2, 3)
    assert "3 distinct citations" in got.explain()


def test_body_without_citations_is_ok() -> None:
    assert check_body("Nothing cited.", {1}, {1}).ok


def test_forged_number_flagged() -> None:
    got = check_body("Tea helps [1]. Also [9] and [9, 12].", {1, 2}, {1, 2})
    assert not got.ok
    assert got.forged == (9, 12)
    assert got.unsupported == ()
    assert "do not exist: 9, 12" in got.explain() and "[" not in got.explain()


def test_unsupported_source_flagged() -> None:
    got = check_body("Tea helps [1, 2].", {1, 2, 3}, {1})
    assert not got.ok
    assert got.forged == ()
    assert got.unsupported == (2,)
    assert "support no finding: 2" in got.explain()


def test_forged_and_unsupported_together() -> None:
    got = check_body("[1; 2; 5]", {1, 2}, {1})
    assert (got.ok, got.forged, got.unsupported) == (False, (5,), (2,))
    assert "do not exist" in got.explain() and "support no finding" in got.explain()


def test_forged_number_inside_list_is_caught() -> None:
    assert check_body("See [1, 2, 99].", {1, 2}, {1, 2}).forged == (99,)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 30), min_size=1, max_size=4), max_size=8),
    st.sets(st.integers(0, 30)),
    st.sets(st.integers(0, 30)),
)
def test_check_body_property(
    groups: list[list[int]], numbered: set[int], support: set[int]
) -> None:
    supporting = support & numbered
    body = " text ".join("[" + ", ".join(map(str, g)) + "]" for g in groups)
    got = check_body(body, numbered, supporting)
    flat = [n for g in groups for n in g]
    assert isinstance(got, CitationCheck)
    assert got.cited == tuple(flat)
    assert set(got.forged) == set(flat) - numbered
    assert set(got.unsupported) == (set(flat) & numbered) - supporting
    assert got.ok == (set(flat) <= supporting)


# --- sanitize ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("\x1b[31mred\x1b[0m text", "red text"),
        ("\x1b[1;32;40mbold green\x1b[m", "bold green"),
        ("\x1b[2J\x1b[Hcleared", "cleared"),
        ("\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor"),
        ("\x1b]0;evil title\x07after", "after"),
        ("\x1b]2;evil title\x1b\\after", "after"),
        ("\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\", "link"),
        ("a\x1bMb", "ab"),  # RI (reverse index), a two-byte Fe escape
        ("a\x1b7b\x1b8", "ab"),  # ESC 7 / ESC 8 save and restore the cursor (Fp escapes)
        ("a\x1bcb", "ab"),  # ESC c resets the terminal (an Fs escape)
        ("a\x1b]0;unterminated title\nnext", "a\nnext"),  # OSC with no terminator: to EOL
    ],
)
def test_ansi_sequences_removed(raw: str, clean: str) -> None:
    assert strip_controls(raw) == clean


@pytest.mark.parametrize(
    "cp", [c for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)] + [0x7F] + list(range(0x80, 0xA0))
)
def test_c0_c1_controls_removed(cp: int) -> None:
    # A newline after the control: ESC followed by a printable byte is an escape sequence and
    # consumes that byte (as a terminal would), which test_ansi_sequences_removed covers.
    assert strip_controls(f"a{chr(cp)}\nb") == "a\nb"


def test_tab_and_newline_kept_carriage_return_normalised() -> None:
    assert strip_controls("a\tb\nc") == "a\tb\nc"
    assert strip_controls("a\r\nb\rc") == "a\nb\nc"


@pytest.mark.parametrize(
    "cp",
    list(range(0x202A, 0x202F))
    + list(range(0x2066, 0x206A))
    + [0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x2060, 0x061C, 0xFEFF],
)
def test_bidi_and_zero_width_removed(cp: int) -> None:
    assert strip_controls(f"abc{chr(cp)}def") == "abcdef"


def test_trojan_source_style_override_neutralised() -> None:
    raw = "access = \u202euser\u2066// admin\u2069\u202c granted"
    assert strip_controls(raw) == "access = user// admin granted"


@pytest.mark.parametrize(
    "text",
    [
        "café naïve Zürich crème brûlée",
        "cafe\u0301 with a combining accent",
        "中文文本，日本語のテキスト、한국어",
        "emoji 😀 👍🏽 ❤️ 🇬🇧",
        "العربية والعبرية עברית",
        "math ∑ ≤ ∞, currency € £ ¥, dash — and quote “x”",
        "line one\n\tindented line two",
    ],
)
def test_ordinary_text_kept(text: str) -> None:
    assert strip_controls(text) == text


_REMOVED = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
)


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs",))))
def test_output_has_no_controls_and_is_idempotent(text: str) -> None:
    out = strip_controls(text)
    assert not _REMOVED.search(out)
    assert "\r" not in out and "\x1b" not in out
    assert strip_controls(out) == out


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs", "Cc", "Cf"))))
def test_text_without_controls_unchanged(text: str) -> None:
    assert strip_controls(text) == text


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["\x1b[31m", "\x1b[0m", "\x1b]0;t\x07", "\u202e", "\u2066", "\u200b", "\x00", "\x9b"]
        ),
        max_size=10,
    ),
    st.text(st.characters(blacklist_categories=("Cs", "Cc", "Cf")), max_size=30),
)
def test_injected_controls_removed_around_text(junk: list[str], text: str) -> None:
    raw = "".join(junk) + text + "".join(reversed(junk))
    assert strip_controls(raw) == text


def test_one_line() -> None:
    assert one_line("  a\n\tb \x1b[31mc\x1b[0m\u202e d  ") == "a b c d"
