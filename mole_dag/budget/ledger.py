"""The ledger: reserve before every call, settle after, release on failure, expire the abandoned.

Post-hoc charging lets N workers overshoot by N calls, because each passes "can I afford one
more?" before any has paid. Reserving first bounds the error to one estimate, and the estimate is
an upper bound by construction. The availability check and the hold are one conditional UPDATE
in one transaction; the CHECK constraints on `sessions` refuse any state the check let through
by mistake. `tool_calls` is the source of truth and `verify` proves the balances agree with it."""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

import duckdb

from mole_dag.core import CallStatus, Role, SessionStatus, Unit
from mole_dag.store import Store, fetch_all, fetch_one, q, scalar, utcnow
from mole_dag.store.records import CallRow, LedgerCheckRow, SessionRow
from mole_dag.store.recovery import owner_tag, settle_abandoned

log = logging.getLogger("mole.budget")
T = TypeVar("T")

# 15 % of the budget is set aside at creation for the report and the final verification pass:
# otherwise research spends everything and nothing is left to write the answer with.
ESCROW_PERCENT = 15
# A reservation not settled within this long is presumed abandoned (a crashed worker) and its
# hold returned by the sweep. A guess, flagged as one: longer than any single model call.
DEFAULT_TTL = timedelta(minutes=15)


class LedgerError(RuntimeError):
    """The ledger was asked something impossible (unknown session, double settle)."""


class PaidCallFailed(Exception):
    """A call that failed after the provider had already charged for it (a model that answered
    with nothing still used its tokens). `Ledger.hold` settles it at `actual` instead of
    releasing it: the spend happened, and the ledger records what happened. `actual` is set by
    whoever can price the usage; left None, the hold is released like any other failure."""

    def __init__(self, *args: object, usage: Usage | None = None, actual: int | None = None):
        super().__init__(*args)
        self.usage = usage or Usage()
        self.actual = actual


class BudgetExhausted(LedgerError):
    """A reservation the session cannot afford. Raised before any call is made. `reason` names
    why: "budget" (not enough left outside escrow) or, in the subclass, "overrun"."""

    reason = "budget"

    def __init__(
        self,
        session_id: str,
        role: Role,
        requested: int,
        available: int,
        unit: str,
        message: str | None = None,
    ):
        self.session_id, self.role = session_id, role
        self.requested, self.available, self.unit = requested, available, unit
        super().__init__(
            message
            or (
                f"session {session_id}: {role} needs {requested} {unit} but only {available} "
                "is available outside escrow"
            )
        )


class BudgetOverrun(BudgetExhausted):
    """A provider used more than a call was allowed (a server that ignores `max_tokens`), so
    its bound is no bound and the session's ceiling no longer protects it: after the first
    overrun every reservation is refused, whatever it asks for."""

    reason = "overrun"

    def __init__(self, session_id: str, role: Role, requested: int, overrun: int, unit: str):
        self.overrun = overrun
        super().__init__(
            session_id,
            role,
            requested,
            0,
            unit,
            message=(
                f"session {session_id}: {role} refused: a provider already used {overrun} "
                f"{unit} beyond what its calls were allowed, so no new call is dispatched"
            ),
        )


@dataclass(frozen=True)
class Reservation:
    id: str
    session_id: str
    role: Role
    amount: int
    tool: str
    stage: str
    expires_at: datetime


