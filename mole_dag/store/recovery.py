"""Crash recovery: what any process does when it opens the store for writing.

A process killed mid-call leaves two things behind: a reservation nobody will settle, and a
session that says `running` although nothing drives it. Waiting for the reservation's expiry
(and for some later session to sweep it) kept money `held` past the end of a finished session,
and the sweep then released it for free although the provider had answered and billed. Here a
reservation whose outcome is unknown is settled at its reserved amount (an upper bound, flagged
`assumed`), and a session whose driver is dead becomes `interrupted`, which `mole resume`
continues.

In the store layer because the store runs it at its first writing open (budget sits above
store); the ledger's `settle_abandoned` calls the same function."""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

import duckdb

from mole_dag.core import SessionStatus
from mole_dag.store.base import utcnow
from mole_dag.store.queries import q
from mole_dag.store.records import OpenReservationRow, fetch_all

if TYPE_CHECKING:
    from mole_dag.store.base import Store

# The ledger's logger: settling is the ledger's business, wherever the code that does it lives.
log = logging.getLogger("mole.budget")


def owner_tag() -> str:
    """Who holds a reservation or drives a session: 'host:pid'. Read at call time, so a forked
    worker names itself."""
    return f"{socket.gethostname()}:{os.getpid()}"


def owner_alive(owner: str | None) -> bool | None:
    """True/False for an owner on this host; None when it cannot be told (another host, or no
    owner recorded). A recycled pid reads as alive: the safe side, since the reservation then
    waits for its expiry instead of being settled under a live caller."""
    if not owner or ":" not in owner:
        return None
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    if int(pid) == os.getpid():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def settle_abandoned(store: Store, now: datetime, *, dead_owners: bool = True) -> int:
    """Settle, at the reserved amount and flagged `assumed`, every reservation whose outcome
    nobody will report (Ledger.settle_abandoned says which). Returns how many were settled."""
    finished = {str(s) for s in SessionStatus} - {
        SessionStatus.CREATED,
        SessionStatus.RUNNING,
        SessionStatus.REPORTING,
    }

    if not store.rows(q("open_reservations")):
        # The usual case at a stage's start: nothing open, so no write transaction (each
        # commit will cost an open of the file, issue 12). A reservation made after this
        # read is live, not abandoned.
        return 0

    def tx(cur: duckdb.DuckDBPyConnection) -> int:
        n = 0
        for r in fetch_all(cur, OpenReservationRow, store.locked(q("open_reservations"), of="c")):
            alive = owner_alive(r.owner)
            abandoned = (
                r.expires_at < now
                or (dead_owners and alive is False)
                or (dead_owners and r.session_status in finished and not alive)
            )
            if not abandoned:
                continue
            cur.execute(
                q("session_charge"),
                {
                    "unhold": r.reserved,
                    "charged": r.reserved,
                    "overrun": 0,
                    "now": now,
                    "session_id": r.session_id,
                },
            )
            cur.execute(q("call_settle_assumed"), {"id": r.id, "now": now})
            n += 1
        return n

    n = store.transact(tx)
    if n:
        log.warning(
            "settled %d abandoned reservation(s) at their reserved amount "
            "(outcome unknown: the caller died or was interrupted)",
            n,
        )
    return n


@dataclass(frozen=True)
class StoreRecovery:
    reservations_assumed: int
    sessions_interrupted: tuple[str, ...]


def recover_store(store: Store) -> StoreRecovery:
    settled = settle_abandoned(store, utcnow())
    now = utcnow()
    orphaned = [
        r["id"] for r in store.named("sessions_orphaned") if owner_alive(r["owner"]) is False
    ]

    def tx(cur) -> None:  # type: ignore[no-untyped-def]
        for sid in orphaned:
            cur.execute(
                q("session_set_status_reason"),
                {
                    "status": str(SessionStatus.INTERRUPTED),
                    "now": now,
                    "session_id": sid,
                    "reason": "the process driving it stopped without finishing",
                },
            )
            # Its driver ran its leads in-process: no lease of it has a live holder.
            cur.execute(q("leases_requeue_session"), {"session_id": sid})

    if orphaned:
        store.transact(tx)
    return StoreRecovery(settled, tuple(orphaned))
