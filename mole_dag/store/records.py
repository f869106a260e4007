"""Typed records for the store's main rows, built from column NAMES.

A row read by position (`row[5]`) means whatever the SELECT happens to list sixth: reorder the
columns of a query in sql/queries/ and the code silently reads the wrong field (a settle that
charges `actual` instead of `reserved`). Every record here is built from `cursor.description`,
so a reordered SELECT still fills each field from its own column, and a SELECT that lacks a
column the record needs fails at once, naming the column, instead of shifting the rest.

One record per row shape that crosses a module boundary (a function returning or taking rows).
A record is a projection, not the whole table: its fields are the columns its queries select.
Columns a query selects beyond the record's fields are ignored (`SELECT *` keeps working as
migrations add columns). Enum fields (status, role, unit, kind, source class) are converted on
the way in, so an unknown value fails here, where it was read, not where it is used.

Helpers: `fetch_one` / `fetch_all` (a cursor inside a transaction), `Store.one` / `Store.many`
(a read on its own), and `scalar` for one-column results (`SELECT count(*)`, the
affected-row count of an UPDATE) where "column 0" is the only column there is."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from enum import Enum
from typing import Any, TypeVar, Union

import duckdb

from mole_dag.core import CallStatus, EdgeKind, Role, SessionStatus, SourceClass, Unit

# As Store takes them (duckdb accepts a dict by name or a sequence by $1, $2 ...).
Params = Sequence[Any] | dict[str, Any] | None


class MissingColumn(LookupError):
    """A query did not select a column the record needs: a bug in the query or the record."""


# -- the records --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionRow:
    """A `sessions` row (`session_get`, `SELECT *`): the budget, its state and its settings."""

    id: str
    question: str
    unit: Unit
    total: int
    spent: int
    held: int
    escrow: int
    overrun: int
    escrow_released: bool
    status: SessionStatus
    provider: str
    corpus: str | None
    # Search providers for the session's leads, comma-separated names ("local,arxiv").
    actors: str
    rounds: int
    created_at: datetime
    updated_at: datetime
    data: str | None
    kind: str | None
    driver: str | None
    owner: str | None
    stop_reason: str | None
    # The session this one re-runs (issue 32); None for a first run.
    previous_session_id: str | None = None


@dataclass(frozen=True)
class CallRow:
    """A `tool_calls` row as the ledger settles it (`call_get`)."""

    id: str
    session_id: str
    role: Role
    stage: str
    tool: str
    reserved: int
    actual: int | None
    overrun: int
    status: CallStatus
    expires_at: datetime
    completed_at: datetime | None
    assumed: bool


@dataclass(frozen=True)
class OpenReservationRow:
    """A reservation not yet settled, with its session's status (`open_reservations`)."""

    id: str
    session_id: str
    reserved: int
    expires_at: datetime
    owner: str | None
    session_status: SessionStatus


@dataclass(frozen=True)
class LedgerCheckRow:
    """A session's materialised balances beside the sums of its tool_calls (`ledger_verify`)."""

    session_id: str
    total: int
    spent: int
    held: int
    escrow: int
    overrun: int
    calls_spent: int
    calls_held: int
    calls_overrun: int
    calls_assumed: int
    calls: int


@dataclass(frozen=True)
class SubQuestionRow:
    """A sub-question's id and wording (`relevance_sub_questions`)."""

    id: str
    text: str


@dataclass(frozen=True)
class RoundStateRow:
    """The round a session is in (`round_state`): whether its plan was written, and whether it
    finished (its scores were). A round planned and not finished was stopped part-way."""

    rounds: int
    planned: bool
    done: bool

    @property
    def unfinished(self) -> bool:
        return self.rounds > 0 and not self.done


@dataclass(frozen=True)
class SubQuestionClaimsRow:
    """A sub-question with how many claims answer it: what the planner sees of it
    (`digest_sub_questions`)."""

    id: str
    text: str
    claims: int


@dataclass(frozen=True)
class LeadRow:
    """A lead as the executor leases it (`lead_next_pending`, `leases_of_owner`)."""

    id: str
    sub_question_id: str
    actor: str
    query: str
    depth: int


@dataclass(frozen=True)
class LeadSourceRow:
    """A source a lead found and nobody has mined yet for its sub-question
    (`unmined_lead_sources`): the miner's work list."""

    lead_id: str
    source_id: str
    sub_question_id: str
    sub_question: str
    title: str | None


@dataclass(frozen=True)
class LeadClaimsRow:
    """How many claims the sources a lead found hold, per lead (`lead_claim_counts`)."""

    lead_id: str
    sub_question_id: str
    claims: int


@dataclass(frozen=True)
class SourceRow:
    """A source as the report and the relevance scorer cite it and grounding reads it again
    (`session_sources`, `source_get`)."""

    id: str
    url: str
    title: str | None
    publisher: str
    publisher_name: str | None
    published: date | None
    source_class: SourceClass
    doi: str | None
    provider_supplied: bool
    # Where the text can be read again ("corpus:<path>" or the page URL); None when a search
    # provider supplied the text.
    locator: str | None


