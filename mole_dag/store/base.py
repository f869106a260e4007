"""The store's interface, and the code its two backends share: transactions (begin, commit,
rollback, retry), reads (rows, scalars, typed records) and the schema check of a read-only open.

A backend (store/duckdb_store.py, store/pg.py) says how it gets a cursor for one unit of work,
which of its driver's errors mean a lost race or a lost connection, and how it commits; the SQL
that differs between the two is in store/dialect.py. Callers hold a `Store` and get one from
`open_store()` (store/factory.py), which picks the backend from the target."""

from __future__ import annotations

import random
import threading
import time
from abc import ABCMeta, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import duckdb

from mole_dag.store import migrate
from mole_dag.store.dialect import Dialect
from mole_dag.store.errors import StoreError, StoreOutdated
from mole_dag.store.queries import q
from mole_dag.store.records import Params, fetch_all, fetch_one, only_column

T = TypeVar("T")
R = TypeVar("R")

# The cursor API both backends offer: DuckDB's own, which store/pg.py's PgCursor imitates (the
# store's SQL is written once, in DuckDB's dialect).
Cursor = duckdb.DuckDBPyConnection


def utcnow() -> datetime:
    """Naive UTC: DuckDB TIMESTAMP columns carry no zone, and every writer agrees on UTC."""
    return datetime.now(UTC).replace(tzinfo=None)


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


class _Opens(ABCMeta):
    """`Store(target, ...)` is `open_store(target, ...)`: a thin alias kept because the tests
    construct stores that way in some two hundred places. The factory registers itself
    (store/factory.py), so this module does not import the backends that subclass it."""

    opener: Callable[..., Store] | None = None

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is Store:
            if _Opens.opener is None:
                raise TypeError("import mole_dag.store (it registers open_store) first")
            return _Opens.opener(*args, **kwargs)
        return super().__call__(*args, **kwargs)


