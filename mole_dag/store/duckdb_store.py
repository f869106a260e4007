"""The store on a DuckDB file: one file, opened only for a unit of work (a transaction or a read).

DuckDB lets one process write a file at a time, and a process that keeps the file open keeps
every other process out, readers included. A research round used to hold it for its whole run
(issue 12: readers waited up to 65 s, a read-only DuckDB client failed at once, two sessions ran
one after the other), so a Store now keeps no connection between units of work: `write()`,
`transact`, `rows`, `row`, `scalar`, `named` open the file, do the work and close it, and other
processes get in between. Opening costs tens of milliseconds (see BENCHMARKS.md); paid calls
take seconds, so that is the price of sharing the file.

Within a process, threads share one DuckDB instance while any of them uses it
(store/shared_file.py). Across processes the file lock is waited for with backoff and jitter,
and each open and close holds the hand-over lock (store/file_lock.py). Migrations, views and
crash recovery run once per process per file, not at every open."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import ClassVar

import duckdb

from mole_dag.store import file_lock, migrate, prepare
from mole_dag.store.base import Store
from mole_dag.store.dialect import DUCKDB, Dialect
from mole_dag.store.errors import (
    StoreError,
    StoreMissing,
    is_conflict,
    is_corruption,
    one_line,
)
from mole_dag.store.file_checks import check_file, refuse_if_not_duckdb
from mole_dag.store.shared_file import file_for, identity, write_lock_for


class DuckDBStore(Store):
    """A handle on one DuckDB file. Holds no connection: each unit of work opens the file and
    closes it (see the module's docstring)."""

    dialect: ClassVar[Dialect] = DUCKDB
    path: Path
    _NO_TABLE = duckdb.CatalogException
    _DRIVER_ERROR = duckdb.Error
    _RETRIES = 200

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
        self.lock_wait_s = file_lock.DEFAULT_LOCK_WAIT_S if lock_wait_s is None else lock_wait_s
        self._on_wait = on_wait
        self._told = False
        self._file = file_for(self.path)
        self._write_lock = write_lock_for(self.path)
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
        # on it (see SharedFile.unless_open), and a file open here is a store anyway.
        if exists:
            self._file.unless_open(lambda: refuse_if_not_duckdb(self.path))

    def _once(self, done: set[tuple[int, int, str]], fn: Callable[[], None]) -> None:
        """Run `fn` unless this process already did for this file. Under the file's write lock,
        so two threads opening their first Store on one file do not both migrate."""
        with self._write_lock:
            ident = identity(self.path)
            if ident is not None and ident in done:
                return
            try:
                fn()
            except migrate.MigrationsMissing as exc:
                # An install without its schema files: one line naming the folder.
                raise StoreError(str(exc)) from None
            except duckdb.Error as exc:
                if is_corruption(exc):
                    damaged = file_lock.corrupt(self.path, one_line(exc))
                    # `fn` let go of the file before the damage was known here: close it now
                    # rather than after it lingers, so its lock file goes with it.
                    self._file.close_if_unused()
                    raise damaged from None
                raise
            ident = identity(self.path)
            if ident is not None:
                done.add(ident)

    def _prepare(self) -> None:
        """Migrations, crash recovery and the views (store/prepare.py), with the file opened
        once for all three (held by `pin`, which the nested transactions share)."""
        with self._use(read_only=False) as pin:
            prepare.prepare(self, pin)

    def _connect(self, read_only: bool) -> duckdb.DuckDBPyConnection:
        """Open the file, waiting with backoff and jitter while another process holds it."""
        heard = self._heard_wait if self._on_wait else None
        return file_lock.connect(self.path, read_only, self.lock_wait_s, heard)

    def _heard_wait(self, message: str) -> None:
        """A long wait for another process, said once per handle."""
        if self._on_wait and not self._told:
            self._on_wait(message)
            self._told = True

    @contextmanager
    def _use(self, *, read_only: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor for one unit of work: the file is open while it is in use, and closed when
        the last user in this process is done."""
        cur = self._file.acquire(self._connect, read_only)
        try:
            yield cur
        finally:
            self._file.release(cur)

    def seal(self, cur: duckdb.DuckDBPyConnection) -> None:
        """Shut the instance behind `cur` in (`mole sql`, issue 29): no file outside the store
        read or written (COPY TO, EXPORT, read_csv, ATTACH), no extension installed or loaded,
        and its configuration locked, so SET cannot undo that. Measured on DuckDB 2.0.1, on a
        read-only open, which alone still wrote COPY ... TO files. The settings are the whole
        instance's and cannot be reset, so it is shared with no new user and closed as soon as
        its users are done (SharedFile.sealed); the next unit of work opens a fresh one."""
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
        lingered: see shared_file.LINGER_S). The Store stays usable; its next unit of work
        reopens."""
        self._file.close_if_unused()

    @property
    def is_open(self) -> bool:
        """Whether this process has the file open right now (tests check it is released)."""
        return self._file.is_open()

    # -- what the shared transaction code needs (store/base.py) -----------------------------

    def _tx(self) -> threading.local:
        return self._file.tx

    def _writers(self) -> threading.RLock:
        return self._write_lock

    def _write_cursor(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        return self._use(read_only=False)

    @contextmanager
    def _read_cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._use(read_only=self.read_only) as cur, self._damage_reported():
            yield cur

    @staticmethod
    def _lost_race(exc: BaseException) -> bool:
        """A DuckDB write-write conflict: another connection to the same file in this process
        wrote the row first."""
        return isinstance(exc, duckdb.Error) and is_conflict(exc)

    @contextmanager
    def _damage_reported(self) -> Iterator[None]:
        """A block lost from the file often shows only when a query reaches it: report that as
        the damaged store it is, in one line, rather than as a query error."""
        try:
            yield
        except duckdb.Error as exc:
            if is_corruption(exc):
                raise file_lock.corrupt(self.path, one_line(exc)) from None
            raise