@dataclass(frozen=True)
class ChunkRow:
    """A contiguous byte slice of a source's extracted text (`sources_chunks`)."""

    id: str
    source_id: str
    ordinal: int
    byte_start: int
    byte_end: int
    text: str


@dataclass(frozen=True)
class QuoteSpanRow:
    """A claim's quote and the byte span of its source it was accepted at
    (`integrity_claims`)."""

    id: str
    source_id: str
    quote: str
    quote_byte_start: int
    quote_byte_end: int


@dataclass(frozen=True)
class RelevanceClaimRow:
    """A claim as relevance scoring grades it: its quote, where it sits, its sub-question, and
    the grade a model miner gave it (`relevance_claims`)."""

    id: str
    source_id: str
    text: str
    quote: str
    quote_byte_start: int
    quote_byte_end: int
    sub_question_id: str
    sub_question: str
    model_grade: int | None


@dataclass(frozen=True)
class ClaimRow:
    """A claim with what the graph needs of its source (`session_claims`)."""

    id: str
    text: str
    source_id: str
    verified: bool
    created_at: datetime
    published: date | None
    publisher: str
    source_class: SourceClass
    url: str


@dataclass(frozen=True)
class EdgeRow:
    """A stored edge of the claim graph (`session_edges`)."""

    src_claim_id: str
    dst_claim_id: str
    kind: EdgeKind
    rationale: str | None
    created_by: str


@dataclass(frozen=True)
class FindingRow:
    """A cluster representative's confidence score with its claim and sub-question
    (`report_findings`): one finding of the report."""

    cluster_id: str
    claim_id: str
    confidence: float
    publishers: int
    contradictors: int
    superseded: bool
    source_class: SourceClass
    explanation: str
    text: str
    quote: str
    sub_question_id: str
    sub_question: str
    sub_question_round: int
    sub_question_ordinal: int
    relevance: float
    relevance_explanation: str


@dataclass(frozen=True)
class GroundClaimRow:
    """A claim worth re-reading its source for (`ground_candidates`, `reground_candidates`)."""

    claim_id: str
    session_id: str
    text: str
    quote: str
    source_id: str


@dataclass(frozen=True)
class ClusterMemberRow:
    """A claim of a duplicate cluster, with its source (`cluster_members`)."""

    cluster_id: str
    claim_id: str
    source_id: str
    quote: str


@dataclass(frozen=True)
class CrossingRow:
    """What left the local-data boundary (`local_crossings_list`, `local_crossing_get`)."""

    id: str
    session_id: str
    seq: int
    kind: str
    template: str | None
    # JSON list of the column names the request used.
    columns: str
    sql: str | None
    executed_sql: str | None
    # The canonical JSON that left, byte for byte.
    envelope: str
    envelope_sha256: str
    dataset_sha256: str
    floor: int
    min_rows: int
    created_at: datetime


@dataclass(frozen=True)
class AuditHeadRow:
    """A dataset's query audit: how many row sets it has recorded (`local_audit_head_get`)."""

    data_sha256: str
    audit_id: str
    row_count: int
    answered: int


@dataclass(frozen=True)
class AuditSetRow:
    """The rows one answered figure rested on, as a compressed packed bit mask
    (`local_audit_sets_range`). Internal to the boundary: never shown."""

    seq: int
    columns: str
    n: int
    bits: bytes


@dataclass(frozen=True)
class AuditSummaryRow:
    """What the audit of a session's data holds, over every session (`local_audit_summary`)."""

    data_sha256: str
    answered: int
    sessions: int
    refused: int
    refused_here: int


@dataclass(frozen=True)
class RefusalRow:
    """A request the local-data boundary refused, and why (`local_refusals_list`)."""

    id: str
    session_id: str
    seq: int
    stage: str
    reason: str
    kind: str
    request: str
    detail: str
    crossing_id: str | None
    withheld_sha256: str | None
    created_at: datetime


@dataclass(frozen=True)
class LocalDatasetRow:
    """The data attached to a session, as profiled (`local_dataset_get`)."""

    session_id: str
    path: str
    name: str
    sha256: str
    files: int
    row_count: int
    columns: int
    withheld: int
    created_at: datetime


# -- building them ------------------------------------------------------------------------------

R = TypeVar("R")
S = TypeVar("S")


@dataclass(frozen=True)
class _Field:
    name: str
    required: bool
    convert: Callable[[Any], Any] | None


def _enum_of(hint: object) -> type[Enum] | None:
    """The Enum class of `X` or `X | None`, else None."""
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint
    if typing.get_origin(hint) in (Union, types.UnionType):
        for arg in typing.get_args(hint):
            if isinstance(arg, type) and issubclass(arg, Enum):
                return arg
    return None


