"""A paper's furniture that reached PDF reports as findings (issue 19, second pass): table-of-
contents lines with dot leaders, the keyword line of a paper's front matter, numbered section
headings, and sentences cut off before a display equation or a code listing. Every example is
written for this test (none is taken from a stored PDF)."""

from __future__ import annotations

import pytest

from mole_dag.mining.extractive import mine_sentences
from mole_dag.mining.furniture import non_claim_reason
from mole_dag.mining.relevance import TermStats
from mole_dag.skills.protocol import MineRequest


@pytest.mark.parametrize(
    "line",
    [
        "2 Why are tide tables printed for each harbour? . . . . . . . . . . . . . . . . 7",
        "4.1 Tidal ranges along the north coast ........................ 12",
        "3 How do I set the harbour clock to local time? . . . . . . . . . . . . . . . .",
    ],
)
def test_a_table_of_contents_line_is_navigation(line: str) -> None:
    assert non_claim_reason(line) == "navigation"


@pytest.mark.parametrize(
    "line",
    [
        "Keywords: tides, harbours, sea level, time series, R.",
        "Key words: tidal prediction; harmonic analysis; harbour pilots.",
        "JEL classification: C22, C53.",
    ],
)
def test_a_papers_keyword_line_is_not_a_claim(line: str) -> None:
    assert non_claim_reason(line) == "boilerplate"


@pytest.mark.parametrize(
    "sentence",
    [
        # an ellipsis and a sequence written with spaced dots are prose, not leaders
        "The gauges record x1, . . . , xn at each harbour every ten minutes.",
        "The harbour master said the tide was late... and then it came in fast.",
    ],
)
def test_spaced_dots_in_prose_are_not_a_leader(sentence: str) -> None:
    assert non_claim_reason(sentence) is None


QUESTION = "How does the tidal model choose the harmonic constituents for a harbour?"
STATS = TermStats.from_sentences(
    [
        "The tidal model choose harmonic constituents harbour.",
        *(f"Unrelated line {i} about weather, rainfall and inland rivers." for i in range(60)),
    ]
)


def _mined(chunk: str) -> list[str]:
    req = MineRequest(QUESTION, QUESTION, chunk, "Tidal models for harbours", STATS)
    return [d.quote for d in mine_sentences(req)]


def test_a_numbered_section_heading_is_not_mined() -> None:
    """A paper's heading "4.3. Choosing the harmonic constituents of the tidal model" sits in
    a block of its own, but its number splits off as a sentence of its own: the block is still
    one short unpunctuated line, a heading."""
    chunk = (
        "The gauges were read by hand until 1950.\n\n"
        "4.3. Choosing the harmonic constituents of the tidal model\n\n"
        "For each harbour the tidal model keeps the constituents whose amplitude exceeds "
        "one centimetre in a year of records."
    )
    mined = _mined(chunk)
    assert not any("Choosing the harmonic" in q for q in mined)
    assert any(q.startswith("For each harbour") for q in mined)


@pytest.mark.parametrize(
    "lead_in",
    [
        "The tidal model for a harbour with harmonic constituents is given by",
        "The harmonic constituents of the tidal model can be chosen for each harbour via",
        "For a harbour, the tidal model computes its harmonic constituents as follows, using the",
    ],
)
def test_a_sentence_cut_off_before_a_display_is_not_mined(lead_in: str) -> None:
    """A paper's sentence that runs into a display equation or a code listing stops at a
    function word ("is given by", "via", "the"): what it says is in the display, which is not
    in the text. Quoted, it is a fragment."""
    chunk = (
        f"The gauges were read by hand until 1950. {lead_in}\n\nh(t) = sum A cos(w t + p)\n\n"
        "For each harbour the tidal model keeps the constituents whose amplitude exceeds "
        "one centimetre in a year of records."
    )
    mined = _mined(chunk)
    assert not any(q.startswith(lead_in[:30]) for q in mined)
    assert any(q.startswith("For each harbour") for q in mined)
