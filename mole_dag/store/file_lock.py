"""Across processes: waiting for DuckDB's lock on the store file, and the hand-over lock.

DuckDB lets one process have a file open at a time. A process that finds it held waits with
backoff and jitter (`connect`), announces itself with a marker in `<store>.waiting/` so the
holder lets go at its next idle moment, and reports a long wait with the file's name. Each open
attempt and each close also hold `<store>.lock` (`handover`), so no process releases the file
while another is halfway through opening it. The sharing of one open file among this process's
threads is store/shared_file.py's job."""

from __future__ import annotations

import atexit
import errno
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import duckdb

try:
    import fcntl
except ImportError:  # Windows: no flock (see handover)
    fcntl = None  # type: ignore[assignment]

from mole_dag.store.errors import (
    StoreBusy,
    StoreCorrupt,
    StoreError,
    corrupt_message,
    is_corruption,
    is_lock_error,
    one_line,
)

# How long a process waits for another to let go of the file. Holders now hold it for one
# transaction, so a long wait means a stuck process or a user's read-write client keeping the file
# open; a guess, flagged as one, and overridable with MOLE_LOCK_WAIT (seconds).
DEFAULT_LOCK_WAIT_S = float(os.environ.get("MOLE_LOCK_WAIT", "1800"))
# Waits shorter than this are the normal cost of sharing the file with another process's
# transaction: only a longer one is reported (a reader must not say "waiting" for every blip).
REPORT_WAIT_AFTER_S = 2.0
# Retry delays while another process holds the file: short, because holders hold it for one
# transaction (milliseconds), and readers should get in as soon as it is free.
_FIRST_DELAY_S = 0.01
_MAX_DELAY_S = 0.2

# Another process waiting for the file announces itself with a marker file in `<store>.waiting/`
# (touched on every retry; older than this and it is taken for a crashed waiter's leftover); the
# holder then releases at its next idle moment and lets the waiter in before reopening, for at
# most shared_file.YIELD_MAX_S.
WAITER_FRESH_S = 1.5


# The hand-over lock (issue 14, the lost reservation). DuckDB 2.0.1 reads a file's database
# headers (where its last checkpoint is) *before* it takes its lock on the file, and does not
# read them again once it has the lock. A process whose open starts while another is closing
# (checkpointing: new headers, WAL deleted, lock released) can therefore get the lock with the
# headers of the checkpoint before, and work on a database without the other process's last
# transactions; its own checkpoint then writes them away. Measured with strace: the reader's
# pread of the headers comes before its F_SETLK, and the lost transaction was always committed
# by a process whose close overlapped the other's open. So every Store takes `<store>.lock`
# for each attempt to open the file and for each close: no process releases the file while
# another is between reading the headers and locking. Best effort where it cannot be created
# (a folder this process cannot write, where it cannot write the store either); a client that
# does not take it (a user's DuckDB CLI) is not protected. No flock on Windows: not measured
# there, unguarded.
_HANDOVER_POLL_S = 0.002

# Nothing is left beside a damaged store (issue 29): a file this process found damaged, and the
# hand-over lock files this process created. A damaged store's lock file, if this process made
# it, is removed once the file is closed here (forget_handover). Whether a file is damaged
# often shows only after it was opened (a lost block reached by a query), so the lock file
# cannot simply wait for a check of the whole file; removing it is safe for other processes
# because handover re-checks, once it holds the lock, that the path still names its file.
_DAMAGED: set[Path] = set()
_MADE_LOCKS: set[Path] = set()
_LOCK_FILES_GUARD = threading.Lock()
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def corrupt(path: Path, why: str) -> StoreCorrupt:
    """The error for a damaged store at `path`, remembered so the hand-over lock file this
    process made beside it goes (forget_handover)."""
    with _LOCK_FILES_GUARD:
        _DAMAGED.add(path)
    return corrupt_message(path, why)


