"""Research started over MCP runs detached from the server that started it.

A stdio MCP server lives as long as the client's connection: when a coding agent's session
closes, its client ends the server and (the official SDK does this) SIGTERMs the server's whole
process group. A research session must outlive that, so each one runs as its own process in a
new session (setsid: its own process group, no controlling terminal), with stdin closed and its
output in a log file rather than a pipe to the server (a pipe would break when the server ends).
Whatever server answers later reads the session's state from the store, and the worker's fate
from three files under <mole home>/mcp/: ID.json (pid and command), ID.log (its stderr and
stdout) and ID.exit (its exit status, written by the worker itself as it ends)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from mole_dag.paths import mole_home
from mole_dag.store import utcnow

# How much of a failed worker's log an answer carries: enough for the error lines.
LOG_TAIL_CHARS = 2000


def runs_dir(create: bool = False) -> Path:
    path = mole_home() / "mcp"
    if create:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


@dataclass(frozen=True)
class WorkerState:
    session_id: str
    pid: int
    running: bool
    exit_code: int | None  # None while running, or when it ended unobserved
    log: Path

    def log_tail(self, chars: int = LOG_TAIL_CHARS) -> str:
        try:
            with self.log.open("rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - chars))
                return fh.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""


def _child_env() -> dict[str, str]:
    """The server's environment with every mole location made absolute, so the worker uses the
    same store, home and Dagster instance whatever directory it runs in."""
    env = dict(os.environ)
    env["MOLE_HOME"] = str(mole_home())
    for var in ("MOLE_DB", "DAGSTER_HOME", "MOLE_CONFIG", "MOLE_CASSETTE"):
        if env.get(var):
            env[var] = str(Path(env[var]).expanduser().resolve())
    return env


def _alive(pid: int, session_id: str) -> bool:
    """Whether pid is still our worker: it exists, is not a zombie, and (where /proc can say)
    its command line names the session, so a recycled pid is not mistaken for it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path(f"/proc/{pid}")
    if not proc.exists():
        return True  # not Linux: the signal probe is all there is
    try:
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        cmdline = (proc / "cmdline").read_bytes().split(b"\0")
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X") and session_id.encode() in cmdline


class Workers:
    """The detached research processes, started here or by an earlier server."""

    def __init__(self) -> None:
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._lock = threading.Lock()

    def start(self, session_id: str, research_args: list[str]) -> WorkerState:
        """Run `mole research <research_args>` detached. research_args must carry
        --session-id session_id (the CLI creates the session under it)."""
        folder = runs_dir(create=True)
        log = folder / f"{session_id}.log"
        exit_file = folder / f"{session_id}.exit"
        # A resumed session's earlier worker left its exit status: it is not this one's.
        exit_file.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "mole_dag.mcp.worker", str(exit_file), "--", *research_args]
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=fd,
                stderr=fd,
                env=_child_env(),
                start_new_session=True,
                close_fds=True,
            )
        finally:
            os.close(fd)
        meta = {
            "pid": proc.pid,
            "started_at": utcnow().isoformat(timespec="seconds"),
            "session": session_id,
        }
        (folder / f"{session_id}.json").write_text(json.dumps(meta), "utf-8")
        with self._lock:
            self._procs[session_id] = proc
        # Reap it when it ends, so it does not linger as a zombie while this server runs.
        threading.Thread(target=proc.wait, name=f"reap-{session_id}", daemon=True).start()
        return WorkerState(session_id, proc.pid, True, None, log)

    def state(self, session_id: str) -> WorkerState | None:
        """The worker of a session started over MCP, or None for one started otherwise.
        session_id must already be checked (it names files)."""
        folder = runs_dir()
        meta_file = folder / f"{session_id}.json"
        if not meta_file.exists():
            return None
        try:
            pid = int(json.loads(meta_file.read_text("utf-8"))["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        log = folder / f"{session_id}.log"
        code = _read_exit(folder / f"{session_id}.exit")
        with self._lock:
            proc = self._procs.get(session_id)
        if proc is not None:
            polled = proc.poll()
            if polled is not None:
                return WorkerState(
                    session_id, pid, False, code if code is not None else polled, log
                )
            return WorkerState(session_id, pid, True, None, log)
        if code is not None:
            return WorkerState(session_id, pid, False, code, log)
        return WorkerState(session_id, pid, _alive(pid, session_id), None, log)


def _read_exit(path: Path) -> int | None:
    try:
        return int(path.read_text("utf-8").strip())
    except (OSError, ValueError):
        return None
