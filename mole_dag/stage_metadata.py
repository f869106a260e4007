"""Numbers a stage reports about itself (for the Dagster UI and the CLI), read from the store."""

from __future__ import annotations

from typing import Any

from mole_dag.context import Run
from mole_dag.store import q


def stage_spend(run: Run, stage: str) -> dict[str, Any]:
    rows = [r for r in run.ledger.spend_by_stage(run.session_id) if r["stage"] == stage]
    return {
        "stage_calls": sum(int(r["calls"]) for r in rows),
        "stage_spent": sum(int(r["spent"]) for r in rows),
    }


def session_summary(run: Run) -> dict[str, Any]:
    bal = run.ledger.balance(run.session_id)
    counts = run.store.row(q("session_counts"), {"session_id": run.session_id}) or {}
    return {
        "unit": str(bal.unit),
        "budget_total": bal.total,
        # spent + overrun: what the session really cost, the figure held against the total.
        "budget_spent": bal.charged,
        "budget_overrun": bal.overrun,
        "budget_held": bal.held,
        "budget_escrow": bal.escrow,
        "budget_available": max(bal.available, 0),
        "status": str(bal.status),
        **{k: int(v) for k, v in counts.items()},
        **discarded_counts(run),
    }


def discarded_counts(run: Run) -> dict[str, int]:
    """Claims the quote check threw away, by cause ('empty' is a draft with no quote)."""
    rows = run.store.named("discarded_by_cause", {"session_id": run.session_id})
    return {f"discarded_{r['cause']}": int(r["n"]) for r in rows}
