"""The Dagster definitions: `dagster dev` (via workspace.yaml), `dagster asset materialize -m
assets.definitions`, and the `mole` CLI all load this one object. The scale-out profile
(deploy/definitions.py) builds the same definitions with another executor."""

from __future__ import annotations

import dagster as dg

from assets.checks import ALL_CHECKS
from assets.driver import make_research_driver, research_session
from assets.jobs import research_report, research_round, resources
from assets.maintenance import reground_job, reground_schedule, regrounding
from assets.models import MODEL_ASSETS
from assets.research import ALL_ASSETS
from assets.steps import CODE_LOCATION, IN_PROCESS_RUN_TAGS
from assets.watch import watch_job, watched_questions, watched_questions_schedule
from mole_dag.redaction import install_log_redaction


def build_definitions(
    executor: dg.ExecutorDefinition, *, drive_in_process: bool = True
) -> dg.Definitions:
    """The project's assets, checks, jobs, schedule, sensor and resources, run by `executor`.
    `drive_in_process`: a UI session's rounds run one after another inside one
    `research_session` run (assets/driver.py); False queues a run per round and report, so
    that each step goes to `executor` (the scale-out profile)."""
    # Every process that loads the definitions (the UI, the daemon, a run's or a dask worker's)
    # masks secrets in its log records before Dagster stores them.
    install_log_redaction()
    return dg.Definitions(
        assets=[*ALL_ASSETS, regrounding, watched_questions, *MODEL_ASSETS],
        asset_checks=ALL_CHECKS,
        jobs=[research_session, research_round, research_report, reground_job, watch_job],
        schedules=[reground_schedule, watched_questions_schedule],
        sensors=[make_research_driver(in_process=drive_in_process)],
        resources=resources(),
        executor=executor,
    )


# DuckDB allows one writing process per file: steps of a run execute in the run's own process,
# one after another.
defs = build_definitions(dg.in_process_executor)

# Where the UI finds the runs executed in process (assets/steps.py), named here too for readers
# of the definitions.
__all__ = ["CODE_LOCATION", "IN_PROCESS_RUN_TAGS", "build_definitions", "defs"]
