"""The store on PostgreSQL: the same schema, queries, views and Store API as the DuckDB file,
for a team that outgrew one machine (issue 14). Selected by a URL: `MOLE_DB=postgresql://…` or
`--db postgresql://…`.

sql/ stays the one source of truth, written in DuckDB's dialect; every statement reaches Postgres
through `dialect.to_postgres` (sqlglot plus a few rewrites), on a cursor that behaves like
DuckDB's where the code relies on it (a DML statement's affected-row count is its one-row
result). Connections come from a psycopg pool per URL per process. Postgres has no file lock:
workers on different machines write at once, so the few read-then-write transactions of the
ledger lock the rows they read (`Store.locked`, SELECT … FOR UPDATE), and the check-and-hold of
a reservation stays one conditional UPDATE, which Postgres re-evaluates on the row it locked.
Within one process writers still queue on one lock, as on DuckDB: the pipeline's threads were
written for a single writer, and a stage's transactions are short. The transaction and read
code is shared with the DuckDB store (store/base.py); this module says how a connection is had,
which errors mean a lost race or a lost connection, and how a commit whose answer was lost is
resolved."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from decimal import Decimal
from typing import Any, ClassVar, cast
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg_errors
from psycopg.types.numeric import NumericLoader
from psycopg.types.string import StrDumper
from psycopg_pool import ConnectionPool, PoolTimeout

from mole_dag.store import prepare
from mole_dag.store.base import Cursor, Store
from mole_dag.store.dialect import POSTGRES, Dialect, DialectError, to_postgres
from mole_dag.store.errors import StoreBusy, StoreError, StoreUnreachable, one_line
from mole_dag.store.records import Params, scalar

# Connections per URL per process. A run's stages use a handful of threads; more connections
# than that only queue on the process's write lock. A guess, flagged as one.
POOL_MAX = 8
# Advisory lock key for schema work (migrations, views, recovery): two processes opening a new
# database at once must not both migrate it. Any constant unique to mole will do.
_SCHEMA_LOCK_KEY = 0x6D6F6C65  # "mole"


def redact(url: str) -> str:
    """The URL without its password, for messages: secrets never reach logs or reports."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment))


class _Numbers(NumericLoader):
    """NUMERIC as DuckDB returns the same expression: `sum(bigint)` is an int there (HUGEINT),
    `avg` a float. Postgres widens both to NUMERIC, which psycopg would load as Decimal."""

    def load(self, data: Any) -> Any:
        value = super().load(data)
        if isinstance(value, Decimal):
            return int(value) if value == value.to_integral_value() else float(value)
        return value


def _configure(conn: psycopg.Connection[Any]) -> None:
    conn.adapters.register_loader("numeric", _Numbers)
    # Strings as text, not "unknown": DuckDB types `unnest($ids)` from the list it is given,
    # Postgres cannot choose among unnest's overloads for an array of unknown.
    conn.adapters.register_dumper(str, StrDumper)


_COUNT_DESCRIPTION = [("Count", None, None, None, None, None, None)]


class PgCursor:
    """A psycopg cursor that takes the store's SQL as DuckDB's cursor does: DuckDB's dialect,
    `?` and `$name` parameters, several statements in one string (migrations), and a DML
    statement answers with its affected-row count as a one-row result."""

    dialect = "postgres"

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn
        self._cur = conn.cursor()
        self._count: list[tuple[int]] | None = None

    def execute(self, sql: str, params: Params = None) -> PgCursor:
        stmts = to_postgres(sql)
        if len(stmts) > 1 and params is not None:
            raise DialectError("parameters are for one statement; split the SQL")
        self._count = None
        for stmt in stmts:
            self._cur.execute(stmt, params if params is not None else None)
        if stmts and self._cur.description is None:
            self._count = [(max(self._cur.rowcount, 0),)]
        return self

    @property
    def description(self) -> Sequence[Any] | None:
        if self._count is not None:
            return _COUNT_DESCRIPTION
        return self._cur.description

    @property
    def rowcount(self) -> int:
        return self._cur.rowcount

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._count is not None:
            rows, self._count = self._count, []
            return rows[0] if rows else None
        return self._cur.fetchone()

    def fetchall(self) -> list[tuple[Any, ...]]:
        if self._count is not None:
            rows, self._count = self._count, []
            return list(rows)
        return self._cur.fetchall()

    def close(self) -> None:
        with suppress(psycopg.Error):
            self._cur.close()