def is_damaged(path: Path) -> bool:
    with _LOCK_FILES_GUARD:
        return path in _DAMAGED


def undamaged(path: Path) -> None:
    """The file at `path` opened fine: one restored since it was found damaged."""
    with _LOCK_FILES_GUARD:
        _DAMAGED.discard(path)


def handover_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def _handover_fd(path: Path) -> int | None:
    lock = handover_path(path)
    with suppress(FileNotFoundError, PermissionError):
        return os.open(lock, os.O_RDWR | _CLOEXEC)
    with suppress(OSError):
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL | _CLOEXEC, 0o666)
        with _LOCK_FILES_GUARD:
            _MADE_LOCKS.add(path)
        return fd
    for flags in (os.O_RDWR, os.O_RDONLY):  # made by another process meanwhile; or read-only
        with suppress(OSError):
            return os.open(lock, flags | _CLOEXEC)
    return None


def _same_file(fd: int, path: Path) -> bool:
    """Whether the lock file held by `fd` is still the one at its path (not removed beside a
    damaged store, or replaced, while this process waited for it)."""
    try:
        held, there = os.fstat(fd), os.stat(handover_path(path))
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino)


def forget_handover(path: Path) -> None:
    """Remove the hand-over lock file this process made beside `path`, if the store there was
    found damaged. Under the lock itself, so no other process is between its open and its
    flock on it; one that opened it before sees it gone (_same_file) and takes a new one."""
    with _LOCK_FILES_GUARD:
        if path not in _DAMAGED or path not in _MADE_LOCKS:
            return
        _MADE_LOCKS.discard(path)
    if fcntl is None:
        return
    lock = handover_path(path)
    try:
        fd = os.open(lock, os.O_RDONLY | _CLOEXEC)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if _same_file(fd, path):
            with suppress(OSError):
                lock.unlink()
    finally:
        os.close(fd)


@contextmanager
def handover(path: Path, deadline: float | None = None) -> Iterator[None]:
    """Hold the file's hand-over lock for one open attempt or one close. flock, not fcntl:
    closing any descriptor of a file drops the process's fcntl locks on it, and a flock is
    per open descriptor, so two threads of one process exclude each other too. With a
    deadline (an open, which can report StoreBusy) it is polled; without (a close, which must
    happen) it is waited for: holders hold it for one open attempt or one close."""
    fd = None
    while fcntl is not None:
        fd = _handover_fd(path)
        if fd is None:
            break
        try:
            _flock(fd, path, deadline)
        except BaseException:
            os.close(fd)
            raise
        if _same_file(fd, path):
            break
        os.close(fd)  # removed (forget_handover) while we waited: take the one there now
    if fd is None:
        yield
        return
    try:
        yield
    finally:
        os.close(fd)  # releases the flock


def _flock(fd: int, path: Path, deadline: float | None) -> None:
    if deadline is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    delay = _HANDOVER_POLL_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
        if time.monotonic() >= deadline:
            raise TimeoutError(f"hand-over lock of {path} not free")
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


def _waiting_dir(path: Path) -> Path:
    return path.with_name(path.name + ".waiting")


def others_waiting(path: Path) -> bool:
    """Whether another process announced it is waiting for this file (a stat when nobody did)."""
    mine = f"{os.getpid()}-"
    try:
        entries = os.scandir(_waiting_dir(path))
    except OSError:
        return False
    now = time.time()
    with entries:
        for e in entries:
            if e.name.startswith(mine):
                continue
            with suppress(OSError):
                if now - e.stat().st_mtime < WAITER_FRESH_S:
                    return True
    return False


