"""Issue 11, the local-data gate across queries: two aggregates that each pass the floor can
still differ by one row (differencing), and a total minus the named groups can still isolate a
suppressed "other". Each test replays an attack through the path both `mole research` and MCP
`local_query` use (crossings.Recorder), in one session, and checks what left. Since issue 22 the
query audit (audit.py) refuses these, under the reason `query_audit`; issue 22's own attacks
(three queries, two sessions) are in test_local_audit.py.

The data: 60 respondents. age 36 has 26 of them, one of whom (the target) is the only one with
income 1 and educ 3; age 37 has exactly one respondent with educ 5; age 40 and 46 appear once
each; party C has 3 rows (a group under the floor)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mole_dag.core import Unit
from mole_dag.local_data.crossings import format_listing, gated_query, listing
from mole_dag.local_data.refusal import Reason, Stage
from mole_dag.session import create_session
from mole_dag.store import Store
from mole_dag.store.records import RefusalRow

K = 5
# The one respondent a differencing attack isolates (row 0): answers a reader must never learn.
TARGET = {"vote": 1, "ClinLR": 7}


def _rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    # 26 at age 36; row 0 is the target (the only income 1 and educ 3 in the file).
    rows.append({"age": 36, "income": 1, "educ": 3, **TARGET, "party": "A"})
    for i in range(25):
        rows.append(
            {
                "age": 36,
                "income": 2 + i % 4,
                "educ": [1, 2, 4][i % 3],
                "vote": i % 2,
                "ClinLR": 1 + i % 5,
                "party": "AB"[i % 2],
            }
        )
    # Others: ages 30..45 without 36, 37, 40 (those are placed by hand), then 37, 40, 46 once.
    others = [a for a in range(30, 46) if a not in (36, 37, 40)]
    for i in range(30):
        rows.append(
            {
                "age": others[i % len(others)],
                "income": 2 + i % 4,
                "educ": [1, 2, 4][i % 3],
                "vote": (i + 1) % 2,
                "ClinLR": 2 + i % 5,
                "party": "AB"[i % 2] if i < 27 else "C",
            }
        )
    rows.append({"age": 37, "income": 4, "educ": 5, "vote": 0, "ClinLR": 3, "party": "B"})
    rows.append({"age": 40, "income": 3, "educ": 2, "vote": 1, "ClinLR": 6, "party": "A"})
    rows.append({"age": 46, "income": 2, "educ": 1, "vote": 1, "ClinLR": 5, "party": "B"})
    return rows


@pytest.fixture
def anes_csv(tmp_path: Path) -> Path:
    cols = ["age", "income", "educ", "vote", "ClinLR", "party"]
    lines = [",".join(cols)] + [",".join(str(r[c]) for c in cols) for r in _rows()]
    path = tmp_path / "anes.csv"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


@pytest.fixture
def sid(store: Store, anes_csv: Path) -> str:
    return create_session(
        store, "How do respondents vote?", Unit.USD_MICROS, 500_000, data=str(anes_csv)
    ).session_id


def _rows_out(store: Store, session: str) -> list[dict[str, Any]]:
    return [json.loads(c.envelope) for c in listing(store, session).crossings]


def _audit_refusals(store: Store, session: str) -> list[RefusalRow]:
    return [
        r
        for r in listing(store, session).refusals
        if (r.stage, r.reason) == (str(Stage.GATE), str(Reason.QUERY_AUDIT))
    ]


def _sums(env: dict[str, Any]) -> tuple[int, list[Any]]:
    (row,) = env["rows"]
    return row["n"], row["values"]


# --- the two attacks seen -----------------------------------------------------------------------

Q36 = 'SELECT sum(vote), sum("ClinLR"), count(*) FROM data WHERE age = 36'


def test_differencing_by_and_not_is_refused(store: Store, sid: str) -> None:
    first = gated_query(store, sid, Q36)
    assert first.crossing is not None and _sums(first.crossing.envelope)[0] == 26
    second = gated_query(store, sid, Q36 + " AND NOT (income = 1 AND educ = 3)")
    assert second.crossing is None and second.refused is not None
    assert (second.refused.stage, second.refused.reason) == (Stage.GATE, Reason.QUERY_AUDIT)
    (refusal,) = _audit_refusals(store, sid)
    assert "AND NOT" in refusal.request and refusal.detail.strip()
    # The row set is bookkeeping inside the boundary: nothing of it is printed or returned.
    text = format_listing(sid, listing(store, sid))
    assert "row_set" not in text and "bits" not in text


def test_total_minus_named_groups_cannot_isolate_the_other(store: Store, sid: str) -> None:
    grouped = gated_query(store, sid, "SELECT party, sum(age), count(*) FROM data GROUP BY party")
    total = gated_query(store, sid, "SELECT sum(age), count(*) FROM data")
    assert grouped.crossing is not None
    _assert_no_small_remainder(grouped.crossing.envelope, total)


def test_total_first_then_groups_cannot_isolate_the_other(store: Store, sid: str) -> None:
    total = gated_query(store, sid, "SELECT sum(age), count(*) FROM data")
    grouped = gated_query(store, sid, "SELECT party, sum(age), count(*) FROM data GROUP BY party")
    assert total.crossing is not None and grouped.crossing is not None
    _assert_no_small_remainder(grouped.crossing.envelope, total)
    # The cell given up to protect the remainder is recorded as a refusal next to the crossing.
    got = listing(store, sid)
    assert any(
        r.reason == str(Reason.SECONDARY_SUPPRESSION) and r.crossing_id for r in got.refusals
    )


def _assert_no_small_remainder(grouped_env: dict[str, Any], total: Any) -> None:
    shown = sum(r["n"] for r in grouped_env["rows"])
    if total.crossing is None:
        assert total.refused.reason == Reason.QUERY_AUDIT
        return
    n_total = _sums(total.crossing.envelope)[0]
    # What subtraction leaves is either nothing or at least K rows, never party C's 3.
    assert n_total - shown == 0 or n_total - shown >= K, (n_total, shown)


# --- variants -----------------------------------------------------------------------------------


def test_differencing_by_or_adding_one_row_is_refused(store: Store, sid: str) -> None:
    assert gated_query(store, sid, Q36).crossing is not None
    second = gated_query(store, sid, Q36 + " OR (age = 37 AND educ = 5)")
    assert second.crossing is None and second.refused is not None
    assert second.refused.reason == Reason.QUERY_AUDIT


def test_a_range_widened_by_one_row_is_refused(store: Store, sid: str) -> None:
    base = 'SELECT avg("ClinLR"), count(*) FROM data WHERE age BETWEEN 41 AND {}'
    assert gated_query(store, sid, base.format(45)).crossing is not None
    wider = gated_query(store, sid, base.format(46))
    assert wider.crossing is None and wider.refused is not None
    assert wider.refused.reason == Reason.QUERY_AUDIT
    # A range that differs by many rows is an ordinary question and still answered. Not any
    # range: with the total (the profile publishes the row count) 30..44 would leave ages 45 and
    # 46 (three respondents) as its complement, and 41..44 would differ from 41..45 by age 45
    # (two). 30..42 with 41..45 and the total isolates nothing under five rows.
    assert gated_query(store, sid, base.format(44).replace("41", "30")).crossing is None
    assert gated_query(store, sid, base.format(42).replace("41", "30")).crossing is not None


def test_two_group_bys_whose_groups_differ_by_one_row(store: Store, sid: str) -> None:
    first = gated_query(
        store, sid, "SELECT age >= 40 AS old, sum(vote), count(*) FROM data GROUP BY age >= 40"
    )
    assert first.crossing is not None and len(first.crossing.envelope["rows"]) == 2
    # age 40 is one respondent: every group of this split differs from one above by that row.
    second = gated_query(
        store, sid, "SELECT age >= 41 AS old, sum(vote), count(*) FROM data GROUP BY age >= 41"
    )
    if second.crossing is not None:
        earlier = {r["n"] for r in first.crossing.envelope["rows"]}
        for row in second.crossing.envelope["rows"]:
            assert all(abs(row["n"] - n) >= K for n in earlier), row
    assert _audit_refusals(store, sid)


def test_history_is_shared_across_processes_and_with_mcp(tmp_path: Path, anes_csv: Path) -> None:
    """The first query through the research path's store handle, the second through MCP's
    local_query on a new handle (as a second process would open it): still refused."""
    from mole_dag.mcp import sessions

    path = tmp_path / "shared.duckdb"
    with Store(path) as one:
        session = create_session(one, "q?", Unit.USD_MICROS, 500_000, data=str(anes_csv)).session_id
        assert gated_query(one, session, Q36).crossing is not None
    with Store(path) as two:
        got = sessions.local_query(two, session, Q36 + " AND NOT (income = 1 AND educ = 3)")
        assert got["ok"] is False and got["refused"]["reason"] == "query_audit"
        # Asking the same question again is no attack: the same rows, the same answer.
        again = sessions.local_query(two, session, Q36)
        assert again["ok"] is True


def test_ordinary_questions_pass(store: Store, sid: str) -> None:
    for sql in [
        "SELECT avg(income), count(*) FROM data",
        "SELECT avg(income), count(*) FROM data WHERE age = 36",
        "SELECT party, avg(income), count(*) FROM data GROUP BY party",
        "SELECT educ, count(*) FROM data GROUP BY educ",
        "SELECT avg(income), count(*) FROM data WHERE age = 36",
    ]:
        out = gated_query(store, sid, sql)
        assert out.crossing is not None, (sql, out.refused)


def test_a_column_named_rowid_is_refused_at_attach(tmp_path: Path) -> None:
    """The row sets name rows by DuckDB's rowid; a column of that name would hide it."""
    from mole_dag.local_data.connector import DataError, Dataset

    p = tmp_path / "r.csv"
    p.write_text("rowid,x\n" + "".join(f"{i % 3},{i}\n" for i in range(10)), "utf-8")
    with pytest.raises(DataError, match="rowid"):
        Dataset.open(p)


