"""The gate (folding, suppression, the floor), the pairwise tests with Holm's correction, and the
exfil check that re-derives every count from the rows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from survey_data import no_fold, survey_csv  # noqa: F401 - fixture

from mole_dag.local_data import audit, boundary, exfil, gate
from mole_dag.local_data.audit import Audit, Controlled
from mole_dag.local_data.connector import FLOOR, Dataset
from mole_dag.local_data.refusal import Reason, Refused, Stage
from mole_dag.local_data.sqlguard import guard
from mole_dag.local_data.stats import holm
from mole_dag.skills.view import HypothesisChoice


@pytest.fixture(scope="module")
def survey(survey_csv: Path) -> Iterator[Dataset]:  # noqa: F811
    ds = Dataset.open(survey_csv)
    yield ds
    ds.close()


# Groups: big A (10 rows), big B (6), small C (3), D (1), E (1): C+D+E = 5 -> "other" shown.
# Column `tiny`: X (8), Y (3), Z (1): Y+Z = 4 -> "other" suppressed.
SMALL = ["A"] * 10 + ["B"] * 6 + ["C"] * 3 + ["D", "E"]
TINY = ["X"] * 8 + ["Y"] * 3 + ["Z"] + ["X"] * 9
VALUES = [float(v) for v in [*range(10), *range(100, 106), 1000, 1001, 1002, 5000, 7000]]


@pytest.fixture
def small(tmp_path: Path) -> Iterator[Dataset]:
    # `sparse` is set on one row of A (4242.5) and on every row of B: a group of ten rows whose
    # average of `sparse` would be that one row's value.
    lines = ["grp,tiny,val,sparse,note"]
    for i, (g, t, v) in enumerate(zip(SMALL, TINY, VALUES, strict=True)):
        sparse = "4242.5" if i == 0 else (str(float(i)) if g == "B" else "")
        lines.append(f"{g},{t},{v},{sparse},free text number {i} that is long enough to be prose")
    p = tmp_path / "small.csv"
    p.write_text("\n".join(lines) + "\n", "utf-8")
    ds = Dataset.open(p)
    yield ds
    ds.close()


def _ask(ds: Dataset, sql: str) -> gate.GateResult:
    return gate.run(ds, guard(sql, ds), request={"kind": "sql"})


# --- Holm ---------------------------------------------------------------------------------------


def test_holm_matches_a_worked_example() -> None:
    # Sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> monotone 0.06.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([0.2]) == [0.2]
    assert holm([]) == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_holm_properties(ps: list[float]) -> None:
    adj = holm(ps)
    m = len(ps)
    for p, a in zip(ps, adj, strict=True):
        assert p <= a + 1e-12 <= min(1.0, m * p) + 2e-12
    order = sorted(range(m), key=lambda i: ps[i])
    assert all(adj[order[i]] <= adj[order[i + 1]] + 1e-12 for i in range(m - 1))


# --- folding ------------------------------------------------------------------------------------


def test_small_groups_fold_into_one_unnamed_other(small: Dataset) -> None:
    res = _ask(small, "SELECT grp, count(*) AS n, avg(val) AS mean FROM data GROUP BY grp")
    rows = res.envelope["rows"]
    assert [r.get("keys") for r in rows] == [["A"], ["B"], None]
    other = rows[-1]
    assert other == {"other": True, "n": 5, "values": [5, pytest.approx(np.mean(VALUES[16:]))]}
    # The "other" mean is over the union of the small groups' rows, not a mean of means.
    assert res.suppressed is None and res.envelope["suppressed"] is False
    assert res.min_rows == 5
    text = json.dumps(res.envelope)
    for label in ("C", "D", "E"):
        assert f'"{label}"' not in text


def test_other_still_under_the_floor_is_suppressed(small: Dataset) -> None:
    # D + E = 2 rows: suppressed. A and B leave: with the total (which the profile tells) they
    # leave C + D + E, five rows. The remainder could only be isolated with the count of the
    # WHERE's rows, and the audit refuses that count once A and B are out (issue 22).
    res = gate.run(
        small,
        guard("SELECT grp, count(*) FROM data WHERE grp <> 'C' GROUP BY grp", small),
        request={"kind": "sql"},
        audit=Audit.of(small),
    )
    assert [r.get("keys") for r in res.envelope["rows"]] == [["A"], ["B"]]
    assert res.envelope["suppressed"] is True and "also_suppressed" not in res.envelope
    assert res.suppressed is not None and res.suppressed.reason == Reason.BELOW_FLOOR
    text = json.dumps(res.envelope)
    assert '"D"' not in text and '"E"' not in text
    assert res.audit is not None
    with pytest.raises(Refused) as closing:
        gate.run(
            small,
            guard("SELECT count(*) FROM data WHERE grp <> 'C'", small),
            request={"kind": "sql"},
            audit=res.audit,
        )
    assert (closing.value.stage, closing.value.reason) == (Stage.GATE, Reason.QUERY_AUDIT)
    # tiny: X (17 rows) is the only group over the floor, and Y + Z (4) are under it. X alone
    # is the total less those 4 rows, so nothing leaves (before issue 11, X left).
    with pytest.raises(Refused) as got:
        _ask(small, "SELECT tiny, count(*) FROM data GROUP BY tiny")
    assert (got.value.stage, got.value.reason) == (Stage.GATE, Reason.SECONDARY_SUPPRESSION)


def test_ungrouped_statement_under_the_floor_is_refused(small: Dataset) -> None:
    with pytest.raises(Refused) as got:
        _ask(small, "SELECT avg(val) FROM data WHERE grp = 'D'")
    assert (got.value.stage, got.value.reason) == (Stage.GATE, Reason.BELOW_FLOOR)
    with pytest.raises(Refused):
        _ask(small, "SELECT count(*) FROM data WHERE val > 100000")  # zero rows
    assert _ask(small, "SELECT avg(val) FROM data WHERE grp = 'A'").envelope["rows"][0]["n"] == 10


def test_a_figure_resting_on_one_non_null_value_does_not_leave(small: Dataset) -> None:
    # A has ten rows but one value of `sparse`: folded, and "other" (A, C, D, E) has one value
    # of `sparse` in fifteen rows: suppressed. Only B (six values) could be named, but avg(sparse)
    # over all seven values less B's six would be A's one value: nothing leaves (issue 11; before
    # it, B left alone; since issue 22 the query audit says so).
    with pytest.raises(Refused) as whole:
        _ask(small, "SELECT grp, avg(sparse) AS mean FROM data GROUP BY grp")
    assert whole.value.reason == Reason.SECONDARY_SUPPRESSION
    assert "4242" not in whole.value.detail
    with pytest.raises(Refused) as got:
        _ask(small, "SELECT avg(sparse), count(*) FROM data WHERE grp = 'A'")
    assert got.value.reason == Reason.BELOW_FLOOR
    # corr rests on the rows where both columns are set (7 here: A's one and B's six).
    assert _ask(small, "SELECT corr(val, sparse) FROM data").min_rows == 7
    # And the exfil check, recounting per aggregate, refuses a forged row for A.
    g = guard("SELECT grp, avg(sparse) AS mean FROM data GROUP BY grp", small)
    forged = {
        "rows": [
            {"keys": ["A"], "n": 10, "values": [4242.5]},
            {"keys": ["B"], "n": 6, "values": [8.5]},
        ]
    }
    with pytest.raises(Refused) as leak:
        exfil.verify_no_leak(small, g, forged)
    assert leak.value.reason == Reason.LEAK_UNDER_FLOOR


def test_every_group_small_leaves_nothing(small: Dataset) -> None:
    with pytest.raises(Refused) as got:
        _ask(
            small,
            "SELECT grp, count(*) FROM data WHERE grp IN ('D', 'E', 'C') AND val > 1000 "
            "GROUP BY grp",
        )
    assert got.value.reason == Reason.BELOW_FLOOR


def test_multi_key_groups_fold_per_combination(small: Dataset) -> None:
    res = _ask(small, "SELECT grp, tiny, count(*) FROM data GROUP BY grp, tiny")
    for r in res.envelope["rows"]:
        assert r["n"] >= FLOOR


def test_execution_errors_name_only_the_error_class(small: Dataset) -> None:
    # DuckDB's message would quote the value it could not convert.
    with pytest.raises(Refused) as got:
        _ask(
            small,
            "SELECT CAST(tiny AS INTEGER) AS t, count(*) FROM data GROUP BY CAST(tiny AS INTEGER)",
        )
    assert got.value.reason == Reason.EXECUTION_ERROR
    assert "ConversionException" in got.value.detail
    assert "'X'" not in got.value.detail and "X" not in got.value.detail.replace("Exception", "")


def test_envelopes_are_deterministic(survey: Dataset) -> None:
    choice = HypothesisChoice("mean_by_group", {"group": "region", "value": "income"})
    first = boundary.ask_template(survey, choice)
    second = boundary.ask_template(survey, choice)
    assert first.envelope_json == second.envelope_json
    assert first.envelope_sha256 == second.envelope_sha256
    assert json.loads(first.envelope_json) == first.envelope


# --- tests and Holm in envelopes ----------------------------------------------------------------


def test_welch_tests_match_scipy_and_are_holm_corrected(survey: Dataset) -> None:
    c = boundary.ask_template(
        survey, HypothesisChoice("mean_by_group", {"group": "plan", "value": "income"})
    )
    tests = c.envelope["tests"]
    assert tests["correction"] == "holm" and tests["m"] == 3
    raw = {
        r[0]: np.array(
            [
                x[0]
                for x in survey.con.execute(
                    "SELECT income FROM data WHERE plan = $p", {"p": r[0]}
                ).fetchall()
            ]
        )
        for r in [("basic",), ("plus",), ("pro",)]
    }
    for t in tests["results"]:
        expect = sps.ttest_ind(raw[t["a"]], raw[t["b"]], equal_var=False)
        assert t["statistic"] == pytest.approx(float(expect.statistic), rel=1e-5)
        assert t["n_a"] == len(raw[t["a"]]) and t["n_b"] == len(raw[t["b"]])
        assert t["effect"]["name"] == "cohens_d"
    ps = [t["p"] for t in tests["results"]]
    assert [t["p_holm"] for t in tests["results"]] == pytest.approx(holm(ps), rel=1e-3)
    # "other" (legacy + trial, 7 rows) is never a side of a comparison.
    assert {t["a"] for t in tests["results"]} | {t["b"] for t in tests["results"]} == {
        "basic",
        "plus",
        "pro",
    }


def test_proportions_are_tested_per_complete_cells(survey: Dataset) -> None:
    c = boundary.ask_template(
        survey, HypothesisChoice("proportion_by_group", {"group": "plan", "outcome": "renewed"})
    )
    env = c.envelope
    assert env["level"] is True
    cells = {tuple(r["keys"]): r["n"] for r in env["rows"] if not r.get("other")}
    t = next(t for t in env["tests"]["results"] if {t["a"], t["b"]} == {"basic", "pro"})
    expect = sps.fisher_exact(
        [
            [cells[(t["a"], True)], cells[(t["a"], False)]],
            [cells[(t["b"], True)], cells[(t["b"], False)]],
        ]
    )
    assert t["p"] == pytest.approx(float(expect.pvalue), abs=1e-300)
    assert t["significant"] is True  # planted: pro renews far more than basic


def test_correlation_and_distribution(survey: Dataset) -> None:
    c = boundary.ask_template(survey, HypothesisChoice("correlation", {"x": "age", "y": "income"}))
    tests = {t["test"]: t for t in c.envelope["tests"]["results"]}
    assert set(tests) == {"pearson_r", "spearman_rho"} and tests["pearson_r"]["statistic"] > 0.2
    d = boundary.ask_template(
        survey, HypothesisChoice("distribution", {"value": "income"}, buckets=4)
    )
    rows = d.envelope["rows"]
    assert len(rows) == 4 and sum(r["n"] for r in rows) == survey.rows
    assert rows[0]["keys"][0].startswith("1: below ") and "and above" in rows[-1]["keys"][0]


# --- the exfil check ----------------------------------------------------------------------------


def _good(small: Dataset) -> tuple[dict, object]:
    g = guard("SELECT grp, count(*) AS n FROM data GROUP BY grp", small)
    return gate.run(small, g, request={"kind": "sql"}).envelope, g


def test_exfil_passes_what_the_gate_made(small: Dataset) -> None:
    env, g = _good(small)
    exfil.verify_no_leak(small, g, env)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("forge", "reason"),
    [
        # a single-row statistic with its label
        (
            lambda e: e["rows"].insert(0, {"keys": ["D"], "n": 1, "values": [1]}),
            Reason.LEAK_UNDER_FLOOR,
        ),
        # a small group's label passed off as big
        (
            lambda e: e["rows"].insert(0, {"keys": ["C"], "n": 5, "values": [5]}),
            Reason.LEAK_UNDER_FLOOR,
        ),
        # a count the data does not support
        (lambda e: e["rows"][0].update(n=11), Reason.LEAK_COUNT_MISMATCH),
        (lambda e: e["rows"][-1].update(n=6), Reason.LEAK_COUNT_MISMATCH),
        # a label that is not in the data at all
        (
            lambda e: e["rows"].insert(0, {"keys": ["Q"], "n": 9, "values": [9]}),
            Reason.LEAK_UNKNOWN_LABEL,
        ),
        (
            lambda e: e.update(tests={"results": [{"a": "A", "b": "D", "n_a": 10, "n_b": 5}]}),
            Reason.LEAK_UNKNOWN_LABEL,
        ),
        # a withheld value smuggled into a figure
        (
            lambda e: e["rows"][0]["values"].append(
                "free text number 3 that is long enough to be prose"
            ),
            Reason.LEAK_WITHHELD_VALUE,
        ),
        (
            lambda e: e.update(level="free text number 4 that is long enough to be prose"),
            Reason.LEAK_WITHHELD_VALUE,
        ),
    ],
)
def test_exfil_withholds_forged_envelopes(small: Dataset, forge, reason: Reason) -> None:  # noqa: ANN001
    env, g = _good(small)
    forge(env)
    with pytest.raises(Refused) as got:
        exfil.verify_no_leak(small, g, env)  # type: ignore[arg-type]
    assert (got.value.stage, got.value.reason) == (Stage.EXFIL, reason)
    for value in ("free text", "'C'", "'D'", "'Q'"):
        assert value not in got.value.detail


def no_audit(rows, groups, audit, *, grouped, k=FLOOR):  # noqa: ANN001, ANN201
    """The query audit switched off: every row the fold kept leaves, nothing is recorded."""
    return Controlled(rows, 0, [], [], audit)


def test_without_the_fold_the_audit_still_keeps_small_groups_in(
    small: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Defence in depth: with the fold reverted, a group of one row is a set under the floor on
    its own, and the audit suppresses it before the exfil check is reached."""

    def no_floor_sql(dataset, guarded):  # noqa: ANN001, ANN202
        key_sql = [e.sql(dialect="duckdb") for _, e in guarded.keys]
        keys = ", ".join(f'{k} AS "k{i}"' for i, k in enumerate(key_sql))
        return (f'SELECT {keys}, count(*) AS "__mole_n" FROM data GROUP BY {key_sql[0]}', "b", "n")

    monkeypatch.setattr(gate, "fold_rows", no_fold)
    monkeypatch.setattr(gate, "fold_sql", no_floor_sql)
    res = _ask(small, "SELECT grp FROM data GROUP BY grp")
    assert [r["keys"] for r in res.envelope["rows"]] == [["A"], ["B"]]
    assert [r.reason for r in res.also_suppressed] == [Reason.SECONDARY_SUPPRESSION]


