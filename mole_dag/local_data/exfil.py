"""The exfil check: an invariant, not a metric. Before an envelope leaves the boundary it is
checked against the rows it came from, by queries independent of the gate's rewrite, and an
envelope that carries what it should not is withheld:

- a figure resting on fewer than FLOOR rows (a single-row statistic, a small group);
- a group label whose rows, recounted from the data, number fewer than FLOOR or differ from the
  envelope's count (the "other" row must equal the recounted small groups exactly);
- a test between groups the envelope does not name;
- any text equal to a value of a withheld column (a free-text note, an email, an identifier);
- a withheld column among the columns the statement read.

The check repeats work the guard and the gate already did, on purpose: it is what still holds if
either of them has a bug. Its refusals say which rule broke and where, never the offending value."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from mole_dag.local_data.connector import FLOOR, TABLE, Dataset, ident
from mole_dag.local_data.refusal import Reason, Refused, Stage
from mole_dag.local_data.sqlguard import AGGREGATES, Guarded
from mole_dag.local_data.values import plain
from mole_dag.store.records import fetch_all_named


def _refuse(reason: Reason, detail: str) -> Refused:
    return Refused(Stage.EXFIL, reason, f"envelope withheld: {detail}")


def _strings(obj: Any, out: set[str]) -> set[str]:
    if isinstance(obj, str):
        out.add(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _strings(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _strings(v, out)
    return out


def verify_no_leak(dataset: Dataset, guarded: Guarded | None, envelope: dict[str, Any]) -> None:
    """Raise Refused(EXFIL, ...) if the envelope may not leave; return None if it may."""
    rows = envelope.get("rows")
    if not isinstance(rows, list) or not rows:
        raise _refuse(Reason.LEAK_UNKNOWN_LABEL, "it carries no rows to check")
    if guarded is not None:
        for name in guarded.columns:
            col = dataset.column(name)
            if col is None or col.withheld:
                raise _refuse(
                    Reason.LEAK_WITHHELD_COLUMN, "the statement read a withheld or unknown column"
                )

    # 1. Every figure rests on at least FLOOR rows.
    for i, r in enumerate(rows):
        if not isinstance(r.get("n"), int) or r["n"] < FLOOR:
            raise _refuse(Reason.LEAK_UNDER_FLOOR, f"row {i} rests on fewer than {FLOOR} rows")
    tests = (
        envelope.get("tests", {}).get("results", [])
        if isinstance(envelope.get("tests"), dict)
        else []
    )
    for i, t in enumerate(tests):
        if min(int(t.get("n_a", 0)), int(t.get("n_b", 0))) < FLOOR:
            raise _refuse(Reason.LEAK_UNDER_FLOOR, f"test {i} compares fewer than {FLOOR} rows")

    # 2. Recount from the rows, without the gate's rewrite.
    if guarded is not None:
        _recount(dataset, guarded, rows)

    # 3. Tests compare only groups the envelope names.
    named = {tuple(r["keys"])[:1] for r in rows if not r.get("other") and r.get("keys")}
    for i, t in enumerate(tests):
        if "a" in t and ((t["a"],) not in named or (t["b"],) not in named):
            raise _refuse(
                Reason.LEAK_UNKNOWN_LABEL, f"test {i} compares a group the envelope does not name"
            )

    # 4. No text equal to a value of a withheld column, anywhere in what is reported.
    texts = sorted(
        _strings(
            {
                "rows": rows,
                "tests": tests,
                "level": envelope.get("level"),
                "edges": envelope.get("edges"),
            },
            set(),
        )
    )
    if texts:
        # Imported here while the package moves of issue 13 rewrite this module's imports.
        from mole_dag.store.records import scalar

        for col in dataset.withheld:
            hit = scalar(
                dataset.con,
                int,
                f"SELECT count(*) FROM {TABLE} WHERE list_contains($texts, "
                f"CAST({ident(col.name)} AS VARCHAR))",
                {"texts": texts},
            )
            if hit:
                raise _refuse(
                    Reason.LEAK_WITHHELD_VALUE,
                    f"it carries a value of the withheld column {col.name!r}",
                )


def _support_counts(guarded: Guarded) -> list[tuple[str, str]]:
    """(expression, column name): count(*) as `n`, then for every aggregate in the outputs the
    rows on which all its columns are set. Written again here rather than imported from the
    gate, on purpose: a bug in the gate's version must not silence this check."""
    out = [("count(*)", "n")]
    for _, expr in guarded.values:
        for agg in (n for n in expr.walk() if isinstance(n, AGGREGATES)):
            names = sorted({col.name for col in agg.find_all(exp.Column)})
            if names:
                cond = " AND ".join(f"{ident(c)} IS NOT NULL" for c in names)
                out.append((f"count(*) FILTER (WHERE {cond})", f"support_{len(out)}"))
    return out


