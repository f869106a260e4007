"""The gate: run a guarded statement so that no figure rests on fewer than FLOOR rows.

Groups under the floor are folded into one unnamed "other" group, computed by the same
aggregates over the union of the small groups' rows (not by adding up figures that were never
meant to leave); if "other" is still under the floor it is suppressed. A statement without GROUP
BY is one group: under the floor, nothing leaves.

The fold is a rewrite of the guarded statement (the only place the boundary itself writes a
window function and a subquery, which the guard refuses from anyone else):

    SELECT CASE WHEN big THEN <key> END, <aggregates>, count(*), big
    FROM (SELECT *, count(*) OVER (PARTITION BY <keys>) >= FLOOR AS big
          FROM data WHERE <where>) AS data
    GROUP BY CASE WHEN big THEN <key> END, big

Pairwise comparisons between the named groups (never "other": a mix of unnamed groups is not a
population) use scipy with Holm's correction; the row values they need are read inside the
boundary and do not leave. DuckDB's error messages can quote a value, so a failed query is
reported by its error class only."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import duckdb
from sqlglot import exp

from mole_dag.local_data import audit as query_audit
from mole_dag.local_data import rowsets, stats
from mole_dag.local_data.connector import FLOOR, TABLE, Dataset, ident
from mole_dag.local_data.refusal import Reason, Refused, Stage
from mole_dag.local_data.sqlguard import AGGREGATES, Guarded
from mole_dag.local_data.values import plain
from mole_dag.store.records import fetch_all_named

# Named groups compared pairwise, largest first. A guess, flagged as one: ten groups make 45
# tests, past which a Holm-corrected family has little power left and a reader little patience.
MAX_TEST_GROUPS = 10


@dataclass(frozen=True)
class TestSpec:
    """Which family of tests a template asks the gate for."""

    kind: str  # welch | mann_whitney | fisher | correlation
    columns: tuple[str, ...] = ()  # value column(s) the samples are read from
    levels: tuple[Any, ...] = ()  # fisher: the outcome's two levels, (other, counted)


@dataclass
class GateResult:
    envelope: dict[str, Any]
    executed_sql: str
    min_rows: int
    # A remainder under the floor that was dropped: recorded as a refusal next to the crossing.
    suppressed: Refused | None = None
    samples_sql: list[str] = field(default_factory=list)
    # Further groups suppressed by the query audit (audit.py).
    also_suppressed: list[Refused] = field(default_factory=list)
    # The row sets the figures rest on: private, stored with the crossing, never in the envelope.
    figures: list[query_audit.Figure] = field(default_factory=list, repr=False)
    # The audit with those figures admitted (the record's, once the crossing is stored).
    audit: query_audit.Audit | None = field(default=None, repr=False)


def _sort_key(keys: list[Any]) -> tuple[Any, ...]:
    return tuple((k is None, isinstance(k, str), k if k is not None else 0) for k in keys)


def _fresh(dataset: Dataset, base: str) -> str:
    name, i = base, 1
    while dataset.column(name) is not None:
        name, i = f"{base}{i}", i + 1
    return name


# The names the folded statement gives its result columns (keys k0.., values v0.., then these):
# rows are read by name, never by position. Output aliases only, so a data column of the same
# name cannot be shadowed (DuckDB resolves a name to the table's column before an alias).
N_COL, SUPPORT_COL, BIG_COL = "__mole_n", "__mole_support", "__mole_big"


def _execute(dataset: Dataset, sql: str) -> list[dict[str, Any]]:
    """The rows of one of the boundary's own statements, by column name."""
    try:
        return fetch_all_named(dataset.con, sql)
    except duckdb.Error as exc:
        # Only the class: the message may quote a value from a row.
        raise Refused(
            Stage.GATE, Reason.EXECUTION_ERROR, f"the query failed in DuckDB ({type(exc).__name__})"
        ) from None


def supports(guarded: Guarded) -> list[str]:
    """How many rows each figure rests on, as SQL counts: count(*) for the group, and for every
    aggregate the rows where all its columns are non-null. avg(x) over a group of a thousand
    rows in which x is set once is one row's x, so the floor applies to the smallest of these."""
    out = ["count(*)"]
    for _, expr in guarded.values:
        for node in expr.walk():
            if isinstance(node, AGGREGATES):
                cols = sorted({c.name for c in node.find_all(exp.Column)})
                if cols:
                    cond = " AND ".join(f"{ident(c)} IS NOT NULL" for c in cols)
                    s = f"count(CASE WHEN {cond} THEN 1 END)"
                    if s not in out:
                        out.append(s)
    return out


