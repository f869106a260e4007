"""How this process was invoked, so a message that tells the user what to run next prints a
command they can paste: `.venv/bin/mole resume <id>` when that is what they typed (issue 33:
"continue with mole resume <id>" where only .venv/bin/mole exists), with the `--db` they gave.
Set once by the CLI; anything else (tests, the MCP server, Dagster) gets plain `mole`."""

from __future__ import annotations

import shlex
from pathlib import PurePath

_PREFIX: list[str] = ["mole"]


def remember(argv0: str, db: str | None) -> None:
    """The program as typed (when it is mole's own script, not `python -m` or a test runner)
    and the store named on the command line."""
    prog = argv0 if PurePath(argv0).name in ("mole", "mole.exe") else "mole"
    _PREFIX[:] = [prog, *(["--db", db] if db else [])]


def command(*words: str) -> str:
    """The command line that runs mole with `words`, quoted for a POSIX shell."""
    return shlex.join([*_PREFIX, *words])