@dataclass(frozen=True)
class Usage:
    """What a provider reported a call actually used."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True)
class FreeCall:
    """A call that held nothing and cost nothing (estimate 0, cost 0: an extractive skill, a
    local search). Its tool_calls row may be written after the call, with others of its stage,
    in one transaction (`Ledger.record_free_calls`): reserve-before-dispatch protects money, and
    a zero hold protects none. `status` is settled (cost 0) or released (the call failed);
    `assumed` marks one interrupted in flight, charged its reservation: 0."""

    id: str
    role: Role
    stage: str
    tool: str
    created_at: datetime
    completed_at: datetime
    status: CallStatus = CallStatus.SETTLED
    usage: Usage = field(default_factory=lambda: Usage())
    note: str | None = None
    model: str | None = None
    assumed: bool = False


@dataclass(frozen=True)
class Settlement:
    reservation_id: str
    actual: int
    charged: int
    overrun: int


@dataclass(frozen=True)
class Balance:
    session_id: str
    unit: Unit
    total: int
    spent: int
    held: int
    escrow: int
    overrun: int
    escrow_released: bool
    status: SessionStatus

    @property
    def available(self) -> int:
        """What a non-report reservation may still take: nothing once a call has overrun."""
        if self.overrun:
            return 0
        return self.total - self.spent - self.held - self.escrow

    @property
    def charged(self) -> int:
        """What the session has really cost: settled spend plus overrun. The figure every user
        sees, against the ceiling."""
        return self.spent + self.overrun


@dataclass(frozen=True)
class Verification:
    session_id: str
    ok: bool
    spent: int
    calls_spent: int
    held: int
    calls_held: int
    overrun: int
    calls_overrun: int
    calls: int
    within_ceiling: bool
    # spent + overrun + held + escrow <= total: the ceiling as the user sees it. The schema
    # can only hold `within_ceiling` (overrun is money a provider took without asking).
    total: int = 0
    assumed: int = 0

    @property
    def charged(self) -> int:
        return self.spent + self.overrun

    @property
    def over_ceiling(self) -> int:
        return max(0, self.spent + self.overrun + self.held - self.total)

    def explain(self) -> str:
        """`ok` says the books agree with the append-only ledger; the ceiling as the user sees
        it (spent + overrun) is reported beside it, since a provider that ignored its limit can
        push it past the total without the books being wrong."""
        ceiling = (
            f"; CEILING EXCEEDED: spent {self.spent} + overrun {self.overrun} is "
            f"{self.over_ceiling} beyond the total {self.total}"
            if self.over_ceiling
            else ""
        )
        if self.ok:
            tail = f" ({self.assumed} assumed at their reservation)" if self.assumed else ""
            if self.overrun:
                return (
                    f"ledger consistent: spent {self.spent} + overrun {self.overrun} = sum "
                    f"of {self.calls} tool_calls{tail}{ceiling}"
                )
            return f"ledger consistent: spent {self.spent} = sum of {self.calls} tool_calls{tail}"
        parts = []
        if self.spent != self.calls_spent:
            parts.append(f"spent {self.spent} != tool_calls {self.calls_spent}")
        if self.held != self.calls_held:
            parts.append(f"held {self.held} != open reservations {self.calls_held}")
        if self.overrun != self.calls_overrun:
            parts.append(f"overrun {self.overrun} != tool_calls overrun {self.calls_overrun}")
        if not self.within_ceiling:
            parts.append("spent + held + escrow exceeds the total")
        return "ledger INCONSISTENT: " + "; ".join(parts) + ceiling


def escrow_for(total: int) -> int:
    return total * ESCROW_PERCENT // 100


def new_session_id() -> str:
    return f"{utcnow():%Y%m%d}-{secrets.token_hex(3)}"


class Ledger:
    def __init__(
        self,
        store: Store,
        *,
        ttl: timedelta = DEFAULT_TTL,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.store = store
        self.ttl = ttl
        self.clock = clock
        # Open batches of free calls, by session (Ledger.free_calls), shared by the stage's
        # threads. `_generation` moves whenever this ledger changes a session in a way that can
        # refuse a free call (status, overrun), so a batch re-checks before its next call.
        self._batches: dict[str, FreeCallBatch] = {}
        self._batches_lock = threading.Lock()
        self._generation = 0

    # -- sessions ---------------------------------------------------------------------------

    def create_session(
        self,
        question: str,
        unit: Unit,
        total: int,
        *,
        session_id: str | None = None,
        provider: str = "extractive",
        corpus: str | None = None,
        actors: tuple[str, ...] = ("local",),
    ) -> Balance:
        question = question.strip()
        if not question:
            raise LedgerError("the question is empty")
        if not isinstance(total, int) or isinstance(total, bool) or total <= 0:
            raise LedgerError(f"the budget must be a positive integer in {unit}, got {total!r}")
        sid = session_id or new_session_id()
        params = {
            "id": sid,
            "question": question,
            "unit": str(unit),
            "total": total,
            "escrow": escrow_for(total),
            "provider": provider,
            "corpus": corpus,
            "actors": ",".join(actors),
            "now": self.clock(),
        }
        self.store.transact(lambda cur: cur.execute(q("session_insert"), params))
        return self.balance(sid)

    def balance(self, session_id: str) -> Balance:
        row = self.store.one(SessionRow, q("session_get"), {"session_id": session_id})
        if row is None:
            raise LedgerError(f"no session {session_id!r}")
        return Balance(
            session_id=row.id,
            unit=row.unit,
            total=row.total,
            spent=row.spent,
            held=row.held,
            escrow=row.escrow,
            overrun=row.overrun,
            escrow_released=row.escrow_released,
            status=row.status,
        )

    # -- reserve / settle / release -----------------------------------------------------------

    def reserve(
        self,
        session_id: str,
        role: Role,
        amount: int,
        *,
        tool: str,
        stage: str,
        ttl: timedelta | None = None,
        note: str | None = None,
    ) -> Reservation:
        """Hold `amount` for one call, or raise BudgetExhausted. Check and hold are one UPDATE."""
        if amount < 0:
            raise LedgerError(f"a reservation cannot be negative ({amount})")
        role = Role(role)
        now = self.clock()
        rid = f"call-{secrets.token_hex(8)}"
        expires = now + (ttl or self.ttl)

        def tx(cur: duckdb.DuckDBPyConnection) -> bool:
            # Exactly once by call id: a transaction run again because its connection was lost
            # (Store.transact on Postgres) finds its own row if the first run was written.
            if fetch_one(cur, CallRow, q("call_get"), {"id": rid}) is not None:
                return True
            # The UPDATE's affected-row count: 0 when the check in its WHERE refused the hold.
            changed = scalar(
                cur,
                int,
                q("reserve_hold"),
                {"amount": amount, "now": now, "session_id": session_id},
            )
            if not changed:
                return False
            cur.execute(
                q("call_insert"),
                {
                    "id": rid,
                    "session_id": session_id,
                    "role": str(role),
                    "stage": stage,
                    "tool": tool,
                    "amount": amount,
                    "note": note,
                    "now": now,
                    "expires_at": expires,
                    "owner": owner_tag(),
                },
            )
            return True

        if not self.store.transact(tx):
            bal = self.balance(session_id)  # raises for an unknown session
            if bal.overrun:
                raise BudgetOverrun(session_id, role, amount, bal.overrun, str(bal.unit))
            open_states = (SessionStatus.CREATED, SessionStatus.RUNNING, SessionStatus.REPORTING)
            if bal.status not in open_states:
                raise LedgerError(f"session {session_id} is {bal.status}; it takes no more calls")
            raise BudgetExhausted(session_id, role, amount, max(bal.available, 0), str(bal.unit))
        return Reservation(rid, session_id, role, amount, tool, stage, expires)

    def settle(
        self,
        reservation: Reservation,
        actual: int,
        *,
        usage: Usage | None = None,
        note: str | None = None,
        model: str | None = None,
        also: Callable[[Any], None] | None = None,
    ) -> Settlement:
        """Record what the call used (and, for a model call, which model). held -> spent. Spend
        beyond the reservation is recorded truthfully as overrun (the session is flagged), never
        squeezed under the ceiling. `also(cur)` writes what the call's answer brought in the
        same transaction (a kept answer: paid for, then stored, or neither)."""
        if actual < 0:
            raise LedgerError(f"a call cannot cost a negative amount ({actual})")
        usage = usage or Usage()
        now = self.clock()
        # What the call row records, however it is settled (its overrun is added per case).
        call_row = {
            "id": reservation.id,
            "actual": actual,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "note": note,
            "model": model,
            "now": now,
        }

        def tx(cur: duckdb.DuckDBPyConnection) -> Settlement:
            row = fetch_one(cur, CallRow, self.store.locked(q("call_get")), {"id": reservation.id})
            if row is None:
                raise LedgerError(f"no reservation {reservation.id}")
            reserved, status, assumed = row.reserved, row.status, row.assumed
            if status == CallStatus.SETTLED and not assumed and row.completed_at == now:
                # This settlement, written by a run of this transaction whose commit was not
                # heard: exactly once by call id (and the settlement's own time).
                return Settlement(reservation.id, actual, actual - row.overrun, row.overrun)
            if status == CallStatus.SETTLED and assumed:
                # Recovery settled it at its reservation while this caller was still alive
                # (a call that outlived its expiry): the real usage replaces the assumption.
                # The reservation moved wholly into `spent`, so it still covers the call.
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
                cur.execute(
                    q("call_settle_assumed_late"),
                    {**call_row, "overrun": overrun},
                )
                if also is not None:
                    also(cur)
                return Settlement(reservation.id, actual, charged, overrun)
            if status not in (CallStatus.RESERVED, CallStatus.EXPIRED):
                raise LedgerError(f"reservation {reservation.id} is already {status}")
            # An expired hold (rows from before assumed settlement) was already returned by the
            # sweep: nothing of it still covers us.
            covered = reserved if status == CallStatus.RESERVED else 0
            charged = min(actual, covered)
            overrun = actual - charged
            cur.execute(
                q("session_charge"),
                {
                    "unhold": covered,
                    "charged": charged,
                    "overrun": overrun,
                    "now": now,
                    "session_id": reservation.session_id,
                },
            )
            cur.execute(
                q("call_settle"),
                {**call_row, "overrun": overrun},
            )
            if also is not None:
                also(cur)
            return Settlement(reservation.id, actual, charged, overrun)

        result = self.store.transact(tx)
        if result.overrun:
            self._generation += 1
            log.error(
                "session %s: call %s (%s) used %d beyond its reservation of %d; "
                "the estimate was not an upper bound; the session dispatches no further call",
                reservation.session_id,
                reservation.id,
                reservation.tool,
                result.overrun,
                reservation.amount,
            )
        return result

    def release(self, reservation: Reservation, note: str | None = None) -> None:
        """Return a hold whose call failed or was never made. Idempotent for expired holds."""
        now = self.clock()

        def tx(cur: duckdb.DuckDBPyConnection) -> None:
            row = fetch_one(cur, CallRow, self.store.locked(q("call_get")), {"id": reservation.id})
            if row is None:
                raise LedgerError(f"no reservation {reservation.id}")
            status = row.status
            if status == CallStatus.RELEASED and row.completed_at == now:
                return  # this release, already written by an earlier run of this transaction
            if status == CallStatus.EXPIRED or (status == CallStatus.SETTLED and row.assumed):
                # Already swept, or already settled at its reservation by recovery: a caller
                # that comes back to say "failed" cannot prove the provider did not charge.
                return
            if status != CallStatus.RESERVED:
                raise LedgerError(f"reservation {reservation.id} is already {status}")
            cur.execute(
                q("session_unhold"),
                {"amount": row.reserved, "now": now, "session_id": reservation.session_id},
            )
            cur.execute(q("call_release"), {"id": reservation.id, "note": note, "now": now})

        self.store.transact(tx)

    def expire_stale(self, now: datetime | None = None) -> int:
        """Settle reservations past their expiry at the reserved amount, flagged `assumed`:
        their caller is presumed dead and the provider may have answered (and charged) before
        it died. Releasing them would let money leave the books. Returns how many."""
        return self.settle_abandoned(now=now, dead_owners=False)

    def settle_abandoned(self, *, now: datetime | None = None, dead_owners: bool = True) -> int:
        """Settle, at the reserved amount and flagged `assumed`, every reservation whose
        outcome nobody will report: past its expiry; or (dead_owners) held by a process of this
        host that no longer exists; or belonging to a finished session and held by no process
        provably alive here. Returns how many were settled."""
        now = now or self.clock()
        n = settle_abandoned(self.store, now, dead_owners=dead_owners)
        if n:
            self._generation += 1
        return n

    def settle_assumed(self, reservation: Reservation, note: str) -> None:
        """The caller is being interrupted with the call possibly in flight: charge the
        reservation in full rather than guess that the provider did not answer."""
        now = self.clock()
        self.store.transact(
            lambda cur: self._settle_assumed(cur, reservation.id, reservation.session_id, note, now)
        )

    def settle_assumed_in_stage(self, session_id: str, stage: str, note: str) -> int:
        """settle_assumed for every call of the session's `stage` still reserved: calls in
        flight in a thread a stop cannot interrupt (a plan asked ahead, mole_dag.planner.ahead).
        Returns how many were charged."""
        now = self.clock()

        def tx(cur: duckdb.DuckDBPyConnection) -> int:
            open_calls = fetch_all(
                cur,
                CallRow,
                self.store.locked(q("calls_reserved_in_stage")),
                {"session_id": session_id, "stage": stage},
            )
            return sum(self._settle_assumed(cur, c.id, session_id, note, now) for c in open_calls)

        return self.store.transact(tx)

    def _settle_assumed(
        self,
        cur: duckdb.DuckDBPyConnection,
        call_id: str,
        session_id: str,
        note: str,
        now: datetime,
    ) -> int:
        row = fetch_one(cur, CallRow, self.store.locked(q("call_get")), {"id": call_id})
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

    def release_escrow(self, session_id: str) -> int:
        """Hand the escrow to the report stage. Happens once; returns the amount released."""
        now = self.clock()
        if self.balance(session_id).escrow_released:
            return 0  # already released: a read, not a write transaction (issue 12)

        def tx(cur: duckdb.DuckDBPyConnection) -> int:
            bal = self.balance(session_id)
            if bal.escrow_released:
                return 0
            # The UPDATE's own check decides: on Postgres another machine may have released
            # it since the read above, and then this one changed nothing.
            changed = scalar(
                cur, int, q("session_release_escrow"), {"now": now, "session_id": session_id}
            )
            return bal.escrow if changed else 0

        self._generation += 1  # the session is now reporting
        return self.store.transact(tx)

    @contextmanager
    def hold(
        self, session_id: str, role: Role, amount: int, *, tool: str, stage: str
    ) -> Iterator[Hold]:
        """Reserve, run the body, and make sure the reservation ends settled or released.

            with ledger.hold(sid, Role.EXECUTOR, estimate, tool="llm:haiku", stage="mine") as h:
                result = provider.call(...)
                h.settle(cost(result.usage), usage=result.usage)

        BudgetExhausted is raised by the `with` line itself: the body (the call) never runs.

        Inside `free_calls(session_id)`, a hold of 0 reserves nothing in the store: its row is
        recorded with the batch (see FreeCallBatch)."""
        batch = self._batch_for(session_id) if amount == 0 else None
        h: Hold
        if batch is not None:
            h = batch.hold(Role(role), tool=tool, stage=stage)
        else:
            h = Hold(self, self.reserve(session_id, role, amount, tool=tool, stage=stage))
        res = h.reservation
        try:
            yield h
        except PaidCallFailed as exc:
            if not h.done:
                if exc.actual is None:
                    h.release(note=f"call failed: {_failure(exc)}")
                else:
                    h.settle(
                        exc.actual,
                        usage=exc.usage,
                        note=f"paid for, but failed: {_failure(exc)}",
                        model=getattr(exc, "model", None) or None,
                    )
            raise
        except Exception as exc:
            if not h.done:
                h.release(note=f"call failed: {_failure(exc)}")
            raise
        except BaseException as exc:
            # KeyboardInterrupt, SystemExit, Dagster's DagsterExecutionInterruptedError: the
            # call may have been answered and billed; we cannot know, so it costs its bound.
            if not h.done:
                h.settle_assumed(note=f"interrupted: {type(exc).__name__}")
            raise
        if not h.done:
            h.release(note="closed without settling")
            raise LedgerError(
                f"reservation {res.id} for {res.tool} was neither settled nor released"
            )

    # -- free calls, in batches -------------------------------------------------------------

    @contextmanager
    def free_calls(self, session_id: str) -> Iterator[FreeCallBatch]:
        """Record the session's free calls (holds of 0) made inside the block in one
        transaction, at its end, or earlier with the stage's own rows (`batch.write_with`).
        Paid calls inside the block still reserve and commit before dispatch, one by one. A
        block for a session that already has one joins it. A hold of 0 inside it is refused
        as `reserve` refuses it (the session is not open, or was overrun)."""
        with self._batches_lock:
            outer = self._batches.get(session_id)
            if outer is None:
                batch = self._batches[session_id] = FreeCallBatch(self, session_id)
        if outer is not None:
            yield outer
            return
        try:
            yield batch
        except BaseException:
            with self._batches_lock:
                self._batches.pop(session_id, None)
            try:
                batch.flush()  # the calls were made: their rows are kept even on failure
            except Exception:
                log.exception("session %s: could not record %d free calls", session_id, len(batch))
            raise
        with self._batches_lock:
            self._batches.pop(session_id, None)
        batch.flush()

    def _batch_for(self, session_id: str) -> FreeCallBatch | None:
        with self._batches_lock:
            return self._batches.get(session_id)

    def record_free_calls(self, session_id: str, calls: Sequence[FreeCall]) -> int:
        """Write one tool_calls row per free call, in one transaction (one statement). Nothing
        was held for them and they cost nothing, so the session's balances do not move and
        `verify` stays exact; they count in call counts and spend by stage like any call."""
        if not calls:
            return 0
        params = self._free_call_params(session_id, calls)
        if any(c.status not in (CallStatus.SETTLED, CallStatus.RELEASED) for c in calls):
            raise LedgerError("a free call is recorded settled or released, nothing else")
        self.store.transact(lambda cur: self._insert_free_calls(cur, session_id, params))
        return len(calls)

    def _free_call_params(self, session_id: str, calls: Sequence[FreeCall]) -> dict[str, Any]:
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
            "expires_at": [c.created_at + self.ttl for c in calls],
            "completed_at": [c.completed_at for c in calls],
            "assumed": [c.assumed for c in calls],
        }

    @staticmethod
    def _insert_free_calls(
        cur: duckdb.DuckDBPyConnection, session_id: str, params: dict[str, Any]
    ) -> None:
        if cur.execute(q("session_get"), {"session_id": session_id}).fetchone() is None:
            raise LedgerError(f"no session {session_id!r}")
        cur.execute(q("free_calls_insert_many"), params)

    def _settle_unreserved(
        self,
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
            return self.settle(reservation, actual, usage=usage, note=note, model=model)

        return self.store.transact(tx)

    # -- checks and reports -----------------------------------------------------------------

    def verify(self, session_id: str) -> Verification:
        row = self.store.one(LedgerCheckRow, q("ledger_verify"), {"session_id": session_id})
        if row is None:
            raise LedgerError(f"no session {session_id!r}")
        within = row.spent + row.held + row.escrow <= row.total
        ok = (
            row.spent == row.calls_spent
            and row.held == row.calls_held
            and row.overrun == row.calls_overrun
            and within
        )
        return Verification(
            session_id=session_id,
            ok=ok,
            spent=row.spent,
            calls_spent=row.calls_spent,
            held=row.held,
            calls_held=row.calls_held,
            overrun=row.overrun,
            calls_overrun=row.calls_overrun,
            calls=row.calls,
            within_ceiling=within,
            total=row.total,
            assumed=row.calls_assumed,
        )

    def set_status(
        self, session_id: str, status: SessionStatus, stop_reason: str | None = None
    ) -> None:
        now = self.clock()
        self._generation += 1
        self.store.transact(
            lambda cur: cur.execute(
                q("session_set_status_reason"),
                {
                    "status": str(status),
                    "reason": stop_reason,
                    "now": now,
                    "session_id": session_id,
                },
            )
        )

    def spend_by_role(self, session_id: str) -> list[dict[str, Any]]:
        return self.store.named("spend_by_role", {"session_id": session_id})

    def spend_by_stage(self, session_id: str) -> list[dict[str, Any]]:
        return self.store.named("spend_by_stage", {"session_id": session_id})


# How much of a failed call's error its ledger row keeps: enough for the report to name it.
FAILURE_NOTE_CHARS = 240


def _failure(exc: BaseException) -> str:
    """A failed call's note: the error's type and the first line of its message (providers'
    errors are redacted where they are raised), so a report can say what went wrong."""
    lines = str(exc).strip().splitlines()
    detail = " ".join(lines[0].split()) if lines else ""
    return f"{type(exc).__name__}: {detail}"[:FAILURE_NOTE_CHARS] if detail else type(exc).__name__


class Hold:
    """An open reservation inside `Ledger.hold`."""

    def __init__(self, ledger: Ledger, reservation: Reservation) -> None:
        self.ledger = ledger
        self.reservation = reservation
        self.done = False
        self.settlement: Settlement | None = None

    def settle(
        self,
        actual: int,
        *,
        usage: Usage | None = None,
        note: str | None = None,
        model: str | None = None,
        also: Callable[[Any], None] | None = None,
    ) -> Settlement:
        self.settlement = self.ledger.settle(
            self.reservation, actual, usage=usage, note=note, model=model, also=also
        )
        self.done = True
        return self.settlement

    def release(self, note: str | None = None) -> None:
        self.ledger.release(self.reservation, note=note)
        self.done = True

    def settle_assumed(self, note: str) -> None:
        self.ledger.settle_assumed(self.reservation, note=note)
        self.done = True

    def renew(self, note: str) -> None:
        """The call's attempt ended without an answer the provider may still have billed (a
        timeout: the request was sent and may have been worked on): that attempt is settled at
        its reservation, flagged `assumed`, as an interrupted call is, and the retry gets a
        reservation of its own, of the same bound. Raises BudgetExhausted (the hold then ended)
        when the session cannot cover another attempt: a retry nobody reserved for is a request
        the ledger has no row for."""
        r = self.reservation
        self.ledger.settle_assumed(r, note=note)
        self.done = True
        self.reservation = self.ledger.reserve(
            r.session_id, r.role, r.amount, tool=r.tool, stage=r.stage, note="retry"
        )
        self.done = False


# The hold of the call running in this context, so the retry loop (mole_dag.llm.retry), which
# sits below every stage, can charge an attempt that timed out. Set around the call itself
# (`with ledger.hold(...) as h, charging(h):`), not by Ledger.hold: the fan-out opens a hold in
# its dispatching thread and makes the call in a worker thread.
_HOLD: ContextVar[Hold | None] = ContextVar("mole_current_hold", default=None)


def current_hold() -> Hold | None:
    return _HOLD.get()


@contextmanager
def charging(hold: Hold) -> Iterator[Hold]:
    """Run a call with `hold` as the one its attempts are charged to."""
    token = _HOLD.set(hold)
    try:
        yield hold
    finally:
        _HOLD.reset(token)


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
            gen, now = self.ledger._generation, time.monotonic()
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
        params = self.ledger._free_call_params(self.session_id, calls) if calls else None

        def tx(cur: duckdb.DuckDBPyConnection) -> T:
            out = fn(cur)
            if params is not None:
                self.ledger._insert_free_calls(cur, self.session_id, params)
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
            self.settlement = self.ledger._settle_unreserved(
                self.reservation, self.started, actual, usage=usage, note=note, model=model
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