class _Database:
    """This process's use of one Postgres database: its pool, its writers' lock, the
    transaction each thread has open, and whether the schema was prepared."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.pool: ConnectionPool | None = None
        self.guard = threading.Lock()
        self.write_lock = threading.RLock()
        self.tx = threading.local()
        self.prepared = False
        self.checked = False

    def get_pool(self, timeout_s: float) -> ConnectionPool:
        with self.guard:
            if self.pool is None:
                # One direct connection first: a server that is down or a wrong password fails
                # here at once with the server's reason, where the pool would retry silently
                # until its timeout.
                psycopg.connect(self.url, connect_timeout=max(2, int(timeout_s))).close()
                self.pool = ConnectionPool(
                    self.url,
                    min_size=0,
                    max_size=POOL_MAX,
                    kwargs={"autocommit": True},
                    configure=_configure,
                    # Checked before it is handed out: after a server restart the idle
                    # connections are dead, and the first statement on one failed the session
                    # (issue 22). A dead one is dropped and another made.
                    check=ConnectionPool.check_connection,
                    timeout=timeout_s,
                    open=True,
                    name="mole-store",
                )
            return self.pool

    def close(self) -> None:
        with self.guard:
            pool, self.pool = self.pool, None
        if pool is not None:
            pool.close()


_DATABASES: dict[str, _Database] = {}
_DATABASES_GUARD = threading.Lock()


def _database_for(url: str) -> _Database:
    with _DATABASES_GUARD:
        db = _DATABASES.get(url)
        if db is None:
            db = _DATABASES[url] = _Database(url)
        return db


def close_url(url: str) -> None:
    """Close this process's pool on `url` (before its database is dropped)."""
    with _DATABASES_GUARD:
        db = _DATABASES.pop(url, None)
    if db is not None:
        db.close()


def close_all() -> None:
    """Close every pool of this process (tests that drop their database call it first)."""
    with _DATABASES_GUARD:
        dbs = list(_DATABASES.values())
        _DATABASES.clear()
    for db in dbs:
        db.close()


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, pg_errors.SerializationFailure | pg_errors.DeadlockDetected)


# SQLSTATEs that mean the server went away, not that the statement was wrong: the connection
# exceptions (class 08) and the server shutting down or not yet accepting connections. A
# client-side failure ("server closed the connection unexpectedly") carries no SQLSTATE.
_GONE_STATES = ("57P01", "57P02", "57P03")


def _connection_lost(exc: BaseException) -> bool:
    if isinstance(exc, StoreUnreachable):
        return True
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = getattr(exc, "sqlstate", None)
    return state is None or state.startswith("08") or state in _GONE_STATES


