"""The DuckDB store: one file, opened once per process, shared across threads.

DuckDB lets one process write a file at a time. Within a process we share one database and give
each thread its own cursor; writes are serialised by a process-wide lock, because DuckDB's
optimistic concurrency would otherwise abort one of two transactions touching the same session
row. Across processes (two `mole research` runs, the Dagster UI, the re-grounding schedule) the
file lock is waited for with backoff and jitter instead of crashing, and the waiter is told which
file it is waiting on. Opening costs tens of milliseconds (see BENCHMARKS.md), so we hold the
connection for a unit of work (a CLI command, a Dagster run) rather than per transaction."""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from mole_dag.store import migrate
from mole_dag.store.queries import q

T = TypeVar("T")
Params = Sequence[Any] | dict[str, Any] | None


class StoreError(RuntimeError):
    """The store cannot be used; the message says why and what to do."""


class StoreBusy(StoreError):
    """Another process held the store for longer than this one was willing to wait."""


class StoreMissing(StoreError):
    """A read-only open found no file: reading must never create a store."""


class StoreCorrupt(StoreError):
    """The file is there but is not a readable store (truncated, overwritten, not DuckDB)."""


def _corrupt(path: Path, why: str) -> StoreCorrupt:
    if "Could not read enough bytes" in why:
        why = f"truncated: {why}"
    return StoreCorrupt(
        f"{path} is not a readable mole store ({why}); restore it from a backup, or pass --db "
        "(or MOLE_DB) to use another store")


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


def _is_corruption(exc: BaseException) -> bool:
    """DuckDB errors that mean the file itself is damaged, not that a query was wrong."""
    text = str(exc)
    return isinstance(exc, duckdb.SerializationException) or any(
        marker in text for marker in ("Could not read enough bytes", "not a valid DuckDB",
                                      "Corrupt", "corrupt", "checksum"))


