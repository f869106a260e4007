"""The `mole` command line.

    mole research "question" (--usd X | --tokens N) [--corpus DIR] [--provider NAME]
                  [--search NAME ...] [--searxng-url URL] [--allow-host HOST ...]
                  [--cassette FILE | --record FILE] [--session-id ID] [--data PATH]
                  [--parallel N]
    mole resume SESSION [--parallel N]
    mole rerun SESSION (--usd X | --tokens N) [--parallel N]
    mole diff OLD NEW [--json]
    mole watch SESSION --every daily|weekly|CRON (--usd X | --tokens N) [--notify CMD]
    mole watch --list | --remove WATCH
    mole sessions
    mole show SESSION [--html [PATH]]
    mole trace SESSION
    mole eval SESSION [--pairs FILE] [--json]
    mole crossings SESSION [--verify]
    mole models
    mole sql [QUERY] [--csv]

`research` creates the session (ledger row with escrow) and its Dagster partition, runs research
rounds as Dagster runs in the project's instance (so they appear in `dagster dev`), then the
report. Bad input is refused with one line on stderr and exit status 2, before anything is
written. SIGINT/SIGTERM stop a session cleanly (`interrupted`); `resume` continues it within
its original budget."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from mole_dag import invoked
from mole_dag.core import MAX_QUESTION_CHARS
from mole_dag.diskfull import (
    DiskFull,
    disk_full,
    disk_full_in_error,
    drop_dagster_noise,
    write_text_atomic,
)
from mole_dag.paths import dagster_home, default_store_path, mole_home
from mole_dag.redaction import redact
from mole_dag.sanitize import escape_controls

EXIT_USAGE = 2
EXIT_FAILED = 1
# The model provider stopped answering: try again later (sysexits' EX_TEMPFAIL).
EXIT_UNAVAILABLE = 75
# How long to wait for another process opening the same Dagster instance (milliseconds when it
# exists, seconds when it is being created). A guess, flagged as one.
INSTANCE_LOCK_WAIT_S = 300.0


class CliError(Exception):
    """A one-line, user-facing error."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def _fmt(amount: int, unit: str) -> str:
    return f"${amount / 1_000_000:.6f}" if unit == "usd_micros" else f"{amount} tokens"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mole-dag")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mole", description="Deep research with a budget the database enforces.")
    p.add_argument("--version", action="version", version=f"mole {_version()}")
    p.add_argument(
        "--db",
        help="the store: a DuckDB file or a postgresql:// URL (default: $MOLE_DB, else "
        "mole.duckdb in the data folder: .mole/ in a checkout, ~/.local/share/mole installed)",
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("research", help="research a question within a hard budget")
    r.add_argument(
        "question",
        help=f"the question, in quotes: at most {MAX_QUESTION_CHARS:,} characters (a guess at "
        "what a planner can use); terminal control sequences in it are removed",
    )
    budget = r.add_argument_group("budget (exactly one is required; there is no default)")
    budget.add_argument("--usd", metavar="AMOUNT", help="ceiling in US dollars, e.g. 0.50")
    budget.add_argument("--tokens", metavar="N", help="ceiling in model tokens")
    r.add_argument(
        "--corpus",
        metavar="DIR",
        help="folder of .pdf/.html/.md/.txt documents for the local search provider "
        "(default: the bundled demo corpus)",
    )
    r.add_argument(
        "--data",
        metavar="PATH",
        help="a CSV file or a folder of CSVs to analyse through the aggregation "
        "gate (only aggregates over at least 5 rows leave it)",
    )
    # Model providers.
    r.add_argument(
        "--provider",
        default=None,
        help="anthropic, openai (any OpenAI-compatible endpoint), cassette (replay a "
        "recording) or extractive (no model); default: MOLE_PROVIDER, else "
        '"provider" in the config file, else extractive',
    )
    r.add_argument(
        "--cassette",
        metavar="FILE",
        help="the recording --provider cassette replays (or MOLE_CASSETTE)",
    )
    r.add_argument(
        "--record", metavar="FILE", help="record this session's model calls to a new cassette FILE"
    )
    r.add_argument(
        "--session-id",
        metavar="ID",
        help="name the session (default: a fresh id); a cassette replays under the "
        "id it was recorded with",
    )
    # Search providers and fetching; each also settable in the config file.
    r.add_argument(
        "--search",
        metavar="NAME",
        action="append",
        help="search provider, repeatable: local, searxng, brave, tavily, arxiv, "
        "openalex, crossref, pubmed (default: config `search`, else local)",
    )
    r.add_argument("--searxng-url", metavar="URL", help="the SearXNG instance to query")
    r.add_argument(
        "--allow-host",
        metavar="HOST",
        action="append",
        help="let the fetcher reach this host although it is private or local "
        "(your own service); repeatable",
    )
    r.add_argument(
        "--parallel",
        metavar="N",
        help="model calls in flight at once within a stage (default: MOLE_PARALLEL, else "
        '"parallel" in the config file, else 8; 1 makes them one at a time); a provider that '
        "answers 429 or 529 lowers it for the session",
    )
    r.add_argument("--quiet", action="store_true", help="print only the report path and session")
    r.add_argument(
        "--no-report-print",
        action="store_true",
        help="do not print the report itself, only where it was written",
    )

    rs = sub.add_parser("resume", help="continue an interrupted session within its budget")
    rs.add_argument("session")
    rs.add_argument(
        "--parallel",
        metavar="N",
        help="model calls in flight at once within a stage (as for research)",
    )
    rs.add_argument("--quiet", action="store_true", help="print only the report path and session")
    rs.add_argument(
        "--no-report-print",
        action="store_true",
        help="do not print the report itself, only where it was written",
    )

    rr = sub.add_parser(
        "rerun",
        help="research a finished session's question again, linked to it: unchanged sources "
        "are carried, and the report opens with what changed",
    )
    rr.add_argument("session")
    rr_budget = rr.add_argument_group("budget (exactly one is required; there is no default)")
    rr_budget.add_argument("--usd", metavar="AMOUNT", help="ceiling in US dollars, e.g. 0.50")
    rr_budget.add_argument("--tokens", metavar="N", help="ceiling in model tokens")
    rr.add_argument("--parallel", metavar="N", help="model calls in flight at once (as research)")
    rr.add_argument("--quiet", action="store_true", help="print only the report path and session")
    rr.add_argument(
        "--no-report-print",
        action="store_true",
        help="do not print the report itself, only where it was written",
    )
    df = sub.add_parser("diff", help="what changed between two sessions of one question")
    df.add_argument("old")
    df.add_argument("new")
    df.add_argument("--json", action="store_true", help="machine-readable output")

    w = sub.add_parser(
        "watch",
        help="re-run a finished session's question on a schedule (the Dagster schedule "
        "watched_questions), each run within its own budget; or list / remove watches",
    )
    w.add_argument("session", nargs="?", help="the session whose question to watch")
    w.add_argument(
        "--every", metavar="WHEN", help="daily, weekly, or a cron string (UTC), e.g. '0 6 * * 1'"
    )
    w_budget = w.add_argument_group("budget of each run (exactly one is required)")
    w_budget.add_argument("--usd", metavar="AMOUNT", help="ceiling per run in US dollars")
    w_budget.add_argument("--tokens", metavar="N", help="ceiling per run in model tokens")
    w.add_argument(
        "--notify",
        metavar="CMD",
        help="a command run with the diff's JSON on standard input when something material "
        "changed, and only then (split like a shell command, run without a shell)",
    )
    w.add_argument("--list", action="store_true", help="the watched questions, last change")
    w.add_argument("--remove", metavar="WATCH", help="stop watching (its spend stays queryable)")

    m = sub.add_parser(
        "materialize",
        help="materialise a session's Dagster assets (as `dagster asset "
        "materialize`), refusing an unknown session in one line",
    )
    m.add_argument("session")
    m.add_argument(
        "--select",
        default="group:research",
        help="Dagster asset selection, comma-separated (default: group:research, "
        "one round and a report)",
    )

    sub.add_parser("sessions", help="list sessions")
    s = sub.add_parser("show", help="status, spend, counts and report of a session")
    s.add_argument("session")
    s.add_argument(
        "--html",
        nargs="?",
        const="",
        metavar="PATH",
        help="also write the report as HTML (default: next to the Markdown file)",
    )
    t = sub.add_parser("trace", help="clusters, edges, scores, follow-ups and grounding")
    t.add_argument("session")
    e = sub.add_parser("eval", help="the scorecard of a session")
    e.add_argument("session")
    e.add_argument(
        "--pairs", metavar="FILE", help="labelled claim pairs (JSON) for contradiction precision"
    )
    e.add_argument("--json", action="store_true", help="machine-readable output")
    x = sub.add_parser(
        "crossings", help="exactly what left a session's local data, and what was refused"
    )
    x.add_argument("session")
    x.add_argument(
        "--verify",
        action="store_true",
        help="re-run every crossing against the data and compare envelope hashes",
    )
    sub.add_parser(
        "models",
        help="the priced models (USD per million tokens, as of when) and the default tiers",
    )
    sq = sub.add_parser(
        "sql",
        help="query the store read-only (tables and views): one statement, a script on "
        "stdin, or a prompt",
    )
    sq.add_argument("query", nargs="?", help='one statement, e.g. "FROM spend_by_role_stage"')
    sq.add_argument("--csv", action="store_true", help="print CSV (every row) instead of a table")
    return p


class _EscapingFormatter(logging.Formatter):
    """Progress lines quote leads and titles taken from pages: controls shown as escapes."""

    def format(self, record: logging.LogRecord) -> str:
        return escape_controls(super().format(record))


def main(argv: Sequence[str] | None = None) -> int:
    from mole_dag.redaction import install_log_redaction
    from mole_dag.store.db import StoreError

    install_log_redaction()
    parser = build_parser()
    args = parser.parse_args(argv)
    # As typed (the --db too), so "continue with ..." can be pasted back (mole_dag.invoked).
    invoked.remember(sys.argv[0] if sys.argv else "mole", args.db)
    if args.db:
        os.environ["MOLE_DB"] = (
            args.db
            if args.db.startswith(("postgresql://", "postgres://"))
            else str(Path(args.db).expanduser().resolve())
        )
    try:
        if args.command == "research":
            return cmd_research(args)
        if args.command == "resume":
            return cmd_resume(args)
        if args.command == "rerun":
            return cmd_rerun(args)
        if args.command == "diff":
            return cmd_diff(args)
        if args.command == "watch":
            return cmd_watch(args)
        if args.command == "materialize":
            return cmd_materialize(args)
        if args.command == "sessions":
            return cmd_sessions(args)
        if args.command == "show":
            return cmd_show(args)
        if args.command == "trace":
            return cmd_trace(args)
        if args.command == "eval":
            return cmd_eval(args)
        if args.command == "crossings":
            return cmd_crossings(args)
        if args.command == "models":
            return cmd_models(args)
        if args.command == "sql":
            return cmd_sql(args)
    except (CliError, StoreError) as exc:
        # StoreError too: a damaged store can show only when a query reaches the lost block,
        # after the command has opened it.
        # Messages quote paths, ids and questions as given: controls shown as escapes.
        print(f"mole {args.command}: {escape_controls(redact(str(exc)))}", file=sys.stderr)
        return EXIT_USAGE
    except DiskFull as exc:
        # One line, wherever the disk filled up (issue 29); a session it stopped is
        # `interrupted`, and the line says how to continue it.
        print(f"mole: {escape_controls(exc.line())}", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:  # `mole show ... | head`: the reader left, nothing to report
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("mole: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        # A write with no room that no writer named a folder for: still one line.
        full = disk_full(exc)
        if full is None:
            raise
        # `resume` on a store still full fails before the drive: the session is as it was.
        if args.command == "resume":
            full = DiskFull(full.folder, args.session)
        print(f"mole: {escape_controls(full.line())}", file=sys.stderr)
        return EXIT_FAILED
    parser.error(f"unknown command {args.command}")


def _open_store(wait: bool = True, *, read_only: bool = False):  # noqa: ANN202
    """`read_only` for every command that only reads: it never creates a store (a typo in
    --db is an error, not a new empty store) and never writes to one (not even a damaged one)."""
    from mole_dag.store import Store, StoreError

    try:
        return Store(
            default_store_path(),
            lock_wait_s=None if wait else 0.0,
            on_wait=lambda m: print(f"mole: {m}", file=sys.stderr),
            read_only=read_only,
        )
    except StoreError as exc:
        raise CliError(str(exc)) from None


def _progress_to_stderr(quiet: bool) -> None:
    log = logging.getLogger("mole.progress")
    log.setLevel(logging.INFO)
    log.propagate = False
    # Replaced on every call: a handler kept from an earlier command in the same process (tests,
    # `resume` after `research`) would write to a stderr that may be gone.
    for old in list(log.handlers):
        log.removeHandler(old)
    if not quiet:
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(_EscapingFormatter("  · %(message)s"))
        log.addHandler(h)
    logging.getLogger("mole").setLevel(logging.WARNING)


def _dagster_instance():  # noqa: ANN202
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


def _before_skills(args: argparse.Namespace, provider: str) -> None:
    """What `mole research` checks once the budget and provider are known and before the
    launch builds anything (the corpus index is cached in the data folder)."""
    _cassette_and_record(args, provider)
    # An existing store is opened now, as the session will open it (migrated, recovered): a
    # damaged one is refused before the corpus index is written beside it (issue 29). The
    # header check in check_target cannot see a store cut after its headers; DuckDB sees it
    # when it reads the lost blocks. A store not there yet is made with the session.
    target = default_store_path()
    if isinstance(target, Path) and target.exists():
        _open_store().close()


def cmd_research(args: argparse.Namespace) -> int:
    from mole_dag.launch import LaunchError, check_launch
    from mole_dag.session import create_session
    from mole_dag.store import StoreError, check_target

    # Validate everything before writing anything: the store first, since checking the launch
    # caches the corpus index in the data folder (an unusable store is then one line, and a
    # damaged one gets nothing created beside it).
    try:
        check_target(default_store_path())
    except StoreError as exc:
        raise CliError(str(exc)) from None
    try:
        _parallel_flag(args)
        launch = check_launch(
            args.question,
            usd=args.usd,
            tokens=args.tokens,
            provider=args.provider,
            session_id=args.session_id,
            corpus=args.corpus,
            data=args.data,
            search=args.search,
            searxng_url=args.searxng_url,
            allow_hosts=args.allow_host,
            note=lambda line: print(f"mole: {line}", file=sys.stderr),
            before_skills=lambda provider: _before_skills(args, provider),
        )
    except LaunchError as exc:
        raise CliError(str(exc)) from None
    question, unit, total, skills = launch.question, launch.unit, launch.total, launch.skills
    # Dagster's folder (and its copy of dagster.yaml) before the session: a full disk there is
    # one line with nothing created, not a session stranded before its first run.
    dagster_home()

    store = _open_store()
    try:
        if args.session_id:
            from mole_dag.store import q

            if store.row(q("session_get"), {"session_id": args.session_id}) is not None:
                raise CliError(
                    f"session {args.session_id} already exists; "
                    f"`mole show {args.session_id}` shows it"
                )
        bal = create_session(
            store,
            question,
            unit,
            total,
            corpus=str(launch.corpus),
            provider=launch.provider,
            session_id=args.session_id,
            actors=launch.actors,
            search=launch.search,
            data=launch.data,
        )
    finally:
        store.close()
    sid = bal.session_id
    _progress_to_stderr(args.quiet)
    if not args.quiet:
        print(
            f"session {sid}: {question!r}, budget {_fmt(total, str(unit))} "
            f"({_fmt(bal.escrow, str(unit))} in escrow for the report)",
            file=sys.stderr,
        )
    return _drive(
        sid,
        skills,
        first="round",
        quiet=args.quiet,
        print_report=not args.no_report_print,
        plan_ahead=True,
    )


def _drive(
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

    st = _open_store()
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
        st = _open_store()
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
    st = _open_store()
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
        st = _open_store()
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
    that stopped answering ends the drive by raising, each said in one line by `_drive`."""
    from mole_dag.budget import Ledger
    from mole_dag.context import Run
    from mole_dag.core import SessionStatus
    from mole_dag.driver import Interrupted, Step

    instance = _dagster_instance()
    from assets.steps import CLI_TAGS, drive_runs, provider_down, stop_after_failed_run
    from mole_dag.store import q
    from mole_dag.store.records import SessionRow

    st = _open_store()
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
            # Not a failure of the session: it goes on once there is room (_drive marks it).
            raise full
        down = None if res.success else provider_down(res)
        if down is not None:
            raise _ProviderStopped(down)  # nor this: it goes on once the provider answers

    got = drive_runs(
        instance,
        row,
        skills,
        open_store=_open_store,
        tags=CLI_TAGS,
        # CRITICAL, not ERROR: a failed or interrupted step is reported by _report_failure or
        # _interrupted in one line each; Dagster's console logger would add its stack trace.
        log_level="CRITICAL",
        checked=checked,
        first="report" if first == "report" else "round",
        announce=announce,
        around=lambda: contextlib.redirect_stderr(_QuietDagsterNoise(sys.stderr)),
    )
    if got.failed is not None:
        _report_failure(got.failed, sid)
        # Marked before the process exits, escrow returned (issue 29: it stayed `running`).
        st = _open_store()
        try:
            stop_after_failed_run(st, sid, got.failed)
        finally:
            st.close()
        return EXIT_FAILED
    if got.report is None:
        st = _open_store()
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

    st = _open_store()
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
    st = _open_store()
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


def cmd_materialize(args: argparse.Namespace) -> int:
    """`dagster asset materialize --partition <sid>` for one session, in the project's instance.
    Dagster's own CLI refuses a partition it does not know with its traceback, before any of our
    code runs; here the store is asked first, so an unknown session is one line and nothing runs.
    A session the store has but the instance does not (another DAGSTER_HOME, a fresh UI) gets its
    partition added."""
    from mole_dag.store import q
    from mole_dag.store.records import SessionRow

    store = _open_store(read_only=True)
    try:
        sess = store.one(SessionRow, q("session_get"), {"session_id": args.session})
    finally:
        store.close()
    if sess is None:
        raise CliError(f"no session {args.session!r} in {store.path}; `mole sessions` lists them")
    import dagster as dg

    from assets.definitions import defs
    from assets.steps import CLI_TAGS, ensure_partition, quiet_logs, run_step

    graph = defs.resolve_asset_graph()
    try:
        with warnings.catch_warnings():  # group selection is "beta" in Dagster: not ours to say
            warnings.simplefilter("ignore", dg.BetaWarning)
            keys = dg.AssetSelection.from_coercible(
                [part.strip() for part in args.select.split(",") if part.strip()]
            ).resolve(graph)
    except (dg.DagsterError, ValueError, KeyError) as exc:
        raise CliError(
            f"--select {args.select!r}: {' '.join(str(exc).split())}; e.g. --select group:research"
        ) from None
    if not keys:
        raise CliError(f"--select {args.select!r} matches no asset; e.g. --select group:research")
    instance = _dagster_instance()
    ensure_partition(instance, args.session)
    job = defs.resolve_implicit_global_asset_job_def().get_subset(asset_selection=set(keys))
    run_config: dict[str, Any] = quiet_logs("CRITICAL")
    if any(k.to_user_string() == "session" for k in keys):
        from assets.session_config import session_run_config

        run_config.update(session_run_config(sess))
    res = run_step(job, instance, args.session, run_config=run_config, tags=CLI_TAGS)
    if not res.success:
        _report_failure(res, args.session, "materialize")
        return EXIT_FAILED
    done = sorted(
        ev.asset_key.to_user_string()
        for ev in res.all_events
        if ev.event_type_value == "ASSET_MATERIALIZATION" and ev.asset_key
    )
    print(f"materialized {', '.join(done) or 'nothing'} (run {res.run_id})")
    store = _open_store(read_only=True)
    try:
        rep = store.row(q("report_latest"), {"session_id": args.session})
    finally:
        store.close()
    if "report" in done and rep:
        print(f"report {rep['path']}")
    print(f"session {args.session}")
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    from mole_dag.budget import Ledger
    from mole_dag.core import SessionStatus, Unit
    from mole_dag.driver import resume_point
    from mole_dag.launch import LaunchError, choose_skills
    from mole_dag.store import q, utcnow
    from mole_dag.store.records import SessionRow
    from mole_dag.store.recovery import owner_alive, owner_tag, recover_store

    try:
        _parallel_flag(args)
    except LaunchError as exc:
        raise CliError(str(exc)) from None
    _resumable_id(args.session)
    store = _open_store()
    try:
        # Recovery runs at a process's first writing open; run it again here, so a driver that
        # died after this process first opened the store (tests, a long-lived caller) is
        # interrupted before its session is judged resumable.
        recover_store(store)
        sess = store.one(SessionRow, q("session_get"), {"session_id": args.session})
        if sess is None:
            raise CliError(f"no session {args.session!r}; `mole sessions` lists them")
        status = sess.status
        if status not in (
            SessionStatus.INTERRUPTED,
            SessionStatus.CREATED,
            SessionStatus.RUNNING,
            SessionStatus.REPORTING,
        ):
            raise CliError(f"session {args.session} is {status}; there is nothing to resume")
        if status != SessionStatus.INTERRUPTED and owner_alive(sess.owner) is not False:
            raise CliError(
                f"session {args.session} is {status} and driven by process "
                f"{sess.owner or '(the Dagster sensor)'}; resume it once it stops"
            )
        try:
            skills = choose_skills(sess.provider, Unit(sess.unit))
        except LaunchError as exc:
            raise CliError(str(exc)) from None
        now = utcnow()

        def tx(cur: Any) -> None:
            back = SessionStatus.REPORTING if sess.escrow_released else SessionStatus.RUNNING
            cur.execute(
                q("session_set_status"),
                {"status": str(back), "now": now, "session_id": args.session},
            )
            cur.execute(q("session_driver_set"), {"driver": "cli", "session_id": args.session})
            cur.execute(q("session_clear_stop_reason"), {"now": now, "session_id": args.session})
            # Ours from this transaction on: the next store open must not see the dead owner
            # and mark it interrupted again.
            cur.execute(
                q("session_set_owner"),
                {"owner": owner_tag(), "now": now, "session_id": args.session},
            )
            cur.execute(q("leases_requeue_session"), {"session_id": args.session})

        store.transact(tx)
        from mole_dag.context import Run

        first = resume_point(Run(store, Ledger(store), skills, args.session))
        bal = Ledger(store).balance(args.session)
    finally:
        store.close()
    _progress_to_stderr(args.quiet)
    if not args.quiet:
        print(
            f"resuming session {args.session}: spent {_fmt(bal.charged, str(bal.unit))} of "
            f"{_fmt(bal.total, str(bal.unit))}; next: {first}",
            file=sys.stderr,
        )
    return _drive(
        args.session, skills, first=first, quiet=args.quiet, print_report=not args.no_report_print
    )


def cmd_rerun(args: argparse.Namespace) -> int:
    """A new session of a finished session's question, linked to it (issue 32). Everything is
    checked on a read-only store before the session is created: bad input writes nothing."""
    from mole_dag.launch import LaunchError, check_budget, choose_skills
    from mole_dag.session import RerunRefused, check_rerun, create_rerun
    from mole_dag.store import StoreError, check_target

    try:
        check_target(default_store_path())
        unit, total = check_budget(args.usd, args.tokens)
        _parallel_flag(args)
    except (LaunchError, StoreError) as exc:
        raise CliError(str(exc)) from None
    store = _open_store(read_only=True)
    try:
        try:
            prev = check_rerun(store, args.session)
        except RerunRefused as exc:
            raise CliError(str(exc)) from None
    finally:
        store.close()
    try:
        skills = choose_skills(prev.provider, unit)
        if "local" in prev.actors.split(","):
            from mole_dag.actors.local import CorpusError, LocalCorpus

            try:
                LocalCorpus.open(prev.corpus or "")
            except CorpusError as exc:
                raise LaunchError(str(exc)) from None
    except LaunchError as exc:
        raise CliError(str(exc)) from None
    dagster_home()
    store = _open_store()
    try:
        try:
            # Checked again with the writing store: another process may have started since.
            prev = check_rerun(store, args.session)
        except RerunRefused as exc:
            raise CliError(str(exc)) from None
        bal = create_rerun(store, prev, unit, total)
    finally:
        store.close()
    sid = bal.session_id
    _progress_to_stderr(args.quiet)
    if not args.quiet:
        print(
            f"session {sid}: rerun of {prev.id} ({prev.question!r}), budget "
            f"{_fmt(total, str(unit))} ({_fmt(bal.escrow, str(unit))} in escrow for the report)",
            file=sys.stderr,
        )
    return _drive(
        sid,
        skills,
        first="round",
        quiet=args.quiet,
        print_report=not args.no_report_print,
        plan_ahead=True,
    )


def cmd_diff(args: argparse.Namespace) -> int:
    """What changed between two sessions of one question; reads only."""
    import json

    from mole_dag.output.changes import DiffRefused, as_json, diff_sessions, render_section

    store = _open_store(read_only=True)
    try:
        try:
            diff = diff_sessions(store, args.old, args.new)
        except DiffRefused as exc:
            raise CliError(str(exc)) from None
    finally:
        store.close()
    if args.json:
        print(json.dumps(as_json(diff), ensure_ascii=False, indent=2))
    else:
        print(escape_controls("\n".join(render_section(diff)).rstrip()))
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    """Register, list or remove watches (issue 32). A registration is checked on a read-only
    store before anything is written: bad input is one line and writes nothing."""
    from mole_dag.launch import LaunchError, check_budget
    from mole_dag.redaction import redact
    from mole_dag.watch import WatchRefused, add_watch, cron_of, list_watches, remove_watch

    modes = [bool(args.session), bool(args.list), args.remove is not None]
    if sum(modes) != 1:
        raise CliError("pass a SESSION to watch, --list, or --remove WATCH (one of them)")
    try:
        if args.list:
            store = _open_store(read_only=True)
            try:
                rows = list_watches(store)
            finally:
                store.close()
            if not rows:
                print("no watched questions")
            for s in rows:
                w = s.watch
                budget = _fmt(w.budget, str(w.unit))
                notify = f"  notify: {redact(w.notify)}" if w.notify else ""
                print(
                    escape_controls(
                        f"{w.id}  every {w.every} ({w.cron})  {budget} per run  "
                        f"{s.runs} runs  {w.question!r}{notify}\n    last: {s.last_change}"
                    )
                )
            return 0
        if args.remove is not None:
            store = _open_store()
            try:
                gone = remove_watch(store, args.remove)
            finally:
                store.close()
            print(f"watch {gone.id} removed ({gone.question!r})")
            return 0
        if not args.every:
            raise CliError("--every is required: daily, weekly or a cron string")
        unit, total = check_budget(args.usd, args.tokens)
        cron_of(args.every)
        from mole_dag.session import check_rerun

        store = _open_store(read_only=True)
        try:
            check_rerun(store, args.session)
        finally:
            store.close()
        store = _open_store()
        try:
            watch = add_watch(store, args.session, args.every, unit, total, args.notify)
        finally:
            store.close()
    except (LaunchError, WatchRefused, ValueError) as exc:
        raise CliError(str(exc)) from None
    print(
        f"watch {watch.id}: {watch.question!r} every {watch.every} ({watch.cron} UTC), "
        f"{_fmt(total, str(unit))} per run; runs from the Dagster schedule watched_questions "
        "while the daemon runs (`dagster dev`)"
    )
    return 0


def _parallel_flag(args: argparse.Namespace) -> None:
    """--parallel, checked, and handed to the stages (the Dagster runs read the setting from
    the environment, as they read --cassette's)."""
    from mole_dag.launch import check_parallel
    from mole_dag.llm.concurrency import ENV

    got = check_parallel(args.parallel)  # without the flag: the setting, checked
    if args.parallel is not None:
        os.environ[ENV] = str(got)


def _resumable_id(sid: str) -> None:
    """Refuse an id the store does not hold before opening it for writing: a writing open
    migrates, recovers and checkpoints, and a typo must leave the store as it was (or not
    create one). A store older than this mole's schema cannot be read without migrating it,
    so that one is left to the writing open."""
    from mole_dag.store import Store, StoreError, StoreOutdated, q

    try:
        store = Store(
            default_store_path(),
            on_wait=lambda m: print(f"mole: {m}", file=sys.stderr),
            read_only=True,
        )
    except StoreOutdated:
        return
    except StoreError as exc:
        raise CliError(str(exc)) from None
    try:
        if store.row(q("session_get"), {"session_id": sid}) is None:
            raise CliError(f"no session {sid!r}; `mole sessions` lists them")
    finally:
        store.close()


def _cassette_and_record(args: argparse.Namespace, provider: str) -> None:
    """--cassette and --record, checked once the provider is named and before its skills are
    built (the Dagster runs build their own skills from the environment set here)."""
    from mole_dag.launch import LaunchError
    from mole_dag.llm.registry import MODEL_PROVIDERS

    if args.cassette:
        if provider != "cassette":
            raise LaunchError("--cassette is the recording for --provider cassette")
        os.environ["MOLE_CASSETTE"] = str(Path(args.cassette).expanduser().resolve())
    if args.record:
        path = Path(args.record).expanduser().resolve()
        if provider not in MODEL_PROVIDERS:
            raise LaunchError(
                f"--record records a model provider's calls; --provider {provider} "
                f"makes none (use one of {', '.join(MODEL_PROVIDERS)})"
            )
        if path.exists():
            raise LaunchError(f"--record {path}: the file exists; record to a new file")
        os.environ["MOLE_RECORD"] = str(path)


def cmd_crossings(args: argparse.Namespace) -> int:
    from mole_dag.local_data.crossings import format_listing, listing
    from mole_dag.local_data.findings import reverify
    from mole_dag.sanitize import strip_controls
    from mole_dag.store import q
    from mole_dag.store.records import SessionRow

    store = _open_store(read_only=True)
    try:
        sess = store.one(SessionRow, q("session_get"), {"session_id": args.session})
        if sess is None:
            raise CliError(f"no session {args.session!r}; `mole sessions` lists them")
        got = listing(store, args.session)
        checks = [(c.id, *reverify(store, c.id)) for c in got.crossings] if args.verify else []
    finally:
        store.close()
    if not sess.data:
        print(f"session {args.session} has no data attached: nothing has crossed")
        return 0
    # Labels come from the user's file: strip terminal and bidi controls before printing.
    print(strip_controls(format_listing(args.session, got)))
    if checks:
        print("")
        for cid, ok, why in checks:
            print(f"verify {cid}: {'ok' if ok else 'FAILED'}: {why}")
        return 0 if all(ok for _, ok, _ in checks) else EXIT_FAILED
    return 0


def _report_failure(result: Any, sid: str, command: str = "research") -> None:
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

    store = _open_store()
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
        spend = ", ".join(f"{r['role']} {_fmt(int(r['spent']), str(bal.unit))}" for r in by_role)
        over = f", overrun {_fmt(bal.overrun, str(bal.unit))} included" if bal.overrun else ""
        print(
            f"spent {_fmt(bal.charged, str(bal.unit))} of {_fmt(bal.total, str(bal.unit))} "
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


def cmd_sessions(args: argparse.Namespace) -> int:
    from mole_dag.store import q

    store = _open_store(read_only=True)
    try:
        rows = store.rows(q("sessions_list"))
    finally:
        store.close()
    if not rows:
        print('no sessions yet; start one with `mole research "question" --usd 0.50`')
        return 0
    for r in rows:
        # spent + overrun: what the session cost, against its total. The question as stored,
        # its controls shown as escapes (\\x1b, \\u202e), not obeyed.
        cost = int(r["spent"]) + int(r["overrun"])
        print(
            escape_controls(
                f"{r['id']}  {r['status']:<11}  {_fmt(cost, r['unit']):>16} of "
                f"{_fmt(int(r['total']), r['unit']):<16}  {int(r['claims']):>4} claims  "
                f"{'[maintenance] ' if r['kind'] == 'maintenance' else ''}{r['question'][:60]}"
            )
        )
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from mole_dag.budget import Ledger, LedgerError
    from mole_dag.output.unread import unread_files
    from mole_dag.store import q
    from mole_dag.store.records import SessionRow

    store = _open_store(read_only=True)
    try:
        ledger = Ledger(store)
        try:
            bal = ledger.balance(args.session)
        except LedgerError:
            raise CliError(f"no session {args.session!r}; `mole sessions` lists them") from None
        sess = store.one(SessionRow, q("session_get"), {"session_id": args.session})
        assert sess is not None  # balance() above found it
        counts = store.row(q("session_counts"), {"session_id": args.session}) or {}
        by_role = ledger.spend_by_role(args.session)
        check = ledger.verify(args.session)
        rep = store.row(q("report_latest"), {"session_id": args.session})
        stages = ledger.spend_by_stage(args.session)
        dead = store.named("digest_dead_ends", {"session_id": args.session})
        unread = unread_files(store, args.session, sess.corpus)
        by_model = store.named("spend_by_model", {"session_id": args.session})
        discarded = store.named("discarded_by_cause", {"session_id": args.session})
        throttled = store.row(q("session_throttling"), {"session_id": args.session})
    finally:
        store.close()
    unit = str(bal.unit)
    print(f"session {args.session}")
    # Whitespace collapsed; controls shown as escapes rather than obeyed or silently dropped.
    print(f"question  {escape_controls(' '.join(sess.question.split()))}")
    print(f"status    {bal.status} after {sess.rounds} round(s), provider {sess.provider}")
    # spent includes the overrun: it is what the session cost, held against the total.
    print(
        f"budget    {_fmt(bal.total, unit)}: spent {_fmt(bal.charged, unit)}, held "
        f"{_fmt(bal.held, unit)}, escrow {_fmt(bal.escrow, unit)}"
        + (
            f" (OVERRUN {_fmt(bal.overrun, unit)} included: a provider used more than its "
            "calls were allowed)"
            if bal.overrun
            else ""
        )
    )
    if sess.stop_reason:
        print(f"stopped   {escape_controls(' '.join(sess.stop_reason.split()))}")
    for r in by_role:
        print(f"  {r['role']:<9} {_fmt(int(r['spent']), unit):>16} over {r['calls']} calls")
    for r in by_model:
        print(
            f"  {r['model']:<24} {_fmt(int(r['spent']), unit):>16} over {r['calls']} calls: "
            f"{r['input_tokens']} in, {r['output_tokens']} out, {r['cache_read_tokens']} cache "
            f"read, {r['cache_write_tokens']} cache write"
            + (f", OVERRUN {_fmt(int(r['overrun']), unit)}" if r["overrun"] else "")
        )
    print(f"ledger    {check.explain()}")
    print("counts    " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print(
        "by stage  "
        + "; ".join(
            f"{r['stage']}/{r['role']} {_fmt(int(r['spent']), unit)} x{r['calls']}" for r in stages
        )
    )
    if throttled:
        print(f"throttled {_throttling(throttled)}")
    if dead:
        print("dead ends " + ", ".join(f"{r['cause']} {r['n']}" for r in dead))
    for u in unread:
        # A file that could not be read (issues 19, 33): which (by its path in the corpus
        # folder), and what was wrong with it, each said once.
        print(f"  {u.cause:<18} {escape_controls(u.shown)}: {escape_controls(u.reason)}")
    internal = sum(int(r["n"]) for r in dead if r["cause"] == "internal_error")
    if internal:
        # Apart from the causes above: these are ours to fix, not the outside world failing.
        print(
            f"internal errors {internal} (bugs in mole, not fetch failures; the tracebacks "
            "are in the run's log)"
        )
    causes = {
        "quote_not_found": "quote not found",
        "quote_too_short": "quote too short",
        "empty": "no quote",
        "not_a_claim": "not a claim (heading, menu, caption)",
    }
    print(
        "discarded "
        + (", ".join(f"{causes.get(r['cause'], r['cause'])} {r['n']}" for r in discarded) or "none")
        + " (by the quote check)"
    )
    if rep:
        print(f"report    {rep['path'] or '(in the store only)'}")
        # Whether the findings answer the question: decided when the report was written and
        # stored with it (NULL for a report written before the decision was recorded).
        decided = rep.get("answered")
        basis = escape_controls(" ".join(str(rep.get("answer_basis") or "").split()))
        if decided is None:
            print("answer    not recorded (the report predates the answered-or-not decision)")
        else:
            print(f"answer    {'answered' if decided else 'NOT ANSWERED'}: {basis}")
        if args.html is not None:
            print(f"html      {_write_html(rep, args.html, args.session)}")
        print()
        print(rep["markdown"])
    else:
        print("report    not written yet")
    return 0


def _throttling(row: dict[str, Any]) -> str:
    """One line: what the provider's refusals did to a session's concurrent calls."""
    said = [
        f"{int(row[k])} x HTTP {status} ({what})"
        for k, status, what in (
            ("rate_limited", 429, "rate limited"),
            ("overloaded", 529, "overloaded"),
        )
        if row[k]
    ]
    return (
        f"{', '.join(said)} in {row['labels']} from {row['first_at']:%Y-%m-%d %H:%M:%S} UTC: "
        f"concurrency lowered to {row['lowest']} of {row['parallel']}, below it for "
        f"{float(row['throttled_s']):.1f}s in all"
    )


def _write_html(rep: dict[str, Any], target: str, sid: str) -> Path:
    from mole_dag.output.html import render_html
    from mole_dag.paths import reports_dir

    path = (
        Path(target).expanduser()
        if target
        else (
            Path(rep["path"]).with_suffix(".html") if rep["path"] else reports_dir() / f"{sid}.html"
        )
    )
    try:
        # Whole or not at all; a full disk is DiskFull (one line from main), not caught here.
        write_text_atomic(path, render_html(rep["markdown"], title=f"mole report {sid}"))
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror}") from None
    return path


def cmd_trace(args: argparse.Namespace) -> int:
    from mole_dag.output.trace import render_trace
    from mole_dag.store import q

    store = _open_store(read_only=True)
    try:
        if store.row(q("session_get"), {"session_id": args.session}) is None:
            raise CliError(f"no session {args.session!r}; `mole sessions` lists them")
        print(escape_controls(render_trace(store, args.session)), end="")
    finally:
        store.close()
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from mole_dag.evals.scorecard import LabelsError, as_json, as_text, scorecard
    from mole_dag.store import q

    pairs = Path(args.pairs).expanduser() if args.pairs else None
    store = _open_store(read_only=True)
    try:
        if store.row(q("session_get"), {"session_id": args.session}) is None:
            raise CliError(f"no session {args.session!r}; `mole sessions` lists them")
        try:
            metrics = scorecard(store, args.session, pairs)
        except LabelsError as exc:
            raise CliError(str(exc)) from None
    finally:
        store.close()
    print(
        as_json(metrics, args.session) if args.json else as_text(metrics, args.session),
        end="" if not args.json else "\n",
    )
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    """What a USD budget can be spent on: the shipped price table with the config's `pricing`
    laid over it, and each provider's tier models (the config's, else the defaults)."""
    from decimal import Decimal
    from fractions import Fraction

    from mole_dag.config import ConfigError, load_config, section
    from mole_dag.llm.pricing import PriceTable, PricingError, checked
    from mole_dag.llm.registry import DEFAULT_TIERS

    def usd(f: Fraction) -> str:  # exact: the table's prices are finite decimals
        d = (Decimal(f.numerator) / Decimal(f.denominator)).normalize()
        return f"{d:.2f}" if d == d.quantize(Decimal("0.01")) else f"{d:f}"

    try:
        cfg = load_config()
        table = PriceTable.load(cfg.get("pricing"))
    except (ConfigError, PricingError) as exc:
        raise CliError(str(exc)) from None
    print(
        f"priced models, USD per million tokens (shipped table checked {checked()}; "
        "'config' = from your config file)"
    )
    width = max(len(m) for m in table.prices)
    print(
        f"  {'model':<{width}}  {'input':>7}  {'output':>7}  {'cache rd':>8}  "
        f"{'cache wr':>8}  as of"
    )
    for model in sorted(table.prices):
        p = table.prices[model]
        print(
            f"  {model:<{width}}  {usd(p.input):>7}  {usd(p.output):>7}  "
            f"{usd(p.cache_read):>8}  {usd(p.cache_write):>8}  {p.as_of}"
        )
        if p.long_prompt is not None:
            above, lp = p.long_prompt
            print(
                f"  {'':<{width}}  {usd(lp.input):>7}  {usd(lp.output):>7}  "
                f"{usd(lp.cache_read):>8}  {usd(lp.cache_write):>8}  "
                f"(prompts over {above:,} tokens)"
            )
    print('default tiers (set others under "<provider>": {"models": {...}} in the config)')
    for provider, tiers in DEFAULT_TIERS.items():
        mine = section(dict(cfg), provider).get("models") or {}
        for tier, model in tiers.items():
            used = mine.get(str(tier), model) if isinstance(mine, dict) else model
            note = "" if used == model else f"  (config; default {model})"
            priced = "" if table.get(used) is not None else "  UNPRICED: --tokens only"
            print(f"  {provider:<9}  {tier!s:<6}  {used}{note}{priced}")
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    """Each statement opens the store read-only and lets it go (mole_dag/store/console.py says
    why this and not a database shell). A failed statement is one line; at the prompt the next
    one is read, otherwise the exit status is 2."""
    from mole_dag.store.console import QueryError, as_csv, as_table, run, statements, where

    target = default_store_path()

    def one(sql: str) -> bool:
        try:
            got = run(target, sql, on_wait=lambda m: print(f"mole: {m}", file=sys.stderr))
        except QueryError as exc:
            print(f"mole sql: {escape_controls(str(exc))}", file=sys.stderr)
            return False
        print(escape_controls(as_csv(got) if args.csv else as_table(got)))
        return True

    if args.query is not None:
        return 0 if one(args.query) else EXIT_USAGE
    if not sys.stdin.isatty():  # a script: `mole sql < queries.sql`
        ok = True
        for stmt in statements(iter(sys.stdin)):
            ok = one(stmt) and ok
        return 0 if ok else EXIT_USAGE
    print(
        f"mole sql on {where(target)}, read-only; end a statement with ';', Ctrl-D to leave",
        file=sys.stderr,
    )

    def prompt() -> Any:
        while True:
            try:
                yield input("mole> ")
            except EOFError:
                print(file=sys.stderr)
                return

    for stmt in statements(prompt()):
        one(stmt)
    return 0


def run(argv: Sequence[str] | None = None) -> NoReturn:
    """The `mole` command: main(), then the exit."""
    exit_now(main(argv))


def exit_now(code: int) -> NoReturn:
    """End the process with `code` without tearing the interpreter down. After a session, the
    teardown frees some 400,000 objects one by one (Dagster's, the model SDK's, the stages'):
    1-1.5 s of a user's wait after the report is written (issue 20). What must happen at exit
    still does, in the interpreter's order: non-daemon threads finish, then the atexit handlers
    run (the store's release and checkpoint, logging's flush, temporary folders), then the
    standard streams are flushed."""
    import atexit
    import threading

    # The two private calls are the ones the interpreter's own finalisation makes first.
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        # The reader may have left, or the stream been closed.
        with contextlib.suppress(BrokenPipeError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