class PgStore(Store):
    """The Store API on a Postgres database. Built by `open_store(url)` for a postgresql:// URL."""

    dialect: ClassVar[Dialect] = POSTGRES
    path: str
    _NO_TABLE = pg_errors.UndefinedTable
    _DRIVER_ERROR = psycopg.Error
    # Serialization failures and deadlocks: another machine's transaction won the row.
    _RETRIES = 50
    # A lost connection (a server restart, a network blip): the pool hands out only checked
    # connections, so a retry waits for the server (up to lock_wait_s per attempt) and runs on a
    # new one. Bounded: about 20 s of backoff over the attempts, beside the pool's own wait.
    _RECONNECTS = 8

    def __init__(
        self,
        path: str,
        *,
        lock_wait_s: float | None = None,
        on_wait: Callable[[str], None] | None = None,
        migrate_schema: bool = True,
        read_only: bool = False,
    ) -> None:
        self.url = str(path)
        self.path = redact(self.url)  # shown in messages, no password
        self.read_only = read_only
        # How long to wait for a pooled connection (the server down, or every connection busy).
        self.lock_wait_s = 30.0 if lock_wait_s is None else max(lock_wait_s, 1.0)
        self._on_wait = on_wait
        self._db = _database_for(self.url)
        self.commits = 0
        if read_only:
            self._once_schema(check_only=True)
        elif migrate_schema:
            self._once_schema(check_only=False)

    # -- schema ------------------------------------------------------------------------------

    def _once_schema(self, *, check_only: bool) -> None:
        with self._db.write_lock:
            if self._db.prepared or (check_only and self._db.checked):
                return
            if check_only:
                # A reader (`mole sessions`, `mole show`) that cannot reach the server at all says
                # so at once: the reads below retry a lost connection for about 20 s, which is
                # for a server restarting under a running session, not one that is not there.
                with self._connection():
                    pass
                self._check_schema()
                self._db.checked = True
                return
            with self._connection() as conn:
                cur = PgCursor(conn)
                # Session-level advisory lock, held on this connection while the schema, crash
                # recovery and the views are done (the last two on other pooled connections):
                # another process preparing the same database waits here instead of racing it
                # to CREATE TABLE or CREATE OR REPLACE VIEW (both fail when two run at once).
                cur.execute(f"SELECT pg_advisory_lock({_SCHEMA_LOCK_KEY})")
                try:
                    prepare.prepare(self, cast(Cursor, cur))
                finally:
                    cur.execute(f"SELECT pg_advisory_unlock({_SCHEMA_LOCK_KEY})")
            self._db.prepared = True

    # -- connections -------------------------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection. Only failing to get one is reported as the store being
        unusable; errors of the statements run on it (a deadlock, a serialization failure)
        reach the caller as they are, so `transact` can retry them."""
        try:
            pool = self._db.get_pool(self.lock_wait_s)
            conn = pool.getconn(timeout=self.lock_wait_s)
        except PoolTimeout:
            raise StoreBusy(
                f"cannot get a connection to the store {self.path} within "
                f"{self.lock_wait_s:.0f}s (server down or every connection busy); check MOLE_DB"
            ) from None
        except psycopg.OperationalError as exc:
            raise StoreUnreachable(
                f"cannot use the store {self.path}: {one_line(exc)}; check the server, or "
                "MOLE_DB / --db"
            ) from None
        try:
            yield conn
        finally:
            pool.putconn(conn)  # the pool rolls back whatever a failure left open

    def close(self) -> None:
        """Pooled connections stay for the next unit of work; nothing to release."""

    @property
    def is_open(self) -> bool:
        return self._tx_conn() is not None

    # -- what the shared transaction code needs (store/base.py) -----------------------------
    # Writes are serialised with this process's other writers (as on DuckDB); writers of other
    # processes run at once, kept apart by row locks (Store.locked).

    def _tx(self) -> threading.local:
        return self._db.tx

    def _writers(self) -> threading.RLock:
        return self._db.write_lock

    @contextmanager
    def _write_cursor(self) -> Iterator[Cursor]:
        with self._connection() as conn:
            yield cast(Cursor, PgCursor(conn))

    @contextmanager
    def _read_cursor(self) -> Iterator[Cursor]:
        with self._connection() as conn:
            pc = PgCursor(conn)
            try:
                yield cast(Cursor, pc)
            finally:
                pc.close()

    def _begin(self, cur: Cursor) -> object:
        """BEGIN, then the transaction's id, before any work: if the connection is lost while
        it commits, the server can still say whether it did (_commit_outcome)."""
        cur.execute(self.dialect.begin)
        return scalar(cur, int, "SELECT txid_current()")

    def _commit(self, cur: Cursor, begun: object) -> None:
        try:
            cur.execute("COMMIT")
        except psycopg.Error as exc:
            if not _connection_lost(exc):
                raise
            # The COMMIT was sent and its answer lost: the work may be written or not.
            # Running it again could write it twice, so ask the server which it was.
            outcome = self._commit_outcome(begun) if isinstance(begun, int) else None
            if outcome == "aborted":
                raise  # nothing was written: transact runs it again
            if outcome != "committed":
                raise StoreError(
                    f"the connection to the store {self.path} was lost while a "
                    "transaction committed, and whether it did could not be learned "
                    f"({outcome or 'the server did not answer'}); check the server, then "
                    "`mole resume` the session"
                ) from None

    def _commit_outcome(self, txid: int) -> str | None:
        """What became of transaction `txid` ('committed', 'aborted'), asked on a connection
        of its own while the server comes back; None if it cannot be learned in time."""
        deadline = time.monotonic() + self.lock_wait_s
        delay = 0.1
        while True:
            with suppress(psycopg.OperationalError):
                with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
                    cur = cast(Cursor, PgCursor(conn))
                    sql = "SELECT txid_status($txid)"
                    status = scalar(cur, str, sql, {"txid": txid})
                if status != "in progress":  # its backend has not yet noticed it is gone
                    return status
            if time.monotonic() + delay > deadline:
                return None
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    @staticmethod
    def _lost_race(exc: BaseException) -> bool:
        return _is_retryable(exc)

    @staticmethod
    def _connection_lost(exc: BaseException) -> bool:
        return _connection_lost(exc)

    def _reconnect_delay(self, attempt: int) -> float:
        return float(min(0.2 * 2 ** (attempt - 1), 5.0))
