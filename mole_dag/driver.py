"""The round driver: the one place that decides what a session runs next and loops over it.

    while another round is due (and affordable): run a round; then the report

`drive` owns that loop; how a step runs is injected: plain functions here (`run_session`, for
tests, benches and embedding without Dagster) or Dagster runs (assets/steps.py: `mole research`,
`resume`, `rerun`, the UI's `research_session` run and a watched question's run; the MCP worker
runs the CLI). The UI's sensor (assets/driver.py) takes one step per tick with the same
decision, `next_step`. Stopping: a step that fails ends the drive; an
interrupt (`Interrupted`, or KeyboardInterrupt) propagates to the front door, which marks the
session; an exhausted or finished session has no next step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from mole_dag.context import Run
from mole_dag.core import SessionStatus
from mole_dag.executor import ExecResult, execute_leads
from mole_dag.llm.provider import ProviderUnavailable
from mole_dag.local_data.findings import LocalResult, analyse_local_data
from mole_dag.mining.mine import MineResult, mine_claims
from mole_dag.output.finish import FinishResult, finish_session
from mole_dag.planner import PlanResult, plan_round
from mole_dag.planner.plan import round_state
from mole_dag.session import recover, stop_session
from mole_dag.store import q
from mole_dag.verifier.confidence import score_session
from mole_dag.verifier.graph import EdgeResult, build_edges

Step = Literal["round", "report"]
# Rounds are plan -> execute -> mine -> verify -> score. A guess, flagged as one: the budget is
# the real bound; this one stops a planner that keeps finding work from looping forever.
MAX_ROUNDS = 4
R = TypeVar("R")
F = TypeVar("F")

# A session in one of these has no next step: it ended, or (interrupted) waits for `mole resume`.
# EXHAUSTED is set before any report only when the first plan could not be paid for (nothing to
# report), and after the report when a provider overran: either way nothing is left to run.
STOPPED = (
    SessionStatus.DONE,
    SessionStatus.FAILED,
    SessionStatus.ABANDONED,
    SessionStatus.EXHAUSTED,
    SessionStatus.INTERRUPTED,
)


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived while a step ran: nothing more runs."""


def should_run_another_round(run: Run) -> bool:
    sess = run.session()
    if sess.status not in (SessionStatus.CREATED, SessionStatus.RUNNING):
        return False
    if sess.rounds >= MAX_ROUNDS:
        return False
    pending = int(run.store.scalar(q("pending_leads_count"), {"session_id": run.session_id}) or 0)
    if pending == 0:
        return False
    return run.ledger.balance(run.session_id).available > 0


def _after_rounds(run: Run) -> Step:
    """Between rounds or inside one: a round stopped part-way (its plan not written, or its
    scores not) is finished first, whatever the round cap or the budget say (a stage that
    cannot pay stops for budget by itself, as it would have); then another round if one is
    due; else the report. The same decision for a drive and for `mole resume`, so a resumed
    session does what an uninterrupted one would have done next."""
    sess = run.session()
    if sess.rounds == 0 or round_state(run).unfinished:
        return "round"
    return "round" if should_run_another_round(run) else "report"


def next_step(run: Run) -> Step | None:
    """What a session needs next: "round", "report", or None (finished, or not startable)."""
    sess = run.session()
    if sess.status in STOPPED:
        return None
    if sess.status == SessionStatus.REPORTING:
        return "report"
    return _after_rounds(run)


def next_round_number(run: Run) -> int:
    """The number the session's next round has: the round it was stopped in (it is finished,
    not started anew), else the one after its last."""
    state = round_state(run)
    return state.rounds if state.unfinished and state.rounds else state.rounds + 1


def resume_point(run: Run) -> Step:
    """Where an interrupted session picks up, derived from what the store holds: the report
    if it had reached it (the escrow released); the round it was stopped in (a round with no
    plan written plans again; one planned runs its pending leads, mines what was fetched and
    not mined, adjudicates and scores what was not: mole_dag.planner.plan_round and the
    stages each take up only what is left); else what the drive would have run next."""
    sess = run.session()
    if sess.escrow_released or sess.status == SessionStatus.REPORTING:
        return "report"
    return _after_rounds(run)


@dataclass
class Driven(Generic[R, F]):
    """What a drive ran. `failed`: a step reported failure and nothing ran after it. `last`: the
    decision the drive ended on (None: no next step, e.g. exhausted before any report)."""

    rounds: list[R] = field(default_factory=list)
    report: F | None = None
    failed: bool = False
    last: Step | None = None


def drive(
    *,
    round: Callable[[], R | None],  # noqa: A002 - the step's name
    report: Callable[[], F | None],
    decide: Callable[[], Step | None],
    first: Step | None = None,
    announce: Callable[[Step, int], None] | None = None,
    with_report: bool = True,
    first_round: int = 1,
) -> Driven[R, F]:
    """Run rounds while `decide` says one is due, then the report. A step returns its result,
    or None when it failed (the drive stops there). `first` replaces the first decision (`mole
    resume` starts where the session left off). `announce(step, round_number)` runs before
    each step (the CLI's progress lines); `first_round` is the session's number for the first
    round this drive runs (next_round_number: a resumed session's rounds go on from where it
    stopped, not from 1)."""
    out: Driven[R, F] = Driven()
    step = first if first is not None else decide()
    while step == "round":
        if announce is not None:
            announce("round", first_round + len(out.rounds))
        got = round()
        if got is None:
            out.failed = True
            return out
        out.rounds.append(got)
        step = decide()
    out.last = step
    if step == "report" and with_report:
        if announce is not None:
            announce("report", first_round + len(out.rounds) - 1)
        got_report = report()
        if got_report is None:
            out.failed = True
            return out
        out.report = got_report
    return out


@dataclass
class RoundResult:
    plan: PlanResult
    executed: ExecResult
    mined: MineResult
    edges: EdgeResult
    clusters: int
    local: LocalResult | None = None


def run_round(run: Run) -> RoundResult:
    """One round as plain functions, in the asset graph's order (assets/research.py)."""
    recover(run)
    plan = plan_round(run)
    executed = execute_leads(run)
    mined = mine_claims(run)
    local = analyse_local_data(run)
    edges = build_edges(run)
    scores = score_session(run)
    return RoundResult(plan, executed, mined, edges, len(scores), local)


def run_session(run: Run, *, report: bool = True) -> tuple[list[RoundResult], FinishResult | None]:
    """The session driven in this process without Dagster. `report=False`: rounds only. A
    provider that stops answering leaves the session `interrupted` (resumable) and raises."""
    try:
        got: Driven[RoundResult, FinishResult] = drive(
            round=lambda: run_round(run),
            report=lambda: finish_session(run),
            decide=lambda: next_step(run),
            with_report=report,
        )
    except ProviderUnavailable as exc:
        stop_session(run.ledger, run.session_id, SessionStatus.INTERRUPTED, str(exc))
        raise
    return got.rounds, got.report
