"""The DuckDB store: one file, opened only for a unit of work (a transaction or a read).

DuckDB lets one process write a file at a time, and a process that keeps the file open keeps
every other process out, readers included. A research round used to hold it for its whole run
(issue 12: readers waited up to 65 s, a read-only DuckDB client failed at once, two sessions ran
one after the other), so a Store now keeps no connection between units of work: `write()`,
`transact`, `rows`, `row`, `scalar`, `named` open the file, do the work and close it, and other
processes get in between. Opening costs tens of milliseconds (see BENCHMARKS.md); paid calls
take seconds, so that is the price of sharing the file.

Within a process, threads share one DuckDB database instance while any of them uses it (DuckDB
itself keeps one instance per file per process, and refuses a second with another
configuration), each with its own cursor; the file is released when the last user is done.
Writes are serialised by a process-wide lock per file, because DuckDB's optimistic concurrency
would otherwise abort one of two transactions touching the same session row. Across processes
the file lock is waited for with backoff and jitter instead of crashing, and a long wait is
reported with the file's name; each open attempt and each close also hold `<store>.lock`, so
no process releases the file while another is halfway through opening it (see `_handover`).
Migrations, views and crash recovery run once per process per file, not at every open."""

from __future__ import annotations

import atexit
import errno
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import duckdb

try:
    import fcntl
except ImportError:  # Windows: no flock (see _handover)
    fcntl = None  # type: ignore[assignment]

from mole_dag.diskfull import disk_full
from mole_dag.store import migrate
from mole_dag.store.queries import q
from mole_dag.store.records import Params, fetch_all, fetch_one, only_column

T = TypeVar("T")
R = TypeVar("R")


class StoreError(RuntimeError):
    """The store cannot be used; the message says why and what to do."""


class StoreBusy(StoreError):
    """Another process held the store for longer than this one was willing to wait."""


class StoreMissing(StoreError):
    """A read-only open found no file: reading must never create a store."""


class StoreOutdated(StoreError):
    """A read-only open found a store older than this mole's schema (a writer migrates it)."""


class StoreCorrupt(StoreError):
    """The file is there but is not a readable store (truncated, overwritten, not DuckDB)."""


def _corrupt(path: Path, why: str) -> StoreCorrupt:
    # Remembered, so the hand-over lock file this process made beside it goes (_forget_handover).
    with _LOCK_FILES_GUARD:
        _DAMAGED.add(path)
    if "Could not read enough bytes" in why:
        why = f"truncated: {why}"
    return StoreCorrupt(
        f"{path} is not a readable mole store ({why}); restore it from a backup, or pass --db "
        "(or MOLE_DB) to use another store"
    )


# DuckDB's file starts with a 4 KiB main header carrying "DUCK" at byte 8, then two 4 KiB database
# headers (its storage format since 0.9, read from its source: a guess flagged as one). A file
# without them is not a store, and a read-only open refuses it before DuckDB opens it. Writers
# skip this check: another process may be creating the file, briefly shorter than its headers
# (an MCP worker and a status poll raced on exactly that), and DuckDB's own open refuses a
# damaged file without writing to it (measured on truncated copies).
# Truncation cannot be judged from the length: DuckDB trims free blocks at the end of the file
# while the header still counts them, so a whole store can be shorter than its header says.
# Truncation shows as a read error when DuckDB reaches a lost block, and is reported then.
_HEADER_BYTES = 3 * 4096


