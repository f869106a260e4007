"""Asset checks. The two that guard the report are blocking on `confidence_scores`: if the
ledger does not add up or a stored quote no longer sits at its span, the report is not written
from that state. Citation validity checks the report itself."""

import warnings

import dagster as dg

from assets.partitions import sessions_partitions
from assets.research import confidence_scores, report
from mole_dag.budget import Ledger
from mole_dag.evals.checks import citation_validity, claim_integrity
from mole_dag.resources import StoreResource
from mole_dag.stage_metadata import money

# Partitioned asset checks are marked preview in Dagster 1.13; they are what lets a check run per
# session, and the behaviour used here (run with the partition's materialisation) is tested.
warnings.filterwarnings("ignore", category=dg.PreviewWarning, module="dagster")


@dg.asset_check(
    asset=confidence_scores,
    blocking=True,
    partitions_def=sessions_partitions,
    description="spent equals the sum of tool_calls; held equals open reservations",
)
def ledger_verify(
    context: dg.AssetCheckExecutionContext, store: StoreResource
) -> dg.AssetCheckResult:
    ledger = Ledger(store.store)
    v = ledger.verify(context.partition_key)
    unit = ledger.balance(context.partition_key).unit
    return dg.AssetCheckResult(
        passed=v.ok,
        description=v.explain(),
        metadata={
            **money(
                unit,
                spent=v.spent,
                tool_calls_spent=v.calls_spent,
                held=v.held,
                open_reservations=v.calls_held,
                overrun=v.overrun,
            ),
            "calls": v.calls,
        },
    )


@dg.asset_check(
    asset=confidence_scores,
    blocking=True,
    partitions_def=sessions_partitions,
    description="every claim's quote is still at its byte span in the stored chunks",
)
def claim_integrity_check(
    context: dg.AssetCheckExecutionContext, store: StoreResource
) -> dg.AssetCheckResult:
    r = claim_integrity(store.store, context.partition_key)
    return dg.AssetCheckResult(
        passed=r.ok,
        metadata={
            "claims": r.claims,
            "intact": r.intact,
            "broken": len(r.broken),
            "first_broken": ", ".join(r.broken[:5]) or "-",
        },
    )


@dg.asset_check(
    asset=report,
    partitions_def=sessions_partitions,
    description="every [n] in the report maps to a source that backs a claim",
)
def citation_validity_check(
    context: dg.AssetCheckExecutionContext, store: StoreResource
) -> dg.AssetCheckResult:
    r = citation_validity(store.store, context.partition_key)
    return dg.AssetCheckResult(
        passed=r.ok,
        metadata={
            "citations": r.citations,
            "valid": r.valid,
            "forged": ", ".join(map(str, r.forged)) or "-",
            "unsupported": ", ".join(map(str, r.unsupported)) or "-",
        },
    )


ALL_CHECKS = [ledger_verify, claim_integrity_check, citation_validity_check]
