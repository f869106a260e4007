"""Driving a session from the terminal (`mole research`, `resume`, `rerun`): the session's rounds
and report run as Dagster runs through assets/steps.py in the project's instance, while this
process owns the session. A signal, a full disk or a provider that stopped answering leaves it
`interrupted` with one line saying how to continue; a new session's first plan is asked for
while Dagster starts (mole_dag.planner.ahead); the outcome is printed at the end."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mole_dag import invoked
from mole_dag.cli.common import EXIT_FAILED, EXIT_UNAVAILABLE, EXIT_USAGE, CliError, fmt, open_store
from mole_dag.diskfull import DiskFull, disk_full, disk_full_in_error, drop_dagster_noise
from mole_dag.paths import dagster_home, mole_home
from mole_dag.redaction import redact
from mole_dag.sanitize import escape_controls

# How long to wait for another process opening the same Dagster instance (milliseconds when it
# exists, seconds when it is being created). A guess, flagged as one.
INSTANCE_LOCK_WAIT_S = 300.0


def dagster_instance():  # noqa: ANN202
    """The project's Dagster instance, the one `make dev` shows: DAGSTER_HOME, else
    <mole home>/dagster with the project's dagster.yaml (paths.dagster_home)."""
    import dagster as dg

    home = dagster_home()
    # Dagster reads the variable, and the runs it launches inherit it.
    os.environ["DAGSTER_HOME"] = str(home)
    if not (home / "dagster.yaml").exists():
        raise CliError(f"DAGSTER_HOME={home} has no dagster.yaml; unset it to use the project's")
    os.chdir(home)
    from filelock import FileLock, Timeout

    # Dagster creates its SQLite storage (runs, event log index, schedules) when an instance is
    # first opened, and two processes doing that at once race to CREATE TABLE: one crashed
    # with "table secondary_indexes already exists", its session left `created` with escrow
    # held (issue 22). Opening an instance is therefore serialised per instance folder; later
    # openings find the tables made and hold the lock for a moment.
    try:
        with FileLock(home / ".mole-instance.lock", timeout=INSTANCE_LOCK_WAIT_S):
            return dg.DagsterInstance.get()
    except Timeout:
        raise CliError(
            f"the Dagster instance {home} is being opened by another process that has not "
            f"finished in {INSTANCE_LOCK_WAIT_S:.0f}s; try again"
        ) from None


def drive_to_report(
    sid: str,
    skills: Any,
    *,
    first: str,
    quiet: bool,
    print_report: bool,
    plan_ahead: bool = False,
) -> int:
    """Run rounds while there is work and budget, then the report, as Dagster runs. Shared by
    `research` and `resume`. The session is owned by this process while it runs (so recovery
    in another process can tell it is alive), and a signal stops it as `interrupted`."""
    from mole_dag.driver import Interrupted
    from mole_dag.store import q, utcnow
    from mole_dag.store.recovery import owner_tag

    st = open_store()
    try:
        st.transact(
            lambda cur: cur.execute(
                q("session_set_owner"), {"owner": owner_tag(), "now": utcnow(), "session_id": sid}
            )
        )
    finally:
        st.close()

    got_signal: list[str] = []

    def on_signal(signum: int, _frame: Any) -> None:
        got_signal.append(signal.Signals(signum).name)
        # Dagster turns KeyboardInterrupt inside a step into DagsterExecutionInterruptedError;
        # the in-flight call's reservation is then settled as assumed (Ledger.hold).
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    with _SignalLog() as arrived:
        try:
            return _drive_rounds(
                sid, skills, first, quiet, print_report, got_signal, plan_ahead=plan_ahead
            )
        except (KeyboardInterrupt, Interrupted):
            return _interrupted(sid, got_signal or arrived.names())
        except _ProviderStopped as exc:
            return _provider_stopped(sid, exc.reason)
        except Exception as exc:
            # An error naming no file comes from Dagster's SQLite storage (DuckDB and the OS
            # name theirs): Dagster's folder is the one to name.
            full = disk_full(exc, _dagster_folder())
            if full is None:
                raise
            raise _stopped_for_room(sid, full) from exc
        finally:
            for s, h in previous.items():
                signal.signal(s, h)


def _dagster_folder() -> Path:
    """Where Dagster writes, without writing there (paths.dagster_home copies dagster.yaml)."""
    given = os.environ.get("DAGSTER_HOME")
    return Path(given).expanduser().resolve() if given else mole_home() / "dagster"


