"""Assumed settlement: a call whose outcome nobody will report is charged its whole reservation,
flagged `assumed`, never released.

A caller interrupted with its call possibly in flight (Ctrl-C, SIGTERM, a stop), or one that
died, cannot prove the provider did not answer and bill: releasing the hold would let money
leave the books. If the caller does come back with the real usage, that usage replaces the
assumption (`replace_assumed`). Abandoned reservations of dead processes are found and settled
the same way by mole_dag.store.recovery."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb

from mole_dag.budget.types import Reservation, Settlement
from mole_dag.core import CallStatus
from mole_dag.store import Store, fetch_all, fetch_one, q
from mole_dag.store.records import CallRow


def settle_assumed(store: Store, reservation: Reservation, note: str, now: datetime) -> None:
    """Charge the reservation in full, in its own transaction."""
    store.transact(
        lambda cur: settle_assumed_call(
            cur, store, reservation.id, reservation.session_id, note, now
        )
    )


def settle_assumed_in_stage(
    store: Store, session_id: str, stage: str, note: str, now: datetime
) -> int:
    """settle_assumed for every call of the session's `stage` still reserved, in one
    transaction. Returns how many were charged."""

    def tx(cur: duckdb.DuckDBPyConnection) -> int:
        open_calls = fetch_all(
            cur,
            CallRow,
            store.locked(q("calls_reserved_in_stage")),
            {"session_id": session_id, "stage": stage},
        )
        return sum(settle_assumed_call(cur, store, c.id, session_id, note, now) for c in open_calls)

    return store.transact(tx)


def settle_assumed_call(
    cur: duckdb.DuckDBPyConnection,
    store: Store,
    call_id: str,
    session_id: str,
    note: str,
    now: datetime,
) -> int:
    """Charge one call still reserved at its reservation, inside `cur`'s transaction. Returns 1,
    or 0 when the call is no longer reserved (settled, released or swept meanwhile)."""
    row = fetch_one(cur, CallRow, store.locked(q("call_get")), {"id": call_id})
    if row is None or row.status != CallStatus.RESERVED:
        return 0
    cur.execute(
        q("session_charge"),
        {
            "unhold": row.reserved,
            "charged": row.reserved,
            "overrun": 0,
            "now": now,
            "session_id": session_id,
        },
    )
    cur.execute(q("call_settle_assumed"), {"id": call_id, "now": now})
    cur.execute(q("call_note"), {"id": call_id, "note": note})
    return 1


def replace_assumed(
    cur: duckdb.DuckDBPyConnection,
    reservation: Reservation,
    reserved: int,
    actual: int,
    call_row: dict[str, Any],
    now: datetime,
) -> Settlement:
    """Recovery settled the call at its reservation while its caller was still alive (a call
    that outlived its expiry): the real usage replaces the assumption, inside `cur`'s
    transaction. The reservation moved wholly into `spent`, so it still covers the call."""
    charged = min(actual, reserved)
    overrun = actual - charged
    cur.execute(
        q("session_charge"),
        {
            "unhold": 0,
            "charged": charged - reserved,
            "overrun": overrun,
            "now": now,
            "session_id": reservation.session_id,
        },
    )
    cur.execute(q("call_settle_assumed_late"), {**call_row, "overrun": overrun})
    return Settlement(reservation.id, actual, charged, overrun)
