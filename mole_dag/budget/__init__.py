"""The budget ledger: reserve before dispatch, settle after."""

from mole_dag.budget.ledger import (
    ESCROW_PERCENT,
    Balance,
    BudgetExhausted,
    BudgetOverrun,
    FreeCall,
    FreeCallBatch,
    Hold,
    Ledger,
    LedgerError,
    PaidCallFailed,
    Reservation,
    Settlement,
    Usage,
    Verification,
    escrow_for,
    new_session_id,
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
    "escrow_for",
    "new_session_id",
]
