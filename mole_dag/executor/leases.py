"""Leads are leased, not marked running. A lease has an owner and an expiry and is heartbeated
at a third of its TTL; a worker that dies stops heartbeating, its lease lapses, and the sweep at
the next start puts the lead back in the queue."""

from __future__ import annotations

import functools
import secrets
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any

from mole_dag.core import LeadStatus
from mole_dag.store import Store, column, fetch_all, fetch_one, q, scalar, utcnow
from mole_dag.store.records import LeadRow

# Longer than one lead takes on a slow site, short enough that a crash costs little. A guess.
LEASE_TTL = timedelta(minutes=5)


@dataclass(frozen=True)
class Lease:
    lead_id: str
    owner: str
    sub_question_id: str
    actor: str
    query: str
    depth: int


def _lease(row: LeadRow, owner: str) -> Lease:
    return Lease(
        lead_id=row.id,
        owner=owner,
        sub_question_id=row.sub_question_id,
        actor=row.actor,
        query=row.query,
        depth=row.depth,
    )


def new_owner() -> str:
    return f"worker-{secrets.token_hex(4)}"


def requeue_expired(store: Store, session_id: str, now: datetime | None = None) -> int:
    """Put back every lease of the session that lapsed before `now` (default: the clock)."""
    now = now or utcnow()
    # Looked at first, so the usual case (nothing lapsed) costs a read, not a write transaction
    # (each commit will cost an open of the file, issue 12). A lease that lapses just after
    # is requeued by the next sweep.
    if not store.scalar(q("leases_expired_count"), {"session_id": session_id, "now": now}):
        return 0
    # The UPDATE's affected-row count.
    return store.transact(
        lambda cur: (
            scalar(cur, int, q("leases_requeue_expired"), {"session_id": session_id, "now": now})
            or 0
        )
    )


def lease_next(
    store: Store, session_id: str, owner: str, ttl: timedelta = LEASE_TTL
) -> Lease | None:
    now = utcnow()

    def tx(cur: Any) -> Lease | None:
        row = fetch_one(cur, LeadRow, q("lead_next_pending"), {"session_id": session_id})
        if row is None:
            return None
        taken = scalar(
            cur,
            int,
            q("lease_take"),
            {"id": row.id, "owner": owner, "expires_at": now + ttl, "now": now},
        )
        if not taken:  # another worker got it between our read and write
            return None
        return _lease(row, owner)

    return store.transact(tx)


def lease_pending(
    store: Store, session_id: str, owner: str, ttl: timedelta = LEASE_TTL
) -> list[Lease]:
    """Lease every pending lead of the session to `owner` in one transaction, in plan order.
    A lead another process leased first is not among them. Keep them alive with
    OwnerHeartbeat: a lead waiting for a free worker must not lapse."""
    now = utcnow()
    if not store.rows(q("leads_pending"), {"session_id": session_id}):
        return []  # nothing to lease: no write transaction

    def tx(cur: Any) -> list[Lease]:
        ids = column(cur, str, q("leads_pending"), {"session_id": session_id})
        if ids:
            cur.execute(
                q("lease_take_many"),
                {"ids": ids, "owner": owner, "expires_at": now + ttl, "now": now},
            )
        rows = fetch_all(
            cur, LeadRow, q("leases_of_owner"), {"session_id": session_id, "owner": owner}
        )
        return [_lease(r, owner) for r in rows]

    return store.transact(tx)


def finish_in(cur: Any, lease: Lease, status: LeadStatus) -> None:
    """`finish`, inside a transaction the caller holds (with the lead's findings)."""
    cur.execute(
        q("lease_finish"),
        {"status": str(status), "now": utcnow(), "id": lease.lead_id, "owner": lease.owner},
    )


def finish(store: Store, lease: Lease, status: LeadStatus) -> None:
    now = utcnow()
    store.transact(
        lambda cur: cur.execute(
            q("lease_finish"),
            {"status": str(status), "now": now, "id": lease.lead_id, "owner": lease.owner},
        )
    )


class Heartbeat:
    """Extends a lease every ttl/3 (or every `interval` seconds) while the `with` body runs."""

    def __init__(
        self,
        store: Store,
        lease: Lease,
        ttl: timedelta = LEASE_TTL,
        interval: float | None = None,
    ) -> None:
        self.store, self.lease, self.ttl = store, lease, ttl
        # A third of the TTL: two beats may be late before the lease lapses.
        self.interval = ttl.total_seconds() / 3 if interval is None else interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True, name=f"hb-{lease.lead_id}")
        self.beats = 0

    def _extend(self, cur: Any, now: Any) -> None:
        cur.execute(
            q("lease_heartbeat"),
            {
                "expires_at": now + self.ttl,
                "now": now,
                "id": self.lease.lead_id,
                "owner": self.lease.owner,
            },
        )

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            self.store.transact(functools.partial(self._extend, now=utcnow()))
            self.beats += 1

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()


class OwnerHeartbeat(Heartbeat):
    """Extends every lease `owner` holds on the session, in one statement, every ttl/3: the
    leases `lease_pending` took, running or waiting for a worker."""

    def __init__(
        self,
        store: Store,
        session_id: str,
        owner: str,
        ttl: timedelta = LEASE_TTL,
        interval: float | None = None,
    ) -> None:
        super().__init__(store, Lease("", owner, "", "", "", 0), ttl, interval)
        self.session_id = session_id
        self._thread.name = f"hb-{owner}"

    def _extend(self, cur: Any, now: Any) -> None:
        cur.execute(
            q("lease_heartbeat_owner"),
            {
                "expires_at": now + self.ttl,
                "now": now,
                "session_id": self.session_id,
                "owner": self.lease.owner,
            },
        )
