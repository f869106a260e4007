"""Maintenance: the re-grounding schedule. Off until a user turns it on in the UI: a schedule
that spends money should be a decision, not a default."""

from collections.abc import Iterator

import dagster as dg

from mole_dag.resources import StoreResource
from mole_dag.session import parse_budget
from mole_dag.skillsets import skills_for
from mole_dag.stage_metadata import grounding_metadata
from mole_dag.verifier.reground import reground


class RegroundConfig(dg.Config):
    """Exactly one of usd and tokens: the budget of this run, recorded in the ledger as a
    maintenance session."""

    usd: str | None = None
    tokens: str | None = "100000"
    max_checks: int = 5
    provider: str = "extractive"


# output_required=False: a run that is not re-grounding's own records no materialisation.
@dg.asset(
    group_name="maintenance",
    output_required=False,
    description="Re-reads the sources behind the stored claims checked longest ago, under "
    "its own budget; only confirmed/unsupported outcomes change confidence.",
)
def regrounding(
    context: dg.AssetExecutionContext, config: RegroundConfig, store: StoreResource
) -> Iterator[dg.MaterializeResult]:
    partition = context.run.tags.get("dagster/partition")
    if partition is not None:
        # Selected alongside a session's assets (`--select '*' --partition <session>`): it is
        # not per session, and running it would open a paid maintenance session every time.
        context.log.warning(
            f"regrounding skipped: this run is for session {partition}; "
            "re-grounding runs from the `reground` job or its schedule"
        )
        return
    unit, total = parse_budget(config.usd, None if config.usd else config.tokens)
    res = reground(
        store.store,
        skills_for(config.provider),
        unit=unit,
        total=total,
        max_checks=config.max_checks,
    )
    context.log.info(f"re-grounding paid by {res.maintenance_session}")
    yield dg.MaterializeResult(
        metadata={
            "maintenance_session": res.maintenance_session,
            "sessions_rescored": len(res.sessions_rescored),
            **grounding_metadata(unit, res.grounding.summary()),
        }
    )


reground_job = dg.define_asset_job(
    "reground",
    selection=dg.AssetSelection.assets(regrounding),
    description="Re-ground stored claims across sessions.",
)

reground_schedule = dg.ScheduleDefinition(
    name="reground_daily",
    job=reground_job,
    cron_schedule="0 3 * * *",
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Daily re-grounding of the oldest-checked claims (budget in the run config).",
)