def _stopped_for_room(sid: str, full: DiskFull) -> DiskFull:
    """The session left `interrupted` with the reason, for `mole resume` once there is room."""
    from mole_dag.budget import Ledger
    from mole_dag.core import SessionStatus

    # The full disk may be the store's: then the status cannot be written now, and the next
    # writing open of the store marks the session interrupted (its owner, this process, gone).
    with contextlib.suppress(Exception):
        st = open_store()
        try:
            ledger = Ledger(st)
            if ledger.balance(sid).status in (
                SessionStatus.CREATED,
                SessionStatus.RUNNING,
                SessionStatus.REPORTING,
            ):
                ledger.set_status(sid, SessionStatus.INTERRUPTED, full.reason())
        finally:
            st.close()
    return DiskFull(full.folder, sid)


class _QuietDagsterNoise:
    """sys.stderr while a Dagster run executes, minus Dagster's multi-line report of an event
    write that failed for lack of room (the failure itself is raised, and said in one line)."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def write(self, text: str) -> int:
        return len(text) if drop_dagster_noise(text) else self._real.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _SignalLog:
    """Which signals arrived, whoever handled them. Dagster's step machinery replaces the
    SIGINT and SIGTERM handlers while a step runs (it maps SIGTERM onto SIGINT's handler and
    raises its own interrupt), so our handler may never see the signal; the interpreter's
    wakeup descriptor still receives the number of every signal that has a Python handler,
    before any handler runs. Main thread only (signals are delivered there); elsewhere it
    records nothing."""

    def __enter__(self) -> _SignalLog:
        self._fds: tuple[int, int] | None = None
        self._previous = -1
        self._seen: list[int] = []
        with contextlib.suppress(ValueError, OSError):
            r, w = os.pipe()
            os.set_blocking(r, False)
            os.set_blocking(w, False)
            self._previous = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
            self._fds = (r, w)
        return self

    def names(self) -> list[str]:
        if self._fds is not None:
            with contextlib.suppress(BlockingIOError, OSError):
                self._seen.extend(os.read(self._fds[0], 512))
        names = []
        for num in self._seen:
            with contextlib.suppress(ValueError):
                sig = signal.Signals(num)
                if sig in (signal.SIGINT, signal.SIGTERM) and sig.name not in names:
                    names.append(sig.name)
        return names

    def __exit__(self, *exc: object) -> None:
        if self._fds is None:
            return
        with contextlib.suppress(ValueError, OSError):
            signal.set_wakeup_fd(self._previous)
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def _drive_rounds(
    sid: str,
    skills: Any,
    first: str,
    quiet: bool,
    print_report: bool,
    got_signal: list[str],
    *,
    plan_ahead: bool = False,
) -> int:
    """The driver's loop (mole_dag.driver.drive) with each step a Dagster run in the project's
    instance; the store is opened only to decide the next step. `plan_ahead`: a new session's
    first plan is asked for while Dagster starts (mole_dag.planner.ahead)."""
    from concurrent.futures import wait

    from mole_dag.driver import Interrupted
    from mole_dag.planner.ahead import take

    printed: set[tuple[str, int]] = set()

    def announce(step: str, n: int) -> None:
        # Each step once: round 1 is announced before a plan started ahead, not again.
        if quiet or (step, n) in printed:
            return
        printed.add((step, n))
        print(f"round {n}" if step == "round" else "report", file=sys.stderr)

    ahead = _start_plan(sid, skills, announce) if plan_ahead and first == "round" else None
    try:
        return _drive_steps(sid, skills, first, print_report, got_signal, announce, quiet)
    except (KeyboardInterrupt, Interrupted):
        take(sid)  # whoever had it (the run may have been waiting for it), it ends here
        if ahead is not None and not ahead.done():
            _stop_plan(sid, ahead)
        ahead = None
        raise
    finally:
        if ahead is not None and take(sid) is not None:
            # The round's run never took the plan (it failed to start): let the call finish
            # and settle before the process ends, so the ledger has its real cost.
            wait([ahead])


def _stop_plan(sid: str, ahead: Any) -> None:
    """A stop while the plan asked ahead is in flight: as for a stage's calls, its answer is
    given EXIT_GRACE_S to arrive; if it does not, its reservation is charged in full now
    (`assumed`), and nothing more is done for it."""
    from concurrent.futures import wait

    from mole_dag.budget import Ledger
    from mole_dag.llm.fanout import EXIT_GRACE_S
    from mole_dag.planner.plan import STAGE

    if wait([ahead], timeout=EXIT_GRACE_S).done:
        return
    st = open_store()
    try:
        Ledger(st).settle_assumed_in_stage(sid, STAGE, "interrupted: the plan asked ahead")
    finally:
        st.close()


def _start_plan(sid: str, skills: Any, announce: Callable[[str, int], None]) -> Any:
    from mole_dag.budget import Ledger
    from mole_dag.context import Run
    from mole_dag.planner.ahead import start
    from mole_dag.planner.plan import plan_round_now

    announce("round", 1)  # before the plan's own progress line

    def plan() -> Any:
        st = open_store()
        try:
            # Its progress line goes where the round's run sends its stages' lines.
            progress = logging.getLogger("mole.progress").info
            return plan_round_now(Run(st, Ledger(st), skills, sid, progress))
        finally:
            st.close()

    return start(sid, plan)


def _drive_steps(
    sid: str,
    skills: Any,
    first: str,
    print_report: bool,
    got_signal: list[str],
    announce: Callable[[str, int], None],
    quiet: bool,
) -> int:
    """The session's steps as Dagster runs (assets/steps.py); a signal, a full disk or a provider
    that stopped answering ends the drive by raising, each said in one line by `drive_to_report`."""
    from mole_dag.budget import Ledger
    from mole_dag.context import Run
    from mole_dag.core import SessionStatus
    from mole_dag.driver import Interrupted, Step

    instance = dagster_instance()
    from assets.steps import CLI_TAGS, drive_runs, provider_down, stop_after_failed_run
    from mole_dag.store import q
    from mole_dag.store.records import SessionRow

    st = open_store()
    try:
        row = st.one(SessionRow, q("session_get"), {"session_id": sid})
    finally:
        st.close()
    assert row is not None  # created (research) or checked (resume) before the drive

    def checked(_kind: Step, res: Any) -> None:
        if got_signal or (not res.success and _was_interrupted(res)):
            raise Interrupted
        full = None if res.success else _disk_full_in_run(res)
        if full is not None:
            # Not a failure of the session: it goes on once there is room (drive_to_report
            # marks it).
            raise full
        down = None if res.success else provider_down(res)
        if down is not None:
            raise _ProviderStopped(down)  # nor this: it goes on once the provider answers

    got = drive_runs(
        instance,
        row,
        skills,
        open_store=open_store,
        tags=CLI_TAGS,
        # CRITICAL, not ERROR: a failed or interrupted step is reported by report_failure or
        # _interrupted in one line each; Dagster's console logger would add its stack trace.
        log_level="CRITICAL",
        checked=checked,
        first="report" if first == "report" else "round",
        announce=announce,
        around=lambda: contextlib.redirect_stderr(_QuietDagsterNoise(sys.stderr)),
    )
    if got.failed is not None:
        report_failure(got.failed, sid)
        # Marked before the process exits, escrow returned (issue 29: it stayed `running`).
        st = open_store()
        try:
            stop_after_failed_run(st, sid, got.failed)
        finally:
            st.close()
        return EXIT_FAILED
    if got.report is None:
        st = open_store()
        try:
            sess = Run(st, Ledger(st), skills, sid).session()
        finally:
            st.close()
        if sess.status == SessionStatus.EXHAUSTED:
            # The budget could not pay for the first call: one line, as for bad input.
            print(f"mole: {sess.stop_reason or 'budget exhausted'}", file=sys.stderr)
            print(f"session {sid}", file=sys.stderr)
            return EXIT_USAGE
    return _print_outcome(sid, quiet=quiet, print_report=print_report)


def _disk_full_in_run(result: Any) -> DiskFull | None:
    """A step that failed for lack of room (the store's disk, the index folder, Dagster's)."""
    for ev in result.all_events:
        if ev.is_step_failure and ev.step_failure_data and ev.step_failure_data.error:
            full = disk_full_in_error(ev.step_failure_data.error, _dagster_folder())
            if full is not None:
                return full
    return None


class _ProviderStopped(Exception):
    """A step stopped because the model provider stopped answering (ProviderUnavailable)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def _provider_stopped(sid: str, reason: str) -> int:
    """Leave the session `interrupted`, its unanswered work pending, and say so in one line."""
    from mole_dag.budget import Ledger
    from mole_dag.core import SessionStatus
    from mole_dag.session import stop_session

    st = open_store()
    try:
        stop_session(Ledger(st), sid, SessionStatus.INTERRUPTED, reason)
    finally:
        st.close()
    print(
        escape_controls(
            f"mole: the model provider stopped answering ({reason}); the session is "
            f"interrupted with its unanswered work pending: `{invoked.command('resume', sid)}` "
            "once the "
            "provider answers again"
        ),
        file=sys.stderr,
    )
    print(f"session {sid}", file=sys.stderr)
    return EXIT_UNAVAILABLE


