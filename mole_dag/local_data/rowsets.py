"""What each figure of an answer rests on: the set of rows behind it, as a bit mask over the
dataset's row order.

A figure is over the rows of its group where its aggregate's columns are all set: `sum(x)` over a
group rests on the group's rows where x is not null, `count(*)` and the `n` every envelope row
carries on the group's rows themselves (the column-set key `''`). The audit (audit.py) keeps
these sets, privately: they never enter an envelope, a listing, a tool's answer or a prompt.

Rows are named by DuckDB's rowid: the row's position in the table the connector built, fixed by
the file's bytes, so it means the same row in every process that opens the same data."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np
from sqlglot import exp

from mole_dag.local_data.connector import TABLE, Dataset, ident
from mole_dag.local_data.refusal import Reason, Refused, Stage
from mole_dag.local_data.sqlguard import AGGREGATES, Guarded
from mole_dag.local_data.values import plain
from mole_dag.store.records import fetch_all_named, scalar

ROWS = ""  # the column-set key of the rows themselves


def column_key(columns: Iterable[str]) -> str:
    return ",".join(sorted(set(columns)))


@dataclass(frozen=True)
class RowSet:
    """A set of row positions as a packed bitmap, for one column-set key."""

    columns: str
    n: int
    bits: np.ndarray = field(repr=False, compare=False)  # np.packbits of a bool mask

    @classmethod
    def of(cls, columns: str, mask: np.ndarray) -> RowSet:
        return cls(columns, int(mask.sum()), np.packbits(mask))

    def mask(self, rows: int) -> np.ndarray:
        out: np.ndarray = np.unpackbits(self.bits, count=rows).astype(bool)
        return out

    def blob(self) -> bytes:
        return zlib.compress(self.bits.tobytes(), 6)

    @classmethod
    def from_blob(cls, columns: str, n: int, blob: bytes) -> RowSet:
        return cls(columns, int(n), np.frombuffer(zlib.decompress(blob), dtype=np.uint8))


def aggregate_keys(guarded: Guarded) -> list[str]:
    """ROWS, then the column set of every aggregate in the outputs (as gate.supports reads)."""
    keys = [ROWS]
    for _, expr in guarded.values:
        for node in expr.walk():
            if isinstance(node, AGGREGATES):
                key = column_key(c.name for c in node.find_all(exp.Column))
                if key not in keys:
                    keys.append(key)
    return keys


def condition(key: str) -> str:
    """SQL for "every column of the key is set" (true for ROWS)."""
    if key == ROWS:
        return "true"
    return " AND ".join(f"{ident(c)} IS NOT NULL" for c in key.split(","))


def masks(rows: int, id_lists: Sequence[Any]) -> list[np.ndarray]:
    out = []
    for ids in id_lists:
        mask = np.zeros(rows, dtype=bool)
        if ids:
            mask[np.fromiter(ids, dtype=np.int64, count=len(ids))] = True
        out.append(mask)
    return out


def where_set(dataset: Dataset, key: str) -> np.ndarray:
    """The rows on which every column of `key` is set: a space's total (audit.py)."""
    got = scalar(
        dataset.con, list, f"SELECT list(rowid) FILTER (WHERE {condition(key)}) FROM {TABLE}"
    )
    return masks(dataset.rows, [got or []])[0]


@dataclass
class Groups:
    """The statement's raw groups (before folding): key tuple -> masks per column-set key."""

    keys: list[str]
    groups: list[tuple[tuple[Any, ...], dict[str, np.ndarray]]]

    def total(self, rows: int) -> dict[str, np.ndarray]:
        out = {k: np.zeros(rows, dtype=bool) for k in self.keys}
        for _, m in self.groups:
            for k in self.keys:
                out[k] |= m[k]
        return out


def raw_groups(dataset: Dataset, guarded: Guarded) -> Groups:
    """Row positions per raw group, computed by DuckDB."""
    keys = aggregate_keys(guarded)
    lists = ["list(rowid)"] + [f"list(rowid) FILTER (WHERE {condition(k)})" for k in keys[1:]]
    lists = [f"{e} AS {ident(f'm{j}')}" for j, e in enumerate(lists)]
    where = f" WHERE {guarded.where.sql(dialect='duckdb')}" if guarded.where is not None else ""
    key_sql = [expr.sql(dialect="duckdb") for _, expr in guarded.keys]
    select = ", ".join([*(f"{k} AS {ident(f'k{i}')}" for i, k in enumerate(key_sql)), *lists])
    group = f" GROUP BY {', '.join(key_sql)}" if key_sql else ""
    try:
        got = fetch_all_named(dataset.con, f"SELECT {select} FROM {TABLE}{where}{group}")
    except duckdb.Error as exc:
        raise Refused(
            Stage.GATE, Reason.EXECUTION_ERROR, f"the query failed in DuckDB ({type(exc).__name__})"
        ) from None
    groups = []
    for r in got:
        ms = masks(dataset.rows, [r[f"m{j}"] for j in range(len(lists))])
        label = tuple(plain(r[f"k{i}"]) for i in range(len(key_sql)))
        groups.append((label, dict(zip(keys, ms, strict=True))))
    return Groups(keys, groups)


def cells(rows: list[dict[str, Any]], groups: Groups, n_rows: int) -> list[dict[str, np.ndarray]]:
    """Each envelope row's masks: a named row is its raw group; "other" is every raw group not
    named (which is what the fold put in it)."""
    by_key: dict[tuple[Any, ...], list[tuple[int, dict[str, np.ndarray]]]] = {}
    for key, m in groups.groups:
        by_key.setdefault(key, []).append((int(m[ROWS].sum()), m))
    used: set[int] = set()
    found: list[dict[str, np.ndarray] | None] = []
    for r in rows:
        if r.get("other"):
            found.append(None)
            continue
        # plain() rounds floats, so two raw keys can print alike; their counts tell them apart.
        candidates = by_key.get(tuple(r.get("keys") or ()), [])
        pick = next((m for n, m in candidates if n == r["n"] and id(m) not in used), None)
        if pick is None:
            raise Refused(
                Stage.GATE,
                Reason.EXECUTION_ERROR,
                "a group in the answer has no rows behind it; nothing leaves",
            )
        used.add(id(pick))
        found.append(pick)
    total = groups.total(n_rows)
    named = {k: np.zeros(n_rows, dtype=bool) for k in groups.keys}
    for c in found:
        if c is not None:
            for k in groups.keys:
                named[k] |= c[k]
    # Raw groups are disjoint, so "every raw group not named" is the total less the named ones.
    other = {k: total[k] & ~named[k] for k in groups.keys}
    return [other if c is None else c for c in found]
