"""The ledger's value types and errors: what a reservation, a settlement, a session's balance
and a check of the books are, and why a call is refused. Plain data, no store: every module
that pays for a call or reads a bill imports these, and the ledger's own modules share them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from mole_dag.core import CallStatus, Role, SessionStatus, Unit

# 15 % of the budget is set aside at creation for the report and the final verification pass:
# otherwise research spends everything and nothing is left to write the answer with.
ESCROW_PERCENT = 15


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