def _was_interrupted(result: Any) -> bool:
    for ev in result.all_events:
        if ev.is_step_failure and ev.step_failure_data and ev.step_failure_data.error:
            err = ev.step_failure_data.error
            names = {err.cls_name, getattr(err.cause, "cls_name", None)}
            if names & {"DagsterExecutionInterruptedError", "KeyboardInterrupt"}:
                return True
    return False


def _interrupted(sid: str, got_signal: list[str]) -> int:
    """Mark the session interrupted and say, in one line, how to continue it."""
    from mole_dag.budget import Ledger
    from mole_dag.core import SessionStatus

    # Dagster's step machinery may take the signal before our handler does (it turns it into
    # an interrupt of its own); _SignalLog still saw which one it was. Unknown only when no
    # signal arrived at all (an interrupt raised by other means): then the line names none.
    name = got_signal[0] if got_signal else "a signal"
    # Ignore a second signal while the status is written: the line below must get out.
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_IGN)
    st = open_store()
    try:
        ledger = Ledger(st)
        status = ledger.balance(sid).status
        if status in (SessionStatus.CREATED, SessionStatus.RUNNING, SessionStatus.REPORTING):
            ledger.set_status(sid, SessionStatus.INTERRUPTED, f"stopped by {name}")
    finally:
        st.close()
    print(
        f"mole: interrupted by {name}; continue with `{invoked.command('resume', sid)}`",
        file=sys.stderr,
    )
    return 143 if name == "SIGTERM" else 130