# Per record class, worked out once: which fields, which are required, which convert.
_FIELDS: dict[type, tuple[_Field, ...]] = {}


def _fields(cls: type) -> tuple[_Field, ...]:
    got = _FIELDS.get(cls)
    if got is not None:
        return got
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a record (a dataclass)")
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out.append(_Field(f.name, required, _enum_of(hints[f.name])))
    _FIELDS[cls] = got = tuple(out)
    return got


def build(cls: type[R], names: Sequence[str], values: Sequence[object]) -> R:
    """One record from a row and its column names. Raises MissingColumn for a field whose
    column the query did not select (a field with a default may be left out)."""
    by_name = dict(zip(names, values, strict=True))
    kwargs: dict[str, object] = {}
    for f in _fields(cls):
        if f.name not in by_name:
            if f.required:
                raise MissingColumn(
                    f"{cls.__name__}.{f.name}: the query selects no column {f.name!r} "
                    f"(it selects {', '.join(names)})"
                )
            continue
        value = by_name[f.name]
        kwargs[f.name] = f.convert(value) if f.convert is not None and value is not None else value
    return cls(**kwargs)


def _names(cur: duckdb.DuckDBPyConnection) -> list[str]:
    return [d[0] for d in cur.description or []]


def _execute(cur: duckdb.DuckDBPyConnection, sql: str, params: Params) -> None:
    if params is None:
        cur.execute(sql)
    else:
        cur.execute(sql, params)


def fetch_one(
    cur: duckdb.DuckDBPyConnection, cls: type[R], sql: str, params: Params = None
) -> R | None:
    """The first row of `sql` as a `cls`, or None when there is none."""
    _execute(cur, sql, params)
    row = cur.fetchone()
    return None if row is None else build(cls, _names(cur), row)


def fetch_all(
    cur: duckdb.DuckDBPyConnection, cls: type[R], sql: str, params: Params = None
) -> list[R]:
    """Every row of `sql`, each as a `cls`."""
    _execute(cur, sql, params)
    names = _names(cur)
    return [build(cls, names, row) for row in cur.fetchall()]


def only_column(cur: duckdb.DuckDBPyConnection, sql: str) -> None:
    names = _names(cur)
    if len(names) != 1:
        # With several columns, "the value" would be whichever is listed first.
        raise MissingColumn(
            f"a scalar query must select exactly one column, this one selects "
            f"{len(names)} ({', '.join(names)}): {sql[:80]!r}"
        )


def _typed(kind: type[S], value: object, sql: str) -> S:
    # bool is an int to Python: a count that arrives as True is a wrong query, not a 1.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(
            f"expected {kind.__name__}, got {type(value).__name__} {value!r} from {sql[:80]!r}"
        )
    return value


def fetch_named(
    cur: duckdb.DuckDBPyConnection, sql: str, params: Params = None
) -> dict[str, Any] | None:
    """The first row by column name, for a SELECT list built at run time (no record fits a
    list of columns only known then); None when there is none."""
    _execute(cur, sql, params)
    row = cur.fetchone()
    return None if row is None else dict(zip(_names(cur), row, strict=True))


def fetch_all_named(
    cur: duckdb.DuckDBPyConnection, sql: str, params: Params = None
) -> list[dict[str, Any]]:
    """Every row by column name, for a SELECT list built at run time."""
    _execute(cur, sql, params)
    names = _names(cur)
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def scalar(
    cur: duckdb.DuckDBPyConnection, kind: type[S], sql: str, params: Params = None
) -> S | None:
    """The single value of a one-column query, checked to be a `kind`; None when there is no
    row or the value is NULL. The affected-row count of an UPDATE is such a query."""
    _execute(cur, sql, params)
    only_column(cur, sql)
    row = cur.fetchone()
    if row is None:
        return None
    (value,) = row
    return None if value is None else _typed(kind, value, sql)


def column(
    cur: duckdb.DuckDBPyConnection, kind: type[S], sql: str, params: Params = None
) -> list[S]:
    """The values of a one-column query, in order (NULLs refused: a list of ids has none)."""
    _execute(cur, sql, params)
    only_column(cur, sql)
    return [_typed(kind, value, sql) for (value,) in cur.fetchall()]


@dataclass(frozen=True)
class WatchRow:
    """A `watches` row (issue 32): a question re-run on a schedule within a budget per run."""

    id: str
    session_id: str
    question: str
    every: str
    cron: str
    unit: Unit
    budget: int
    notify: str | None
    created_at: datetime
    removed_at: datetime | None = None


@dataclass(frozen=True)
class WatchRunRow:
    """A `watch_runs` row: one run of a watch, for one tick of its schedule."""

    watch_id: str
    due_at: datetime
    session_id: str
    previous_session_id: str
    status: str
    started_at: datetime
    finished_at: datetime | None = None
    material: bool | None = None
    notified: bool | None = None
    notify_error: str | None = None
