"""The end of a session: release the escrow, run the final verification pass, ground the claims
most worth checking from part of the escrow, re-derive confidence, and write the report. The
order matters: grounding changes confidence, and the report shows confidence."""

from __future__ import annotations

from dataclasses import dataclass

from mole_dag.budget import escrow_for
from mole_dag.context import Run
from mole_dag.mining.score_relevance import score_relevance
from mole_dag.output.report import ReportResult, begin_reporting, write_report
from mole_dag.verifier.confidence import score_session
from mole_dag.verifier.graph import EdgeResult, build_edges
from mole_dag.verifier.grounding import (
    DEFAULT_MAX_CHECKS,
    DEFAULT_SHARE_OF_ESCROW,
    GroundReport,
    ground_session,
)


def grounding_line(grounding: GroundReport) -> str:
    """What grounding did, in one line. A check whose model call failed was not a re-read:
    it is counted apart, never as a claim re-read with 0 confirmed (issue 29 saw "5 claims
    re-read from 5 sources: 0 confirmed, 0 unsupported, ..." when all 5 calls had failed)."""
    s = grounding.summary()
    read = s["checked"] - s["failed"]
    line = "grounding: "
    if read:
        line += (
            f"{read} claim{'s' if read != 1 else ''} re-read from {s['fetches']} "
            f"source{'s' if s['fetches'] != 1 else ''}: "
            f"{s['confirmed']} confirmed, {s['unsupported']} unsupported, "
            f"{s['vanished']} vanished, {s['unreachable']} unreachable"
        )
        undecided = s["undecided"] - s["failed"]
        if undecided:
            line += f", {undecided} undecided"
    if s["failed"]:
        line += "; " if read else ""
        line += f"{s['failed']} could not be checked: the model call failed"
    return line


@dataclass
class FinishResult:
    escrow_released: int
    final_pass: EdgeResult
    grounding: GroundReport
    report: ReportResult


def finish_session(
    run: Run,
    *,
    max_ground_checks: int = DEFAULT_MAX_CHECKS,
    ground_share: float = DEFAULT_SHARE_OF_ESCROW,
) -> FinishResult:
    released = begin_reporting(run)
    # The last claims a round mined have not met the rest of the graph yet. No follow-ups now:
    # there is no round left to run them.
    final = build_edges(run, queue_follow_ups=False)
    total = run.ledger.balance(run.session_id).total
    allowance = int(escrow_for(total) * ground_share)
    grounding = ground_session(
        run.store,
        run.ledger,
        run.skills,
        run.session_id,
        allowance,
        max_checks=max_ground_checks,
        progress=run.progress,
        parallel=run.parallel,
    )
    if grounding.checked:
        run.progress(grounding_line(grounding))
    score_session(run)
    # Claims added since the last round's scoring (local-data findings) get their relevance
    # too; the report orders and cuts by it.
    score_relevance(run)
    report = write_report(run)
    report.escrow_released = report.escrow_released or released
    return FinishResult(released, final, grounding, report)
