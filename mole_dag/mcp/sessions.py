"""Research mode, read side: what mole-mcp answers about a session, from the store.

The same library calls the CLI makes (the Ledger, named queries, render_trace, the scorecard,
the crossings recorder), shaped as JSON-like values for a client to parse. Each function takes
an open store and an already-checked session id, and raises UnknownSession or BadInput with a
message for the caller."""

from __future__ import annotations

import json
from typing import Any

from mole_dag.budget import Ledger
from mole_dag.core import SessionStatus
from mole_dag.mcp.toolkit import BadInput
from mole_dag.mcp.workers import WorkerState
from mole_dag.sanitize import one_line
from mole_dag.store import Store, q
from mole_dag.store.records import CrossingRow, SessionRow

TERMINAL = (
    SessionStatus.DONE,
    SessionStatus.FAILED,
    SessionStatus.ABANDONED,
    SessionStatus.EXHAUSTED,
    SessionStatus.INTERRUPTED,
)
MAX_SQL_CHARS = 10_000


class UnknownSession(LookupError):
    pass


def session_row(store: Store, session_id: str) -> SessionRow:
    row = store.one(SessionRow, q("session_get"), {"session_id": session_id})
    if row is None:
        raise UnknownSession(
            f"no session {session_id!r} in this store; `research` starts one and returns its id"
        )
    return row


def _fmt(amount: int, unit: str) -> str:
    return f"${amount / 1_000_000:.6f}" if unit == "usd_micros" else f"{amount} tokens"


def worker_info(worker: WorkerState | None) -> dict[str, Any] | None:
    if worker is None:
        return None
    out: dict[str, Any] = {
        "pid": worker.pid,
        "running": worker.running,
        "exit_code": worker.exit_code,
    }
    if not worker.running and worker.exit_code not in (0, None):
        out["log_tail"] = worker.log_tail()
    return out


def starting(session_id: str, worker: WorkerState) -> dict[str, Any]:
    """A session launched over MCP whose process has not created its row yet (or failed
    before it could)."""
    failed = not worker.running
    return {
        "session": session_id,
        "status": "failed_to_start" if failed else "starting",
        "finished": failed,
        "worker": worker_info(worker),
        "next": (
            "see worker.log_tail for why; nothing was spent"
            if failed
            else "poll session_status again in a few seconds"
        ),
    }


def status(store: Store, session_id: str, worker: WorkerState | None) -> dict[str, Any]:
    sess = session_row(store, session_id)
    ledger = Ledger(store)
    bal = ledger.balance(session_id)
    unit = str(bal.unit)
    check = ledger.verify(session_id)
    counts = store.row(q("session_counts"), {"session_id": session_id}) or {}
    report = store.row(q("report_latest"), {"session_id": session_id})
    worker_ended = worker is not None and not worker.running
    finished = bal.status in TERMINAL or worker_ended
    out: dict[str, Any] = {
        "session": session_id,
        "status": str(bal.status),
        "finished": finished,
        "question": one_line(sess.question),
        "provider": sess.provider,
        "rounds": sess.rounds,
        "budget": {
            "unit": unit,
            "total": bal.total,
            "spent": bal.spent,
            "held": bal.held,
            "escrow": bal.escrow,
            "overrun": bal.overrun,
            "available": max(bal.available, 0),
            # spent + overrun: what the session cost, against its total.
            "charged": bal.charged,
            "summary": f"spent {_fmt(bal.charged, unit)} of {_fmt(bal.total, unit)}"
            + (f" (overrun {_fmt(bal.overrun, unit)} included)" if bal.overrun else ""),
        },
        "spend_by_role": [
            {
                "role": r["role"],
                "calls": int(r["calls"]),
                "spent": int(r["spent"]),
                "held": int(r["held"]),
            }
            for r in ledger.spend_by_role(session_id)
        ],
        "counts": {k: int(v) for k, v in counts.items()},
        "ledger": {"ok": check.ok, "check": check.explain()},
        "report_ready": report is not None,
        "data_attached": bool(sess.data),
        "worker": worker_info(worker),
    }
    if sess.stop_reason:
        out["stop_reason"] = one_line(sess.stop_reason)
    if bal.status == SessionStatus.INTERRUPTED:
        out["next"] = "resume(session) continues it within its original budget"
    elif (
        worker_ended and worker is not None and bal.status not in TERMINAL and worker.exit_code != 0
    ):
        out["next"] = (
            "the research process ended with an error before finishing (see "
            "worker.log_tail); what it stored is still readable with trace and eval"
        )
    elif report is not None:
        out["next"] = "report(session) returns the Markdown"
    elif not finished:
        out["next"] = "poll session_status again in a few seconds"
    return out


