"""Query-set overlap control and secondary suppression: the floor across queries.

A floor per query is not enough. `sum(x) WHERE age = 36` over 26 rows and the same with
`AND NOT (<one respondent>)` over 25 both pass it, and their difference is that respondent's x.
Likewise a total minus the named groups of a GROUP BY is the group the gate suppressed. After
statistical disclosure control practice (query-set overlap control; secondary cell suppression):

- every figure that leaves keeps, privately, the set of rows it rested on (a bitmap over the
  dataset's row order, stored in `local_row_sets`; it never enters an envelope, a listing, a
  tool's answer or a model's prompt);
- a new figure whose row set differs from any earlier one's (a figure, or the union of an
  earlier answer's groups, which is what adding them up gives) by 1..k-1 rows is refused; in a
  GROUP BY, that group alone is suppressed;
- when suppressed rows would still be recoverable by subtraction (the rows the statement
  covers minus the groups shown number 1..k-1, or the groups shown add up to a set within k-1
  rows of an earlier figure's), the smallest shown groups are suppressed too until they are not.

Row sets are compared per aggregated column set: `sum(x)` rests on the rows where x is set, so
`sum(x)` over A and over A-plus-one-row-where-x-is-null tell nothing, but over A and over
A-plus-five-rows-four-of-them-null would tell one value; `''` is the rows themselves (count(*),
and the `n` every envelope row carries).

Comparing bitmaps costs one XOR and a popcount per pair; pairs whose sizes already differ by k
or more are skipped, since |A xor B| >= ||A| - |B||."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np
from sqlglot import exp

from mole_dag.local_data.connector import FLOOR, TABLE, Dataset, ident
from mole_dag.local_data.refusal import Reason, Refused, Stage
from mole_dag.local_data.sqlguard import AGGREGATES, Guarded
from mole_dag.store.records import fetch_all_named

ROWS = ""  # the column-set key of the rows themselves
UNION = -1  # the cell index of the union of an answer's shown groups


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

    def blob(self) -> bytes:
        return zlib.compress(self.bits.tobytes(), 6)

    @classmethod
    def from_blob(cls, columns: str, n: int, blob: bytes) -> RowSet:
        return cls(columns, int(n), np.frombuffer(zlib.decompress(blob), dtype=np.uint8))

    def distance(self, other: RowSet) -> int:
        """|self xor other|: the rows in one and not the other."""
        if self.bits.shape != other.bits.shape:
            # Another row count means other data; the history is filtered by dataset hash, so
            # this is a guard, not a path.
            return max(self.n, other.n)
        return int(np.bitwise_count(np.bitwise_xor(self.bits, other.bits)).sum())


@dataclass(frozen=True)
class Recorded:
    """A row set to store with a crossing: which shown group (or UNION) it belongs to."""

    cell: int
    rows: RowSet


class History:
    """The row sets of a session's earlier crossings over this dataset, by column-set key."""

    def __init__(self, sets: Iterable[RowSet] = ()) -> None:
        self._by_key: dict[str, list[RowSet]] = {}
        for s in sets:
            self._by_key.setdefault(s.columns, []).append(s)

    @classmethod
    def load(
        cls,
        cur: duckdb.DuckDBPyConnection,
        session_id: str,
        dataset_sha256: str,
        before_seq: int | None = None,
    ) -> History:
        from mole_dag.store import q
        from mole_dag.store.records import RowSetRow, fetch_all

        got = fetch_all(
            cur,
            RowSetRow,
            q("local_row_sets_history"),
            {
                "session_id": session_id,
                "dataset_sha256": dataset_sha256,
                "before_seq": 2**31 - 1 if before_seq is None else before_seq,
            },
        )
        return cls(RowSet.from_blob(r.columns, r.n, r.bits) for r in got)

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_key.values())

    def near(self, s: RowSet, k: int = FLOOR) -> bool:
        """True if some earlier row set differs from `s` by 1..k-1 rows."""
        for old in self._by_key.get(s.columns, ()):
            if abs(old.n - s.n) >= k:
                continue
            if 0 < old.distance(s) < k:
                return True
        return False


# --- the row sets of one statement ----------------------------------------------------------


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


def _condition(key: str) -> str:
    return " AND ".join(f"{ident(c)} IS NOT NULL" for c in key.split(","))


def _masks(rows: int, id_lists: Sequence[Any]) -> list[np.ndarray]:
    out = []
    for ids in id_lists:
        mask = np.zeros(rows, dtype=bool)
        if ids:
            mask[np.fromiter(ids, dtype=np.int64, count=len(ids))] = True
        out.append(mask)
    return out


@dataclass
class Groups:
    """The statement's raw groups (before folding): key tuple -> masks per column-set key."""

    keys: list[str]
    groups: list[tuple[tuple[Any, ...], dict[str, np.ndarray]]]

    def total(self, rows: int) -> dict[str, np.ndarray]:
        out = {k: np.zeros(rows, dtype=bool) for k in self.keys}
        for _, masks in self.groups:
            for k in self.keys:
                out[k] |= masks[k]
        return out


def raw_groups(dataset: Dataset, guarded: Guarded) -> Groups:
    """Row positions per raw group, computed by DuckDB (rowid is the row's position in the
    table the connector built, fixed by the file's bytes, so it means the same row in every
    process that opens the same data)."""
    from mole_dag.local_data.gate import plain  # gate imports this module

    keys = aggregate_keys(guarded)
    lists = ["list(rowid)"] + [f"list(rowid) FILTER (WHERE {_condition(k)})" for k in keys[1:]]
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
        masks = _masks(dataset.rows, [r[f"m{j}"] for j in range(len(lists))])
        label = tuple(plain(r[f"k{i}"]) for i in range(len(key_sql)))
        groups.append((label, dict(zip(keys, masks, strict=True))))
    return Groups(keys, groups)