class Waiting:
    """This thread's marker while it waits for another process to release the file. Best
    effort: a folder it cannot write to means it just retries unannounced."""

    def __init__(self, path: Path) -> None:
        self.marker = _waiting_dir(path) / f"{os.getpid()}-{threading.get_ident()}"
        self.made = False

    def touch(self) -> None:
        with suppress(OSError):
            self.marker.parent.mkdir(exist_ok=True)  # another waiter may have just removed it
            self.marker.touch()
            self.made = True

    def done(self) -> None:
        if self.made:
            with suppress(OSError):
                self.marker.unlink()
            with suppress(OSError):
                self.marker.parent.rmdir()  # only when empty: others may still be waiting


# What sharing the file cost this process: opens, seconds spent opening (waits for other
# processes included) and seconds spent waiting on their locks. Written as JSON at exit to the
# file named by MOLE_STORE_STATS, for the benchmarks (bench/store_readers_bench.py) to tell the
# store's share of a session's time from the rest.
STATS = {"opens": 0, "open_s": 0.0, "lock_waits": 0, "waited_s": 0.0}
_STATS_LOCK = threading.Lock()


def _count(**add: float) -> None:
    with _STATS_LOCK:
        for k, v in add.items():
            STATS[k] += v


def _write_stats(path: str) -> None:
    import json  # only when the benchmarks ask for the figures

    with suppress(OSError), open(path, "w", encoding="utf-8") as fh:
        json.dump(STATS, fh)


if os.environ.get("MOLE_STORE_STATS"):
    atexit.register(_write_stats, os.environ["MOLE_STORE_STATS"])


def connect(
    path: Path,
    read_only: bool,
    lock_wait_s: float,
    on_long_wait: Callable[[str], None] | None = None,
) -> duckdb.DuckDBPyConnection:
    """Open the file, waiting with backoff and jitter while another process holds it, for at
    most `lock_wait_s` (then StoreBusy). `on_long_wait` hears, once, a wait longer than
    REPORT_WAIT_AFTER_S."""
    started = time.monotonic()
    waiting = Waiting(path)
    try:
        return _connect_waiting(path, read_only, lock_wait_s, on_long_wait, started, waiting)
    finally:
        waiting.done()


def _connect_waiting(
    path: Path,
    read_only: bool,
    lock_wait_s: float,
    on_long_wait: Callable[[str], None] | None,
    started: float,
    waiting: Waiting,
) -> duckdb.DuckDBPyConnection:
    deadline = started + lock_wait_s
    delay = _FIRST_DELAY_S
    waited = told = False
    while True:
        try:
            try:
                # Released before the backoff below: the holder needs it to close.
                with handover(path, deadline):
                    conn = duckdb.connect(str(path), read_only=read_only)
            except TimeoutError:
                raise busy(path, lock_wait_s) from None
            took = time.monotonic() - started
            _count(opens=1, open_s=took, lock_waits=int(waited), waited_s=took if waited else 0.0)
            return conn
        except duckdb.IOException as exc:
            waited = True
            if is_corruption(exc):
                raise corrupt(path, one_line(exc)) from None
            if not is_lock_error(exc):
                raise StoreError(f"cannot open the store {path}: {one_line(exc)}") from None
            waiting.touch()  # the holder releases at its next idle moment
            now = time.monotonic()
            if now >= deadline:
                raise busy(path, lock_wait_s) from None
            if on_long_wait and not told and now - started >= REPORT_WAIT_AFTER_S:
                on_long_wait(f"waiting for the store {path}: another process is writing to it")
                told = True
            time.sleep(min(delay + random.uniform(0, delay), max(0.0, deadline - now)))
            delay = min(delay * 2, _MAX_DELAY_S)
        except duckdb.Error as exc:
            if is_corruption(exc):
                raise corrupt(path, one_line(exc)) from None
            raise StoreError(f"cannot open the store {path}: {one_line(exc)}") from None


def busy(path: Path, lock_wait_s: float) -> StoreBusy:
    return StoreBusy(
        f"the store {path} is held by another process (a running session, "
        "the Dagster UI, a schedule or a SQL client) and was not released within "
        f"{lock_wait_s:.0f}s; try again when it finishes"
    )
