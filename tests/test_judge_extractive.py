"""Issue 31, item 3: an extractive judge that says only what it can show. A contradiction needs
the same subject and attribute with a different value (a figure, a date, a direction), or a
statement and its explicit negation; different entities, citations, versions, populations and
places are no dispute, and neither is a question against a statement. The rationale names the
subject, the attribute and both values. Pairs are written for this test in the shapes the issue
reports."""

from __future__ import annotations

import pytest

from mole_dag.verifier.extractive import judge_pair

NO_DISPUTE = [
    # two bibliography entries of different packages
    (
        "R package version 2.4-1, URL http://CRAN.R-project.org/package=pumpkin.",
        "R package version 1.0-3, URL http://CRAN.R-project.org/package=squash.",
    ),
    # two citations of different papers
    (
        "We use a modified version of Miller, Okafor, and Lund (2021) for the estimates.",
        "We use a modified version of Miller (2009) for the estimates.",
    ),
    # a question against a statement
    (
        "Do the growth curves of pumpkin fields flatten after the tenth week?",
        "The growth curves of pumpkin fields do not flatten after the tenth week.",
    ),
    # two places
    (
        "In Norway, the top 1 percent earned more than 14 percent of national income.",
        "In Chile, the top 1 percent earned about 5 percent of national income.",
    ),
    # two populations
    (
        "The vaccine cut hospital admissions by 40 percent in older adults.",
        "The vaccine cut hospital admissions by 25 percent in children.",
    ),
    # two releases: the number names the thing
    ("Widget 3.6 is now available for download.", "Widget 3.7 is now available for download."),
    # two figures that measure different things
    (
        "Sea level rose 20 centimetres in the last century.",
        "Sea level rose 3 millimetres per year in the last century.",
    ),
    # things that only share a figure's shape
    (
        "The distribution is symmetric about 0 for large samples.",
        "The mode of the gamma distribution is at 2 for large samples.",
    ),
    # a denial of a narrower claim (another population) than the one stated
    (
        "The drug raises the risk of stroke in adults.",
        "The drug does not raise the risk of stroke in older adults.",
    ),
    # a negation whose frame differs (another outcome)
    (
        "The drug raises the risk of stroke in adults.",
        "The drug does not raise the risk of dementia in adults.",
    ),
    # too thin a frame to name subject and attribute
    ("It was 5 in total.", "It was 7 in total."),
    # a negation in a concession denies a quantity, not the statement
    (
        "Package pumpkin provides many of the growth methods, but not all.",
        "The pumpkin package provides classes and growth methods for field data.",
    ),
]


@pytest.mark.parametrize(("a", "b"), NO_DISPUTE)
def test_different_things_are_no_dispute(a: str, b: str) -> None:
    assert judge_pair(a, b).relation != "contradicts"
    assert judge_pair(b, a).relation != "contradicts"


def test_a_figure_dispute_names_subject_attribute_and_both_values() -> None:
    v = judge_pair("The Rhine bridge is 330 metres long.", "The Rhine bridge is 300 metres long.")
    assert v.relation == "contradicts"
    assert "subject: Rhine bridge" in v.rationale
    assert "attribute: metres" in v.rationale
    assert "330" in v.rationale and "300" in v.rationale


def test_a_date_dispute() -> None:
    v = judge_pair(
        "The museum opened in 1931 after four years of work.",
        "The museum opened in 1934 after four years of work.",
    )
    assert v.relation == "contradicts"
    assert "attribute: opened" in v.rationale and "1931" in v.rationale and "1934" in v.rationale


def test_a_negation_names_what_is_negated() -> None:
    v = judge_pair(
        "The pumpkin extract is classified as a possible allergen because of early reports.",
        "The pumpkin extract is no longer classified as a possible allergen because the reports "
        "were not confirmed.",
    )
    assert v.relation == "contradicts"
    assert "subject: pumpkin extract" in v.rationale
    assert "'classified' vs 'no longer classified'" in v.rationale


def test_a_denial_of_what_the_other_states_with_more_detail() -> None:
    # What the second states (with a place and a period) implies what the first denies.
    v = judge_pair(
        "The Rhone glacier is not retreating.",
        "Satellite images show the Rhone glacier retreating by 30 metres a year in the Alps.",
    )
    assert v.relation == "contradicts"
    assert "'retreating' vs 'not retreating'" in v.rationale


def test_a_direction_dispute() -> None:
    v = judge_pair(
        "The seal population of the bay has been growing since the ban.",
        "The seal population of the bay has been shrinking since the ban.",
    )
    assert v.relation == "contradicts"
    assert "opposite directions (growing / shrinking)" in v.rationale
    assert "subject: seal population bay" in v.rationale


def test_the_same_things_with_different_entities_are_not_duplicates() -> None:
    a = "R package version 2.4-1, URL http://CRAN.R-project.org/package=pumpkin."
    b = "R package version 2.4-1, URL http://CRAN.R-project.org/package=squash."
    assert judge_pair(a, b).relation == "neither"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # one range, dashed two ways
        (
            "It is very likely (90-99% probability) that the dam raised the river by 2-3 metres.",
            "It is very likely (90–99% probability) that the dam raised the river by 2–3 metres.",
        ),
        # two dates heading two events: when each held, not two values of one
        (
            "1931/1932: the lake turned to a 'low' phase.",
            "1968/1969: the lake turned to a 'low' phase.",
        ),
        # two negations make a statement
        (
            "Genetic variation is a prerequisite for adaptation by selection.",
            "Without genetic variation, there would be no adaptation by selection.",
        ),
    ],
)
def test_no_dispute_by_notation(a: str, b: str) -> None:
    assert judge_pair(a, b).relation != "contradicts"
