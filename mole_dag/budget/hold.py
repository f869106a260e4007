"""An open reservation (`Hold`), and the hold the call running in this context is charged to.

`Ledger.hold` opens one around a call; the retry loop (mole_dag.llm.retry), which sits below
every stage, finds it with `current_hold` to charge an attempt that timed out."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from mole_dag.budget.types import Reservation, Settlement, Usage

if TYPE_CHECKING:
    from mole_dag.budget.ledger import Ledger


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
