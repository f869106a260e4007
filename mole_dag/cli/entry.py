"""The `mole` entry point: parse the arguments, run the command, and turn what it raises into one
line on stderr and an exit status; then end the process without the interpreter's teardown."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from mole_dag import invoked
from mole_dag.cli.common import EXIT_FAILED, EXIT_USAGE, CliError
from mole_dag.cli.parser import build_parser
from mole_dag.cli.read import (
    cmd_crossings,
    cmd_diff,
    cmd_eval,
    cmd_models,
    cmd_sessions,
    cmd_show,
    cmd_sql,
    cmd_trace,
)
from mole_dag.cli.research import cmd_materialize, cmd_rerun, cmd_research, cmd_resume, cmd_watch
from mole_dag.diskfull import DiskFull, disk_full
from mole_dag.redaction import redact
from mole_dag.sanitize import escape_controls


def main(argv: Sequence[str] | None = None) -> int:
    from mole_dag.redaction import install_log_redaction
    from mole_dag.store import StoreError

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