def _recount(dataset: Dataset, guarded: Guarded, rows: list[dict[str, Any]]) -> None:
    """Plain GROUP BY counts (no window, no fold): per group, the rows and, per aggregate, the
    rows it rests on. Counts add up, so the "other" row's supports are sums over small groups."""
    where = f" WHERE {guarded.where.sql(dialect='duckdb')}" if guarded.where is not None else ""
    counts = _support_counts(guarded)  # count(*) first
    counts_sql = ", ".join(f"{e} AS {ident(name)}" for e, name in counts)
    if not guarded.keys:
        from mole_dag.store.records import fetch_named  # (see verify_no_leak)

        got = fetch_named(dataset.con, f"SELECT {counts_sql} FROM {TABLE}{where}")
        if len(rows) != 1 or rows[0].get("other") or got is None or rows[0]["n"] != got["n"]:
            raise _refuse(
                Reason.LEAK_COUNT_MISMATCH, "its row count differs from the recount of the data"
            )
        if min(got.values()) < FLOOR:
            raise _refuse(Reason.LEAK_UNDER_FLOOR, f"a figure rests on fewer than {FLOOR} rows")
        return
    key_sql = [expr.sql(dialect="duckdb") for _, expr in guarded.keys]
    keys_out = ", ".join(f"{k} AS {ident(f'k{i}')}" for i, k in enumerate(key_sql))
    raw = fetch_all_named(
        dataset.con,
        f"SELECT {keys_out}, {counts_sql} FROM {TABLE}{where} GROUP BY {', '.join(key_sql)}",
    )
    groups = {
        tuple(plain(r[f"k{i}"]) for i in range(len(key_sql))): [int(r[n]) for _, n in counts]
        for r in raw
    }
    small = [c for c in groups.values() if min(c) < FLOOR]
    other_counts = [sum(col) for col in zip(*small, strict=True)] if small else []
    for i, r in enumerate(rows):
        if r.get("other"):
            if not other_counts or r["n"] != other_counts[0]:
                raise _refuse(
                    Reason.LEAK_COUNT_MISMATCH,
                    f"row {i} (other) differs from the recount of the small groups",
                )
            if min(other_counts) < FLOOR:
                raise _refuse(
                    Reason.LEAK_UNDER_FLOOR, f"row {i} (other) rests on fewer than {FLOOR} rows"
                )
            continue
        label = tuple(r.get("keys") or ())
        if label not in groups:
            raise _refuse(Reason.LEAK_UNKNOWN_LABEL, f"row {i} names a group not in the data")
        if min(groups[label]) < FLOOR:
            raise _refuse(
                Reason.LEAK_UNDER_FLOOR,
                f"row {i} names a group whose figures rest on fewer than {FLOOR} rows",
            )
        if groups[label][0] != r["n"]:
            raise _refuse(
                Reason.LEAK_COUNT_MISMATCH, f"row {i}'s count differs from the recount of the data"
            )
