"""Hypothesis templates (names looked up, never interpolated) and the model-free chooser."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from survey_data import survey_csv  # noqa: F401 - fixture

from mole_dag.core import Unit
from mole_dag.local_data import boundary, hypothesis
from mole_dag.local_data.choose_extractive import choose_hypotheses
from mole_dag.local_data.connector import Dataset
from mole_dag.local_data.refusal import Reason, Refused, Stage
from mole_dag.local_data.sqlguard import guard
from mole_dag.skills.view import HypothesisChoice
from mole_dag.skillsets.extractive import ExtractiveSkills


@pytest.fixture(scope="module")
def survey(survey_csv: Path) -> Iterator[Dataset]:  # noqa: F811
    ds = Dataset.open(survey_csv)
    yield ds
    ds.close()


GOOD = [
    HypothesisChoice("count_by_group", {"group": "plan"}),
    HypothesisChoice("mean_by_group", {"group": "region", "value": "income"}),
    HypothesisChoice("median_by_group", {"group": "satisfaction", "value": "age"}),
    HypothesisChoice("proportion_by_group", {"group": "region", "outcome": "renewed"}),
    HypothesisChoice("correlation", {"x": "income", "y": "age"}),
    HypothesisChoice("distribution", {"value": "age"}, buckets=10),
    HypothesisChoice("distribution", {"value": "income"}),
]


@pytest.mark.parametrize("choice", GOOD, ids=lambda c: c.template)
def test_every_template_renders_sql_the_guard_accepts(
    survey: Dataset, choice: HypothesisChoice
) -> None:
    rendered = hypothesis.render(choice, survey)
    g = guard(rendered.sql, survey)
    assert g.sql == rendered.sql  # templates already render canonical SQL
    crossing = boundary.ask_template(survey, choice)
    assert crossing.min_rows >= 5 and crossing.template == choice.template


REFUSED = [
    (HypothesisChoice("select_star", {"group": "region"}), Reason.UNKNOWN_TEMPLATE),
    (HypothesisChoice("count_by_group", {"grp": "region"}), Reason.BAD_ARGUMENTS),
    (
        HypothesisChoice("count_by_group", {"group": "region", "extra": "plan"}),
        Reason.BAD_ARGUMENTS,
    ),
    (
        HypothesisChoice("count_by_group", {"group": 'region"; DROP TABLE data; --'}),
        Reason.UNKNOWN_COLUMN,
    ),
    (
        HypothesisChoice("count_by_group", {"group": "region FROM data UNION SELECT notes"}),
        Reason.UNKNOWN_COLUMN,
    ),
    (
        HypothesisChoice("mean_by_group", {"group": "notes", "value": "income"}),
        Reason.WITHHELD_COLUMN,
    ),
    (HypothesisChoice("count_by_group", {"group": "respondent_id"}), Reason.WITHHELD_COLUMN),
    (HypothesisChoice("count_by_group", {"group": "EMAIL"}), Reason.WITHHELD_COLUMN),
    (HypothesisChoice("count_by_group", {"group": "income"}), Reason.WRONG_COLUMN_ROLE),
    (
        HypothesisChoice("mean_by_group", {"group": "region", "value": "plan"}),
        Reason.WRONG_COLUMN_ROLE,
    ),
    (
        HypothesisChoice("proportion_by_group", {"group": "region", "outcome": "plan"}),
        Reason.WRONG_COLUMN_ROLE,
    ),
    (HypothesisChoice("correlation", {"x": "income", "y": "income"}), Reason.BAD_ARGUMENTS),
    (HypothesisChoice("distribution", {"value": "income"}, buckets=500), Reason.BAD_ARGUMENTS),
    (HypothesisChoice("count_by_group", {"group": "region"}, buckets=3), Reason.BAD_ARGUMENTS),
]


@pytest.mark.parametrize(("choice", "reason"), REFUSED, ids=lambda x: str(x)[:50])
def test_bad_choices_are_refused_with_the_right_reason(
    survey: Dataset, choice: HypothesisChoice, reason: Reason
) -> None:
    with pytest.raises(Refused) as got:
        hypothesis.render(choice, survey)
    assert (got.value.stage, got.value.reason) == (Stage.HYPOTHESIS, reason)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_names_are_looked_up_never_interpolated(survey: Dataset, name: str) -> None:
    """Whatever text a model sends as a column name, the SQL holds only profile names."""
    choice = HypothesisChoice("count_by_group", {"group": name})
    try:
        rendered = hypothesis.render(choice, survey)
    except Refused as r:
        assert r.reason in {Reason.UNKNOWN_COLUMN, Reason.WITHHELD_COLUMN, Reason.WRONG_COLUMN_ROLE}
        return
    col = survey.column(name)
    assert col is not None
    assert rendered.columns == {"group": col.name}
    expected = f'SELECT "{col.name}" FROM data WHERE NOT "{col.name}" IS NULL GROUP BY "{col.name}"'
    assert rendered.sql == expected


def test_model_free_chooser(survey: Dataset) -> None:
    view = survey.view("Does income differ between plans, and who renews?", hypothesis.CATALOGUE, 6)
    picked = choose_hypotheses(view)
    assert picked == choose_hypotheses(view)  # deterministic
    assert 1 <= len(picked) <= 6
    assert picked[0] == HypothesisChoice("mean_by_group", {"group": "plan", "value": "income"})
    assert (
        HypothesisChoice("proportion_by_group", {"group": "plan", "outcome": "renewed"}) in picked
    )
    withheld = {c.name for c in survey.columns if c.withheld}
    for choice in picked:
        assert not set(choice.columns.values()) & withheld
        assert boundary.ask_template(survey, choice).min_rows >= 5
    # Through the skills protocol, at no cost.
    got = ExtractiveSkills().hypothesize(view, Unit.USD_MICROS)
    assert got.value == picked and got.cost == 0
    assert ExtractiveSkills().estimate_hypothesize(view, Unit.TOKENS) == 0


def test_chooser_with_nothing_usable(tmp_path: Path) -> None:
    p = tmp_path / "ids.csv"
    p.write_text("id,email\n" + "".join(f"{i},u{i}@example.org\n" for i in range(20)), "utf-8")
    with Dataset.open(p) as ds:
        assert choose_hypotheses(ds.view("anything?", hypothesis.CATALOGUE, 6)) == []
