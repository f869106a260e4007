"""The query audit's record: the rows of every figure answered over a dataset, in the store
(local_audit_sets, migration 0015), keyed by the hash of the data's bytes, so that every session
and every process asking about the same data is judged against the same answers.

Each answer is judged and recorded in one write transaction that first locks the dataset's
record (its `local_audits` row), so two processes cannot each pass one half of a combination.
Rebuilding the audit from the whole record on every question would cost one span insertion per
recorded set, so each process keeps its audit of a dataset and only adds the sets recorded since
(by any process); the record's `audit_id` tells a cached audit from one of another store."""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from mole_dag.local_data.audit import Audit, Figure
from mole_dag.local_data.connector import Dataset
from mole_dag.local_data.rowsets import RowSet
from mole_dag.store import Store, q, utcnow
from mole_dag.store.records import AuditHeadRow, AuditSetRow, fetch_all, fetch_one, scalar

# Datasets whose audit a process keeps in memory. A guess, flagged as one: an MCP server or a
# research run works on one or two datasets at a time.
CACHED_DATASETS = 4


@dataclass
class _Cached:
    audit_id: str
    audit: Audit


_cache: OrderedDict[tuple[str, str], _Cached] = OrderedDict()
_cache_lock = threading.Lock()


def _cache_get(key: tuple[str, str]) -> _Cached | None:
    with _cache_lock:
        got = _cache.get(key)
        if got is not None:
            _cache.move_to_end(key)
        return got


def _cache_put(key: tuple[str, str], value: _Cached) -> None:
    with _cache_lock:
        _cache[key] = value
        _cache.move_to_end(key)
        while len(_cache) > CACHED_DATASETS:
            _cache.popitem(last=False)


def forget_cached() -> None:
    """Drop every cached audit (the benchmark measures a process's first question)."""
    with _cache_lock:
        _cache.clear()


@dataclass(frozen=True)
class Opened:
    audit: Audit
    head: AuditHeadRow


class AuditLog:
    """One dataset's record in one store."""

    def __init__(self, store: Store, dataset: Dataset) -> None:
        self.store = store
        self.dataset = dataset
        self.key = dataset.content_sha256
        self._cache_key = (str(store.path), self.key)

    def _params(self) -> dict[str, Any]:
        return {"data_sha256": self.key}

    def open(self, cur: Any, session_id: str) -> Opened:
        """Inside the answer's write transaction: lock the record and bring the audit up to it."""
        cur.execute(q("local_audit_session_add"), {"session_id": session_id, **self._params()})
        created = scalar(
            cur,
            int,
            q("local_audit_head_create"),
            {
                **self._params(),
                "audit_id": uuid.uuid4().hex,
                "row_count": self.dataset.rows,
                "now": utcnow(),
            },
        )
        head = self._head(cur)
        if created and head.answered == 0:
            head = self._seed(cur, head)
        cached = _cache_get(self._cache_key)
        if (
            cached is not None
            and cached.audit_id == head.audit_id
            and cached.audit.answered <= head.answered
        ):
            audit = cached.audit
        else:
            audit = Audit.of(self.dataset)
        self._absorb(cur, audit, head.answered)
        # What was absorbed is committed (or this transaction's own seed: if it rolls back, the
        # record's audit_id goes with it and this entry is never matched again).
        _cache_put(self._cache_key, _Cached(head.audit_id, audit))
        return Opened(audit, head)

    def _head(self, cur: Any) -> AuditHeadRow:
        head = fetch_one(
            cur, AuditHeadRow, self.store.locked(q("local_audit_head_get")), self._params()
        )
        assert head is not None  # created just above if it was not there
        return head

    def _seed(self, cur: Any, head: AuditHeadRow) -> AuditHeadRow:
        """A new record on data that issue 11's per-session control already answered on: those
        answers count too."""
        cur.execute(
            q("local_audit_seed_legacy"), {**self._params(), "legacy_sha256": self.dataset.sha256}
        )
        seeded = scalar(cur, int, q("local_audit_count"), self._params()) or 0
        if not seeded:
            return head
        self._advance(cur, 0, seeded)
        return self._head(cur)

    def _advance(self, cur: Any, before: int, after: int) -> None:
        moved = scalar(
            cur,
            int,
            q("local_audit_head_advance"),
            {**self._params(), "before": before, "answered": after, "now": utcnow()},
        )
        # The row is locked by this transaction: nobody else can have moved it.
        assert moved == 1, "the audit record moved under its lock"

    def _absorb(self, cur: Any, audit: Audit, stop: int) -> None:
        if audit.answered >= stop:
            return
        got = fetch_all(
            cur,
            AuditSetRow,
            q("local_audit_sets_range"),
            {**self._params(), "start": audit.answered, "stop": stop},
        )
        for r in got:
            assert r.seq == audit.answered, "a gap in the audit record"
            audit.absorb(
                r.columns, RowSet.from_blob(r.columns, r.n, bytes(r.bits)).mask(audit.rows)
            )

    def record(
        self,
        cur: Any,
        opened: Opened,
        session_id: str,
        crossing_id: str,
        figures: tuple[Figure, ...],
        after: Audit,
    ) -> None:
        """Store an answer's figures after the ones the audit was judged against."""
        start = opened.head.answered
        for i, f in enumerate(figures):
            cur.execute(
                q("local_audit_set_insert"),
                {
                    **self._params(),
                    "seq": start + i,
                    "session_id": session_id,
                    "crossing_id": crossing_id,
                    "columns": f.rows.columns,
                    "n": f.rows.n,
                    "bits": f.rows.blob(),
                },
            )
        if figures:
            self._advance(cur, start, start + len(figures))
        after.answered = start + len(figures)

    def committed(self, opened: Opened, after: Audit) -> None:
        """The answer's transaction committed: the audit with its figures is the record's."""
        _cache_put(self._cache_key, _Cached(opened.head.audit_id, after))

    def before(self, crossing_id: str) -> Audit:
        """The audit a recorded crossing was judged against: the record up to its first set (all
        of it for a crossing with none: the profile, or one from before the record existed).
        Built afresh, outside any cache."""
        audit = Audit.of(self.dataset)
        with self.store.read() as cur:
            head = fetch_one(cur, AuditHeadRow, q("local_audit_head_get"), self._params())
            if head is None:
                return audit
            start = scalar(cur, int, q("local_audit_crossing_start"), {"crossing_id": crossing_id})
            self._absorb(cur, audit, head.answered if start is None else start)
        return audit
