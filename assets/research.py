"""The research assets. Each is a thin call into mole_dag: open the run, call one library
function, return what it did as UI metadata. No business rule lives here."""

import dagster as dg

from assets.local_data import local_findings
from assets.partitions import SESSIONS, sessions_partitions
from assets.session_config import SESSION_CONFIG, LaunchConfig
from mole_dag.context import Run
from mole_dag.executor import execute_leads
from mole_dag.executor.run import STAGE as EXEC_STAGE
from mole_dag.launch import LaunchError
from mole_dag.mining.mine import STAGE as MINE_STAGE
from mole_dag.mining.mine import mine_claims
from mole_dag.output.answer_writer import STAGE as REPORT_STAGE
from mole_dag.output.finish import finish_session
from mole_dag.planner import plan_round
from mole_dag.planner.plan import STAGE as PLAN_STAGE
from mole_dag.redaction import redact_known
from mole_dag.resources import BudgetResource, StoreResource, make_run
from mole_dag.session import SessionMissing, recover, session_exists
from mole_dag.stage_metadata import (
    changes_metadata,
    fields_of,
    grounding_metadata,
    money,
    session_summary,
    session_unit,
    stage_spend,
)
from mole_dag.verifier.confidence import STAGE as SCORE_STAGE
from mole_dag.verifier.confidence import score_session
from mole_dag.verifier.graph import STAGE as EDGE_STAGE
from mole_dag.verifier.graph import build_edges
from mole_dag.verifier.grounding import STAGE as GROUND_STAGE

GROUP = "research"


def _run(context: dg.AssetExecutionContext, store: StoreResource, budget: BudgetResource) -> Run:
    return make_run(store, budget, context.partition_key, context.log.info)


@dg.asset(
    partitions_def=sessions_partitions,
    group_name=GROUP,
    description="The session's ledger row (budget, 15% escrow); recovers abandoned holds "
    "and leases. Config: question and budget (usd or tokens) are required.",
    config_schema=SESSION_CONFIG,
)
def session(
    context: dg.AssetExecutionContext, store: StoreResource, budget: BudgetResource
) -> dg.MaterializeResult:
    launch = LaunchConfig.of(context.op_execution_context.op_config)
    try:
        launch.ensure(store.store, context.partition_key, context.log.warning)
    except (LaunchError, SessionMissing) as exc:
        # A refused launch is the user's input, not a bug: one line, as `mole research` says
        # it, and no empty partition left behind in the UI's list (the store has no session
        # for it; a partition of an existing session stays).
        if not session_exists(store.store, context.partition_key):
            context.instance.delete_dynamic_partition(SESSIONS, context.partition_key)
        raise dg.Failure(description=str(exc), allow_retries=False) from None
    run = _run(context, store, budget)
    rec = recover(run)
    return dg.MaterializeResult(
        metadata={
            "question": redact_known(run.session().question),
            **fields_of(rec, "reservations_expired", "leases_requeued"),
            # This materialisation stays the latest one shown after the session finishes, so its
            # status is named for when it was taken; the report asset carries the final status.
            **session_summary(run, status_key="status_at_round_start"),
        }
    )


@dg.asset(
    partitions_def=sessions_partitions,
    group_name=GROUP,
    deps=[session],
    description="Planner: sub-questions and leads from the question and a digest of counts.",
)
def sub_questions(
    context: dg.AssetExecutionContext, store: StoreResource, budget: BudgetResource
) -> dg.MaterializeResult:
    run = _run(context, store, budget)
    res = plan_round(run)
    return dg.MaterializeResult(
        metadata={
            **fields_of(res, "round", "sub_questions_added", "leads_added", "pending_leads"),
            **stage_spend(run, PLAN_STAGE),
        }
    )


@dg.asset(
    partitions_def=sessions_partitions,
    group_name=GROUP,
    deps=[sub_questions],
    description="Executor: leased leads searched and fetched; sources stored as "
    "byte-offset chunks.",
)
def fetched_chunks(
    context: dg.AssetExecutionContext, store: StoreResource, budget: BudgetResource
) -> dg.MaterializeResult:
    run = _run(context, store, budget)
    res = execute_leads(run)
    return dg.MaterializeResult(
        metadata={
            **fields_of(
                res,
                "leads_run",
                "new_sources",
                "new_chunks",
                "dead_ends",
                "leases_requeued",
                "failed_leads",
                "internal_errors",
            ),
            **stage_spend(run, EXEC_STAGE),
        }
    )