def report_failure(result: Any, sid: str, command: str = "research") -> None:
    for ev in result.all_events:
        if ev.event_type_value == "ASSET_CHECK_EVALUATION":
            data = ev.asset_check_evaluation_data
            if not data.passed:
                why = data.description or ""
                print(
                    escape_controls(
                        f"mole {command}: check {data.check_name} failed{': ' + why if why else ''}"
                    ),
                    file=sys.stderr,
                )
        if ev.is_step_failure and ev.step_failure_data and ev.step_failure_data.error:
            err = ev.step_failure_data.error
            cause = err.cause or err
            print(
                escape_controls(
                    redact(f"mole {command}: step {ev.step_key} failed: {cause.message.strip()}")
                ),
                file=sys.stderr,
            )
    print(f"session {sid}", file=sys.stderr)


def _print_outcome(sid: str, *, quiet: bool, print_report: bool) -> int:
    from mole_dag.budget import Ledger
    from mole_dag.store import q

    store = open_store()
    try:
        rep = store.row(q("report_latest"), {"session_id": sid})
        ledger = Ledger(store)
        bal = ledger.balance(sid)
        by_role = ledger.spend_by_role(sid)
        check = ledger.verify(sid)
    finally:
        store.close()
    if rep and print_report and not quiet:
        print(rep["markdown"])
    if rep:
        print(f"report {rep['path'] or '(stored only: the report file could not be written)'}")
    print(f"session {sid}")
    if not quiet:
        spend = ", ".join(f"{r['role']} {fmt(int(r['spent']), str(bal.unit))}" for r in by_role)
        over = f", overrun {fmt(bal.overrun, str(bal.unit))} included" if bal.overrun else ""
        print(
            f"spent {fmt(bal.charged, str(bal.unit))} of {fmt(bal.total, str(bal.unit))} "
            f"({spend}{over}); {check.explain()}"
        )
    if bal.status == "exhausted" and not quiet:
        why = (
            "a provider used more than its calls were allowed, so the session stopped "
            "dispatching calls"
            if bal.overrun
            else "the budget ran out"
        )
        print(f"status exhausted: {why}")
    # A broken ceiling is a failure the user must not miss, even when the books agree.
    return 0 if check.ok and not check.over_ceiling else EXIT_FAILED
