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
its original budget.

The package, a file per job: parser.py (the arguments), entry.py (main: run a command, one line
for what it raises), research.py (the commands that start or continue research), drive.py (a
session driven from the terminal through assets/steps.py), read.py (the commands that only read
the store), common.py (what they all share)."""

from mole_dag.cli.common import EXIT_FAILED, EXIT_UNAVAILABLE, EXIT_USAGE, CliError
from mole_dag.cli.entry import exit_now, main, run
from mole_dag.cli.parser import build_parser

__all__ = [
    "EXIT_FAILED",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "CliError",
    "build_parser",
    "exit_now",
    "main",
    "run",
]