@dg.asset(
    partitions_def=sessions_partitions,
    group_name=GROUP,
    deps=[fetched_chunks],
    description="Claims mined per chunk; only quotes found verbatim in the source survive.",
)
def mined_claims(
    context: dg.AssetExecutionContext, store: StoreResource, budget: BudgetResource
) -> dg.MaterializeResult:
    run = _run(context, store, budget)
    res = mine_claims(run)
    return dg.MaterializeResult(
        metadata={
            **fields_of(
                res,
                "claims",
                "pairs_mined",
                "calls",
                "duplicates_skipped",
                "failed_calls",
                "budget_stopped",
            ),
            # discarded_<cause>: the quote check's causes, as the store and `mole show` name them.
            "discarded_quote_not_found": res.discarded.get("quote_not_found", 0),
            "discarded_quote_too_short": res.discarded.get("quote_too_short", 0),
            "discarded_not_a_claim": res.discarded.get("not_a_claim", 0),
            "discarded_empty": res.discarded.get("empty", 0),
            **stage_spend(run, MINE_STAGE),
        }
    )


@dg.asset(
    partitions_def=sessions_partitions,
    group_name=GROUP,
    deps=[mined_claims, local_findings],
    description="Verifier: candidate pairs over all the session's claims, adjudicated in batches.",
)
def claim_edges(
    context: dg.AssetExecutionContext, store: StoreResource, budget: BudgetResource
) -> dg.MaterializeResult:
    run = _run(context, store, budget)
    res = build_edges(run)
    return dg.MaterializeResult(
        metadata={
            **fields_of(
                res,
                "claims_verified",
                "pairs_retrieved",
                "pairs_decided_free",
                "pairs_judged",
                "pairs_unjudged",
                "pairs_skipped_budget",
                "calls",
                "calls_failed",
            ),
            **{f"edges_{k}": v for k, v in sorted(res.edges.items())},
            **stage_spend(run, EDGE_STAGE),
        }
    )


@dg.asset(
    partitions_def=sessions_partitions,
    group_name=GROUP,
    deps=[claim_edges],
    description="Confidence derived from the claim graph (publishers, classes, edges), "
    "never asked of a model.",
)
def confidence_scores(
    context: dg.AssetExecutionContext, store: StoreResource, budget: BudgetResource
) -> dg.MaterializeResult:
    run = _run(context, store, budget)
    scores = score_session(run)
    top = sorted(scores, key=lambda s: -s.confidence)[:5]
    return dg.MaterializeResult(
        metadata={
            "clusters": len(scores),
            "claims_scored": sum(len(s.members) for s in scores),
            "clusters_with_duplicates": sum(1 for s in scores if len(s.members) > 1),
            "disputed_clusters": sum(1 for s in scores if s.contradictors),
            "superseded_clusters": sum(1 for s in scores if s.superseded),
            "top_explanations": dg.MetadataValue.md(
                "\n".join(f"- {s.explanation}" for s in top) or "-"
            ),
            **stage_spend(run, SCORE_STAGE),
        }
    )


@dg.asset(
    partitions_def=sessions_partitions,
    group_name=GROUP,
    deps=[confidence_scores],
    description="The report, from escrow: findings, disputes, citations assigned mechanically.",
)
def report(
    context: dg.AssetExecutionContext, store: StoreResource, budget: BudgetResource
) -> dg.MaterializeResult:
    run = _run(context, store, budget)
    done = finish_session(run)
    res = done.report
    unit = session_unit(run)
    changes = changes_metadata(res.changes)
    if "what_changed" in changes:
        changes["what_changed"] = dg.MetadataValue.md(changes["what_changed"])
    # The report on the session's own partition too, with this run as a link: one click from
    # Catalog -> session -> the partition, whichever door started the session (issue 33).
    context.log_event(
        dg.AssetObservation(
            asset_key=session.key,
            partition=context.partition_key,
            metadata={
                "report": dg.MetadataValue.md(res.markdown),
                "report_run": dg.MetadataValue.dagster_run(context.run.run_id),
            },
        )
    )
    return dg.MaterializeResult(
        metadata={
            **fields_of(res, "findings", "sources_cited", "writer"),
            "rejected_bodies": len(res.rejected_bodies),
            **money(unit, escrow_released=done.escrow_released),
            "final_pass_claims_verified": done.final_pass.claims_verified,
            **grounding_metadata(unit, done.grounding.summary()),
            **{
                k.replace("stage_", "grounding_stage_"): v
                for k, v in stage_spend(run, GROUND_STAGE).items()
            },
            "path": str(res.path) if res.path else "-",
            "report": dg.MetadataValue.md(res.markdown),
            **changes,
            **stage_spend(run, REPORT_STAGE),
            **session_summary(run),
        }
    )


ROUND_ASSETS = [
    session,
    sub_questions,
    fetched_chunks,
    mined_claims,
    local_findings,
    claim_edges,
    confidence_scores,
]
ALL_ASSETS = [*ROUND_ASSETS, report]
