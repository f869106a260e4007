"""A private PostgreSQL server for the tests, and for CI (.ci/postgres calls this file).

Standard library only, so CI can start the server with the system Python before the project's
virtual environment exists, and the readiness probe is the server's own `pg_isready`.

The server listens on 127.0.0.1 only (and a Unix socket inside its own folder), trusts local
connections (it exists for the length of a test session and holds nothing but test data) and
runs with durability off (fsync, synchronous_commit, full_page_writes): a crash loses only data
that is thrown away anyway, and initdb plus start take about a second instead of several.

initdb and postgres refuse to run as root. As root (CI, these machines) the server runs as the
`postgres` OS user, which the Debian package creates; its folder is made under the system temp
folder (not pytest's, which is private to root) and handed to that user.

As a script:
    python tests/pg_server.py bindir           print the binaries' folder, exit 1 if none
    python tests/pg_server.py start STATE_DIR  start a server for CI, print its superuser DSN
    python tests/pg_server.py stop STATE_DIR   stop it and remove its files
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# initdb, pg_ctl, postgres, pg_isready: everything this file runs.
NEEDED = ("initdb", "postgres", "pg_isready")
RUN_AS = "postgres"  # the OS user the Debian/RHEL packages create
START_TIMEOUT_S = 60.0
# Settings for a throwaway server. max_connections: Dagster's storage, the store's pool and
# several test processes connect at once (the default 100 is close once two workers run
# sessions side by side).
SERVER_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "300",
    "shared_buffers": "64MB",
    # Tests create and drop a database each; no background work to wait for.
    "autovacuum": "off",
    "log_min_messages": "warning",
}


class PgUnavailable(Exception):
    """No server can be had here: the message says why (no binaries, no user to run as, ...)."""


def find_bindir() -> Path | None:
    """The folder with initdb, postgres and pg_isready: $MOLE_PG_BIN, else pg_config --bindir,
    else the newest /usr/lib/postgresql/*/bin (Debian keeps them off PATH), else PATH."""
    candidates: list[Path] = []
    if os.environ.get("MOLE_PG_BIN"):
        candidates.append(Path(os.environ["MOLE_PG_BIN"]))
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True
            )
            candidates.append(Path(out.stdout.strip()))

    def version_key(p: str) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", p))

    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version_key, reverse=True):
        candidates.append(Path(d))
    for d in sorted(glob.glob("/usr/pgsql-*/bin"), key=version_key, reverse=True):  # RHEL
        candidates.append(Path(d))
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(Path(initdb).resolve().parent)
    for d in candidates:
        if all((d / name).is_file() and os.access(d / name, os.X_OK) for name in NEEDED):
            return d
    return None


def server_major(bindir: Path) -> int:
    """The major version of the binaries ("postgres (PostgreSQL) 15.18" -> 15)."""
    out = subprocess.run(
        [str(bindir / "postgres"), "--version"], capture_output=True, text=True, check=True
    ).stdout
    m = re.search(r"(\d+)(?:\.\d+)?", out)
    if not m:
        raise PgUnavailable(f"cannot read the version from {out!r}")
    return int(m.group(1))


