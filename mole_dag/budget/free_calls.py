"""Free calls (holds of 0: an extractive skill, a local search), recorded in batches.

Reserve-before-dispatch protects money, and a zero hold protects none, so a stage's free calls
are not written one transaction each before they are made: they gather in a `FreeCallBatch`
and are written together, at the end of the block (`Ledger.free_calls`) or with the stage's own
rows (`FreeCallBatch.write_with`). A free call is still refused as `reserve` refuses a hold of 0
(the session is not open, or was overrun), and one that turns out to cost something is written
and settled at once, as the overrun it is."""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb

from mole_dag.budget.hold import Hold
from mole_dag.budget.types import (
    BudgetOverrun,
    FreeCall,
    LedgerError,
    Reservation,
    Settlement,
    Usage,
)
from mole_dag.core import CallStatus, Role, SessionStatus
from mole_dag.store import Store, q
from mole_dag.store.recovery import owner_tag

if TYPE_CHECKING:
    from mole_dag.budget.ledger import Ledger

log = logging.getLogger("mole.budget")
T = TypeVar("T")

# How long a batch trusts its last look at the session before looking again (another process
# or another Ledger may have ended it). Free calls risk no money, so this only bounds how long
# a stage keeps calling after its session was stopped elsewhere.
FREE_RECHECK_S = 2.0


class FreeCallBatch:
    """The free calls of one stage of one session, recorded in one transaction. Thread-safe:
    a stage's lead workers share it."""

    def __init__(self, ledger: Ledger, session_id: str) -> None:
        self.ledger = ledger
        self.session_id = session_id
        self._calls: list[FreeCall] = []
        self._lock = threading.Lock()
        self._checked: tuple[int, float] | None = None  # (ledger generation, monotonic time)

    def __len__(self) -> int:
        with self._lock:
            return len(self._calls)

    def admit(self, role: Role) -> None:
        """Refuse a free call as `reserve` would refuse a hold of 0: a session that is not
        open, or that a provider overran, dispatches nothing more. Looks at the session again
        only when this ledger changed something or FREE_RECHECK_S has passed."""
        with self._lock:
            gen, now = self.ledger.generation, time.monotonic()
            if (
                self._checked
                and self._checked[0] == gen
                and now - self._checked[1] < FREE_RECHECK_S
            ):
                return
            bal = self.ledger.balance(self.session_id)  # raises for an unknown session
            if bal.overrun:
                raise BudgetOverrun(self.session_id, role, 0, bal.overrun, str(bal.unit))
            if bal.status not in (
                SessionStatus.CREATED,
                SessionStatus.RUNNING,
                SessionStatus.REPORTING,
            ):
                raise LedgerError(
                    f"session {self.session_id} is {bal.status}; it takes no more calls"
                )
            self._checked = (gen, now)

    def hold(self, role: Role, *, tool: str, stage: str) -> Hold:
        self.admit(role)
        now = self.ledger.clock()
        res = Reservation(
            f"call-{secrets.token_hex(8)}",
            self.session_id,
            role,
            0,
            tool,
            stage,
            now + self.ledger.ttl,
        )
        return _FreeHold(self, res, now)

    def add(self, call: FreeCall) -> None:
        with self._lock:
            self._calls.append(call)

    def take(self) -> list[FreeCall]:
        with self._lock:
            calls, self._calls = self._calls, []
        return calls

    def restore(self, calls: list[FreeCall]) -> None:
        with self._lock:
            self._calls[:0] = calls

    def flush(self) -> int:
        """Write the calls gathered so far, in their own transaction. On failure they stay in
        the batch for the next flush."""
        if not len(self):
            return 0  # no transaction for nothing
        return self.write_with(lambda cur: None)[1]

    def write_with(
        self, fn: Callable[[duckdb.DuckDBPyConnection], T], store: Store | None = None
    ) -> tuple[T, int]:
        """Run `fn` in a write transaction of `store` (the stage's; default the ledger's) and
        record the calls gathered so far in the same one, on the same cursor: a stage's rows
        and its calls, one commit. (Under Dagster the stage's and the ledger's Store can be two
        handles on one file: two connections, whose transactions do not see each other.) If
        the transaction fails the calls go back to the batch; a retried transaction
        (Store.transact) records them again, once."""
        calls = self.take()
        params = free_call_params(self.session_id, calls, self.ledger.ttl) if calls else None

        def tx(cur: duckdb.DuckDBPyConnection) -> T:
            out = fn(cur)
            if params is not None:
                insert_free_calls(cur, self.session_id, params)
            return out

        try:
            return (store or self.ledger.store).transact(tx), len(calls)
        except BaseException:
            self.restore(calls)
            raise