class Store(metaclass=_Opens):
    """A handle on the store. Thread-safe; `write()` or `transact` for transactions, `rows`,
    `scalar`, `one`, `many`, `named` for reads. Holds no connection between units of work."""

    dialect: ClassVar[Dialect]
    # Where the store is, for messages: a file's path, or a URL without its password.
    path: Path | str
    read_only: bool
    # How long to wait for the store (another process's lock, a pooled connection).
    lock_wait_s: float
    # Write transactions committed through this handle (issue 12): tests hold the pipeline to a
    # budget of commits per session. Counted under the write lock, so exact across threads.
    commits: int

    # What a database without the migrations table raises on this backend.
    _NO_TABLE: ClassVar[type[Exception]]
    # The driver's errors, which a rollback after a failure may raise and which are ignored then.
    _DRIVER_ERROR: ClassVar[type[Exception]]
    # Attempts before a lost race is reported (each backs off up to 0.1 s).
    _RETRIES: ClassVar[int]
    # Attempts after the connection was lost before the transaction committed or a read
    # answered (Postgres: a server restart). A DuckDB file has no connection to lose.
    _RECONNECTS: ClassVar[int] = 0

    # -- what a backend provides ------------------------------------------------------------

    @abstractmethod
    def _tx(self) -> threading.local:
        """Where each thread's open transaction is kept (`.conn`), shared by every handle on
        the same database in this process, so a nested write joins the outer one."""

    @abstractmethod
    def _writers(self) -> threading.RLock:
        """The lock this process's writers on this database queue on."""

    @abstractmethod
    def _write_cursor(self) -> AbstractContextManager[Cursor]:
        """A cursor for one write transaction."""

    @abstractmethod
    def _read_cursor(self) -> AbstractContextManager[Cursor]:
        """A cursor for reads outside a transaction."""

    @staticmethod
    @abstractmethod
    def _lost_race(exc: BaseException) -> bool:
        """Another transaction won the row: running this one again can succeed."""

    @abstractmethod
    def close(self) -> None:
        """Let go of what this process holds for the store; the handle stays usable."""

    @property
    @abstractmethod
    def is_open(self) -> bool:
        """Whether this process holds the store open right now (tests check it is released)."""

    def _begin(self, cur: Cursor) -> object:
        """Open the transaction; what it returns is handed to `_commit`."""
        cur.execute(self.dialect.begin)
        return None

    def _commit(self, cur: Cursor, begun: object) -> None:
        cur.execute("COMMIT")

    @staticmethod
    def _connection_lost(exc: BaseException) -> bool:
        return False

    def _reconnect_delay(self, attempt: int) -> float:
        return 0.0

    @contextmanager
    def _damage_reported(self) -> Iterator[None]:
        """Where the backend translates an error that means the store is damaged."""
        yield

    # -- transactions -----------------------------------------------------------------------

    def _tx_conn(self) -> Cursor | None:
        return getattr(self._tx(), "conn", None)

    def cursor(self) -> Cursor:
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
    def write(self) -> Iterator[Cursor]:
        """One write transaction, serialised with every other writer in this process; the
        store is held for the transaction only. Nested on one thread: joins the outer one."""
        if self.read_only:
            raise StoreError(f"the store {self.path} was opened read-only")
        outer = self._tx_conn()
        if outer is not None:
            yield outer
            return
        tx = self._tx()
        with self._writers(), self._write_cursor() as cur:
            begun = self._begin(cur)
            tx.conn = cur
            try:
                yield cur
            except BaseException:
                tx.conn = None
                with suppress(self._DRIVER_ERROR):
                    cur.execute("ROLLBACK")
                raise
            tx.conn = None
            self._commit(cur, begun)
            self.commits += 1
            _count_commit()

    def transact(self, fn: Callable[[Cursor], T], retries: int | None = None) -> T:
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

    def locked(self, sql: str, *, of: str | None = None) -> str:
        """`sql` (a SELECT inside a write transaction) locking the rows it reads (only table
        alias `of`'s rows if given), for a read-then-write that must not interleave with another
        writer's: store/dialect.py says how, or that the backend needs no row locks."""
        return self.dialect.locked(sql, of)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reads ------------------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[Cursor]:
        """A connection for several reads in a row: this thread's transaction if one is open
        (its uncommitted rows are visible), else one for the block. Keep the block short: on
        DuckDB another process cannot write while it runs."""
        conn = self._tx_conn()
        if conn is not None:
            yield conn
            return
        with self._read_cursor() as cur:
            yield cur

    def _reading(self, fn: Callable[[], R]) -> R:
        """A read outside a transaction, run again on a new connection if the one it had was
        lost (a read has no effect to repeat)."""
        if self._RECONNECTS == 0 or self._tx_conn() is not None:
            return fn()
        lost = 0
        while True:
            try:
                return fn()
            except Exception as exc:
                if not self._connection_lost(exc) or lost >= self._RECONNECTS:
                    raise
                lost += 1
                time.sleep(self._reconnect_delay(lost))

    def rows(self, sql: str, params: Params = None) -> list[dict[str, Any]]:
        def run() -> list[dict[str, Any]]:
            with self.read() as cur, self._damage_reported():
                res = cur.execute(sql, params) if params is not None else cur.execute(sql)
                cols = [d[0] for d in res.description or []]
                return [dict(zip(cols, r, strict=True)) for r in res.fetchall()]

        return self._reading(run)

    def row(self, sql: str, params: Params = None) -> dict[str, Any] | None:
        found = self.rows(sql, params)
        return found[0] if found else None

    def scalar(self, sql: str, params: Params = None) -> Any:
        """The value of a one-column query (None without a row); a query that selects several
        columns is refused rather than read by position."""

        def run() -> Any:
            with self.read() as cur, self._damage_reported():
                res = cur.execute(sql, params) if params is not None else cur.execute(sql)
                got = res.fetchone()
                if got is None:
                    return None
                only_column(res, sql)
                (value,) = got
                return value

        return self._reading(run)

    def named(self, name: str, params: Params = None) -> list[dict[str, Any]]:
        """Rows of a named query from sql/queries/."""
        return self.rows(q(name), params)

    def one(self, cls: type[R], sql: str, params: Params = None) -> R | None:
        """The first row as a typed record (store/records.py), built from its column names;
        None when there is none. `store.one(SessionRow, q("session_get"), {...})`."""

        def run() -> R | None:
            with self.read() as cur, self._damage_reported():
                return fetch_one(cur, cls, sql, params)

        return self._reading(run)

    def many(self, cls: type[R], sql: str, params: Params = None) -> list[R]:
        """Every row as a typed record, built from its column names."""

        def run() -> list[R]:
            with self.read() as cur, self._damage_reported():
                return fetch_all(cur, cls, sql, params)

        return self._reading(run)

    def schema_version(self) -> int:
        # A plain read: the bookkeeping table exists once the store is migrated (and a
        # read-only Store must not create it).
        got = self.scalar("SELECT coalesce(max(version), 0) FROM schema_migrations")
        return int(got or 0)

    def _check_schema(self) -> None:
        """A read-only open cannot migrate: say so rather than fail on a missing column."""
        try:
            have = self.scalar("SELECT coalesce(max(version), 0) FROM schema_migrations")
        except self._NO_TABLE:
            raise StoreError(
                f"{self.path} is {self.dialect.kind} but not a mole store (it has no "
                "schema_migrations table); pass --db to use a mole store"
            ) from None
        want = max((m.version for m in migrate.discover()), default=0)
        if int(have) < want:
            raise StoreOutdated(
                f"the store {self.path} is at schema version {have}, older than "
                f"this mole's {want}; run `mole research` once to upgrade it"
            )