def free_port() -> int:
    # The port can be taken between this and the server's bind: start() retries on that.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    """A running server this process started (or, for CI's stop, one found in its folder)."""

    root: Path  # owns everything: data/, the log, the socket
    port: int
    pid: int
    user: str  # the database superuser's name
    bindir: Path
    _proc: subprocess.Popen[bytes] | None = None

    @property
    def datadir(self) -> Path:
        return self.root / "data"

    @property
    def logfile(self) -> Path:
        return self.root / "server.log"

    @property
    def dsn(self) -> str:
        """The superuser DSN for the `postgres` database (no password: trust on loopback)."""
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/postgres"

    def running(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        return _alive(self.pid)

    def restart(self) -> None:
        """Stop the server (fast shutdown: every open connection is cut) and start it again on
        the same port and data, as an operator's restart does (issue 22: a session must live
        through one). Returns once it accepts connections again."""
        self.stop(remove=False)
        again = _start_server(self.bindir, self.root, self.port, self.user, _run_as(), False)
        self.pid, self._proc = again.pid, again._proc

    def stop(self, *, remove: bool = True) -> None:
        """Stop the server (fast shutdown: open sessions are cut off) and wait until its process
        is gone; then remove its folder. Safe to call twice."""
        if self.running():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGINT)  # "fast" shutdown
            if not _wait_gone(self.pid, self._proc, 30.0):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGQUIT)  # "immediate" shutdown
                if not _wait_gone(self.pid, self._proc, 10.0):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(self.pid, signal.SIGKILL)
                    _wait_gone(self.pid, self._proc, 10.0)
        if remove:
            shutil.rmtree(self.root, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    # A zombie (exited, not yet reaped by its parent) counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def _wait_gone(pid: int, proc: subprocess.Popen[bytes] | None, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None:
            if proc.poll() is not None:
                return True
        elif not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _run_as() -> tuple[int, int] | None:
    """(uid, gid) to run the server as, or None to run it as ourselves (not root)."""
    if os.geteuid() != 0:
        return None
    try:
        pw = pwd.getpwnam(RUN_AS)
    except KeyError:
        raise PgUnavailable(
            f"running as root and there is no {RUN_AS!r} OS user to run the server as "
            "(initdb refuses root; the postgresql package creates that user)"
        ) from None
    return pw.pw_uid, pw.pw_gid


def _die_with_parent() -> None:
    """In the server's process, before exec: on Linux, ask for SIGINT (the server's fast
    shutdown) when the process that started it dies, so a test run that is killed outright
    leaves no server behind. Runs after subprocess has switched user (a credential change
    clears this setting)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGINT)


def start(*, bindir: Path | None = None, detach: bool = False, attempts: int = 3) -> PgServer:
    """initdb a new cluster in a fresh temp folder and start it on a free 127.0.0.1 port.

    `detach`: the server outlives this process (CI's `start`; `stop` finds it by its folder);
    otherwise it is stopped when this process dies. Raises PgUnavailable with the reason."""
    bindir = bindir or find_bindir()
    if bindir is None:
        raise PgUnavailable(
            "PostgreSQL not installed: no initdb/postgres/pg_isready found (set MOLE_PG_BIN, or "
            "install the OS package, e.g. apt-get install postgresql)"
        )
    ids = _run_as()
    user = RUN_AS if ids else pwd.getpwuid(os.geteuid()).pw_name
    root = Path(tempfile.mkdtemp(prefix="mole-pg-"))
    try:
        if ids:
            os.chown(root, *ids)
        _initdb(bindir, root, user, ids)
        last = ""
        for _ in range(attempts):
            port = free_port()
            try:
                return _start_server(bindir, root, port, user, ids, detach)
            except PgUnavailable as exc:  # e.g. the port was taken meanwhile: try another
                last = str(exc)
        raise PgUnavailable(last)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise


def _initdb(bindir: Path, root: Path, user: str, ids: tuple[int, int] | None) -> None:
    cmd = [
        str(bindir / "initdb"),
        "-D",
        str(root / "data"),
        "-U",
        user,
        "--auth=trust",
        "--encoding=UTF8",
        "--locale=C",
        "--no-sync",
        "--no-instructions",
    ]
    res = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=120,
        user=ids[0] if ids else None,
        group=ids[1] if ids else None,
        extra_groups=[] if ids else None,
        cwd=root,
    )
    if res.returncode != 0:
        raise PgUnavailable(f"initdb failed ({res.returncode}): {res.stderr.strip()[-500:]}")


def _start_server(
    bindir: Path, root: Path, port: int, user: str, ids: tuple[int, int] | None, detach: bool
) -> PgServer:
    cmd = [str(bindir / "postgres"), "-D", str(root / "data"), "-p", str(port)]
    cmd += ["-c", f"unix_socket_directories={root}"]
    for key, value in SERVER_SETTINGS.items():
        cmd += ["-c", f"{key}={value}"]
    logfile = root / "server.log"
    with open(logfile, "ab") as log:
        if ids:
            os.chown(logfile, *ids)
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            user=ids[0] if ids else None,
            group=ids[1] if ids else None,
            extra_groups=[] if ids else None,
            cwd=root,
            # Its own session: a Ctrl-C in the terminal reaches pytest, which stops the server
            # in order, rather than the server directly.
            start_new_session=True,
            preexec_fn=None if detach else _die_with_parent,
        )
    server = PgServer(root, port, proc.pid, user, bindir, None if detach else proc)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = logfile.read_text(errors="replace")[-800:]
            raise PgUnavailable(f"postgres exited with {proc.returncode}: {tail.strip()}")
        ready = subprocess.run(
            [str(bindir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port), "-t", "1"],
            capture_output=True,
        )
        if ready.returncode == 0:
            (root / "port").write_text(str(port))
            (root / "pid").write_text(str(proc.pid))
            return server
        time.sleep(0.1)
    server.stop(remove=False)
    raise PgUnavailable(f"postgres did not accept connections within {START_TIMEOUT_S:.0f} s")


def found(root: Path) -> PgServer:
    """The server started (detached) in `root`, from the files start() left there."""
    return PgServer(
        root,
        int((root / "port").read_text()),
        int((root / "pid").read_text()),
        "",
        Path("."),
    )


def _main(argv: list[str]) -> int:
    if argv[:1] == ["bindir"]:
        bindir = find_bindir()
        if bindir is None:
            return 1
        print(bindir)
        return 0
    if len(argv) == 2 and argv[0] in ("start", "stop"):
        state = Path(argv[1])
        state.mkdir(parents=True, exist_ok=True)
        link = state / "server"  # the server's folder, as a one-line file
        if argv[0] == "start":
            try:
                server = start(detach=True)
            except PgUnavailable as exc:
                print(f"pg_server: {exc}", file=sys.stderr)
                return 1
            link.write_text(str(server.root))
            print(server.dsn)
            return 0
        if link.exists():
            found(Path(link.read_text().strip())).stop()
            link.unlink()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
