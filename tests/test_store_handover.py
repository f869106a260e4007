"""The hand-over of the file between processes loses no transaction (issue 14, the lost
reservation).

DuckDB reads a file's headers before it takes its lock on the file and does not read them
again after: a process whose open overlapped another's close (checkpoint, lock released) got
the file with the headers of the checkpoint before, missed the other's last transactions, and
its own checkpoint wrote them away. The store now takes `<store>.lock` for every open attempt
and every close (store/file_lock.py, `handover`). The first test shows the interleaving itself is
excluded (deterministic, no tools needed); the second reproduces the lost write through
DuckDB, widening the window with strace where strace can run."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mole_dag.store import Store, shared_file
from tests.machine import bound

# Process B: its `duckdb.connect` announces itself (the file `inside`) and then waits for the
# file `go` before opening, so the test decides what A does while B is inside an open.
OPENER = """
import sys, time
from pathlib import Path
import duckdb
from mole_dag.store import Store

path, folder = sys.argv[1], Path(sys.argv[2])
real = duckdb.connect

def connect(*args, **kwargs):
    (folder / "inside").touch()
    # A bound for a hang, not a wait: the test always says go. 20 s ran out under load (issue
    # 23: B went on alone and A's close was then free to proceed).
    deadline = time.monotonic() + 900
    while not (folder / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    return real(*args, **kwargs)

duckdb.connect = connect
s = Store(path, migrate_schema=False, lock_wait_s=60)
print(sorted(r["i"] for r in s.rows("SELECT i FROM probe")), flush=True)
s.close()
"""


def _store_with_probe(path: Path) -> Store:
    s = Store(path)
    with s.write() as cur:
        cur.execute("CREATE TABLE probe (i INTEGER)")
    s.close()
    return s


def test_a_close_waits_for_another_process_inside_an_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While process B is inside an open of the file, process A must not release it: B may
    already have read the headers A's closing checkpoint is about to replace."""
    # A releases the file only through the close below. Without this, on a loaded machine B's
    # start took longer than MAX_HOLD_S, so leaving `a.read()` closed the file there, in the
    # test's own thread, waiting for B, which waited for the `go` that thread was to give.
    monkeypatch.setattr(shared_file, "MAX_HOLD_S", 600.0)
    monkeypatch.setattr(shared_file, "LINGER_S", 600.0)
    path = tmp_path / "handover.duckdb"
    a = _store_with_probe(path)
    closed = threading.Event()

    def close_a() -> None:
        a.close()
        closed.set()

    with a.read():  # A holds the file, with a committed row its close will checkpoint
        with a.write() as cur:
            cur.execute("INSERT INTO probe VALUES (1)")
        b = subprocess.Popen(
            [sys.executable, "-c", OPENER, str(path), str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while not (tmp_path / "inside").exists():
                assert b.poll() is None, b.stderr.read() if b.stderr else ""
                assert time.monotonic() < deadline, "process B never tried to open the file"
                time.sleep(0.005)
        except BaseException:
            b.kill()
            raise
    closer = threading.Thread(target=close_a)
    closer.start()
    try:
        # A's close must wait while B is inside its open.
        assert not closed.wait(0.5), "A released the file while B was inside an open"
    finally:
        (tmp_path / "go").touch()
        out, err = b.communicate(timeout=bound(60))
        closer.join(timeout=bound(60))
    assert closed.is_set()
    assert b.returncode == 0, err[-2000:]
    assert out.strip() == "[1]"  # B, once in, sees what A committed


def _strace_usable() -> bool:
    if shutil.which("strace") is None:
        return False
    try:
        r = subprocess.run(
            ["strace", "-qq", "-o", "/dev/null", "true"], capture_output=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0  # ptrace may be forbidden (containers)


# Process B under strace: every fcntl on the store file (DuckDB's lock) is delayed, so B sits
# between reading the headers and taking the lock for as long as the test needs.
READER = """
import sys
from pathlib import Path
import duckdb
from mole_dag.store import Store

path, folder = sys.argv[1], Path(sys.argv[2])
real = duckdb.connect

def connect(*args, **kwargs):
    (folder / "inside").touch()
    return real(*args, **kwargs)

duckdb.connect = connect
s = Store(path, migrate_schema=False, lock_wait_s=60)
seen = sorted(r["i"] for r in s.rows("SELECT i FROM probe"))
with s.write() as cur:
    cur.execute("INSERT INTO probe VALUES (2)")
s.close()
print(seen, flush=True)
"""


@pytest.mark.skipif(not _strace_usable(), reason="needs strace (and ptrace allowed)")
def test_no_transaction_is_lost_when_an_open_overlaps_a_close(tmp_path: Path) -> None:
    """The lost write itself, through DuckDB: A commits, B starts opening (and reads the
    headers), A closes (checkpoint, lock released), B takes the lock. Before the hand-over
    lock B saw [] and its checkpoint wrote A's row away."""
    path = tmp_path / "handover.duckdb"
    a = _store_with_probe(path)
    delay_us = 1_500_000
    b = None
    with a.read():
        with a.write() as cur:
            cur.execute("INSERT INTO probe VALUES (1)")
        b = subprocess.Popen(
            [
                "strace",
                "-f",
                "-qq",
                "-o",
                "/dev/null",
                "-P",
                str(path),
                "-e",
                "trace=fcntl",
                "-e",
                f"inject=fcntl:delay_enter={delay_us}",
                sys.executable,
                "-c",
                READER,
                str(path),
                str(tmp_path),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not (tmp_path / "inside").exists():
            assert b.poll() is None and time.monotonic() < deadline, "B never opened"
            time.sleep(0.005)
        time.sleep(delay_us / 1e6 / 3)  # B has read the headers; its lock call is delayed
    a.close()  # A's checkpoint and release, while B is inside its open
    out, err = b.communicate(timeout=120)
    assert b.returncode == 0, err[-2000:]
    assert out.strip() == "[1]", "B opened the file without A's committed row"
    assert sorted(r["i"] for r in a.rows("SELECT i FROM probe")) == [1, 2]
    a.close()


# Another process's raw open: does DuckDB's lock still keep it out?
RAW_OPEN = """
import sys, duckdb
try:
    duckdb.connect(sys.argv[1]).close()
    print("opened")
except duckdb.Error as exc:
    print("locked" if "lock" in str(exc) else f"other: {exc}")
"""


def test_a_read_only_store_here_keeps_the_file_locked(tmp_path: Path) -> None:
    """A read-only Store checks the file's header by reading it, and closing that descriptor
    dropped every fcntl lock of this process on the file, DuckDB's too: with a writer open
    here, another process then got in beside it."""
    path = tmp_path / "locked.duckdb"
    a = _store_with_probe(path)

    def other() -> str:
        r = subprocess.run(
            [sys.executable, "-c", RAW_OPEN, str(path)], capture_output=True, text=True
        )
        return r.stdout.strip()

    with a.read():
        assert other() == "locked"
        Store(path, read_only=True)
        assert other() == "locked"
    a.close()


def test_a_removed_lock_file_is_not_held_by_two(tmp_path: Path) -> None:
    """Issue 29: the lock file beside a damaged store is removed (file_lock.forget_handover). A
    waiter that opened it before the removal must not go on to hold the removed file while
    another process holds a new one at the path: it re-checks, and takes the one there."""
    import contextlib
    import os

    from mole_dag.store.file_lock import handover as _handover
    from mole_dag.store.file_lock import handover_path as _handover_path

    db = tmp_path / "s.duckdb"
    lock = _handover_path(db)
    took: list[bool] = []

    def lock_fds() -> int:
        """This process's descriptors of the file at the path (a removed one reads
        "... (deleted)")."""
        found = 0
        for n in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):  # the listing's own descriptor, closed since
                found += os.readlink(f"/proc/self/fd/{n}") == str(lock)
        return found

    def waiter() -> None:
        with _handover(db, deadline=time.monotonic() + 60):
            # Held: the file at the path, by this one descriptor (the main thread's is gone).
            took.append(lock.exists() and lock_fds() == 1)

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc to see the waiter's open descriptor")
    with _handover(db):
        t = threading.Thread(target=waiter)
        t.start()
        deadline = time.monotonic() + 60
        while lock_fds() < 2:  # the waiter has opened the file and waits for its flock
            assert time.monotonic() < deadline
            time.sleep(0.001)
        lock.unlink()  # what _forget_handover does, under the flock
    t.join(timeout=60)
    assert took == [True]
