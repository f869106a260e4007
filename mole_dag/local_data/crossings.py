"""Crossings: the record of everything that left the boundary, and of everything it refused.

Every request goes through `Recorder.ask_*`, which runs the boundary and writes, in one
transaction, either the crossing (session, template, columns, rendered SQL, envelope) or the
refusal (stage, reason, what was asked, why). The same transaction locks the data's query audit
(audit_log.py: every answer given over the same data, by any session or process), judges the
request against it and records the new crossing's row sets there, so no two processes or
sessions can each answer one half of a combination. `mole crossings <session>` prints these
rows: what it shows is what left, byte for byte in canonical JSON, and every refused attempt."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mole_dag.core import stable_id
from mole_dag.local_data import boundary
from mole_dag.local_data.audit import Audit
from mole_dag.local_data.audit_log import AuditLog
from mole_dag.local_data.boundary import Crossing
from mole_dag.local_data.connector import FLOOR, DataError, Dataset
from mole_dag.local_data.refusal import Refused, Stage
from mole_dag.local_data.values import canonical_json
from mole_dag.skills.view import HypothesisChoice, ProfileView
from mole_dag.store import Store, q, utcnow
from mole_dag.store.records import (
    AuditSummaryRow,
    CrossingRow,
    LocalDatasetRow,
    RefusalRow,
    SessionRow,
    scalar,
)

MAX_REQUEST_CHARS = 2000


@dataclass(frozen=True)
class Outcome:
    crossing: Crossing | None
    crossing_id: str | None
    refused: Refused | None


def choice_request(choice: HypothesisChoice) -> str:
    raw: dict[str, Any] = {"template": choice.template, "columns": choice.columns}
    if choice.buckets is not None:
        raw["buckets"] = choice.buckets
    try:
        text = canonical_json(raw)
    except (TypeError, ValueError):
        text = repr(raw)
    return text[:MAX_REQUEST_CHARS]


class Recorder:
    """Runs requests against one session's dataset and records every outcome."""

    def __init__(self, store: Store, session_id: str, dataset: Dataset) -> None:
        self.store = store
        self.session_id = session_id
        self.dataset = dataset

    def _seq(self, cur: Any) -> int:
        seq = scalar(cur, int, q("local_next_seq"), {"session_id": self.session_id})
        assert seq is not None  # coalesce(max(seq), -1) + 1 always has a row
        return seq

    def _write_crossing(self, cur: Any, c: Crossing) -> str:
        seq = self._seq(cur)
        cid = stable_id(self.session_id, "crossing", str(seq), c.envelope_sha256, prefix="x-")
        cur.execute(
            q("local_crossing_insert"),
            {
                "id": cid,
                "session_id": self.session_id,
                "seq": seq,
                "kind": c.kind,
                "template": c.template,
                "columns": json.dumps(c.columns, ensure_ascii=False),
                "sql": c.sql,
                "executed_sql": c.executed_sql,
                "envelope": c.envelope_json,
                "envelope_sha256": c.envelope_sha256,
                "dataset_sha256": self.dataset.sha256,
                "floor": FLOOR,
                "min_rows": c.min_rows,
                "now": utcnow(),
            },
        )
        return cid

    def _write_refusal(
        self,
        cur: Any,
        r: Refused,
        *,
        kind: str,
        request: str,
        crossing_id: str | None = None,
        withheld_sha256: str | None = None,
    ) -> None:
        seq = self._seq(cur)
        cur.execute(
            q("local_refusal_insert"),
            {
                "id": stable_id(self.session_id, "refusal", str(seq), prefix="xr-"),
                "session_id": self.session_id,
                "seq": seq,
                "stage": str(r.stage),
                "reason": str(r.reason),
                "kind": kind,
                "request": request[:MAX_REQUEST_CHARS],
                "detail": r.detail[:1000],
                "crossing_id": crossing_id,
                "withheld_sha256": withheld_sha256,
                "now": utcnow(),
            },
        )

    def record_refusal(self, refused: Refused, *, kind: str, request: str) -> None:
        self.store.transact(
            lambda cur: self._write_refusal(cur, refused, kind=kind, request=request)
        )

    def record_profile(self, view: ProfileView) -> str:
        c = boundary.profile_crossing(self.dataset, view)
        return self.store.transact(lambda cur: self._write_crossing(cur, c))

    def _record(
        self,
        kind: str,
        request: str,
        run: Callable[[Audit], Crossing],
        also: Callable[[Any, str, Crossing], None] | None,
    ) -> Outcome:
        log = AuditLog(self.store, self.dataset)
        done: list[tuple[Any, Audit]] = []

        def tx(cur: Any) -> Outcome:
            # Lock the data's audit, answer and record in one transaction: the audit the gate
            # judged against is the one the new row sets are added to.
            done.clear()
            opened = log.open(cur, self.session_id)
            try:
                crossing = run(opened.audit)
            except Refused as refused:
                # An envelope the exfil check stopped is not kept, not even here: only its hash.
                self._write_refusal(
                    cur,
                    refused,
                    kind=kind,
                    request=request,
                    withheld_sha256=refused.envelope_sha256,
                )
                return Outcome(None, None, refused)
            cid = self._write_crossing(cur, crossing)
            after = crossing.audit if crossing.audit is not None else opened.audit.trial()
            log.record(cur, opened, self.session_id, cid, crossing.figures, after)
            done.append((opened, after))
            for partial in crossing.partials:
                self._write_refusal(cur, partial, kind=kind, request=request, crossing_id=cid)
            if also is not None:
                also(cur, cid, crossing)
            return Outcome(crossing, cid, crossing.partial)

        out = self.store.transact(tx)
        for opened, after in done:
            log.committed(opened, after)
        return out

    def ask_template(
        self, choice: HypothesisChoice, also: Callable[[Any, str, Crossing], None] | None = None
    ) -> Outcome:
        return self._record(
            "template",
            choice_request(choice),
            lambda h: boundary.ask_template(self.dataset, choice, h),
            also,
        )

    def ask_sql(self, sql: str) -> Outcome:
        return self._record(
            "sql", str(sql), lambda h: boundary.ask_sql(self.dataset, str(sql), h), None
        )


