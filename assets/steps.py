"""The one way a session's steps run through Dagster: each round and the report (or, for `mole
materialize`, a selection of the session's assets) is a run of its own, executed in this process
against the given instance, tagged so the UI finds it and knows its session.

`drive_runs` is the loop, mole_dag.driver.drive with each step such a run. Its callers differ
only in what they do with a step's result: `mole research`, `resume` and `rerun` (mole_dag/cli)
turn a signal, a full disk or a provider outage into one line; the UI's `research_session` run
and a watched question's run (assets/driver.py, assets/watch.py) log each step's run as a link
and fail their own run when a step fails. MCP's `research` runs `mole research`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import dagster as dg
from dagster._utils.error import SerializableErrorInfo

from assets.jobs import research_report, research_round, step_jobs
from assets.partitions import SESSIONS
from assets.session_config import session_run_config
from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.core import SessionStatus
from mole_dag.driver import Step, drive, next_round_number, next_step
from mole_dag.redaction import redact
from mole_dag.session import stop_session
from mole_dag.store import Store
from mole_dag.store.records import SessionRow

# Every run that works on a session carries this tag (the driving run has no partition of its
# own), so the sensor can tell a session is being driven between two of its rounds.
SESSION_TAG = "mole/session"
# Which door started a run: Dagster labels every in-process run "Manually launched", the CLI's
# and the UI's alike, so the tag says it.
CLI_TAGS = {"mole/launched_by": "cli"}
UI_TAGS = {"mole/launched_by": "ui"}

# The code location `make dev` loads the definitions as (workspace.yaml: module
# assets.definitions, attribute defs), named as Dagster names it. A run executed in process
# (`mole research`, `mole materialize`, a research_session's rounds) has no code location of its
# own, so the UI's job pages and Overview timeline did not list it ("No runs" after `make
# demo`); these tags are how the UI finds a job's runs, and the in-process runs carry them.
CODE_LOCATION = "assets.definitions:defs"
IN_PROCESS_RUN_TAGS = {
    ".dagster/repository": f"__repository__@{CODE_LOCATION}",
    "dagster/code_location": CODE_LOCATION,
}

Result = dg.ExecuteInProcessResult


def quiet_logs(level: str) -> dict[str, Any]:
    """Run config setting Dagster's console logger to `level`."""
    return {"loggers": {"console": {"config": {"log_level": level}}}}


def ensure_partition(instance: dg.DagsterInstance, sid: str) -> None:
    if not instance.has_dynamic_partition(SESSIONS, sid):
        instance.add_dynamic_partitions(SESSIONS, [sid])


def run_step(
    job: dg.JobDefinition,
    instance: dg.DagsterInstance,
    sid: str,
    *,
    run_config: Mapping[str, Any],
    tags: Mapping[str, str],
) -> Result:
    """One run of `job` for session `sid`'s partition, in this process; a failure is in the
    result, not raised."""
    return job.execute_in_process(
        instance=instance,
        partition_key=sid,
        run_config=dict(run_config),
        # Tagged with its session whichever door started it, so the Runs page filters a
        # session's runs (issue 33).
        tags={**IN_PROCESS_RUN_TAGS, **tags, SESSION_TAG: sid},
        raise_on_error=False,
    )


@dataclass
class Drove:
    """How a drive ended. `last`: the decision it ended on (None: no next step). `report`: the
    report's run, when it ran and succeeded. `failed`: the run that failed (nothing ran after)."""

    last: Step | None
    report: Result | None
    failed: Result | None


def _accept(_kind: Step, _res: Result) -> None:
    return None


def drive_runs(
    instance: dg.DagsterInstance,
    row: SessionRow,
    skills: Any,
    *,
    open_store: Callable[[], Store],
    tags: Mapping[str, str],
    log_level: str,
    checked: Callable[[Step, Result], None] = _accept,
    first: Step | None = None,
    announce: Callable[[Step, int], None] | None = None,
    around: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
) -> Drove:
    """Rounds while one is due, then the report, each a run of its own (run_step). The store
    (`open_store`, closed after each use) is read only to decide the next step: each step's run
    opens it itself. `checked(step, result)` sees each run as it ends and may raise to stop the
    drive; a failed run it lets through ends the drive as `failed`. `around()` is entered around
    each run; `first` replaces the first decision (`mole resume`)."""
    sid = row.id
    ensure_partition(instance, sid)
    jobs = step_jobs()
    runs: dict[Step, tuple[dg.JobDefinition, dict[str, Any]]] = {
        "round": (jobs[research_round.name], {**quiet_logs(log_level), **session_run_config(row)}),
        "report": (jobs[research_report.name], quiet_logs(log_level)),
    }
    failed: list[Result] = []

    def step(kind: Step) -> Result | None:
        job, run_config = runs[kind]
        with around():
            res = run_step(job, instance, sid, run_config=run_config, tags=tags)
        checked(kind, res)
        if not res.success:
            failed.append(res)
            return None
        return res

    def decide() -> Step | None:
        st = open_store()
        try:
            return next_step(Run(st, Ledger(st), skills, sid))
        finally:
            st.close()

    st = open_store()
    try:
        first_round = next_round_number(Run(st, Ledger(st), skills, sid))
    finally:
        st.close()
    got = drive(
        round=lambda: step("round"),
        report=lambda: step("report"),
        decide=decide,
        first=first,
        announce=announce,
        first_round=first_round,
    )
    return Drove(got.last, got.report, failed[-1] if failed else None)


def failure_line(result: Result) -> str:
    """The first failed step of a round's or report's run, in one line."""
    for ev in result.all_events:
        if ev.is_step_failure and ev.step_failure_data and ev.step_failure_data.error:
            err = ev.step_failure_data.error
            return f"step {ev.step_key}: {_said(err.cause or err)}"
    return "the run failed"


def provider_down(result: Result) -> str | None:
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


def stop_after_failed_run(store: Store, sid: str, result: Result) -> None:
    """A session whose round or report run failed is `interrupted` when the provider stopped
    answering (resumable once it answers), else `failed`, before anything else runs."""
    down = provider_down(result)
    status = SessionStatus.INTERRUPTED if down else SessionStatus.FAILED
    stop_session(Ledger(store), sid, status, down or failure_line(result))
