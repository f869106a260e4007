"""Two processes meeting on one store file: the second waits (and says so) instead of crashing,
and gives up with a clear message when the first does not let go."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from mole_dag.store import Store, StoreError, file_lock

# A Store holds the file only inside a transaction, so the holder keeps one open (as a stuck
# writer, or a user's read-write DuckDB client, would).
HOLDER = """
import sys, time
from mole_dag.store import Store
s = Store(sys.argv[1])
with s.write():
    print("holding", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _hold(path: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "holding"
    return proc


def test_second_process_waits_for_the_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A waiter says so only after a while (a blip of another's transaction is not worth a line).
    monkeypatch.setattr(file_lock, "REPORT_WAIT_AFTER_S", 0.2)
    path = tmp_path / "shared.duckdb"
    # Held 4 s: the wait must outlast REPORT_WAIT_AFTER_S even if this process is descheduled
    # for a while after the holder says it holds (a loaded machine).
    proc = _hold(path, 4)
    try:
        said: list[str] = []
        t0 = time.monotonic()
        Store(path, lock_wait_s=30, on_wait=said.append)
        waited = time.monotonic() - t0
    finally:
        proc.wait(timeout=30)
    assert said and "another process" in said[0]
    assert waited > 0.2  # it really waited rather than failing or opening concurrently


def test_gives_up_with_a_clear_message(tmp_path: Path) -> None:
    path = tmp_path / "held.duckdb"
    proc = _hold(path, 5)
    try:
        with pytest.raises(StoreError, match="held by another process"):
            Store(path, lock_wait_s=0.3)
    finally:
        proc.kill()
        proc.wait(timeout=30)