def test_exfil_catches_a_gate_that_stops_folding(
    small: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Revert the gate's fold (every group named, whatever its size): the exfil check, which
    recounts from the rows, still withholds the envelope."""

    def no_floor_sql(dataset, guarded):  # noqa: ANN001, ANN202
        key_sql = [e.sql(dialect="duckdb") for _, e in guarded.keys]
        keys = ", ".join(f'{k} AS "k{i}"' for i, k in enumerate(key_sql))
        vals = ", ".join(
            f'{e.sql(dialect="duckdb")} AS "v{i}"' for i, (_, e) in enumerate(guarded.values)
        )
        select = ", ".join(p for p in (keys, vals, 'count(*) AS "__mole_n"') if p)
        return (f"SELECT {select} FROM data GROUP BY {', '.join(key_sql)}", "b", "n")

    monkeypatch.setattr(gate, "fold_rows", no_fold)
    monkeypatch.setattr(gate, "fold_sql", no_floor_sql)
    # The query audit is a second line (it would suppress groups that small): off here too.
    monkeypatch.setattr(audit, "control", no_audit)
    with pytest.raises(Refused) as got:
        boundary.ask_sql(small, "SELECT grp, count(*) AS n FROM data GROUP BY grp")
    assert got.value.stage == Stage.EXFIL and got.value.reason == Reason.LEAK_UNDER_FLOOR
    assert got.value.envelope_sha256 and len(got.value.envelope_sha256) == 64


def test_exfil_catches_a_gate_that_ignores_null_values(
    small: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate's per-aggregate counts reverted to count(*) only: group A (ten rows, one value
    of `sparse`) would be named with that one value. The exfil check counts independently."""
    monkeypatch.setattr(gate, "supports", lambda guarded: ["count(*)"])
    monkeypatch.setattr(audit, "control", no_audit)
    with pytest.raises(Refused) as got:
        boundary.ask_sql(small, "SELECT grp, avg(sparse) AS mean FROM data GROUP BY grp")
    assert (got.value.stage, got.value.reason) == (Stage.EXFIL, Reason.LEAK_UNDER_FLOOR)
