"""Within a process: one DuckDB instance per store file, shared by this process's threads.

Each thread gets its own cursor on the instance while any of them uses it (DuckDB keeps one
instance per file per process, and refuses a second with another configuration); the file is
released when the last user is done, after lingering briefly, sooner when another process
waits for it (file_lock.py). Writers of one file queue on one lock per file for the whole
process, because DuckDB's optimistic concurrency would otherwise abort one of two transactions
touching the same session row."""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import duckdb

from mole_dag.paths import sql_dir
from mole_dag.store import file_lock
from mole_dag.store.file_lock import forget_handover, handover, others_waiting

# One write lock per database file for the whole process: two Store objects on one file share
# the DuckDB instance, and their writers must queue rather than conflict.
_WRITE_LOCKS: dict[Path, threading.RLock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def write_lock_for(path: Path) -> threading.RLock:
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(path, threading.RLock())


# Reopening a file costs ~25 ms and closing it (a checkpoint) ~10 ms, while a stage issues a
# read every few milliseconds: releasing at once after every read spent more time opening the
# file than doing the work. So the instance lingers this long after its last user, and is closed
# when nobody has used it for that long: a wait (a fetch, a model call) releases the file, a burst
# of reads shares one open. A guess, flagged as one; MOLE_STORE_LINGER (seconds, 0 = release at
# once) overrides it.
LINGER_S = float(os.environ.get("MOLE_STORE_LINGER", "0.1"))
# A busy process never idles that long; after holding the file this long it releases it at its
# next idle moment anyway, so a client that retries without announcing itself gets a window.
# A guess, flagged as one.
MAX_HOLD_S = 1.0
# See file_lock.WAITER_FRESH_S: a process that released the file for a waiter lets it in
# before reopening, for at most this long.
YIELD_MAX_S = 1.0


class SharedFile:
    """This process's use of one database file: the DuckDB instance while anyone uses it, how
    many use it, and the transaction each thread has open.

    One instance per file per process, because DuckDB refuses a second connection to a file
    with another configuration (read-only beside read-write): a read-only user joins an open
    read-write instance (it only reads through it), and a writer waits for read-only users to
    finish, then reopens read-write. New read-only users queue behind a waiting writer, so a
    stream of readers cannot starve it. With no user left, the instance lingers for LINGER_S
    (closed sooner when another process waits, or after MAX_HOLD_S of holding)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cond = threading.Condition()
        self.root: duckdb.DuckDBPyConnection | None = None
        self.root_read_only = False
        self.users = 0
        self.opened_at = 0.0
        self.idle_since = 0.0  # when the last user left (the lingering clock)
        self.idle_gen = 0  # bumped by every release to nobody: an older idle timer is stale
        self.yielded_at = -1e9  # when this process last released the file for a waiter
        self.opening = False
        self.writers_waiting = 0
        # The connection of the transaction a thread has open (write() on this thread), so a
        # nested write joins it and a read inside it sees its uncommitted rows.
        self.tx = threading.local()
        # (device, inode, sql folder) of the files this process has migrated, viewed and
        # recovered, or checked read-only: once per process per file, not per open.
        self.ready: set[tuple[int, int, str]] = set()
        self.checked: set[tuple[int, int, str]] = set()
        self.opens = 0  # how many times the file was opened (tests and benchmarks read it)
        # The open instance was sealed (Store.seal): shared with nobody new, closed when its
        # users are done, so its locked configuration never reaches another unit of work.
        self.sealed = False

    def acquire(
        self, connect: Callable[[bool], duckdb.DuckDBPyConnection], read_only: bool
    ) -> duckdb.DuckDBPyConnection:
        """A cursor on the shared instance, opening the file if nobody in this process has it
        open. `connect(read_only)` opens it (waiting for other processes)."""
        with self.cond:
            waiting_writer = False
            try:
                while True:
                    if (
                        self.root is not None
                        and not self.sealed
                        and (not self.root_read_only or (read_only and not self.writers_waiting))
                    ):
                        cur = self.root.cursor()
                        self.users += 1
                        return cur
                    if self.root is None and not self.opening:
                        self.opening = True
                        break
                    if not read_only and not waiting_writer:
                        waiting_writer = True
                        self.writers_waiting += 1
                    self.cond.wait()
            finally:
                if waiting_writer:
                    self.writers_waiting -= 1
        # Opened outside the condition: it may wait for another process, and this process's
        # other threads may meanwhile finish with (and release) nothing, or queue behind it.
        try:
            self._yield_to_waiters()
            root = connect(read_only)
        except BaseException:
            with self.cond:
                self.opening = False
                forget_handover(self.path)  # a damaged file: nothing left beside it
                self.cond.notify_all()
            raise
        with self.cond:
            self.opening = False
            self.opens += 1
            file_lock.undamaged(self.path)  # a file restored since, at the same path
            self.root, self.root_read_only = root, read_only
            self.opened_at = time.monotonic()
            try:
                cur = root.cursor()
            except BaseException:
                self.root = None
                with handover(self.path), suppress(duckdb.Error):
                    root.close()
                self.cond.notify_all()
                raise
            self.users += 1
            self.cond.notify_all()
            return cur

    def release(self, cur: duckdb.DuckDBPyConnection) -> None:
        with suppress(duckdb.Error):
            cur.close()
        with self.cond:
            self.users -= 1
            if self.users or self.root is None:
                return
            if self.sealed or file_lock.is_damaged(self.path):
                # Not left to linger: a sealed instance is nobody else's, and a damaged
                # file is closed at once so its lock file can go.
                self._close_locked()
                return
            now = time.monotonic()
            if others_waiting(self.path):
                self.yielded_at = now
                self._close_locked()
                return
            if LINGER_S <= 0 or now - self.opened_at >= MAX_HOLD_S:
                self._close_locked()
                return
            self.idle_gen += 1
            self.idle_since = now
            timer = threading.Timer(LINGER_S, self._close_if_idle, args=(self.idle_gen,))
            timer.daemon = True
            timer.start()

    def _close_if_idle(self, gen: int) -> None:
        with self.cond:
            if gen == self.idle_gen and self.users == 0 and self.root is not None:
                self._close_locked()

    def _close_locked(self) -> None:
        """Close the instance (the caller holds `cond` and nobody uses it): the file is free for
        other processes."""
        root, self.root = self.root, None
        self.sealed = False
        self.idle_gen += 1
        if root is not None:
            with handover(self.path), suppress(duckdb.Error):
                root.close()
            forget_handover(self.path)  # after the flock above is released: it would wait
        self.cond.notify_all()

    def close_if_unused(self) -> None:
        with self.cond:
            if self.users == 0 and self.root is not None:
                self._close_locked()

    def _yield_to_waiters(self) -> None:
        """Before reopening a file this process just released for a waiter: let the waiter in
        first, for at most YIELD_MAX_S. (Only the releasing process yields: two waiters do not
        wait for each other.)"""
        deadline = self.yielded_at + YIELD_MAX_S
        while time.monotonic() < deadline and others_waiting(self.path):
            time.sleep(0.005)

    def is_open(self) -> bool:
        with self.cond:
            return self.root is not None

    def seal(self) -> None:
        with self.cond:
            self.sealed = True

    def unless_open(self, fn: Callable[[], None]) -> None:
        """Run `fn` (which opens and closes the file itself) only while this process does not
        have the file open, nor is opening it. Closing any descriptor of a file drops the
        process's fcntl locks on it, DuckDB's among them (measured: another process then
        opened the file beside this one's instance). A file open here is a store anyway."""
        with self.cond:
            if self.root is None and not self.opening:
                fn()


_FILES: dict[Path, SharedFile] = {}
_FILES_GUARD = threading.Lock()


def _release_all() -> None:
    """At exit: close what lingers, so the file is checkpointed and free at once."""
    with _FILES_GUARD:
        files = list(_FILES.values())
    for f in files:
        f.close_if_unused()


atexit.register(_release_all)


def file_for(path: Path) -> SharedFile:
    with _FILES_GUARD:
        f = _FILES.get(path)
        if f is None:
            f = _FILES[path] = SharedFile(path)
        return f


def identity(path: Path) -> tuple[int, int, str] | None:
    """What "this file" means for the once-per-process caches: its device and inode (a store
    deleted and created again at the same path is a new file) and the schema folder in use."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino, str(sql_dir()))