def check_file(path: Path) -> None:
    """Raise StoreCorrupt if the file at `path` is visibly not a DuckDB database."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(_HEADER_BYTES)
    except OSError as exc:
        raise StoreError(f"cannot read the store {path}: {exc.strerror}") from None
    if len(head) < _HEADER_BYTES:
        raise _corrupt(path, f"{size:,} bytes, too short to be a DuckDB database")
    if head[8:12] != b"DUCK":
        raise _corrupt(path, "not a DuckDB database file")


def visibly_not_duckdb(path: Path) -> bool:
    """Whether a file a writer is about to open is certainly not a DuckDB database: bytes of its
    own where DuckDB's magic belongs. A file of zeros or shorter than the magic may be a store
    another process is creating this instant (see _HEADER_BYTES), so it is left to DuckDB."""
    try:
        with path.open("rb") as fh:
            head = fh.read(12)
    except OSError:
        return False
    return len(head) == 12 and head[8:12] != b"DUCK" and any(head)


def _refuse_if_not_duckdb(path: Path) -> None:
    if visibly_not_duckdb(path):
        raise _corrupt(path, "not a DuckDB database file")


def check_target(target: str | os.PathLike[str]) -> None:
    """Refuse, without creating anything, a store path a writing command could not use: a
    folder that cannot be made or written, a file that is not writable or visibly not a store.
    Run before a command writes anything else (`mole research` caches its corpus index in the
    data folder), so such a store is one line and leaves nothing behind. A postgresql:// URL
    is the server's to judge."""
    if isinstance(target, str) and target.startswith(_POSTGRES_SCHEMES):
        return
    path = Path(target).expanduser().resolve()
    if path.is_dir():
        raise StoreError(f"the store {path} is a folder, not a DuckDB file; pass --db with a file")
    # The nearest folder that exists: the store's folder, or where it would be made.
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise StoreError(
            f"cannot create the store folder {path.parent}: {folder} is not a folder; "
            "set MOLE_DB or --db to a writable path"
        )
    exists = path.exists()
    if not os.access(folder, os.W_OK | os.X_OK) or (exists and not os.access(path, os.W_OK)):
        raise StoreError(
            f"the store {path} is not writable; set MOLE_DB or --db to a writable path"
        )
    if exists:
        # Not while this process has the file open (closing our descriptor would drop DuckDB's
        # lock on it): it is a store then.
        _file_for(path).unless_open(lambda: _refuse_if_not_duckdb(path))