class _FreeHold(Hold):
    """A hold of 0 inside a FreeCallBatch: nothing is written until the batch flushes. A call
    that turns out to cost something is written and settled at once, as the overrun it is."""

    def __init__(self, batch: FreeCallBatch, reservation: Reservation, started: datetime):
        super().__init__(batch.ledger, reservation)
        self.batch = batch
        self.started = started

    def _record(
        self,
        status: CallStatus,
        *,
        usage: Usage | None = None,
        note: str | None = None,
        model: str | None = None,
        assumed: bool = False,
    ) -> None:
        r = self.reservation
        self.batch.add(
            FreeCall(
                r.id,
                r.role,
                r.stage,
                r.tool,
                self.started,
                self.ledger.clock(),
                status,
                usage or Usage(),
                note,
                model,
                assumed,
            )
        )
        self.done = True

    def settle(
        self,
        actual: int,
        *,
        usage: Usage | None = None,
        note: str | None = None,
        model: str | None = None,
        also: Callable[[Any], None] | None = None,
    ) -> Settlement:
        # `also` is not run: a free call's answer is not kept, since asking again costs nothing.
        if actual < 0:
            raise LedgerError(f"a call cannot cost a negative amount ({actual})")
        if actual:
            self.settlement = settle_unreserved(
                self.ledger,
                self.reservation,
                self.started,
                actual,
                usage=usage,
                note=note,
                model=model,
            )
        else:
            self._record(CallStatus.SETTLED, usage=usage, note=note, model=model)
            self.settlement = Settlement(self.reservation.id, 0, 0, 0)
        self.done = True
        return self.settlement

    def release(self, note: str | None = None) -> None:
        self._record(CallStatus.RELEASED, note=note)

    def settle_assumed(self, note: str) -> None:
        # Interrupted in flight: charged its reservation, which is 0.
        self._record(CallStatus.SETTLED, note=note, assumed=True)

    def renew(self, note: str) -> None:
        # A free call's attempt cost nothing, nor will its retry: one row says what it used.
        return None


class OpenBatches:
    """A ledger's open batches of free calls, by session, shared by a stage's threads."""

    def __init__(self) -> None:
        self._batches: dict[str, FreeCallBatch] = {}
        self._lock = threading.Lock()

    def get(self, session_id: str) -> FreeCallBatch | None:
        with self._lock:
            return self._batches.get(session_id)

    @contextmanager
    def open(self, ledger: Ledger, session_id: str) -> Iterator[FreeCallBatch]:
        """The body of `Ledger.free_calls` (see there)."""
        with self._lock:
            outer = self._batches.get(session_id)
            if outer is None:
                batch = self._batches[session_id] = FreeCallBatch(ledger, session_id)
        if outer is not None:
            yield outer
            return
        try:
            yield batch
        except BaseException:
            with self._lock:
                self._batches.pop(session_id, None)
            try:
                batch.flush()  # the calls were made: their rows are kept even on failure
            except Exception:
                log.exception("session %s: could not record %d free calls", session_id, len(batch))
            raise
        with self._lock:
            self._batches.pop(session_id, None)
        batch.flush()


def record_free_calls(
    store: Store, session_id: str, calls: Sequence[FreeCall], ttl: timedelta
) -> int:
    """`Ledger.record_free_calls` (see there)."""
    if not calls:
        return 0
    params = free_call_params(session_id, calls, ttl)
    if any(c.status not in (CallStatus.SETTLED, CallStatus.RELEASED) for c in calls):
        raise LedgerError("a free call is recorded settled or released, nothing else")
    store.transact(lambda cur: insert_free_calls(cur, session_id, params))
    return len(calls)


def free_call_params(session_id: str, calls: Sequence[FreeCall], ttl: timedelta) -> dict[str, Any]:
    owner = owner_tag()
    usages = [c.usage for c in calls]
    return {
        "session_id": session_id,
        "owner": owner,
        "id": [c.id for c in calls],
        "role": [str(c.role) for c in calls],
        "stage": [c.stage for c in calls],
        "tool": [c.tool for c in calls],
        "status": [str(c.status) for c in calls],
        "actual": [0 if c.status == CallStatus.SETTLED else None for c in calls],
        "input_tokens": [
            u.input_tokens if c.status == CallStatus.SETTLED else None
            for c, u in zip(calls, usages, strict=True)
        ],
        "output_tokens": [
            u.output_tokens if c.status == CallStatus.SETTLED else None
            for c, u in zip(calls, usages, strict=True)
        ],
        "cache_read_tokens": [
            u.cache_read_tokens if c.status == CallStatus.SETTLED else None
            for c, u in zip(calls, usages, strict=True)
        ],
        "cache_write_tokens": [
            u.cache_write_tokens if c.status == CallStatus.SETTLED else None
            for c, u in zip(calls, usages, strict=True)
        ],
        "note": [c.note for c in calls],
        "model": [c.model for c in calls],
        "created_at": [c.created_at for c in calls],
        "expires_at": [c.created_at + ttl for c in calls],
        "completed_at": [c.completed_at for c in calls],
        "assumed": [c.assumed for c in calls],
    }


def insert_free_calls(
    cur: duckdb.DuckDBPyConnection, session_id: str, params: dict[str, Any]
) -> None:
    if cur.execute(q("session_get"), {"session_id": session_id}).fetchone() is None:
        raise LedgerError(f"no session {session_id!r}")
    cur.execute(q("free_calls_insert_many"), params)


def settle_unreserved(
    ledger: Ledger,
    reservation: Reservation,
    created_at: datetime,
    actual: int,
    *,
    usage: Usage | None,
    note: str | None,
    model: str | None,
) -> Settlement:
    """A call dispatched as free (a hold of 0, not written) reported a cost: write its
    zero reservation and settle it in one transaction, so the excess is recorded as the
    overrun it is (and the session stops dispatching), exactly as if it had been reserved."""

    def tx(cur: duckdb.DuckDBPyConnection) -> Settlement:
        cur.execute(
            q("call_insert"),
            {
                "id": reservation.id,
                "session_id": reservation.session_id,
                "role": str(reservation.role),
                "stage": reservation.stage,
                "tool": reservation.tool,
                "amount": 0,
                "note": None,
                "now": created_at,
                "expires_at": reservation.expires_at,
                "owner": owner_tag(),
            },
        )
        # Joins this transaction (Store.write nests).
        return ledger.settle(reservation, actual, usage=usage, note=note, model=model)

    return ledger.store.transact(tx)
