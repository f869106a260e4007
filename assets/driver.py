"""The driver for sessions launched from the Dagster UI. The CLI drives its own sessions; a
session started from the UI needs someone to run the next round while the planner has work and
budget, then the report, with the round driver's decision (mole_dag.driver.next_step).

`research_session` (the UI's door) does it in one run: it checks the launch, creates the
session and its partition, then runs each round and the report as a run of its own
(`research_round`, `research_report`) in this run's process, as `mole research` runs them, so
each shows in the UI with its assets and metadata while rounds follow each other at once. A
run per round through the queue cost a new process each (about 5 s here before any work) plus
the sensor's wait, and a UI session took several times the CLI's time (BENCHMARKS.md, issue 23).

The `research_driver` sensor is the safety net: a session started by materialising `session`
(or whose driving run died) and not busy gets a `research_session` run within seconds. In the
scale-out profile (deploy/) it queues `research_round` / `research_report` runs instead, so
each step runs on the cluster. It never touches sessions the CLI drives."""

import json
import os
import time
from typing import Any

import dagster as dg
from dagster._utils.error import SerializableErrorInfo

from assets.jobs import research_report, research_round
from assets.partitions import SESSIONS
from assets.session_config import SESSION_CONFIG, LaunchConfig, session_run_config, stored_launch
from mole_dag.budget import Ledger
from mole_dag.budget.ledger import new_session_id
from mole_dag.context import Run
from mole_dag.core import SessionStatus
from mole_dag.driver import Step, drive, next_round_number, next_step
from mole_dag.launch import LaunchError
from mole_dag.redaction import redact
from mole_dag.resources import StoreResource
from mole_dag.session import SessionMissing, session_exists, stop_session
from mole_dag.skillsets import skills_for
from mole_dag.store import Store, StoreError, open_store, q
from mole_dag.store.records import SessionRow

# How often the sensor looks for sessions to drive: MOLE_DRIVER_INTERVAL_S, read when the
# definitions load. 5 s is the daemon's own sensor loop, so a shorter value gains nothing; a
# tick costs one read of the store.
INTERVAL_S = int(os.environ.get("MOLE_DRIVER_INTERVAL_S") or 5)

# Every run that works on a session carries this tag (the driving run has no partition of its
# own), so the sensor can tell a session is being driven between two of its rounds.
SESSION_TAG = "mole/session"
# Which door started a run: Dagster labels every in-process run "Manually launched", the CLI's
# and the UI's alike, so the tag says it.
CLI_TAGS = {"mole/launched_by": "cli"}
UI_TAGS = {"mole/launched_by": "ui"}

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


def failure_line(result: dg.ExecuteInProcessResult) -> str:
    """The first failed step of a round's or report's run, in one line."""
    for ev in result.all_events:
        if ev.is_step_failure and ev.step_failure_data and ev.step_failure_data.error:
            err = ev.step_failure_data.error
            return f"step {ev.step_key}: {_said(err.cause or err)}"
    return "the run failed"


def provider_down(result: dg.ExecuteInProcessResult) -> str | None:
    """Why the model provider stopped answering, when that is what failed the run's step
    (mole_dag.llm.provider.ProviderUnavailable, inside Dagster's wrapper)."""
    for ev in result.all_events:
        if ev.is_step_failure and ev.step_failure_data and ev.step_failure_data.error:
            err = ev.step_failure_data.error
            for e in (err, err.cause):
                if e is not None and e.cls_name == "ProviderUnavailable":
                    return _said(e)
    return None


def _said(err: SerializableErrorInfo) -> str:
    """An error's own words on one line, without the "package.module.Class: " Dagster puts
    before them (a reader of the line wants the cause, not our module path)."""
    text = " ".join(redact(err.message).split())
    head, sep, rest = text.partition(": ")
    return rest if sep and err.cls_name and head.endswith(err.cls_name) else text


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


def stop_after_failed_run(store: Store, sid: str, result: dg.ExecuteInProcessResult) -> None:
    """A session whose round or report run failed is `interrupted` when the provider stopped
    answering (resumable once it answers), else `failed`, before anything else runs."""
    down = provider_down(result)
    status = SessionStatus.INTERRUPTED if down else SessionStatus.FAILED
    stop_session(Ledger(store), sid, status, down or failure_line(result))


def drive_in_process(context: dg.OpExecutionContext, store: Store, sid: str) -> str | None:
    """Rounds while one is due, then the report, each a run of its own in this process and
    instance. Returns why the drive stopped short (no such session, or a step's run failed),
    None when it went to its end. The op raises the dg.Failure itself: raised down here, the
    failure Dagster stores carried the driver's frames (the round loop, the step's closure)
    under a description that already says what went wrong (issue 33)."""
    # The definitions hold this module: imported at run time.
    from assets.definitions import IN_PROCESS_RUN_TAGS, defs

    instance = context.instance
    row = _session(store, sid)
    if row is None:
        return f"no session {sid!r} in {store.path}"
    failed: list[str] = []
    skills = skills_for(row.provider)
    quiet: dict[str, Any] = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    configs = {
        "round": {**quiet, **session_run_config(row)},
        "report": quiet,
    }
    jobs = {"round": research_round.name, "report": research_report.name}

    def step(kind: Step) -> dg.ExecuteInProcessResult | None:
        res = defs.resolve_job_def(jobs[kind]).execute_in_process(
            instance=instance,
            partition_key=sid,
            run_config=configs[kind],
            tags={
                **IN_PROCESS_RUN_TAGS,
                **UI_TAGS,
                SESSION_TAG: sid,
                "mole/driven_by": context.run_id,
            },
            raise_on_error=False,
        )
        context.log.info(f"{kind}: run {res.run_id} {'succeeded' if res.success else 'failed'}")
        # The step's run as a link (a log line's run id is bare text in the UI), on the
        # session's partition, and the report itself once written: one click from this run's
        # log to the report (issue 33: it took Catalog, Partitions, a scroll and a button).
        context.log_event(step_observation(sid, kind, res))
        if not res.success:
            stop_after_failed_run(store, sid, res)
            failed.append(f"session {sid}: {kind} run {res.run_id} failed: {failure_line(res)}")
            return None  # the drive stops here
        return res

    def decide() -> Step | None:
        try:
            return next_step(Run(store, Ledger(store), skills, sid))
        finally:
            store.close()  # the round's own run opens the file next

    def announce(kind: Step, rounds: int) -> None:
        context.log.info(f"session {sid}: {'round ' + str(rounds) if kind == 'round' else kind}")

    try:
        first_round = next_round_number(Run(store, Ledger(store), skills, sid))
    finally:
        store.close()
    drive(
        round=lambda: step("round"),
        report=lambda: step("report"),
        decide=decide,
        announce=announce,
        first_round=first_round,
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
    if not instance.has_dynamic_partition(SESSIONS, sid):
        instance.add_dynamic_partitions(SESSIONS, [sid])
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
