"""The budget ledger: reserve before dispatch, settle after (the core in budget/ledger.py)."""

from mole_dag.budget.free_calls import FreeCallBatch
from mole_dag.budget.hold import Hold, charging, current_hold
from mole_dag.budget.ledger import Ledger, new_session_id
from mole_dag.budget.types import (
    ESCROW_PERCENT,
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

__all__ = [
    "ESCROW_PERCENT",
    "Balance",
    "BudgetExhausted",
    "BudgetOverrun",
    "FreeCall",
    "FreeCallBatch",
    "Hold",
    "Ledger",
    "LedgerError",
    "PaidCallFailed",
    "Reservation",
    "Settlement",
    "Usage",
    "Verification",
    "charging",
    "current_hold",
    "escrow_for",
    "new_session_id",
]
