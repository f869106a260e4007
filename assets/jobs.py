"""The research jobs. One Dagster run = one research round; the report is its own job because it
runs once, after the rounds, and spends the escrow.

A run that drives a session (the UI's `research_session`, a watched question's run) runs these
jobs inside itself, so it needs them resolved; `step_jobs` resolves them here, against the
session's assets, their checks and the resources, rather than through assets/definitions.py,
which holds the jobs that run them (the two imported each other)."""

from __future__ import annotations

from functools import cache
from typing import Any

import dagster as dg

from assets.checks import ALL_CHECKS
from assets.research import ALL_ASSETS, ROUND_ASSETS, report
from mole_dag.resources import BudgetResource, StoreResource

research_round = dg.define_asset_job(
    "research_round",
    selection=dg.AssetSelection.assets(*ROUND_ASSETS),
    description="One round: plan, execute leads, mine, verify, score.",
)
research_report = dg.define_asset_job(
    "research_report",
    selection=dg.AssetSelection.assets(report),
    description="Release escrow and write the report.",
)


def resources() -> dict[str, Any]:
    """The resources every run is given: the store, and the budget over the same store."""
    store = StoreResource()
    return {"store": store, "budget": BudgetResource(store=store)}


@cache
def step_jobs() -> dict[str, dg.JobDefinition]:
    """`research_round` and `research_report`, resolved as the definitions resolve them (the
    same job snapshots: tests/test_assets_imports.py), to execute in this process."""
    graph = dg.Definitions(
        assets=ALL_ASSETS,
        asset_checks=ALL_CHECKS,
        jobs=[research_round, research_report],
        resources=resources(),
        executor=dg.in_process_executor,
    )
    return {job.name: graph.resolve_job_def(job.name) for job in (research_round, research_report)}
