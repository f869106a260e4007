"""The Dagster definitions: `dagster dev` (via workspace.yaml), `dagster asset materialize -m
assets.definitions`, and the `mole` CLI all load this one object."""

from __future__ import annotations

import dagster as dg

from assets.checks import ALL_CHECKS
from assets.driver import research_driver
from assets.jobs import research_report, research_round
from assets.maintenance import reground_job, reground_schedule, regrounding
from assets.models import MODEL_ASSETS
from assets.research import ALL_ASSETS
from mole_dag.resources import BudgetResource, StoreResource

_store = StoreResource()

defs = dg.Definitions(
    assets=[*ALL_ASSETS, regrounding, *MODEL_ASSETS],
    asset_checks=ALL_CHECKS,
    jobs=[research_round, research_report, reground_job],
    schedules=[reground_schedule],
    sensors=[research_driver],
    resources={"store": _store, "budget": BudgetResource(store=_store)},
    # DuckDB allows one writing process per file: steps of a run execute in the run's own
    # process, one after another.
    executor=dg.in_process_executor,
)
