"""The commands that start or continue research: `research`, `resume`, `rerun`, `materialize` (a
session's assets as one Dagster run) and `watch` (re-runs on a schedule). Each checks its input
before anything is written: bad input is one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path
from typing import Any

from mole_dag.cli.common import EXIT_FAILED, CliError, fmt, open_store, progress_to_stderr
from mole_dag.cli.drive import dagster_instance, drive_to_report, report_failure
from mole_dag.paths import dagster_home, default_store_path
from mole_dag.sanitize import escape_controls


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
        open_store().close()


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

    store = open_store()
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
    return _drive_new(args, skills, bal.session_id, repr(question), total, str(unit), bal.escrow)


def _drive_new(
    args: argparse.Namespace, skills: Any, sid: str, what: str, total: int, unit: str, escrow: int
) -> int:
    """A session just created (by `research` or `rerun`), announced in one line and driven to
    its report."""
    progress_to_stderr(args.quiet)
    if not args.quiet:
        print(
            f"session {sid}: {what}, budget {fmt(total, unit)} "
            f"({fmt(escrow, unit)} in escrow for the report)",
            file=sys.stderr,
        )
    return drive_to_report(
        sid,
        skills,
        first="round",
        quiet=args.quiet,
        print_report=not args.no_report_print,
        plan_ahead=True,
    )


def cmd_materialize(args: argparse.Namespace) -> int:
    """`dagster asset materialize --partition <sid>` for one session, in the project's instance.
    Dagster's own CLI refuses a partition it does not know with its traceback, before any of our
    code runs; here the store is asked first, so an unknown session is one line and nothing runs.
    A session the store has but the instance does not (another DAGSTER_HOME, a fresh UI) gets its
    partition added."""
    from mole_dag.store import q
    from mole_dag.store.records import SessionRow

    store = open_store(read_only=True)
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
    instance = dagster_instance()
    ensure_partition(instance, args.session)
    job = defs.resolve_implicit_global_asset_job_def().get_subset(asset_selection=set(keys))
    run_config: dict[str, Any] = quiet_logs("CRITICAL")
    if any(k.to_user_string() == "session" for k in keys):
        from assets.session_config import session_run_config

        run_config.update(session_run_config(sess))
    res = run_step(job, instance, args.session, run_config=run_config, tags=CLI_TAGS)
    if not res.success:
        report_failure(res, args.session, "materialize")
        return EXIT_FAILED
    done = sorted(
        ev.asset_key.to_user_string()
        for ev in res.all_events
        if ev.event_type_value == "ASSET_MATERIALIZATION" and ev.asset_key
    )
    print(f"materialized {', '.join(done) or 'nothing'} (run {res.run_id})")
    store = open_store(read_only=True)
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
    store = open_store()
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
    progress_to_stderr(args.quiet)
    if not args.quiet:
        print(
            f"resuming session {args.session}: spent {fmt(bal.charged, str(bal.unit))} of "
            f"{fmt(bal.total, str(bal.unit))}; next: {first}",
            file=sys.stderr,
        )
    return drive_to_report(
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
    store = open_store(read_only=True)
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
    store = open_store()
    try:
        try:
            # Checked again with the writing store: another process may have started since.
            prev = check_rerun(store, args.session)
        except RerunRefused as exc:
            raise CliError(str(exc)) from None
        bal = create_rerun(store, prev, unit, total)
    finally:
        store.close()
    what = f"rerun of {prev.id} ({prev.question!r})"
    return _drive_new(args, skills, bal.session_id, what, total, str(unit), bal.escrow)


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
            store = open_store(read_only=True)
            try:
                rows = list_watches(store)
            finally:
                store.close()
            if not rows:
                print("no watched questions")
            for s in rows:
                w = s.watch
                budget = fmt(w.budget, str(w.unit))
                notify = f"  notify: {redact(w.notify)}" if w.notify else ""
                print(
                    escape_controls(
                        f"{w.id}  every {w.every} ({w.cron})  {budget} per run  "
                        f"{s.runs} runs  {w.question!r}{notify}\n    last: {s.last_change}"
                    )
                )
            return 0
        if args.remove is not None:
            store = open_store()
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

        store = open_store(read_only=True)
        try:
            check_rerun(store, args.session)
        finally:
            store.close()
        store = open_store()
        try:
            watch = add_watch(store, args.session, args.every, unit, total, args.notify)
        finally:
            store.close()
    except (LaunchError, WatchRefused, ValueError) as exc:
        raise CliError(str(exc)) from None
    print(
        f"watch {watch.id}: {watch.question!r} every {watch.every} ({watch.cron} UTC), "
        f"{fmt(total, str(unit))} per run; runs from the Dagster schedule watched_questions "
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
    from mole_dag.store import StoreError, StoreOutdated, open_store, q

    try:
        store = open_store(
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
