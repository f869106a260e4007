"""The local-data asset: when the session has a CSV file or folder attached, gated aggregates
over it become claims before the verifier runs. A no-op for sessions without data."""

import dagster as dg

from assets.partitions import sessions_partitions
from mole_dag.local_data.findings import STAGE, analyse_local_data
from mole_dag.resources import BudgetResource, StoreResource, make_run
from mole_dag.stage_metadata import fields_of, stage_spend


@dg.asset(
    partitions_def=sessions_partitions,
    group_name="research",
    deps=[dg.AssetKey("sub_questions")],
    description="Local data (if attached): profile, hypotheses, SQL guard, k>=5 gate, "
    "exfil check; what crosses becomes claims and is recorded as a crossing.",
)
def local_findings(
    context: dg.AssetExecutionContext, store: StoreResource, budget: BudgetResource
) -> dg.MaterializeResult:
    run = make_run(store, budget, context.partition_key, context.log.info)
    res = analyse_local_data(run)
    return dg.MaterializeResult(
        metadata={
            **fields_of(
                res,
                "attached",
                "already_done",
                "rows",
                "columns",
                "withheld",
                "asked",
                "crossings",
                "claims",
            ),
            "refused": sum(res.refused.values()),
            **{f"refused_{k}": v for k, v in sorted(res.refused.items())},
            "error": res.error or "-",
            **stage_spend(run, STAGE),
        }
    )
