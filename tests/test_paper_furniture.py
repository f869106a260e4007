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


@pytest.mark.parametrize(
    "lead_in",
    [
        "The constituents of the tidal model for a harbour are listed as follows:",
        "The tidal model for a harbour keeps its harmonic constituents, for example:",
        "The tidal model of each harbour with harmonic constituents is given by:",
    ],
)
def test_a_colon_that_introduces_a_display_is_not_mined(lead_in: str) -> None:
    """A sentence ending in a colon after an announcing word or a function word ("as follows:",
    "for example:", "given by:") says nothing until the display, which is not in the text."""
    chunk = f"The gauges were read by hand until 1950. {lead_in}\n\nh(t) = sum A cos(w t + p)\n\n"
    assert not any(q.startswith(lead_in[:30]) for q in _mined(chunk))


def test_a_finished_statement_before_a_colon_is_mined_without_the_colon() -> None:
    """Seen (qa-pdf-dev, lmtest's vignette): "By default the second and third powers of the
    fitted values are chosen:" runs into a code listing, but it is the answer; it was refused
    for its colon. The quote leaves the colon out and is still verbatim."""
    statement = "By default the harmonic constituents of each harbour are kept in the tidal model"
    chunk = (
        f"The gauges were read by hand until 1950. {statement}:\n\n> tides(harbour)\n\n"
        "The harbour master keeps the records."
    )
    mined = _mined(chunk)
    assert statement in mined
    assert all(q in chunk for q in mined)


def test_a_sentence_that_points_back_is_mined_with_the_one_before() -> None:
    """Seen (qa-pdf-dev, Rcpp sugar's vignette): "... can not be converted to bool. Instead one
    must use is_true ..." holds its answer across two sentences, the second of which says
    nothing alone. A sentence opening with a connective that points back is quoted together
    with the sentence before it (same paragraph), and neither is also quoted alone."""
    first = "The harmonic constituents of a tidal model can not be fitted for a small harbour."
    second = "Instead one must use the tidal model of the nearest large harbour."
    chunk = f"The gauges were read by hand until 1950. {first} {second}\n\nUnrelated closing words."
    mined = _mined(chunk)
    assert f"{first} {second}" in mined
    assert first not in mined and second not in mined
    # Across a paragraph break the opening word points at nothing the quote could hold.
    apart = _mined(f"{first}\n\n{second}")
    assert f"{first} {second}" not in apart and all("\n\n" not in q for q in apart)


def test_a_pair_too_long_to_quote_is_mined_sentence_by_sentence() -> None:
    """Seen (qa-pdf-dev, coin's vignette): "Strasser and Weber (1999) proved ... Thus, the
    asymptotic ... as implemented in package mvtnorm ..." joined past the claim's length cap,
    and the answer, in the second sentence, was mined in neither form."""
    first = "The gauges were read by hand " + "and checked again " * 40 + "until 1950."
    second = "Thus, the tidal model for each harbour keeps the harmonic constituents of its record."
    mined = _mined(f"{first} {second}")
    assert second in mined