def report(store: Store, session_id: str) -> str:
    sess = session_row(store, session_id)
    rep = store.row(q("report_latest"), {"session_id": session_id})
    if rep is None:
        raise BadInput(
            f"session {session_id} has no report yet (status {sess.status}); poll "
            "session_status until report_ready is true"
        )
    return str(rep["markdown"])


def trace(store: Store, session_id: str) -> str:
    from mole_dag.output.trace import render_trace

    session_row(store, session_id)
    return render_trace(store, session_id)


def scorecard(store: Store, session_id: str) -> dict[str, Any]:
    from mole_dag.evals.scorecard import as_json
    from mole_dag.evals.scorecard import scorecard as compute

    session_row(store, session_id)
    return json.loads(as_json(compute(store, session_id), session_id))


def _data_session(store: Store, session_id: str) -> None:
    sess = session_row(store, session_id)
    if not sess.data:
        raise BadInput(
            f"session {session_id} has no data attached; start one with "
            "research(..., data=PATH) to a CSV file or a folder of CSVs"
        )


def local_profile(store: Store, session_id: str) -> dict[str, Any]:
    """The data's profile (names, types, roles, counts, null rates; no values), recorded as a
    crossing like the one the research pipeline records."""
    from mole_dag.local_data.crossings import Recorder, open_session_data
    from mole_dag.local_data.hypothesis import CATALOGUE

    _data_session(store, session_id)
    sess = session_row(store, session_id)
    with open_session_data(store, session_id) as ds:
        view = ds.view(sess.question, CATALOGUE, max_choices=len(CATALOGUE))
        cid = Recorder(store, session_id, ds).record_profile(view)
    row = store.one(CrossingRow, q("local_crossing_get"), {"id": cid})
    assert row is not None  # recorded just above
    return {
        "crossing_id": cid,
        "table": "data",
        "envelope": json.loads(row.envelope),
        "envelope_sha256": row.envelope_sha256,
    }


def local_query(store: Store, session_id: str, sql: str) -> dict[str, Any]:
    """One statement through the guard, the k>=5 gate and the exfil check; the crossing or the
    refusal is recorded either way (`mole crossings` lists both)."""
    from mole_dag.local_data.crossings import gated_query

    if not isinstance(sql, str) or not sql.strip():
        raise BadInput("sql is empty: send one aggregate SELECT over the table `data`")
    if len(sql) > MAX_SQL_CHARS:
        raise BadInput(f"sql has {len(sql):,} characters; the cap is {MAX_SQL_CHARS:,}")
    _data_session(store, session_id)
    got = gated_query(store, session_id, sql)
    if got.crossing is None:
        refused = got.refused
        assert refused is not None
        return {
            "ok": False,
            "refused": {
                "stage": str(refused.stage),
                "reason": str(refused.reason),
                "detail": refused.detail,
            },
            "recorded": "as a refusal; `mole crossings` lists it",
        }
    c = got.crossing
    out: dict[str, Any] = {
        "ok": True,
        "crossing_id": got.crossing_id,
        "sql": c.sql,
        "columns": c.columns,
        "envelope": c.envelope,
        "envelope_sha256": c.envelope_sha256,
        "min_rows": c.min_rows,
    }
    if c.partial is not None:
        out["suppressed"] = {
            "stage": str(c.partial.stage),
            "reason": str(c.partial.reason),
            "detail": c.partial.detail,
        }
    if c.also_suppressed:
        # Groups the query audit suppressed (issue 22), each recorded as a refusal.
        out["also_suppressed"] = [
            {"stage": str(r.stage), "reason": str(r.reason), "detail": r.detail}
            for r in c.also_suppressed
        ]
    return out
