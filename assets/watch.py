"""Watched questions (issue 32): the `watched_questions` schedule and the run it launches.

The schedule looks every 15 minutes (WATCH_TICK) and requests one run per watch whose own
schedule (daily, weekly, a cron string: `mole watch`) has ticked since its last run; the run
key names the watch and the tick, so a tick is run once however often Dagster asks. The run
materialises `watched_questions`: it starts the watch's rerun session (with the watch's
budget), drives it to its report in this process as `research_session` does, then records the
difference and runs --notify when it is material (mole_dag.watch). Its metadata lists every
watched question with its last change: that is the UI's list of watches.

On by default, unlike re-grounding: a watch spends only what its user gave it with
`mole watch ... --usd`, a decision already made, and with no watches a tick reads the store
and skips."""

from collections.abc import Iterator
from datetime import UTC, datetime

import dagster as dg

from assets.driver import drive_in_process
from assets.steps import SESSION_TAG
from mole_dag.budget.ledger import new_session_id
from mole_dag.resources import StoreResource
from mole_dag.store import StoreError, open_store, utcnow
from mole_dag.watch import WatchRefused, due, finish_run, start_run, watches_markdown

# How often the schedule looks for due watches: a watch runs at most this late after its tick.
WATCH_TICK = "*/15 * * * *"
WATCH_TAG = "mole/watch"


class WatchRunConfig(dg.Config):
    """The watch to run, and the tick of its schedule the run is for (ISO, UTC; empty: now,
    for a run launched by hand from the UI)."""

    # Empty when the asset is taken in by a selection (`--select '*'`): then it does nothing.
    watch_id: str = ""
    due_at: str = ""


def _naive_utc(when: datetime) -> datetime:
    """As the store keeps times: naive UTC (a naive time given is taken as UTC already)."""
    return when.astimezone(UTC).replace(tzinfo=None) if when.tzinfo else when


def _tick(text: str) -> datetime:
    if not text:
        return utcnow().replace(second=0, microsecond=0)
    return _naive_utc(datetime.fromisoformat(text))


# output_required=False: a run that is not a watch's own records no materialisation.
@dg.asset(
    group_name="watch",
    output_required=False,
    description="Re-runs a watched question (`mole watch`) within the watch's budget, stores "
    "what changed since the run before, and runs its --notify on a material change. "
    "Metadata: every watched question with its last change.",
)
def watched_questions(
    context: dg.AssetExecutionContext, config: WatchRunConfig, store: StoreResource
) -> Iterator[dg.MaterializeResult]:
    partition = context.run.tags.get("dagster/partition")
    if partition is not None or not config.watch_id:
        # Selected alongside a session's assets: running a watch there would open a paid
        # session nobody asked for. Watches run from the `watched_questions` schedule.
        context.log.warning(
            "watched_questions skipped: no watch_id in its config"
            + (f" (this run is for session {partition})" if partition else "")
            + "; watches run from the `watched_questions` schedule"
        )
        return
    st = store.store
    due_at = _tick(config.due_at)
    # The session's id is tagged on this run before the session exists, so the research
    # driver sensor never takes it for a session nobody drives.
    sid = new_session_id()
    tags = {SESSION_TAG: sid, WATCH_TAG: config.watch_id}
    context.instance.add_run_tags(context.run.run_id, tags)
    try:
        run = start_run(st, config.watch_id, due_at, session_id=sid)
    except WatchRefused as exc:
        raise dg.Failure(description=str(exc), allow_retries=False) from None
    if run.session_id != sid:  # a retried run of this tick: the session started before
        context.instance.add_run_tags(context.run.run_id, {SESSION_TAG: run.session_id})
    context.log.info(f"watch {config.watch_id}: session {run.session_id}")
    try:
        stopped = drive_in_process(context.op_execution_context, st, run.session_id)
    finally:
        got = finish_run(st, config.watch_id, due_at)
    if stopped is not None:  # raised here, in the asset's own frame (assets/driver.py)
        raise dg.Failure(description=stopped, allow_retries=False)
    counts = {}
    if got.diff is not None:
        f, s = got.diff["findings"], got.diff["sources"]
        counts = {
            "findings_new": len(f["new"]),
            "findings_removed": len(f["removed"]),
            "findings_changed": len(f["changed"]),
            "findings_same": int(f["same"]),
            "sources_added": len(s["added"]),
            "sources_removed": len(s["removed"]),
            "sources_changed": len(s["changed"]),
            "answer_changed": bool(got.diff["answer_changed"]),
        }
    yield dg.MaterializeResult(
        metadata={
            "watch": config.watch_id,
            "session": run.session_id,
            "previous_session": run.previous_session_id,
            "status": got.run.status,
            "material": bool(got.material),
            "notified": got.notified,
            **({"notify_error": got.notify_error} if got.notify_error else {}),
            **counts,
            "watched_questions": dg.MetadataValue.md(watches_markdown(st)),
        }
    )


watch_job = dg.define_asset_job(
    "watch_run",
    selection=dg.AssetSelection.assets(watched_questions),
    description="One run of a watched question: the rerun, its difference, --notify.",
)


@dg.schedule(
    name="watched_questions",
    job=watch_job,
    cron_schedule=WATCH_TICK,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Re-runs each watched question (`mole watch`) when its own schedule is due, "
    "within its own budget per run.",
)
def watched_questions_schedule(
    context: dg.ScheduleEvaluationContext, store: StoreResource
) -> Iterator[dg.RunRequest | dg.SkipReason]:
    when = context.scheduled_execution_time
    now = _naive_utc(when) if when is not None else utcnow()
    try:
        # Short wait: a run holding the store is the usual reason it is busy; the next tick
        # finds the same watches due (their last run has not moved).
        st = open_store(store.path, lock_wait_s=2.0)
    except StoreError as exc:
        yield dg.SkipReason(f"store busy: {exc}")
        return
    try:
        found = due(st, now)
    finally:
        st.close()
    for watch, tick in found:
        yield dg.RunRequest(
            run_key=f"{watch.id}:{tick:%Y-%m-%dT%H:%M}",
            run_config={
                "ops": {
                    "watched_questions": {
                        "config": {"watch_id": watch.id, "due_at": tick.isoformat()}
                    }
                }
            },
            tags={WATCH_TAG: watch.id},
        )
    if not found:
        yield dg.SkipReason("no watched question is due")
