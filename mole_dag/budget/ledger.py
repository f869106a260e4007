"""The ledger: reserve before every call, settle after, release on failure, expire the abandoned.

Post-hoc charging lets N workers overshoot by N calls, because each passes "can I afford one
more?" before any has paid. Reserving first bounds the error to one estimate, and the estimate is
an upper bound by construction. The availability check and the hold are one conditional UPDATE
in one transaction; the CHECK constraints on `sessions` refuse any state the check let through
by mistake. `tool_calls` is the source of truth and `verify` proves the balances agree with it.

The core is here: sessions, reserve / settle / release, the escrow, `hold` around a call, and
the checks. Beside it, one job per file: the value types and errors (budget/types.py), the open
hold and the hold a call is charged to (budget/hold.py), assumed settlement of calls nobody
will report (budget/assumed.py), and free calls recorded in batches (budget/free_calls.py)."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timedelta
from typing import Any

import duckdb

from mole_dag.budget import assumed
from mole_dag.budget.free_calls import (
    FreeCallBatch,
    OpenBatches,
    record_free_calls,
)
from mole_dag.budget.hold import Hold
from mole_dag.budget.types import (
    Balance,
    BudgetExhausted,
    BudgetOverrun,
    FreeCall,
    LedgerError,
    PaidCallFailed,
    Reservation,
    Settlement,
    Usage,
    Verification,
    escrow_for,
)
from mole_dag.core import CallStatus, Role, SessionStatus, Unit
from mole_dag.store import Store, fetch_one, q, scalar, utcnow
from mole_dag.store.records import CallRow, LedgerCheckRow, SessionRow
from mole_dag.store.recovery import owner_tag, settle_abandoned

log = logging.getLogger("mole.budget")

# A reservation not settled within this long is presumed abandoned (a crashed worker) and its
# hold returned by the sweep. A guess, flagged as one: longer than any single model call.
DEFAULT_TTL = timedelta(minutes=15)


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
        # threads. `generation` moves whenever this ledger changes a session in a way that can
        # refuse a free call (status, overrun), so a batch re-checks before its next call.
        self._open_batches = OpenBatches()
        self.generation = 0

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
            reserved, status = row.reserved, row.status
            if status == CallStatus.SETTLED and not row.assumed and row.completed_at == now:
                # This settlement, written by a run of this transaction whose commit was not
                # heard: exactly once by call id (and the settlement's own time).
                return Settlement(reservation.id, actual, actual - row.overrun, row.overrun)
            if status == CallStatus.SETTLED and row.assumed:
                # Recovery charged it its reservation while this caller was still alive.
                result = assumed.replace_assumed(cur, reservation, reserved, actual, call_row, now)
                if also is not None:
                    also(cur)
                return result
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
            self.generation += 1
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
            self.generation += 1
        return n

    def settle_assumed(self, reservation: Reservation, note: str) -> None:
        """The caller is being interrupted with the call possibly in flight: charge the
        reservation in full rather than guess that the provider did not answer."""
        assumed.settle_assumed(self.store, reservation, note, self.clock())

    def settle_assumed_in_stage(self, session_id: str, stage: str, note: str) -> int:
        """settle_assumed for every call of the session's `stage` still reserved: calls in
        flight in a thread a stop cannot interrupt (a plan asked ahead, mole_dag.planner.ahead).
        Returns how many were charged."""
        return assumed.settle_assumed_in_stage(self.store, session_id, stage, note, self.clock())

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

        self.generation += 1  # the session is now reporting
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
        batch = self._open_batches.get(session_id) if amount == 0 else None
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

    def free_calls(self, session_id: str) -> AbstractContextManager[FreeCallBatch]:
        """Record the session's free calls (holds of 0) made inside the block in one
        transaction, at its end, or earlier with the stage's own rows (`batch.write_with`).
        Paid calls inside the block still reserve and commit before dispatch, one by one. A
        block for a session that already has one joins it. A hold of 0 inside it is refused
        as `reserve` refuses it (the session is not open, or was overrun)."""
        return self._open_batches.open(self, session_id)

    def record_free_calls(self, session_id: str, calls: Sequence[FreeCall]) -> int:
        """Write one tool_calls row per free call, in one transaction (one statement). Nothing
        was held for them and they cost nothing, so the session's balances do not move and
        `verify` stays exact; they count in call counts and spend by stage like any call."""
        return record_free_calls(self.store, session_id, calls, self.ttl)

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
        self.generation += 1
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
