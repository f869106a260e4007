"""The pipeline in plain Python: the same stages, in the same order, as the Dagster asset graph
(assets/), for tests and for embedding without Dagster. The CLI runs the graph, not this."""

from __future__ import annotations

from dataclasses import dataclass

from mole_dag.context import Run
from mole_dag.executor import ExecResult, execute_leads
from mole_dag.local_data.findings import LocalResult, analyse_local_data
from mole_dag.mining.mine import MineResult, mine_claims
from mole_dag.output.finish import FinishResult, finish_session
from mole_dag.planner import PlanResult, plan_round
from mole_dag.session import recover, should_run_another_round
from mole_dag.verifier.confidence import score_session
from mole_dag.verifier.graph import EdgeResult, build_edges


@dataclass
class RoundResult:
    plan: PlanResult
    executed: ExecResult
    mined: MineResult
    edges: EdgeResult
    clusters: int
    local: LocalResult | None = None


def run_round(run: Run) -> RoundResult:
    recover(run)
    plan = plan_round(run)
    executed = execute_leads(run)
    mined = mine_claims(run)
    local = analyse_local_data(run)
    edges = build_edges(run)
    scores = score_session(run)
    return RoundResult(plan, executed, mined, edges, len(scores), local)


def run_session(run: Run) -> tuple[list[RoundResult], FinishResult]:
    rounds = [run_round(run)]
    while should_run_another_round(run):
        rounds.append(run_round(run))
    return rounds, finish_session(run)