# One write lock per database file for the whole process: two Store objects on one file share
# the DuckDB instance, and their writers must queue rather than conflict.
_WRITE_LOCKS: dict[Path, threading.RLock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


# How long a process waits for another to let go of the file. A research round holds it for its
# whole run (minutes, with web fetching), so the wait is long; a guess, flagged as one, and
# overridable with MOLE_LOCK_WAIT (seconds).
DEFAULT_LOCK_WAIT_S = float(os.environ.get("MOLE_LOCK_WAIT", "1800"))


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


def utcnow() -> datetime:
    """Naive UTC: DuckDB TIMESTAMP columns carry no zone, and every writer agrees on UTC."""
    return datetime.now(UTC).replace(tzinfo=None)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _is_lock_error(exc: BaseException) -> bool:
    return "Could not set lock" in str(exc) or "Conflicting lock" in str(exc)


def _is_conflict(exc: BaseException) -> bool:
    return isinstance(exc, duckdb.TransactionException) or "Conflict" in str(exc)


class Store:
    """A handle on one DuckDB file. Thread-safe; use `write()` for transactions."""

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
        self._write_lock = _write_lock_for(self.path)
        self._local = threading.local()
        self._cursors: list[duckdb.DuckDBPyConnection] = []
        self._cursors_lock = threading.Lock()
        # Write transactions committed through this handle (issue 12): every commit will cost
        # a file open once the store is opened per transaction, so tests hold the pipeline to
        # a budget of commits per session. Counted under the write lock, so exact across threads.
        self.commits = 0
        self._conn = self._open(DEFAULT_LOCK_WAIT_S if lock_wait_s is None else lock_wait_s,
                                on_wait)
        try:
            if read_only:
                self._check_schema()
            elif migrate_schema:
                with self._write_lock:
                    migrate.apply(self._conn)
                # The dbt-style views are part of the product: every store a user opens has them.
                from mole_dag.store.models import materialize_all

                materialize_all(self)
                # Crash recovery on every writing open (issue 11): a killed process's
                # reservations are settled as assumed and its sessions marked interrupted,
                # without waiting for some later session's sweep. Imported here, not at the
                # top: budget sits above store.
                from mole_dag.budget.recovery import recover_store

                recover_store(self)
        except migrate.MigrationsMissing as exc:
            # An install without its schema files: one line naming the folder, not a traceback.
            self.close()
            raise StoreError(str(exc)) from None
        except duckdb.Error as exc:
            self.close()
            if _is_corruption(exc):
                raise _corrupt(self.path, _one_line(exc)) from None
            raise
        except BaseException:
            self.close()
            raise

    def _check_schema(self) -> None:
        """A read-only open cannot migrate: say so rather than fail on a missing column."""
        try:
            have = self.scalar("SELECT coalesce(max(version), 0) FROM schema_migrations")
        except duckdb.CatalogException:
            raise StoreError(f"{self.path} is a DuckDB file but not a mole store (it has no "
                             "schema_migrations table); pass --db to use a mole store") from None
        want = max((m.version for m in migrate.discover()), default=0)
        if int(have) < want:
            raise StoreError(f"the store {self.path} is at schema version {have}, older than "
                             f"this mole's {want}; run `mole research` once to upgrade it")

    # -- opening ---------------------------------------------------------------------------

    def _open(
        self, lock_wait_s: float, on_wait: Callable[[str], None] | None
    ) -> duckdb.DuckDBPyConnection:
        if self.read_only:
            if not self.path.exists():
                raise StoreMissing(f"no store at {self.path}; run `mole research` first or pass "
                                   "--db")
            if self.path.is_dir():
                raise StoreError(f"the store {self.path} is a folder, not a DuckDB file; pass "
                                 "--db with a file")
            # Only for readers: a writer may find the file mid-creation by another process
            # (shorter than its headers for a moment), which is not damage.
            check_file(self.path)
            return self._connect(lock_wait_s, on_wait, read_only=True)
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
        return self._connect(lock_wait_s, on_wait, read_only=False)

    def _connect(
        self, lock_wait_s: float, on_wait: Callable[[str], None] | None, *, read_only: bool
    ) -> duckdb.DuckDBPyConnection:
        deadline = time.monotonic() + lock_wait_s
        delay = 0.05
        told = False
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=read_only)
            except duckdb.IOException as exc:
                if _is_corruption(exc):
                    raise _corrupt(self.path, _one_line(exc)) from None
                if not _is_lock_error(exc):
                    raise StoreError(
                        f"cannot open the store {self.path}: {_one_line(exc)}") from None
                if time.monotonic() >= deadline:
                    raise StoreBusy(
                        f"the store {self.path} is held by another process (a running session, "
                        "the Dagster UI or a schedule) and was not released within "
                        f"{lock_wait_s:.0f}s; "
                        "try again when it finishes"
                    ) from None
                if on_wait and not told:
                    on_wait(f"waiting for the store {self.path}: another process is writing to it")
                    told = True
                time.sleep(delay + random.uniform(0, delay))
                delay = min(delay * 2, 2.0)
            except duckdb.Error as exc:
                if _is_corruption(exc):
                    raise _corrupt(self.path, _one_line(exc)) from None
                raise StoreError(f"cannot open the store {self.path}: {_one_line(exc)}") from None

    def close(self) -> None:
        with self._cursors_lock:
            for cur in self._cursors:
                with suppress(duckdb.Error):
                    cur.close()
            self._cursors.clear()
        with suppress(duckdb.Error):
            self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- cursors and transactions -----------------------------------------------------------

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor (DuckDB connections are not safe to share across threads)."""
        cur = getattr(self._local, "cursor", None)
        if cur is None:
            cur = self._conn.cursor()
            self._local.cursor = cur
            with self._cursors_lock:
                self._cursors.append(cur)
        return cur

    @contextmanager
    def write(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One write transaction, serialised with every other writer in this process."""
        with self._write_lock:
            cur = self.cursor()
            if getattr(self._local, "in_tx", False):
                # Nested: join the outer transaction.
                yield cur
                return
            cur.execute("BEGIN TRANSACTION")
            self._local.in_tx = True
            try:
                yield cur
            except BaseException:
                self._local.in_tx = False
                with suppress(duckdb.Error):
                    cur.execute("ROLLBACK")
                raise
            else:
                self._local.in_tx = False
                cur.execute("COMMIT")
                self.commits += 1
                _count_commit()

    def transact(self, fn: Callable[[duckdb.DuckDBPyConnection], T], retries: int = 200) -> T:
        """Run `fn` in a write transaction, retrying DuckDB write-write conflicts (another
        connection to the same file in this process) with backoff."""
        delay = 0.005
        for attempt in range(retries + 1):
            try:
                with self.write() as cur:
                    return fn(cur)
            except duckdb.Error as exc:
                if not _is_conflict(exc) or attempt == retries:
                    raise
                time.sleep(delay + random.uniform(0, delay))
                delay = min(delay * 2, 0.1)
        raise AssertionError("unreachable")

    # -- reads ------------------------------------------------------------------------------

    def rows(self, sql: str, params: Params = None) -> list[dict[str, Any]]:
        cur = self.cursor()
        with self._damage_reported():
            res = cur.execute(sql, params) if params is not None else cur.execute(sql)
            cols = [d[0] for d in res.description or []]
            return [dict(zip(cols, r, strict=True)) for r in res.fetchall()]

    def row(self, sql: str, params: Params = None) -> dict[str, Any] | None:
        found = self.rows(sql, params)
        return found[0] if found else None

    def scalar(self, sql: str, params: Params = None) -> Any:
        cur = self.cursor()
        with self._damage_reported():
            res = cur.execute(sql, params) if params is not None else cur.execute(sql)
            got = res.fetchone()
            return got[0] if got else None

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

    def schema_version(self) -> int:
        return migrate.current_version(self.cursor())