def _least(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"least({', '.join(parts)})"


def fold_sql(dataset: Dataset, guarded: Guarded) -> tuple[str, str, str]:
    """The executed statement, and the names it uses for the big-group flag and the count.
    Result columns: keys, values, row count, support (the fewest rows behind any figure),
    and for grouped statements the big-group flag."""
    # The flag is a column of the inner table, so its name must be one the data does not use.
    big = ident(_fresh(dataset, "__mole_big"))
    n, support = ident(N_COL), ident(SUPPORT_COL)
    where = f" WHERE {guarded.where.sql(dialect='duckdb')}" if guarded.where is not None else ""
    values = [
        f"{expr.sql(dialect='duckdb')} AS {ident(f'v{i}')}"
        for i, (_, expr) in enumerate(guarded.values)
    ]
    counts = supports(guarded)
    if not guarded.keys:
        select = ", ".join([*values, f"count(*) AS {n}", f"{_least(counts)} AS {support}"])
        return f"SELECT {select} FROM {TABLE}{where}", big, n
    key_sql = [expr.sql(dialect="duckdb") for _, expr in guarded.keys]
    window = f"OVER (PARTITION BY {', '.join(key_sql)})"
    folded = [f"CASE WHEN {big} THEN {k} END" for k in key_sql]
    select = ", ".join(
        [
            *(f"{f} AS {ident(f'k{i}')}" for i, f in enumerate(folded)),
            *values,
            f"count(*) AS {n}",
            f"{_least(counts)} AS {support}",
            f"{big} AS {ident(BIG_COL)}",
        ]
    )
    inner = (
        f"SELECT *, {_least([f'{c} {window}' for c in counts])} >= {FLOOR} AS {big} "
        f"FROM {TABLE}{where}"
    )
    return (
        f"SELECT {select} FROM ({inner}) AS {TABLE} GROUP BY {', '.join([*folded, big])}",
        big,
        n,
    )


def fold_rows(
    guarded: Guarded, result: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], bool, int]:
    """Result rows -> envelope rows; any row whose figures rest on fewer than FLOOR rows is
    dropped (in practice only "other", or the one row of an ungrouped statement).
    Returns (rows, suppressed, the smallest support among the rows kept)."""
    nk, nv = len(guarded.keys), len(guarded.values)
    named: list[dict[str, Any]] = []
    other: dict[str, Any] | None = None
    suppressed = False
    least = 0
    for r in result:
        keys = [plain(r[f"k{i}"]) for i in range(nk)]
        values = [plain(r[f"v{i}"]) for i in range(nv)]
        count, support = int(r[N_COL]), int(r[SUPPORT_COL])
        is_big = bool(r[BIG_COL]) if nk else True
        if support < FLOOR:
            suppressed = True
            continue
        least = support if not least else min(least, support)
        if is_big:
            named.append({"keys": keys, "n": count, "values": values})
        else:
            other = {"other": True, "n": count, "values": values}
    named.sort(key=lambda row: _sort_key(row["keys"]))
    if other is not None:
        named.append(other)
    return named, suppressed, least


def run(
    dataset: Dataset,
    guarded: Guarded,
    *,
    request: dict[str, Any],
    tests: TestSpec | None = None,
    extra: dict[str, Any] | None = None,
    audit: query_audit.Audit | None = None,
) -> GateResult:
    """`audit`: every answer already given over the data (none: judged as the first)."""
    executed, big, _ = fold_sql(dataset, guarded)
    rows, suppressed, least = fold_rows(guarded, _execute(dataset, executed))
    if not rows:
        raise Refused(
            Stage.GATE,
            Reason.BELOW_FLOOR,
            f"every figure rests on fewer than {FLOOR} rows; nothing leaves",
        )
    # The floor across queries: groups that, with the answers already given over this data,
    # would let a set under the floor be computed by adding and subtracting are suppressed.
    controlled = query_audit.control(
        rows,
        rowsets.raw_groups(dataset, guarded),
        audit if audit is not None else query_audit.Audit.of(dataset),
        grouped=bool(guarded.keys),
    )
    rows_before = rows
    dropped = len(controlled.rows) < len(rows)
    if dropped:
        rows, least = controlled.rows, controlled.least
    envelope: dict[str, Any] = {
        "dataset": dataset.sha256[:12],
        "table": TABLE,
        "floor": FLOOR,
        "request": request,
        "keys": [name for name, _ in guarded.keys],
        "values": [name for name, _ in guarded.values],
        "rows": rows,
        "suppressed": suppressed,
    }
    if dropped:
        # How many groups (never which, never their rows): the reader learns the table is not
        # the whole story, as "suppressed" already says for the remainder under the floor.
        envelope["also_suppressed"] = len(rows_before) - len(rows)
    if extra:
        envelope.update(extra)
    samples_sql: list[str] = []
    if tests is not None:
        family, samples_sql = _tests(dataset, guarded, rows, tests, big)
        if family is not None:
            envelope["tests"] = family
    min_rows = least
    for t in envelope.get("tests", {}).get("results", []):
        min_rows = min(min_rows, int(t["n_a"]), int(t["n_b"]))
    refusal = None
    if suppressed:
        refusal = Refused(
            Stage.GATE,
            Reason.BELOW_FLOOR,
            f"a remainder of groups under {FLOOR} rows was suppressed "
            "(still under the floor after folding); the rest left",
        )
    return GateResult(
        envelope,
        executed,
        min_rows,
        refusal,
        samples_sql,
        controlled.refusals,
        controlled.figures,
        controlled.audit,
    )


