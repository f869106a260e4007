"""The driver for sessions launched from the Dagster UI. The CLI drives its own sessions; a
session started from the UI needs someone to run the next round while the planner has work and
budget, then the report, with the round driver's decision (mole_dag.driver.next_step).

`research_session` (the UI's door) does it in one run: it checks the launch, creates the
session and its partition, then runs each round and the report as a run of its own
(`research_round`, `research_report`) in this run's process through assets/steps.py, as `mole
research` runs them, so each shows in the UI with its assets and metadata while rounds follow
each other at once. A run per round through the queue cost a new process each (about 5 s here
before any work) plus the sensor's wait, and a UI session took several times the CLI's time
(BENCHMARKS.md, issue 23).

The `research_driver` sensor is the safety net: a session started by materialising `session`
(or whose driving run died) and not busy gets a `research_session` run within seconds. In the
scale-out profile (deploy/) it queues `research_round` / `research_report` runs instead, so
each step runs on the cluster. It never touches sessions the CLI drives."""

import json
import os
import time
from typing import Any

import dagster as dg

from assets.jobs import research_report, research_round
from assets.partitions import SESSIONS
from assets.session_config import SESSION_CONFIG, LaunchConfig, session_run_config, stored_launch
from assets.steps import (
    SESSION_TAG,
    UI_TAGS,
    drive_runs,
    ensure_partition,
    failure_line,
    stop_after_failed_run,
)
from mole_dag.budget import Ledger
from mole_dag.budget.ledger import new_session_id
from mole_dag.context import Run
from mole_dag.driver import Step, next_step
from mole_dag.launch import LaunchError
from mole_dag.resources import StoreResource
from mole_dag.session import SessionMissing, session_exists
from mole_dag.skillsets import skills_for
from mole_dag.store import Store, StoreError, open_store, q
from mole_dag.store.records import SessionRow

# How often the sensor looks for sessions to drive: MOLE_DRIVER_INTERVAL_S, read when the
# definitions load. 5 s is the daemon's own sensor loop, so a shorter value gains nothing; a
# tick costs one read of the store.
INTERVAL_S = int(os.environ.get("MOLE_DRIVER_INTERVAL_S") or 5)

# How long a partition with no session in the store and no run may stay before the sensor
# removes it. The UI adds a partition when "Add a partition" is clicked, before its launch is
# configured; a launch the launchpad then refuses (or one never made) left it in the list for
# good (issue 33). A guess, flagged as one: longer than anyone takes to fill in the launchpad.
ORPHAN_AFTER_S = 600.0

ACTIVE = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]

DRIVE_CONFIG = {
    **SESSION_CONFIG,
    "session_id": dg.Field(
        dg.Noneable(str),
        default_value=None,
        description="The session id, also its partition: letters, digits, '.', '_', '-' "
        "(default: a fresh id, as `mole research` makes).",
    ),
}


def _busy(instance: dg.DagsterInstance, sid: str) -> bool:
    for tag in ("dagster/partition", SESSION_TAG):
        if instance.get_runs(filters=dg.RunsFilter(tags={tag: sid}, statuses=ACTIVE), limit=1):
            return True
    return False


def sweep_orphan_partitions(
    instance: dg.DagsterInstance, store: Store, first_seen: dict[str, float], now: float
) -> tuple[list[str], dict[str, float]]:
    """Remove session partitions that name no session in the store and never had a run, once
    they have been seen so for ORPHAN_AFTER_S. Returns the keys removed and the first-seen
    times of those still waiting (the sensor's cursor)."""
    removed: list[str] = []
    waiting: dict[str, float] = {}
    for key in instance.get_dynamic_partitions(SESSIONS):
        if session_exists(store, key) or _busy(instance, key):
            continue
        if instance.get_runs(filters=dg.RunsFilter(tags={"dagster/partition": key}), limit=1):
            continue  # it ran: a failed launch is the run's record to keep, not an orphan
        since = first_seen.get(key, now)
        if now - since >= ORPHAN_AFTER_S:
            instance.delete_dynamic_partition(SESSIONS, key)
            removed.append(key)
        else:
            waiting[key] = since
    return removed, waiting


def _session(store: Store, sid: str) -> SessionRow | None:
    return store.one(SessionRow, q("session_get"), {"session_id": sid})


def step_observation(sid: str, kind: str, res: dg.ExecuteInProcessResult) -> dg.AssetObservation:
    """An observation of the session's `session` partition naming a round's or the report's
    run (a link in the UI), with the report's Markdown once there is one."""
    metadata: dict[str, Any] = {
        "step": kind,
        "run": dg.MetadataValue.dagster_run(res.run_id),
        "success": res.success,
    }
    for ev in res.get_asset_materialization_events() if res.success else []:
        mat = ev.materialization
        if mat is not None and mat.asset_key == dg.AssetKey("report") and "report" in mat.metadata:
            metadata["report"] = mat.metadata["report"]
    return dg.AssetObservation(asset_key=dg.AssetKey("session"), partition=sid, metadata=metadata)


