"""The Dagster definitions: `dagster dev` (via workspace.yaml), `dagster asset materialize -m
assets.definitions`, and the `mole` CLI all load this one object. The scale-out profile
(deploy/definitions.py) builds the same definitions with another executor."""

from __future__ import annotations

import dagster as dg

from assets.checks import ALL_CHECKS
from assets.driver import research_driver
from assets.jobs import research_report, research_round
from assets.maintenance import reground_job, reground_schedule, regrounding
from assets.models import MODEL_ASSETS
from assets.research import ALL_ASSETS
from mole_dag.redaction import install_log_redaction
from mole_dag.resources import BudgetResource, StoreResource


def build_definitions(executor: dg.ExecutorDefinition) -> dg.Definitions:
    """The project's assets, checks, jobs, schedule, sensor and resources, run by `executor`."""
    # Every process that loads the definitions (the UI, the daemon, a run's or a dask worker's)
    # masks secrets in its log records before Dagster stores them.
    install_log_redaction()
    store = StoreResource()
    return dg.Definitions(
        assets=[*ALL_ASSETS, regrounding, *MODEL_ASSETS],
        asset_checks=ALL_CHECKS,
        jobs=[research_round, research_report, reground_job],
        schedules=[reground_schedule],
        sensors=[research_driver],
        resources={"store": store, "budget": BudgetResource(store=store)},
        executor=executor,
    )


# DuckDB allows one writing process per file: steps of a run execute in the run's own process,
# one after another.
defs = build_definitions(dg.in_process_executor)