def profile_sets(dataset: Dataset) -> list[Recorded]:
    """What the profile tells: the row count, and per usable column its non-null count."""
    usable = [c.name for c in dataset.columns if not c.withheld]
    lists = ["list(rowid)"] + [f"list(rowid) FILTER (WHERE {ident(c)} IS NOT NULL)" for c in usable]
    got = dataset.con.execute(f"SELECT {', '.join(lists)} FROM {TABLE}").fetchone()
    assert got is not None
    masks = _masks(dataset.rows, got)
    return [Recorded(UNION, RowSet.of(k, m)) for k, m in zip([ROWS, *usable], masks, strict=True)]


# --- the control ----------------------------------------------------------------------------


@dataclass
class Controlled:
    rows: list[dict[str, Any]]  # the envelope rows that may leave, in order
    least: int  # the fewest rows behind any figure kept
    recorded: list[Recorded]
    refusals: list[Refused]


def _cells(rows: list[dict[str, Any]], groups: Groups) -> list[dict[str, np.ndarray]]:
    """Each envelope row's masks: a named row is its raw group; "other" is every raw group not
    named (which is what the fold put in it)."""
    by_key: dict[tuple[Any, ...], list[tuple[int, dict[str, np.ndarray]]]] = {}
    for key, masks in groups.groups:
        by_key.setdefault(key, []).append((int(masks[ROWS].sum()), masks))
    used: set[int] = set()
    cells: list[dict[str, np.ndarray] | None] = []
    for r in rows:
        if r.get("other"):
            cells.append(None)
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
        cells.append(pick)
    n_rows = len(groups.groups[0][1][ROWS]) if groups.groups else 0
    total = groups.total(n_rows)
    named = {k: np.zeros(n_rows, dtype=bool) for k in groups.keys}
    for c in cells:
        if c is not None:
            for k in groups.keys:
                named[k] |= c[k]
    # Raw groups are disjoint, so "every raw group not named" is the total less the named ones.
    other = {k: total[k] & ~named[k] for k in groups.keys}
    out = [other if c is None else c for c in cells]
    return out


def control(
    rows: list[dict[str, Any]], groups: Groups, history: History, *, grouped: bool, k: int = FLOOR
) -> Controlled:
    """Apply overlap control and secondary suppression to the rows the fold let through.
    Raises Refused when nothing may leave."""
    n_rows = len(groups.groups[0][1][ROWS]) if groups.groups else 0
    cells = _cells(rows, groups)
    total = groups.total(n_rows)
    keep = list(range(len(rows)))
    overlapped = [
        i
        for i in keep
        if any(history.near(RowSet.of(key, cells[i][key]), k) for key in groups.keys)
    ]
    refusals: list[Refused] = []
    if overlapped:
        if not grouped:
            raise Refused(
                Stage.GATE,
                Reason.QUERY_OVERLAP,
                f"its rows differ from those of an earlier answer in this session by "
                f"fewer than {k} (1 to {k - 1} rows): the difference of the two "
                "would single those rows out; nothing leaves",
            )
        keep = [i for i in keep if i not in overlapped]
        refusals.append(
            Refused(
                Stage.GATE,
                Reason.QUERY_OVERLAP,
                f"{len(overlapped)} group(s) suppressed: their rows differ from those of an "
                f"earlier "
                f"answer in this session by 1 to {k - 1} rows; the rest left",
            )
        )
    secondary = 0
    while keep:
        union = {key: np.logical_or.reduce([cells[i][key] for i in keep]) for key in groups.keys}
        isolates = any(0 < int((total[key] & ~union[key]).sum()) < k for key in groups.keys)
        near = (
            grouped
            and len(keep) > 1
            and any(history.near(RowSet.of(key, union[key]), k) for key in groups.keys)
        )
        if not isolates and not near:
            break
        # Give up the smallest shown group (the last such in order on a tie): the least
        # information lost for a remainder that can no longer be told apart. A guess at the
        # cheapest choice, not an optimal one (that is a hard problem in general).
        smallest = min(keep, key=lambda i: (int(cells[i][ROWS].sum()), -i))
        keep.remove(smallest)
        secondary += 1
    if secondary:
        refusals.append(
            Refused(
                Stage.GATE,
                Reason.SECONDARY_SUPPRESSION,
                f"{secondary} further group(s) suppressed so that rows suppressed under the floor "
                "cannot be recovered by subtracting the groups shown from a total; the rest left",
            )
        )
    if not keep:
        reason = Reason.SECONDARY_SUPPRESSION if secondary else Reason.QUERY_OVERLAP
        raise Refused(
            Stage.GATE,
            reason,
            "every group would have to be suppressed (overlap with earlier answers in "
            "this session, or a remainder recoverable by subtraction); nothing leaves",
        )
    recorded: list[Recorded] = []
    least = 0
    for pos, i in enumerate(keep):
        for key in groups.keys:
            s = RowSet.of(key, cells[i][key])
            recorded.append(Recorded(pos, s))
            least = s.n if not least else min(least, s.n)
    if grouped:
        for key in groups.keys:
            union_mask = np.logical_or.reduce([cells[i][key] for i in keep])
            recorded.append(Recorded(UNION, RowSet.of(key, union_mask)))
    return Controlled([rows[i] for i in keep], least, recorded, refusals)
