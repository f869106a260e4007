"""Numbers a stage reports about itself (for the Dagster UI and the CLI), read from the store.

Amounts of budget are named with their unit, the same way in every asset: `<name>_usd` is
dollars (a float, from the ledger's integer micro-dollars) and `<name>_tokens` is tokens (an
int). The ledger's micro-dollar integers never reach the UI as they are: `escrow_released
75000` reads as 75,000 of something, while `escrow_released_usd 0.075` says what it is."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mole_dag.context import Run
from mole_dag.core import Unit
from mole_dag.store import q

if TYPE_CHECKING:
    from mole_dag.output.changes import Diff

MICROS_PER_USD = 1_000_000


def fields_of(result: object, *names: str) -> dict[str, Any]:
    """A result's fields as metadata under their own names: the UI and the library call a number
    the same thing (issue 13), and a misspelt name fails here rather than showing a stale key."""
    return {name: getattr(result, name) for name in names}


def money(unit: Unit | str, **amounts: int) -> dict[str, float | int]:
    """Each amount under its name plus the unit: dollars for a USD session, tokens otherwise.
    Rounded to the micro-dollar, the ledger's own precision, so no float noise shows."""
    if Unit(unit) == Unit.USD_MICROS:
        return {f"{k}_usd": round(int(v) / MICROS_PER_USD, 6) for k, v in amounts.items()}
    return {f"{k}_tokens": int(v) for k, v in amounts.items()}


def session_unit(run: Run) -> Unit:
    return run.session().unit


def stage_spend(run: Run, stage: str) -> dict[str, Any]:
    rows = [r for r in run.ledger.spend_by_stage(run.session_id) if r["stage"] == stage]
    return {
        "stage_calls": sum(int(r["calls"]) for r in rows),
        **money(session_unit(run), stage_spent=sum(int(r["spent"]) for r in rows)),
    }


def session_summary(run: Run, *, status_key: str = "status") -> dict[str, Any]:
    """`status_key`: what the status is called. The `session` asset records it when a round
    starts, and Dagster keeps showing that materialisation after the session has finished, so
    there it is "status_at_round_start"; the report asset's "status" is the final one."""
    bal = run.ledger.balance(run.session_id)
    counts = run.store.row(q("session_counts"), {"session_id": run.session_id}) or {}
    return {
        "unit": "usd" if bal.unit == Unit.USD_MICROS else "tokens",
        # budget_<the Balance field>. charged = spent + overrun: what the session really cost,
        # held against the total (`spent` alone would hide an overrun).
        **money(
            bal.unit,
            budget_total=bal.total,
            budget_charged=bal.charged,
            budget_overrun=bal.overrun,
            budget_held=bal.held,
            budget_escrow=bal.escrow,
            budget_available=max(bal.available, 0),
        ),
        status_key: str(bal.status),
        **{k: int(v) for k, v in counts.items()},
        **discarded_counts(run),
    }


def discarded_counts(run: Run) -> dict[str, int]:
    """Claims the quote check threw away, by cause ('empty' is a draft with no quote)."""
    rows = run.store.named("discarded_by_cause", {"session_id": run.session_id})
    return {f"discarded_{r['cause']}": int(r["n"]) for r in rows}


def grounding_metadata(unit: Unit | str, summary: dict[str, int]) -> dict[str, Any]:
    """Re-grounding's counts, with its spend in the paying session's unit."""
    counts = {f"grounding_{k}": v for k, v in summary.items() if k != "spent"}
    return counts | money(unit, grounding_spent=int(summary.get("spent", 0)))


def changes_metadata(diff: Diff | None) -> dict[str, Any]:
    """A rerun report's difference for the UI (issue 32): the change counts and the "What
    changed" section as Markdown text; nothing for a first run."""
    if diff is None:
        return {}
    from mole_dag.output.changes import render_section

    return {
        "previous_session": diff.old,
        "changes_material": diff.material,
        "answer_changed": diff.answer_changed,
        "findings_new": len(diff.of("new")),
        "findings_removed": len(diff.of("removed")),
        "findings_changed": len(diff.of("changed")),
        "findings_same": diff.same,
        "sources_added": len(diff.sources_added),
        "sources_removed": len(diff.sources_removed),
        "sources_changed": len(diff.sources_changed),
        "sources_unreachable": len(diff.sources_unreachable),
        "confidence_shifts": len(diff.shifts),
        # Markdown: the asset shows it as such.
        "what_changed": "\n".join(render_section(diff)).strip(),
    }