def _named_labels(rows: list[dict[str, Any]], index: int = 0) -> list[Any]:
    return [r["keys"][index] for r in rows if not r.get("other")]


def _tests(
    dataset: Dataset, guarded: Guarded, rows: list[dict[str, Any]], spec: TestSpec, big: str
) -> tuple[dict[str, Any] | None, list[str]]:
    import numpy as np  # here, not at the top: only local data needs it (issue 12)

    where = guarded.where.sql(dialect="duckdb") if guarded.where is not None else "true"
    if spec.kind == "correlation":
        x, y = (ident(c) for c in spec.columns)
        sql = f'SELECT {x} AS "x", {y} AS "y" FROM {TABLE} WHERE {where} ORDER BY 1, 2'
        got = _execute(dataset, sql)
        if len(got) < FLOOR:
            return None, [sql]
        xs = np.array([r["x"] for r in got], dtype=float)
        ys = np.array([r["y"] for r in got], dtype=float)
        return stats.family(stats.correlations(xs, ys), labelled=False), [sql]

    if spec.kind == "fisher":
        counted, other_level = plain(spec.levels[1]), plain(spec.levels[0])
        cells: dict[Any, dict[Any, int]] = {}
        for r in rows:
            if r.get("other"):
                continue
            group, level = r["keys"]
            cells.setdefault(group, {})[level] = int(r["n"])
        complete = [g for g, c in cells.items() if counted in c and other_level in c]
        complete.sort(key=lambda g: -sum(cells[g].values()))
        complete = complete[:MAX_TEST_GROUPS]
        tests = [
            stats.fisher(
                a,
                cells[a][counted],
                cells[a][other_level],
                b,
                cells[b][counted],
                cells[b][other_level],
            )
            for i, a in enumerate(complete)
            for b in complete[i + 1 :]
        ]
        return (stats.family(tests) if tests else None), []

    # welch / mann_whitney: one key, one value column; samples of the named groups only.
    ((_, key_expr),) = guarded.keys
    value = ident(spec.columns[0])
    key_sql = key_expr.sql(dialect="duckdb")
    sql = (
        f'SELECT {key_sql} AS "k", {value} AS "v" FROM (SELECT *, count(*) OVER (PARTITION BY '
        f"{key_sql}) "
        f">= {FLOOR} AS {big} FROM {TABLE} WHERE {where}) AS {TABLE} "
        f"WHERE {big} AND {value} IS NOT NULL ORDER BY 1, 2"
    )
    samples: dict[Any, list[float]] = {}
    for r in _execute(dataset, sql):
        samples.setdefault(plain(r["k"]), []).append(float(r["v"]))
    labels = [lab for lab in _named_labels(rows) if len(samples.get(lab, ())) >= FLOOR]
    labels.sort(key=lambda lab: -len(samples[lab]))
    labels = labels[:MAX_TEST_GROUPS]
    test = stats.welch if spec.kind == "welch" else stats.mann_whitney
    tests = []
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            xa, xb = np.array(samples[a]), np.array(samples[b])
            if spec.kind == "welch" and (np.var(xa) == 0 and np.var(xb) == 0):
                continue  # t is undefined for two constant samples
            tests.append(test(a, xa, b, xb))
    tests = [t for t in tests if math.isfinite(t.p)]
    return (stats.family(tests) if tests else None), [sql]
