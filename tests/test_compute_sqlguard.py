"""The SQL guard: exactly one aggregate SELECT over the registered table, or a refusal with the
right reason."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp
from survey_data import survey_csv  # noqa: F401 - fixture

from mole_dag.local_data import gate
from mole_dag.local_data.connector import FLOOR, Dataset
from mole_dag.local_data.refusal import Reason, Refused, Stage
from mole_dag.local_data.sqlguard import guard


@pytest.fixture(scope="module")
def ds(survey_csv: Path) -> Iterator[Dataset]:  # noqa: F811
    d = Dataset.open(survey_csv)
    yield d
    d.close()


REFUSED = [
    # the adversarial list of the issue
    ("SELECT * FROM data", Reason.STAR),
    ("SELECT data.* FROM data", Reason.STAR),
    ("SELECT * EXCLUDE (notes) FROM data", Reason.STAR),
    ("SELECT COLUMNS('inc.*') FROM data", Reason.FUNCTION_NOT_ALLOWED),
    ("SELECT * FROM read_csv('/etc/passwd')", Reason.TABLE_FUNCTION),
    ("SELECT count(*) FROM read_csv('/etc/passwd')", Reason.TABLE_FUNCTION),
    ("SELECT count(*) FROM '/etc/passwd'", Reason.TABLE_FUNCTION),
    ("SELECT respondent_id, count(*) FROM data GROUP BY respondent_id", Reason.WITHHELD_COLUMN),
    ("SELECT income FROM data LIMIT 1", Reason.ROW_VALUES),
    ("SELECT count(*) FROM data UNION SELECT count(*) FROM data", Reason.SET_OPERATION),
    ("SELECT count(*) FROM data /* harmless */; DROP TABLE data", Reason.MULTIPLE_STATEMENTS),
    ("SELECT count(*) FROM data -- ;\n; SELECT notes FROM data", Reason.MULTIPLE_STATEMENTS),
    ("SELECT count(*) FROM data; SELECT 1", Reason.MULTIPLE_STATEMENTS),
    # withheld anywhere, in any spelling DuckDB would accept
    ("SELECT count(*) FROM data WHERE notes LIKE '%refund%'", Reason.WITHHELD_COLUMN),
    ('SELECT count(DISTINCT "EMAIL") FROM data', Reason.WITHHELD_COLUMN),
    (
        "SELECT region, count(*) FROM data WHERE Phone IS NOT NULL GROUP BY region",
        Reason.WITHHELD_COLUMN,
    ),
    # the rest of the structure
    ("DROP TABLE data", Reason.NOT_SELECT),
    ("PRAGMA show_tables", Reason.NOT_SELECT),
    ("COPY data TO 'out.csv'", Reason.NOT_SELECT),
    ("WITH x AS (SELECT region FROM data) SELECT count(*) FROM x", Reason.CTE),
    ("SELECT count(*) FROM (SELECT * FROM data)", Reason.SUBQUERY),
    ("SELECT count(*) FROM data WHERE age IN (SELECT age FROM data)", Reason.SUBQUERY),
    ("SELECT count(*) FROM data a JOIN data b ON a.age = b.age", Reason.JOIN),
    ("SELECT count(*) FROM data, data", Reason.JOIN),
    ("SELECT count(*) FROM other_table", Reason.UNKNOWN_TABLE),
    ("SELECT count(*) FROM main.data", Reason.UNKNOWN_TABLE),
    ("SELECT count(*)", Reason.UNKNOWN_TABLE),
    ("SELECT count(*) OVER () FROM data", Reason.WINDOW_FUNCTION),
    ("SELECT region, avg(income) OVER (PARTITION BY region) FROM data", Reason.WINDOW_FUNCTION),
    ("SELECT count(*) FROM data WHERE nosuch = 1", Reason.UNKNOWN_COLUMN),
    ('SELECT count(*) FROM data WHERE "region""; DROP TABLE data; --" = 1', Reason.UNKNOWN_COLUMN),
    ("SELECT min(income) FROM data", Reason.FUNCTION_NOT_ALLOWED),
    ("SELECT max(income), region FROM data GROUP BY region", Reason.FUNCTION_NOT_ALLOWED),
    ("SELECT list(region) FROM data", Reason.FUNCTION_NOT_ALLOWED),
    ("SELECT string_agg(region, ',') FROM data", Reason.FUNCTION_NOT_ALLOWED),
    ("SELECT quantile_cont(income, 1.0) FROM data", Reason.FUNCTION_NOT_ALLOWED),
    ("SELECT arg_max(age, income) FROM data", Reason.FUNCTION_NOT_ALLOWED),
    ("SELECT first(income) FROM data", Reason.FUNCTION_NOT_ALLOWED),
    ("SELECT count(*) FROM data WHERE regexp_matches(region, 'n')", Reason.FUNCTION_NOT_ALLOWED),
    # an expression inside an aggregate singles out a row within a big group
    (
        "SELECT region, sum(CASE WHEN age = 90 AND income > 120000 THEN income ELSE 0 END) "
        "FROM data GROUP BY region",
        Reason.AGGREGATE_ARGUMENT,
    ),
    ("SELECT avg(income * (age = 90)::INT) FROM data", Reason.AGGREGATE_ARGUMENT),
    ("SELECT count(*) FILTER (WHERE age = 90) FROM data", Reason.AGGREGATE_ARGUMENT),
    ("SELECT avg(region) FROM data", Reason.AGGREGATE_ARGUMENT),
    ("SELECT sum(avg(income)) FROM data", Reason.AGGREGATE_ARGUMENT),
    # row values
    ("SELECT region FROM data", Reason.ROW_VALUES),
    ("SELECT DISTINCT region FROM data", Reason.ROW_VALUES),
    ("SELECT region, plan, count(*) FROM data GROUP BY region", Reason.ROW_VALUES),
    ("SELECT 1 FROM data", Reason.ROW_VALUES),
    ("SELECT income + avg(age) FROM data", Reason.ROW_VALUES),
    # clauses the gate does not need
    (
        "SELECT region, count(*) FROM data GROUP BY region ORDER BY 2 DESC",
        Reason.CLAUSE_NOT_ALLOWED,
    ),
    (
        "SELECT region, count(*) FROM data GROUP BY region HAVING count(*) < 5",
        Reason.CLAUSE_NOT_ALLOWED,
    ),
    ("SELECT count(*) FROM data LIMIT 1", Reason.CLAUSE_NOT_ALLOWED),
    ("SELECT region, count(*) FROM data GROUP BY ALL", Reason.CLAUSE_NOT_ALLOWED),
    ("SELECT region, count(*) FROM data GROUP BY 1", Reason.CLAUSE_NOT_ALLOWED),
    ("SELECT region, count(*) FROM data GROUP BY ROLLUP (region)", Reason.CLAUSE_NOT_ALLOWED),
    ("SELECT count(*) FROM data USING SAMPLE 5", Reason.CLAUSE_NOT_ALLOWED),
    ("SELECT count(*) FROM data TABLESAMPLE 10%", Reason.CLAUSE_NOT_ALLOWED),
    ("SELECT count(*) FROM data AS d", Reason.CONSTRUCT_NOT_ALLOWED),
    ("SELECT count(*) FROM data WHERE region = $1", Reason.CONSTRUCT_NOT_ALLOWED),
    ("SELECT count(*) FROM data GROUP BY region", Reason.CONSTRUCT_NOT_ALLOWED),
    ("SELECT count(*) FROM data WHERE {'a': 1} IS NOT NULL", Reason.FUNCTION_NOT_ALLOWED),
    ("SELECT count(*) FROM data WHERE region[1] = 'n'", Reason.CONSTRUCT_NOT_ALLOWED),
    ("SELEC count(*) FROM data", Reason.PARSE_ERROR),
]


@pytest.mark.parametrize(("sql", "reason"), REFUSED, ids=[r[0][:60] for r in REFUSED])
def test_refused_with_the_right_reason(ds: Dataset, sql: str, reason: Reason) -> None:
    with pytest.raises(Refused) as got:
        guard(sql, ds)
    assert got.value.stage == Stage.SQLGUARD
    assert got.value.reason == reason, got.value.detail
    assert got.value.detail.strip()


ALLOWED = [
    "SELECT count(*) FROM data",
    "SELECT count(*) FROM data;",
    "SELECT count(*) FROM data -- a trailing comment is not a statement",
    "SELECT region, count(*) AS n, avg(income) AS mean FROM data GROUP BY region",
    "SELECT data.region, count(DISTINCT plan) FROM data GROUP BY data.region",
    'SELECT "REGION", round(avg(Income), 1) FROM data WHERE age BETWEEN 30 AND 40 GROUP BY region',
    "SELECT age > 65 AS senior, median(income), stddev_samp(income) FROM data GROUP BY age > 65",
    "SELECT corr(age, income), count(income) FROM data WHERE plan IN ('pro', 'plus')",
    "SELECT floor(age / 10) AS decade, count(*) FROM data GROUP BY floor(age / 10)",
    "SELECT CASE WHEN age < 40 THEN 'young' ELSE 'older' END AS band, avg(income) FROM data "
    "GROUP BY CASE WHEN age < 40 THEN 'young' ELSE 'older' END",
    "FROM data SELECT count(*)",
]


@pytest.mark.parametrize("sql", ALLOWED)
def test_allowed_and_canonicalised(ds: Dataset, sql: str) -> None:
    g = guard(sql, ds)
    assert "--" not in g.sql and "/*" not in g.sql
    again = sqlglot.parse(g.sql, read="duckdb")
    assert len([s for s in again if s is not None]) == 1
    # Canonical: every column by its profile name, quoted, unqualified.
    for col in g.statement.find_all(exp.Column):
        assert col.args["this"].quoted and not col.table
        assert ds.column(col.name) is not None and ds.column(col.name).name == col.name  # type: ignore[union-attr]
    assert guard(g.sql, ds).sql == g.sql  # idempotent


def test_case_insensitive_spellings_become_one(ds: Dataset) -> None:
    g = guard('SELECT Region, count(*) FROM data GROUP BY "REGION"', ds)
    assert g.sql == 'SELECT "region", COUNT(*) FROM data GROUP BY "region"'
    assert [name for name, _ in g.keys] == ["region"]


def test_refusal_lists_every_problem_but_leads_with_the_most_fundamental(ds: Dataset) -> None:
    with pytest.raises(Refused) as got:
        guard("SELECT *, notes FROM data ORDER BY 1 LIMIT 1", ds)
    assert got.value.reason == Reason.STAR
    assert "withheld_column" in got.value.detail and "clause_not_allowed" in got.value.detail


# --- property: what passes is safe to run -----------------------------------------------------

_GOOD_OUTPUTS = [
    "count(*)",
    "avg(income)",
    "median(age)",
    "count(DISTINCT plan)",
    "round(avg(income), 0)",
    "stddev_samp(income)",
]
_BAD_OUTPUTS = [
    "income",
    "notes",
    "min(income)",
    "sum(CASE WHEN age = 90 THEN income END)",
    "*",
    "count(*) OVER ()",
    "(SELECT 1)",
    "read_csv('x')",
]
_GROUPS = [None, "region", "plan", "satisfaction", "age", "region, plan", "respondent_id"]
_WHERES = [
    None,
    "age > 80",
    "income > 123456 AND income < 123457",
    "region = 'north'",
    "notes IS NULL",
    "age IN (SELECT age FROM data)",
]


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.sampled_from(_GOOD_OUTPUTS + _BAD_OUTPUTS), min_size=1, max_size=3),
    st.sampled_from(_GROUPS),
    st.sampled_from(_WHERES),
)
def test_property_guard_then_gate_never_releases_a_small_group(
    ds: Dataset, outputs: list[str], group: str | None, where: str | None
) -> None:
    select = ([group] if group else []) + outputs
    sql = f"SELECT {', '.join(select)} FROM data"
    if where:
        sql += f" WHERE {where}"
    if group:
        sql += f" GROUP BY {group}"
    bad = (
        any(o in _BAD_OUTPUTS for o in outputs)
        or group == "respondent_id"
        or where in {"notes IS NULL", "age IN (SELECT age FROM data)"}
    )
    try:
        g = guard(sql, ds)
    except Refused:
        assert bad or group == "respondent_id"
        return
    assert not bad, sql
    try:
        result = gate.run(ds, g, request={"kind": "sql"})
    except Refused as r:
        assert r.reason == Reason.BELOW_FLOOR
        return
    assert all(row["n"] >= FLOOR for row in result.envelope["rows"])
    assert result.min_rows >= FLOOR