def _is_corruption(exc: BaseException) -> bool:
    """DuckDB errors that mean the file itself is damaged, not that a query was wrong."""
    text = str(exc)
    return isinstance(exc, duckdb.SerializationException) or any(
        marker in text
        for marker in (
            "Could not read enough bytes",
            "not a valid DuckDB",
            "Corrupt",
            "corrupt",
            "checksum",
        )
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


# One write lock per database file for the whole process: two Store objects on one file share
# the DuckDB instance, and their writers must queue rather than conflict.
_WRITE_LOCKS: dict[Path, threading.RLock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


# Commits by every Store of this process, for benchmarks that cannot reach the Store a stage
# used (a Dagster run opens its own).
_PROCESS_COMMITS = 0
_PROCESS_COMMITS_GUARD = threading.Lock()


def _count_commit() -> None:
    global _PROCESS_COMMITS
    with _PROCESS_COMMITS_GUARD:  # two files' writers do not share a write lock
        _PROCESS_COMMITS += 1


def process_commits() -> int:
    """Write transactions committed by every Store of this process so far."""
    return _PROCESS_COMMITS


def _write_lock_for(path: Path) -> threading.RLock:
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
# Another process waiting for the file announces itself with a marker file in `<store>.waiting/`
# (touched on every retry; older than this and it is taken for a crashed waiter's leftover); the
# holder then releases at its next idle moment and lets the waiter in before reopening, for at
# most YIELD_MAX_S.
WAITER_FRESH_S = 1.5
YIELD_MAX_S = 1.0


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
# it, is removed once the file is closed here (_forget_handover). Whether a file is damaged
# often shows only after it was opened (a lost block reached by a query), so the lock file
# cannot simply wait for a check of the whole file; removing it is safe for other processes
# because _handover re-checks, once it holds the lock, that the path still names its file.
_DAMAGED: set[Path] = set()
_MADE_LOCKS: set[Path] = set()
_LOCK_FILES_GUARD = threading.Lock()
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _handover_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def _handover_fd(path: Path) -> int | None:
    lock = _handover_path(path)
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
        held, there = os.fstat(fd), os.stat(_handover_path(path))
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino)


def _forget_handover(path: Path) -> None:
    """Remove the hand-over lock file this process made beside `path`, if the store there was
    found damaged. Under the lock itself, so no other process is between its open and its
    flock on it; one that opened it before sees it gone (_same_file) and takes a new one."""
    with _LOCK_FILES_GUARD:
        if path not in _DAMAGED or path not in _MADE_LOCKS:
            return
        _MADE_LOCKS.discard(path)
    if fcntl is None:
        return
    lock = _handover_path(path)
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
def _handover(path: Path, deadline: float | None = None) -> Iterator[None]:
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
        os.close(fd)  # removed (_forget_handover) while we waited: take the one there now
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


def _others_waiting(path: Path) -> bool:
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


class _Waiting:
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


class _File:
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
                _forget_handover(self.path)  # a damaged file: nothing left beside it
                self.cond.notify_all()
            raise
        with self.cond:
            self.opening = False
            self.opens += 1
            with _LOCK_FILES_GUARD:
                _DAMAGED.discard(self.path)  # a file restored since, at the same path
            self.root, self.root_read_only = root, read_only
            self.opened_at = time.monotonic()
            try:
                cur = root.cursor()
            except BaseException:
                self.root = None
                with _handover(self.path), suppress(duckdb.Error):
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
            if self.sealed or self.path in _DAMAGED:
                # Not left to linger: a sealed instance is nobody else's, and a damaged
                # file is closed at once so its lock file can go.
                self._close_locked()
                return
            now = time.monotonic()
            if _others_waiting(self.path):
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
            with _handover(self.path), suppress(duckdb.Error):
                root.close()
            _forget_handover(self.path)  # after the flock above is released: it would wait
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
        while time.monotonic() < deadline and _others_waiting(self.path):
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


_FILES: dict[Path, _File] = {}
_FILES_GUARD = threading.Lock()

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
    import json

    with suppress(OSError), open(path, "w", encoding="utf-8") as fh:
        json.dump(STATS, fh)


if os.environ.get("MOLE_STORE_STATS"):
    atexit.register(_write_stats, os.environ["MOLE_STORE_STATS"])


def _release_all() -> None:
    """At exit: close what lingers, so the file is checkpointed and free at once."""
    with _FILES_GUARD:
        files = list(_FILES.values())
    for f in files:
        f.close_if_unused()


atexit.register(_release_all)


def _file_for(path: Path) -> _File:
    with _FILES_GUARD:
        f = _FILES.get(path)
        if f is None:
            f = _FILES[path] = _File(path)
        return f


def _identity(path: Path) -> tuple[int, int, str] | None:
    """What "this file" means for the once-per-process caches: its device and inode (a store
    deleted and created again at the same path is a new file) and the schema folder in use."""
    try:
        st = path.stat()
    except OSError:
        return None
    from mole_dag.paths import sql_dir

    return (st.st_dev, st.st_ino, str(sql_dir()))


def utcnow() -> datetime:
    """Naive UTC: DuckDB TIMESTAMP columns carry no zone, and every writer agrees on UTC."""
    return datetime.now(UTC).replace(tzinfo=None)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _is_lock_error(exc: BaseException) -> bool:
    return "Could not set lock" in str(exc) or "Conflicting lock" in str(exc)


def _is_conflict(exc: BaseException) -> bool:
    # DuckDB reports a commit that found no room as a TransactionException too ("Failed to
    # commit: Could not write file ...: No space left on device"): not a lost race, so not
    # retried 200 times (issue 29).
    if disk_full(exc) is not None:
        return False
    return isinstance(exc, duckdb.TransactionException) or "Conflict" in str(exc)


_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class Store:
    """A handle on one DuckDB file. Thread-safe; use `write()` or `transact` for transactions.
    Holds no connection: each unit of work opens the file and closes it (see the module's
    docstring)."""

    def __new__(cls, path: str | os.PathLike[str], *args: Any, **kwargs: Any) -> Store:
        """`Store(url)` with a postgresql:// URL is the same API on Postgres (store/pg.py)."""
        if cls is Store and isinstance(path, str) and path.startswith(_POSTGRES_SCHEMES):
            try:
                from mole_dag.store.pg import PgStore  # psycopg is only needed for Postgres
            except ImportError as exc:
                raise StoreError(
                    f"a Postgres store needs the postgres extra ({exc.name} is missing): "
                    "pip install 'mole-dag[postgres]'"
                ) from None

            return super().__new__(PgStore)
        return super().__new__(cls)

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        lock_wait_s: float | None = None,
        on_wait: Callable[[str], None] | None = None,
        migrate_schema: bool = True,
        read_only: bool = False,
    ) -> None:
        """`read_only`: for commands that only read (`mole sessions`, `show`, ...). The file
        must exist (reading never creates a store), is opened read-only (so a damaged file is
        never written to), and is neither migrated nor given its views."""
        self.path = Path(path).expanduser().resolve()
        self.read_only = read_only
        self.lock_wait_s = DEFAULT_LOCK_WAIT_S if lock_wait_s is None else lock_wait_s
        self._on_wait = on_wait
        self._told = False
        self._file = _file_for(self.path)
        self._write_lock = _write_lock_for(self.path)
        # Write transactions committed through this handle (issue 12): tests hold the pipeline
        # to a budget of commits per session. Counted under the write lock, so exact across threads.
        self.commits = 0
        if read_only:
            self._check_readable()
            self._once(self._file.checked, self._check_schema)
        else:
            self._check_writable()
            if migrate_schema:
                self._once(self._file.ready, self._prepare)

    # -- opening ---------------------------------------------------------------------------

    def _check_readable(self) -> None:
        if not self.path.exists():
            raise StoreMissing(f"no store at {self.path}; run `mole research` first or pass --db")
        if self.path.is_dir():
            raise StoreError(
                f"the store {self.path} is a folder, not a DuckDB file; pass --db with a file"
            )
        # Only for readers: a writer may find the file mid-creation by another process
        # (shorter than its headers for a moment), which is not damage.
        self._file.unless_open(lambda: check_file(self.path))

    def _check_writable(self) -> None:
        parent = self.path.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the store folder {parent}: {exc.strerror}; "
                "set MOLE_DB or --db to a writable path"
            ) from None
        exists = self.path.exists()
        if not os.access(parent, os.W_OK) or (exists and not os.access(self.path, os.W_OK)):
            raise StoreError(
                f"the store {self.path} is not writable; set MOLE_DB or --db to a writable path"
            )
        # Refused before the hand-over lock file is made beside it: nothing is created next to
        # a file that is not a store. Only while this process does not have the file open:
        # reading it through a descriptor of our own and closing that would drop DuckDB's lock
        # on it (see _File.unless_open), and a file open here is a store anyway.
        if exists:
            self._file.unless_open(lambda: _refuse_if_not_duckdb(self.path))

    def _once(self, done: set[tuple[int, int, str]], fn: Callable[[], None]) -> None:
        """Run `fn` unless this process already did for this file. Under the file's write lock,
        so two threads opening their first Store on one file do not both migrate."""
        with self._write_lock:
            ident = _identity(self.path)
            if ident is not None and ident in done:
                return
            try:
                fn()
            except migrate.MigrationsMissing as exc:
                # An install without its schema files: one line naming the folder.
                raise StoreError(str(exc)) from None
            except duckdb.Error as exc:
                if _is_corruption(exc):
                    damaged = _corrupt(self.path, _one_line(exc))
                    # `fn` let go of the file before the damage was known here: close it now
                    # rather than after it lingers, so its lock file goes with it.
                    self._file.close_if_unused()
                    raise damaged from None
                raise
            ident = _identity(self.path)
            if ident is not None:
                done.add(ident)

    def _prepare(self) -> None:
        """Migrations, crash recovery and the views, with the file opened once for all three
        (held by `pin`, which the nested transactions share). Recovery before the views: its
        reads reach the ledger's rows, so a damaged store is refused before the views are
        written into it."""
        with self._use(read_only=False) as pin:
            migrate.apply(pin)
            # Crash recovery at the first writing open (issue 11): a killed process's
            # reservations are settled as assumed and its sessions marked interrupted, without
            # waiting for some later session's sweep. Imported here, not at the top: recovery
            # imports this module.
            from mole_dag.store.recovery import recover_store

            recover_store(self)
            # The dbt-style views are part of the product: every store a user opens has them.
            from mole_dag.store.models import materialize_all

            materialize_all(self)

    # What a database without the migrations table raises on this backend, and what to call it.
    _NO_TABLE: type[Exception] = duckdb.CatalogException
    _KIND = "a DuckDB file"

    def _check_schema(self) -> None:
        """A read-only open cannot migrate: say so rather than fail on a missing column."""
        try:
            have = self.scalar("SELECT coalesce(max(version), 0) FROM schema_migrations")
        except self._NO_TABLE:
            raise StoreError(
                f"{self.path} is {self._KIND} but not a mole store (it has no "
                "schema_migrations table); pass --db to use a mole store"
            ) from None
        want = max((m.version for m in migrate.discover()), default=0)
        if int(have) < want:
            raise StoreOutdated(
                f"the store {self.path} is at schema version {have}, older than "
                f"this mole's {want}; run `mole research` once to upgrade it"
            )

    def _connect(self, read_only: bool) -> duckdb.DuckDBPyConnection:
        """Open the file, waiting with backoff and jitter while another process holds it."""
        started = time.monotonic()
        deadline = started + self.lock_wait_s
        waiting = _Waiting(self.path)
        try:
            return self._connect_waiting(read_only, started, deadline, waiting)
        finally:
            waiting.done()

    def _connect_waiting(
        self, read_only: bool, started: float, deadline: float, waiting: _Waiting
    ) -> duckdb.DuckDBPyConnection:
        delay = _FIRST_DELAY_S
        waited = False
        while True:
            try:
                try:
                    # Released before the backoff below: the holder needs it to close.
                    with _handover(self.path, deadline):
                        conn = duckdb.connect(str(self.path), read_only=read_only)
                except TimeoutError:
                    raise self._busy() from None
                took = time.monotonic() - started
                _count(
                    opens=1, open_s=took, lock_waits=int(waited), waited_s=took if waited else 0.0
                )
                return conn
            except duckdb.IOException as exc:
                waited = True
                if _is_corruption(exc):
                    raise _corrupt(self.path, _one_line(exc)) from None
                if not _is_lock_error(exc):
                    raise StoreError(
                        f"cannot open the store {self.path}: {_one_line(exc)}"
                    ) from None
                waiting.touch()  # the holder releases at its next idle moment
                now = time.monotonic()
                if now >= deadline:
                    raise self._busy() from None
                if self._on_wait and not self._told and now - started >= REPORT_WAIT_AFTER_S:
                    self._on_wait(
                        f"waiting for the store {self.path}: another process is writing to it"
                    )
                    self._told = True
                time.sleep(min(delay + random.uniform(0, delay), max(0.0, deadline - now)))
                delay = min(delay * 2, _MAX_DELAY_S)
            except duckdb.Error as exc:
                if _is_corruption(exc):
                    raise _corrupt(self.path, _one_line(exc)) from None
                raise StoreError(f"cannot open the store {self.path}: {_one_line(exc)}") from None

    def _busy(self) -> StoreBusy:
        return StoreBusy(
            f"the store {self.path} is held by another process (a running session, "
            "the Dagster UI, a schedule or a SQL client) and was not released within "
            f"{self.lock_wait_s:.0f}s; try again when it finishes"
        )

    @contextmanager
    def _use(self, *, read_only: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor for one unit of work: the file is open while it is in use, and closed when
        the last user in this process is done."""
        cur = self._file.acquire(self._connect, read_only)
        try:
            yield cur
        finally:
            self._file.release(cur)

    def locked(self, sql: str, *, of: str | None = None) -> str:
        """`sql` (a SELECT inside a write transaction) locking the rows it reads, for a
        read-then-write that must not interleave with another writer's. On DuckDB the file has
        one writer at a time, so the statement is unchanged (DuckDB has no FOR UPDATE);
        Postgres adds the row locks (store/pg.py)."""
        return sql

    def seal(self, cur: duckdb.DuckDBPyConnection) -> None:
        """Shut the instance behind `cur` in (`mole sql`, issue 29): no file outside the store
        read or written (COPY TO, EXPORT, read_csv, ATTACH), no extension installed or loaded,
        and its configuration locked, so SET cannot undo that. Measured on DuckDB 2.0.1, on a
        read-only open, which alone still wrote COPY ... TO files. The settings are the whole
        instance's and cannot be reset, so it is shared with no new user and closed as soon as
        its users are done (_File.sealed); the next unit of work opens a fresh one."""
        self._file.seal()  # first: nobody joins between the settings and the mark
        for setting in ("SET enable_external_access = false", "SET lock_configuration = true"):
            # Already locked: another user of this instance sealed it a moment ago.
            with suppress(duckdb.InvalidInputException):
                cur.execute(setting)
        got = cur.execute("SELECT current_setting('enable_external_access')").fetchone()
        if got != (False,):
            raise StoreError(f"could not shut file access off on the store {self.path}")

    def close(self) -> None:
        """Release the file now if nobody in this process uses it (rather than after it has
        lingered: see LINGER_S). The Store stays usable; its next unit of work reopens."""
        self._file.close_if_unused()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions -----------------------------------------------------------------------

    def _tx_conn(self) -> duckdb.DuckDBPyConnection | None:
        return getattr(self._file.tx, "conn", None)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """The connection of this thread's open transaction. Outside one there is none to
        return (the Store keeps no cursor): use `read()`, `rows()` or `write()`."""
        conn = self._tx_conn()
        if conn is None:
            raise StoreError(
                "Store.cursor() is only valid inside write(): the store keeps no "
                "connection open; use read(), rows() or write()"
            )
        return conn

    @contextmanager
    def write(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One write transaction, serialised with every other writer in this process; the file
        is open for the transaction only. Nested on one thread: joins the outer transaction."""
        if self.read_only:
            raise StoreError(f"the store {self.path} was opened read-only")
        outer = self._tx_conn()
        if outer is not None:
            yield outer
            return
        with self._write_lock, self._use(read_only=False) as cur:
            cur.execute("BEGIN TRANSACTION")
            self._file.tx.conn = cur
            try:
                yield cur
            except BaseException:
                self._file.tx.conn = None
                with suppress(duckdb.Error):
                    cur.execute("ROLLBACK")
                raise
            self._file.tx.conn = None
            cur.execute("COMMIT")
            self.commits += 1
            _count_commit()

    # Attempts before a lost race is reported (each backs off up to 0.1 s).
    _RETRIES = 200

    @staticmethod
    def _lost_race(exc: BaseException) -> bool:
        """A DuckDB write-write conflict: another connection to the same file in this process
        wrote the row first."""
        return isinstance(exc, duckdb.Error) and _is_conflict(exc)

    # Attempts after the connection was lost before the transaction committed (Postgres: a
    # server restart). A DuckDB file has no connection to lose.
    _RECONNECTS = 0

    @staticmethod
    def _connection_lost(exc: BaseException) -> bool:
        return False

    def _reconnect_delay(self, attempt: int) -> float:
        return 0.0

    def transact(
        self, fn: Callable[[duckdb.DuckDBPyConnection], T], retries: int | None = None
    ) -> T:
        """Run `fn` in a write transaction, retrying it with backoff when another transaction
        won the row (`_lost_race`), or when the connection was lost before it committed
        (`_connection_lost`: nothing of it was written, so running it again writes it once)."""
        retries = self._RETRIES if retries is None else retries
        delay = 0.005
        raced = lost = 0
        while True:
            try:
                with self.write() as cur:
                    return fn(cur)
            except Exception as exc:
                # Inside an outer transaction a retry cannot help: the outer one is aborted.
                if self._tx_conn() is not None:
                    raise
                if self._lost_race(exc) and raced < retries:
                    raced += 1
                    time.sleep(delay + random.uniform(0, delay))
                    delay = min(delay * 2, 0.1)
                    continue
                if self._connection_lost(exc) and lost < self._RECONNECTS:
                    lost += 1
                    time.sleep(self._reconnect_delay(lost))
                    continue
                raise

    # -- reads ------------------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for several reads in a row: this thread's transaction if one is open
        (its uncommitted rows are visible), else the file opened for the block. Keep the block
        short: another process cannot write while it runs."""
        conn = self._tx_conn()
        if conn is not None:
            yield conn
            return
        with self._use(read_only=self.read_only) as cur, self._damage_reported():
            yield cur

    def rows(self, sql: str, params: Params = None) -> list[dict[str, Any]]:
        with self.read() as cur, self._damage_reported():
            res = cur.execute(sql, params) if params is not None else cur.execute(sql)
            cols = [d[0] for d in res.description or []]
            return [dict(zip(cols, r, strict=True)) for r in res.fetchall()]

    def row(self, sql: str, params: Params = None) -> dict[str, Any] | None:
        found = self.rows(sql, params)
        return found[0] if found else None

    def scalar(self, sql: str, params: Params = None) -> Any:
        """The value of a one-column query (None without a row); a query that selects several
        columns is refused rather than read by position."""
        with self.read() as cur, self._damage_reported():
            res = cur.execute(sql, params) if params is not None else cur.execute(sql)
            got = res.fetchone()
            if got is None:
                return None
            only_column(res, sql)
            (value,) = got
            return value

    @contextmanager
    def _damage_reported(self) -> Iterator[None]:
        """A block lost from the file often shows only when a query reaches it: report that as
        the damaged store it is, in one line, rather than as a query error."""
        try:
            yield
        except duckdb.Error as exc:
            if _is_corruption(exc):
                raise _corrupt(self.path, _one_line(exc)) from None
            raise

    def named(self, name: str, params: Params = None) -> list[dict[str, Any]]:
        """Rows of a named query from sql/queries/."""
        return self.rows(q(name), params)

    def one(self, cls: type[R], sql: str, params: Params = None) -> R | None:
        """The first row as a typed record (store/records.py), built from its column names;
        None when there is none. `store.one(SessionRow, q("session_get"), {...})`."""
        with self.read() as cur, self._damage_reported():
            return fetch_one(cur, cls, sql, params)

    def many(self, cls: type[R], sql: str, params: Params = None) -> list[R]:
        """Every row as a typed record, built from its column names."""
        with self.read() as cur, self._damage_reported():
            return fetch_all(cur, cls, sql, params)

    def schema_version(self) -> int:
        # A plain read: the bookkeeping table exists once the store is migrated (and a
        # read-only Store must not create it).
        got = self.scalar("SELECT coalesce(max(version), 0) FROM schema_migrations")
        return int(got or 0)

    @property
    def is_open(self) -> bool:
        """Whether this process has the file open right now (tests check it is released)."""
        return self._file.is_open()
