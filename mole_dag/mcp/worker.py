"""The detached process behind an MCP `research` call:

    python -m mole_dag.mcp.worker EXIT_FILE -- <mole research arguments>
    python -m mole_dag.mcp.worker EXIT_FILE -- resume SESSION

It is `mole research` itself (the same validation, store, Dagster instance and report), plus one
thing the CLI does not do: it writes its exit status to EXIT_FILE when it ends, so whichever
mole-mcp process is answering `session_status` later (not necessarily the one that started it)
can tell "still running" from "ended with an error"."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path


def _write_exit(path: Path, code: int) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"{code}\n", "utf-8")
    os.replace(tmp, path)  # atomic: a reader sees no file or the whole code


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2 or args[1] != "--":
        print(
            "usage: python -m mole_dag.mcp.worker EXIT_FILE -- <mole research arguments>",
            file=sys.stderr,
        )
        return 2
    exit_file = Path(args[0])
    code = 1
    try:
        from mole_dag.cli import main as mole

        # Research arguments start with an option (research_argv puts the question after
        # `--`), so a leading "resume" is the resume command, never a question.
        rest = args[2:]
        code = mole(rest if rest[:1] == ["resume"] else ["research", *rest])
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - recorded, then the process ends with status 1
        traceback.print_exc()
        code = 1
    finally:
        sys.stderr.flush()
        _write_exit(exit_file, code)
    return code


if __name__ == "__main__":
    sys.exit(main())
