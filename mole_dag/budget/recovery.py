"""Crash recovery: what any process does when it opens the store for writing.

A process killed mid-call leaves two things behind: a reservation nobody will settle, and a
session that says `running` although nothing drives it. Waiting for the reservation's expiry
(and for some later session to sweep it) kept money `held` past the end of a finished session,
and the sweep then released it for free although the provider had answered and billed. Here a
reservation whose outcome is unknown is settled at its reserved amount (an upper bound, flagged
`assumed`), and a session whose driver is dead becomes `interrupted`, which `mole resume`
continues."""

from __future__ import annotations

from dataclasses import dataclass

from mole_dag.budget.ledger import Ledger, owner_alive
from mole_dag.core import SessionStatus
from mole_dag.store import Store, q, utcnow


@dataclass(frozen=True)
class StoreRecovery:
    reservations_assumed: int
    sessions_interrupted: tuple[str, ...]


def recover_store(store: Store) -> StoreRecovery:
    ledger = Ledger(store)
    settled = ledger.settle_abandoned()
    now = utcnow()
    orphaned = [r["id"] for r in store.named("sessions_orphaned")
                if owner_alive(r["owner"]) is False]

    def tx(cur) -> None:  # type: ignore[no-untyped-def]
        for sid in orphaned:
            cur.execute(q("session_set_status_reason"), {
                "status": str(SessionStatus.INTERRUPTED), "now": now, "session_id": sid,
                "reason": "the process driving it stopped without finishing"})
            # Its driver ran its leads in-process: no lease of it has a live holder.
            cur.execute(q("leases_requeue_session"), {"session_id": sid})

    if orphaned:
        store.transact(tx)
    return StoreRecovery(settled, tuple(orphaned))
