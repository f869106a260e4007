"""A dask.distributed cluster on 127.0.0.1 for the scale-out tests, started with the same
commands deploy/README.md gives (`dask scheduler`, `dask worker`), and always stopped.

The workers are processes started from the test's environment at that moment: MOLE_DB,
MOLE_DAGSTER_PG_URL, DAGSTER_HOME and MOLE_HOME must be set before the cluster starts."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from mole_dag.paths import PROJECT_ROOT

START_TIMEOUT_S = 90.0


def stop_group(proc: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """SIGTERM to the process group `proc` leads (dask closes its workers on it, Dagster's
    daemon its code server), then SIGKILL if it does not go."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@contextlib.contextmanager
def dask_cluster(folder: Path, *, workers: int = 2) -> Iterator[str]:
    """A scheduler and `workers` single-threaded worker processes; yields the scheduler's
    address (tcp://127.0.0.1:PORT)."""
    folder.mkdir(parents=True, exist_ok=True)
    sched_file = folder / "scheduler.json"
    bindir = Path(sys.executable).parent
    common = {
        "cwd": PROJECT_ROOT,  # the workers import `deploy` and `tests` from the project root
        "stdin": subprocess.DEVNULL,
        "start_new_session": True,  # a group of its own: _stop ends it and its children
    }
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with open(folder / "scheduler.log", "ab") as log:
            procs.append(
                subprocess.Popen(
                    [
                        str(bindir / "dask"),
                        "scheduler",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        "0",
                        "--no-dashboard",
                        "--scheduler-file",
                        str(sched_file),
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    **common,  # type: ignore[arg-type]
                )
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not sched_file.exists():
            if procs[0].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    "dask scheduler did not start: "
                    + (folder / "scheduler.log").read_text(errors="replace")[-800:]
                )
            time.sleep(0.1)
        time.sleep(0.2)  # the file is written whole, but give the writer a moment to close it
        address = str(json.loads(sched_file.read_text())["address"])
        with open(folder / "workers.log", "ab") as log:
            procs.append(
                subprocess.Popen(
                    [
                        str(bindir / "dask"),
                        "worker",
                        address,
                        "--nworkers",
                        str(workers),
                        "--nthreads",
                        "1",
                        "--host",
                        "127.0.0.1",
                        "--no-dashboard",
                        "--local-directory",
                        str(folder / "workers"),
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    **common,  # type: ignore[arg-type]
                )
            )
        from dask.distributed import Client

        with Client(address, timeout=START_TIMEOUT_S) as client:
            client.wait_for_workers(workers, timeout=START_TIMEOUT_S)
        yield address
    finally:
        for proc in reversed(procs):
            stop_group(proc)