class NoData(LookupError):
    pass


def open_session_data(store: Store, session_id: str) -> Dataset:
    row = store.one(SessionRow, q("session_get"), {"session_id": session_id})
    if row is None:
        raise NoData(f"no session {session_id!r}")
    if not row.data:
        raise NoData(
            f"session {session_id} has no data attached; start one with "
            "`mole research ... --data PATH`"
        )
    return Dataset.open(row.data)


def gated_query(store: Store, session_id: str, sql: str) -> Outcome:
    """Toolkit mode: an agent's own model sends a statement; it is guarded, gated, checked and
    recorded like any template. Raises NoData or DataError if the session's data is unusable."""
    with open_session_data(store, session_id) as ds:
        return Recorder(store, session_id, ds).ask_sql(sql)


@dataclass(frozen=True)
class Listing:
    dataset: LocalDatasetRow | None
    crossings: list[CrossingRow]
    refusals: list[RefusalRow]
    # The query audit of the session's data, over every session (None before its first query).
    audit: AuditSummaryRow | None = None


def listing(store: Store, session_id: str) -> Listing:
    params = {"session_id": session_id}
    return Listing(
        store.one(LocalDatasetRow, q("local_dataset_get"), params),
        store.many(CrossingRow, q("local_crossings_list"), params),
        store.many(RefusalRow, q("local_refusals_list"), params),
        store.one(AuditSummaryRow, q("local_audit_summary"), params),
    )


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def pretty_envelope(text: str) -> list[str]:
    """The stored envelope, one top-level key a line and one row (or column, or test) a line:
    the same content as the canonical text, laid out to be read."""
    env = json.loads(text)
    out: list[str] = []
    for key in sorted(env):
        value = env[key]
        if isinstance(value, dict) and isinstance(value.get("results"), list):
            head = {k: v for k, v in value.items() if k != "results"}
            out.append(f"{key}: {_compact(head)}, results:")
            out += [f"  {_compact(item)}" for item in value["results"]]
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            out.append(f"{key}:")
            out += [f"  {_compact(item)}" for item in value]
        else:
            out.append(f"{key}: {_compact(value)}")
    return out


def format_listing(session_id: str, got: Listing) -> str:
    """What `mole crossings` prints. Envelopes are printed as stored (pretty-printed JSON of
    the canonical text whose hash is shown), so the reader sees exactly what left."""
    out = [f"session {session_id}"]
    ds = got.dataset
    if ds:
        out.append(
            f"data    {ds.path} ({ds.row_count} rows, {ds.columns} columns, "
            f"{ds.withheld} withheld; sha256 {ds.sha256[:16]}…)"
        )
    out.append(
        f"{len(got.crossings)} crossing(s), {len(got.refusals)} refusal(s); floor {FLOOR} rows"
    )
    a = got.audit
    if a is not None:
        # Counts only: the row sets behind them never leave the store.
        elsewhere = a.refused - a.refused_here
        out.append(
            f"audit   {a.answered} figure(s) answered over this data in {a.sessions} "
            f"session(s); {a.refused} attempt(s) refused as combining with earlier answers "
            f"({a.refused_here} in this session, {elsewhere} in others)"
        )
    events: list[CrossingRow | RefusalRow] = sorted(
        [*got.crossings, *got.refusals], key=lambda r: r.seq
    )
    for r in events:
        out.append("")
        if isinstance(r, CrossingRow):
            what = r.template or r.kind
            out.append(
                f"#{r.seq} crossing {r.id} · {what} · columns {r.columns} · "
                f"smallest figure over {r.min_rows} rows · "
                f"{r.created_at:%Y-%m-%d %H:%M:%S}"
            )
            if r.sql:
                out.append(f"  sql       {r.sql}")
            out.append(f"  envelope  (canonical JSON, sha256 {r.envelope_sha256})")
            out += [f"    {line}" for line in pretty_envelope(r.envelope)]
        else:
            out.append(
                f"#{r.seq} REFUSED at {r.stage}: {r.reason} · {r.kind} · "
                f"{r.created_at:%Y-%m-%d %H:%M:%S}"
            )
            out.append(f"  asked     {' '.join(str(r.request).split())}")
            out.append(f"  why       {r.detail}")
            if r.crossing_id:
                out.append(f"  (the rest of that answer left as {r.crossing_id})")
            if r.withheld_sha256:
                out.append(f"  withheld envelope sha256 {r.withheld_sha256} (not kept)")
    return "\n".join(out)


__all__ = [
    "DataError",
    "Listing",
    "NoData",
    "Outcome",
    "Recorder",
    "Stage",
    "format_listing",
    "gated_query",
    "listing",
    "open_session_data",
]
