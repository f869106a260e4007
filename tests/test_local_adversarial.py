"""A hostile mind against the boundary. A scripted model answers the hypothesis skill with
hostile choices, and (toolkit mode) sends hostile SQL; each request is refused with the right
reason and recorded, and nothing row-level appears in any envelope, log, report or crossing."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from survey_data import no_fold, row_level_markers, survey_csv  # noqa: F401 - fixture

from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.core import Unit
from mole_dag.local_data import audit, gate
from mole_dag.local_data.crossings import format_listing, gated_query, listing
from mole_dag.local_data.findings import analyse_local_data
from mole_dag.output.local_data_section import local_data_section
from mole_dag.session import create_session
from mole_dag.skills.protocol import Metered
from mole_dag.skills.view import HypothesisChoice, ProfileView
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store

SQL_IN_A_NAME = "region\" FROM data; SELECT * FROM read_csv('/etc/passwd') --"

# (what the scripted model answers, the stage and reason it must be refused for)
HOSTILE_CHOICES: list[tuple[Any, tuple[str, str] | None]] = [
    (
        HypothesisChoice("mean_by_group", {"group": "notes", "value": "income"}),
        ("hypothesis", "withheld_column"),
    ),
    (
        HypothesisChoice("count_by_group", {"group": SQL_IN_A_NAME}),
        ("hypothesis", "unknown_column"),
    ),
    (
        HypothesisChoice("count_by_group", {"group": "respondent_id"}),
        ("hypothesis", "withheld_column"),
    ),
    (HypothesisChoice("SELECT * FROM data", {}), ("hypothesis", "unknown_template")),
    (
        {"template": "count_by_group", "columns": {"group": "region"}},
        ("hypothesis", "bad_arguments"),
    ),
    # A bucket of 1 (and 2, and 1): the regions under the floor are folded, and their
    # remainder (4 rows) is still under it: suppressed, recorded, the rest leaves. The profile
    # told the total, so the smallest named region goes too (issue 11; since issue 22 decided
    # by the query audit): a second refusal, secondary_suppression, follows this one.
    (HypothesisChoice("count_by_group", {"group": "region"}), ("gate", "below_floor")),
    (HypothesisChoice("mean_by_group", {"group": "plan", "value": "income"}), None),
]

HOSTILE_SQL = [
    ("SELECT * FROM data", "star"),
    ("SELECT count(*) FROM read_csv('/etc/passwd')", "table_function"),
    ("SELECT * FROM read_csv('/etc/passwd')", "table_function"),
    ("SELECT respondent_id, count(*) FROM data GROUP BY respondent_id", "withheld_column"),
    ("SELECT income FROM data LIMIT 1", "row_values"),
    ("SELECT count(*) FROM data UNION SELECT count(*) FROM data", "set_operation"),
    (
        "SELECT count(*) FROM data /* nothing to see */; SELECT notes FROM data",
        "multiple_statements",
    ),
    ("SELECT count(*) FROM data -- ;\n; SELECT email FROM data", "multiple_statements"),
    # a bucket of 1 by WHERE: one row's income
    (
        "SELECT avg(income), count(*) FROM data WHERE income > 123456 AND income < 123457",
        "below_floor",
    ),
    # one row's income hidden inside a big group's aggregate
    (
        "SELECT region, sum(CASE WHEN income > 123456 THEN income ELSE 0 END) FROM data "
        "GROUP BY region",
        "aggregate_argument",
    ),
    ('SELECT count(DISTINCT "EMAIL") FROM data', "withheld_column"),
    ("SELECT plan, count(*) FROM data GROUP BY plan", None),  # allowed: 'other' = 7 rows
]


class ScriptedSkills(ExtractiveSkills):
    """The extractive skills with a hostile hypothesis skill."""

    name = "scripted"

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.views: list[ProfileView] = []

    def hypothesize(self, view: ProfileView, unit: Unit) -> Metered[list[Any]]:
        self.views.append(view)
        return Metered(list(self.answers), model=self.name)


@pytest.fixture
def session(store: Store, survey_csv: Path) -> str:  # noqa: F811
    bal = create_session(
        store,
        "Does income differ by region and plan?",
        Unit.USD_MICROS,
        500_000,
        data=str(survey_csv),
    )
    return bal.session_id


def _everything_that_left(store: Store, sid: str) -> str:
    """Every stored text a reader, a model or a log could see for this session."""
    parts: list[str] = []
    for sql in [
        "SELECT * FROM local_crossings",
        "SELECT * FROM local_refusals",
        "SELECT * FROM claims",
        "SELECT * FROM chunks",
        "SELECT * FROM sources",
        "SELECT * FROM local_findings",
        "SELECT * FROM dead_ends",
        "SELECT * FROM tool_calls",
        "SELECT * FROM sub_questions",
    ]:
        for row in store.rows(sql + " WHERE session_id = $s", {"s": sid}):
            parts.extend(str(v) for v in row.values())
    parts.append(format_listing(sid, listing(store, sid)))
    parts.extend(local_data_section(store, sid))
    return "\n".join(parts)


def test_hostile_choices_and_statements_are_refused_and_recorded(
    store: Store, session: str, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    skills = ScriptedSkills([c for c, _ in HOSTILE_CHOICES])
    run = Run(store, Ledger(store), skills, session)
    res = analyse_local_data(run, max_hypotheses=10)

    # The model saw the profile: names, types, roles, counts; never a value.
    (view,) = skills.views
    assert {c.name for c in view.columns} >= {"notes", "email", "region"}
    assert res.asked == len(HOSTILE_CHOICES)
    assert res.crossings == 2  # the bucket-of-1 answer (minus its suppressed remainder), plan

    for sql, _ in HOSTILE_SQL:
        gated_query(store, session, sql)

    got = listing(store, session)
    choices = [e for _, e in HOSTILE_CHOICES if e]
    at = choices.index(("gate", "below_floor")) + 1
    choices.insert(at, ("gate", "secondary_suppression"))
    expected = choices + [
        ("gate", "below_floor") if r == "below_floor" else ("sqlguard", r)
        for _, r in HOSTILE_SQL
        if r
    ]
    assert [(r.stage, r.reason) for r in got.refusals] == expected
    for r in got.refusals:
        assert r.detail.strip() and r.request.strip()
    # The profile, two template crossings, one allowed statement.
    assert [c.kind for c in got.crossings] == ["profile", "template", "template", "sql"]
    assert all(c.min_rows >= 5 for c in got.crossings)
    # A refusal that still let part of an answer out points at that crossing.
    partial = [r for r in got.refusals if r.crossing_id]
    assert [r.reason for r in partial] == ["below_floor", "secondary_suppression"]
    assert partial[0].crossing_id == partial[1].crossing_id

    # Nothing row-level in any envelope, crossing, refusal, claim, log or output.
    text = _everything_that_left(store, session)
    logs = "\n".join(r.getMessage() for r in caplog.records)
    out = capsys.readouterr()
    for marker in row_level_markers():
        assert marker not in text, marker
        assert marker not in logs, marker
        assert marker not in out.out + out.err, marker


def test_an_envelope_the_exfil_check_stops_is_not_kept(
    store: Store, session: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Break the gate (no folding, no floor): the exfil check withholds the envelope, records the
    refusal with the envelope's hash only, and the rare labels reach no table."""

    def no_floor_sql(dataset, guarded):  # noqa: ANN001, ANN202
        key_sql = [e.sql(dialect="duckdb") for _, e in guarded.keys]
        keys = ", ".join(f'{k} AS "k{i}"' for i, k in enumerate(key_sql))
        return (
            f'SELECT {keys}, count(*) AS "__mole_n" FROM data GROUP BY {", ".join(key_sql)}',
            "b",
            "n",
        )

    monkeypatch.setattr(gate, "fold_rows", no_fold)
    monkeypatch.setattr(gate, "fold_sql", no_floor_sql)
    # The query audit would suppress groups that small itself (a second line): off here.
    monkeypatch.setattr(
        audit, "control", lambda rows, groups, a, **_: audit.Controlled(rows, 0, [], [], a)
    )
    outcome = gated_query(store, session, "SELECT region FROM data GROUP BY region")
    assert outcome.crossing is None and outcome.refused is not None
    assert (outcome.refused.stage, outcome.refused.reason) == ("exfil", "leak_under_floor")
    got = listing(store, session)
    assert got.crossings == []
    (refusal,) = got.refusals
    assert refusal.withheld_sha256 is not None and len(refusal.withheld_sha256) == 64
    text = _everything_that_left(store, session)
    for label in ("Isle of Rum", "Far Skerry", "Lone Atoll"):
        assert label not in text
