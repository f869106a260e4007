"""Re-grounding across sessions, for the schedule: re-read the stored claims whose last check is
oldest (never-checked first), under a budget of its own.

The budget is a maintenance session in the same ledger, with the same constraints: the schedule
cannot spend more than it was given, and what it spent is a GROUP BY away like everything else."""

from __future__ import annotations

from dataclasses import dataclass

from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.core import SessionStatus, Unit
from mole_dag.skills.protocol import Skills
from mole_dag.store import Store, q, utcnow
from mole_dag.store.records import GroundClaimRow
from mole_dag.verifier.confidence import score_session
from mole_dag.verifier.grounding import GroundReport, check_claims


@dataclass
class RegroundResult:
    maintenance_session: str
    grounding: GroundReport
    sessions_rescored: list[str]


def reground(
    store: Store,
    skills: Skills,
    *,
    unit: Unit,
    total: int,
    max_checks: int,
) -> RegroundResult:
    ledger = Ledger(store)
    now = utcnow()
    bal = ledger.create_session(
        f"re-grounding {now:%Y-%m-%d %H:%M} UTC", unit, total, provider=skills.name, actors=()
    )
    mid = bal.session_id
    store.transact(
        lambda cur: cur.execute(q("session_kind_set"), {"kind": "maintenance", "session_id": mid})
    )
    # All of a maintenance session's budget is for checking: there is no report to protect.
    ledger.release_escrow(mid)
    claims = store.many(GroundClaimRow, q("reground_candidates"), {"limit": max(0, max_checks)})
    report = check_claims(store, ledger, skills, claims, paid_by=mid, unit=unit, allowance=total)
    touched = sorted({r.session_id for r in report.results})
    for sid in touched:
        score_session(Run(store, ledger, skills, sid, progress=lambda _m: None))
    store.transact(
        lambda cur: cur.execute(
            q("session_set_status"),
            {"status": str(SessionStatus.DONE), "now": utcnow(), "session_id": mid},
        )
    )
    return RegroundResult(mid, report, touched)