def test_a_trimmed_answer_reverifies_against_the_audit_before_it(store: Store, sid: str) -> None:
    from mole_dag.local_data.findings import reverify

    # The difference of the two halves of age 36 would be the target; since issue 22 the audit
    # sees that the total (published by the profile) less the group "not 36" is "36", so neither
    # group of this split may leave once the 25 are answered: the whole answer is refused.
    gated_query(store, sid, Q36 + " AND NOT (income = 1 AND educ = 3)")  # 25 rows
    split = gated_query(
        store, sid, "SELECT age = 36 AS a36, sum(vote), count(*) FROM data GROUP BY age = 36"
    )
    assert split.crossing is None and split.refused is not None
    assert split.refused.reason == Reason.QUERY_AUDIT
    # Income 1 is the target alone (folded, then suppressed under the floor); the total less the
    # four incomes shown would be that one respondent, so the smallest of them is given up too.
    grouped = gated_query(
        store, sid, "SELECT income, sum(vote), count(*) FROM data GROUP BY income"
    )
    assert grouped.crossing is not None
    shown = [r["n"] for r in grouped.crossing.envelope["rows"]]
    assert len(shown) == 3 and grouped.crossing.envelope["also_suppressed"] == 1
    assert [r.reason for r in grouped.crossing.partials] == [
        Reason.BELOW_FLOOR,
        Reason.SECONDARY_SUPPRESSION,
    ]
    # A later answer does not change how this one is re-run: against the audit before it.
    assert gated_query(store, sid, "SELECT educ, count(*) FROM data GROUP BY educ").crossing
    assert reverify(store, grouped.crossing_id) == (True, "re-run reproduces the envelope exactly")