def drive_in_process(context: dg.OpExecutionContext, store: Store, sid: str) -> str | None:
    """Rounds while one is due, then the report, each a run of its own in this process and
    instance (assets/steps.py). Returns why the drive stopped short (no such session, or a
    step's run failed), None when it went to its end. The op raises the dg.Failure itself:
    raised down here, the failure Dagster stores carried the driver's frames (the round loop,
    the step's closure) under a description that already says what went wrong (issue 33)."""
    row = _session(store, sid)
    if row is None:
        return f"no session {sid!r} in {store.path}"
    failed: list[str] = []

    def checked(kind: Step, res: dg.ExecuteInProcessResult) -> None:
        context.log.info(f"{kind}: run {res.run_id} {'succeeded' if res.success else 'failed'}")
        # The step's run as a link (a log line's run id is bare text in the UI), on the
        # session's partition, and the report itself once written: one click from this run's
        # log to the report (issue 33: it took Catalog, Partitions, a scroll and a button).
        context.log_event(step_observation(sid, kind, res))
        if not res.success:
            stop_after_failed_run(store, sid, res)
            # The drive stops here (drive_runs ends on a failed run); the op raises.
            failed.append(f"session {sid}: {kind} run {res.run_id} failed: {failure_line(res)}")

    def announce(kind: Step, rounds: int) -> None:
        context.log.info(f"session {sid}: {'round ' + str(rounds) if kind == 'round' else kind}")

    drive_runs(
        context.instance,
        row,
        skills_for(row.provider),
        # The store is closed after each decision: the step's own run opens the file next.
        open_store=lambda: store,
        tags={**UI_TAGS, "mole/driven_by": context.run_id},
        log_level="WARNING",
        checked=checked,
        announce=announce,
    )
    return failed[0] if failed else None


@dg.op(
    config_schema=DRIVE_CONFIG,
    tags={"kind": "mole"},
    description="Checks the launch, creates the session, then runs its rounds and report.",
)
def drive_session(context: dg.OpExecutionContext, store: StoreResource) -> None:
    cfg = context.op_config
    launch = LaunchConfig.of(cfg)
    sid = cfg.get("session_id") or new_session_id()
    st = store.store
    try:
        # The launch check `mole research` runs; nothing is written, and no partition added,
        # for a refused launch.
        launch.ensure(st, sid, context.log.warning)
    except (LaunchError, SessionMissing) as exc:
        raise dg.Failure(description=str(exc), allow_retries=False) from None
    row = _session(st, sid)
    if row is not None and (row.driver or "cli") != "dagster":
        raise dg.Failure(
            description=f"session {sid} is driven by `mole research`; continue it with "
            f"`mole resume {sid}`",
            allow_retries=False,
        )
    instance = context.instance
    ensure_partition(instance, sid)
    instance.add_run_tags(context.run_id, {SESSION_TAG: sid, **UI_TAGS})
    context.log.info(f"session {sid}: {launch.question!r}")
    stopped = drive_in_process(context, st, sid)
    if stopped is not None:
        raise dg.Failure(description=stopped, allow_retries=False)


@dg.job(
    description="Start a research session from the UI (question and budget required) and run "
    "it to its report: each round and the report are runs of their own.",
    # Bound here rather than by the Definitions: a sensor's job that still needs its resources
    # is rebuilt by Dagster when the definitions load, which prints a BetaWarning in `make dev`.
    resource_defs={"store": StoreResource()},
)
def research_session() -> None:
    drive_session()


def drive_request(row: SessionRow, step: Step, in_process: bool) -> dg.RunRequest:
    """The run that moves a UI-driven session on: its whole remaining drive in one
    `research_session` run, or (scale-out) the one round or report run it needs next."""
    key = f"{row.id}:{step}:{row.rounds}"
    if in_process:
        cfg = {**stored_launch(row), "session_id": row.id}
        return dg.RunRequest(
            run_key=key,
            job_name=research_session.name,
            run_config={"ops": {"drive_session": {"config": cfg}}},
            tags={SESSION_TAG: row.id, **UI_TAGS},
        )
    if step == "round":
        return dg.RunRequest(
            run_key=key,
            job_name=research_round.name,
            partition_key=row.id,
            run_config=session_run_config(row),
            tags={SESSION_TAG: row.id, **UI_TAGS},
        )
    return dg.RunRequest(
        run_key=key,
        job_name=research_report.name,
        partition_key=row.id,
        tags={SESSION_TAG: row.id, **UI_TAGS},
    )


def make_research_driver(*, in_process: bool) -> dg.SensorDefinition:
    """The sensor. `in_process`: one `research_session` run drives the rest of a session (the
    embedded profile); otherwise each round and the report is a queued run (scale-out)."""

    @dg.sensor(
        name="research_driver",
        minimum_interval_seconds=INTERVAL_S,
        jobs=[research_session, research_round, research_report],
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Moves on sessions launched from the UI that nothing is driving.",
    )
    def research_driver(context: dg.SensorEvaluationContext, store: StoreResource):  # noqa: ANN202
        try:
            # Short wait: a run holding the store is the usual reason it is busy; try next tick.
            st = open_store(store.path, lock_wait_s=2.0)
        except StoreError as exc:
            yield dg.SkipReason(f"store busy: {exc}")
            return
        try:
            try:
                first_seen = json.loads(context.cursor or "{}")
            except ValueError:
                first_seen = {}
            _removed, waiting = sweep_orphan_partitions(
                context.instance,
                st,
                first_seen if isinstance(first_seen, dict) else {},
                time.time(),
            )
            context.update_cursor(json.dumps(waiting, sort_keys=True))
            sessions = [r["id"] for r in st.named("sessions_driven_by_dagster")]
            requested = 0
            for sid in sessions:
                if _busy(context.instance, sid):
                    continue
                row = _session(st, sid)
                if row is None:
                    continue
                step = next_step(Run(st, Ledger(st), skills_for(row.provider), sid))
                if step is None:
                    continue
                requested += 1
                yield drive_request(row, step, in_process)
            if not requested:
                yield dg.SkipReason(f"{len(sessions)} UI-driven sessions, none needing a run now")
        finally:
            st.close()

    return research_driver
