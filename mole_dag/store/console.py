"""`mole sql`: the store's tables and views, read-only, for people who write SQL.

Why not hand the user DuckDB's own shell: a DuckDB file takes one process at a time while anyone
writes, so a shell left open at a prompt keeps a running session from writing (it waits, then
gives up after MOLE_LOCK_WAIT), and a shell started while a session writes fails at once with
"Could not set lock" (45 of ~200 connects during two sessions, issue 23). Here each statement
opens the store read-only through the Store, which waits its turn (the same handover `mole
sessions` uses), and closes it as soon as the rows are read: a prompt left open holds nothing.
The `duckdb` Python package has no shell anyway. On PostgreSQL readers never block writers,
and `psql` is the better prompt; statements here run in a read-only transaction there too."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import duckdb

from mole_dag.store.console_guard import Refused, check
from mole_dag.store.dialect import is_postgres_url
from mole_dag.store.duckdb_store import DuckDBStore
from mole_dag.store.errors import StoreError, one_line
from mole_dag.store.errors import is_corruption as is_damage

# Rows printed at most by the table format; the CSV format prints them all. A guess.
MAX_TABLE_ROWS = 1000


class QueryError(Exception):
    """The statement failed: the database's own message, in one line."""


class StatementRefused(QueryError):
    """The statement is not a read of the store (console_guard.py); nothing was opened."""


@dataclass(frozen=True)
class Result:
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]


def _is_postgres(target: str | Path) -> bool:
    return is_postgres_url(str(target))


def where(target: str | Path) -> str:
    """The store named for a message: a file's path, or a URL without user or password."""
    if not _is_postgres(target):
        return str(target)
    parts = urlsplit(str(target))
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}"


def run(
    target: str | Path,
    sql: str,
    *,
    lock_wait_s: float | None = None,
    on_wait: Callable[[str], None] | None = None,
) -> Result:
    """One statement against the store, read-only, the store released when it returns.
    `on_wait` hears that a writer holds the file (the Store says so after 2 s). A statement that
    is not a read is refused before the store is opened (StatementRefused)."""
    try:
        check(sql, postgres=_is_postgres(target))
    except Refused as exc:
        raise StatementRefused(str(exc)) from None
    if _is_postgres(target):
        return _run_postgres(str(target), sql)
    store = DuckDBStore(target, read_only=True, lock_wait_s=lock_wait_s, on_wait=on_wait)
    try:
        with store.read() as cur:
            # The second wall, should the guard and DuckDB's parser ever read a statement
            # differently: no file outside the store, no extension, no setting changed.
            store.seal(cur)
            try:
                res = cur.execute(sql)
                columns = tuple(d[0] for d in res.description or [])
                rows = res.fetchall() if columns else []
            except duckdb.Error as exc:
                if is_damage(exc):
                    raise  # the Store reports it as the damaged store it is
                raise QueryError(one_line(exc)) from None
        return Result(columns, rows)
    finally:
        store.close()


def _run_postgres(url: str, sql: str) -> Result:
    try:
        import psycopg
    except ImportError:
        raise StoreError(
            "a postgresql:// store needs the postgres extra: pip install 'mole-dag[postgres]'"
        ) from None
    try:
        # Read-only on the server's side, whatever the statement says.
        with psycopg.connect(
            url, options="-c default_transaction_read_only=on", autocommit=True
        ) as conn:
            cur = conn.execute(sql)  # the user's statement, as typed
            columns = tuple(d.name for d in cur.description or [])
            return Result(columns, cur.fetchall() if columns else [])
    except psycopg.OperationalError as exc:
        raise StoreError(one_line(exc)) from None
    except psycopg.Error as exc:
        raise QueryError(one_line(exc)) from None


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, Decimal):
        return format(value, "f")  # 0.075000, never 7.5E-2
    return " ".join(str(value).split()) if isinstance(value, str) else str(value)


def as_table(result: Result) -> str:
    """Aligned columns, numbers to the right, as a SQL shell prints them."""
    if not result.columns:
        return "ok"
    shown = result.rows[:MAX_TABLE_ROWS]
    cells = [[_cell(v) for v in row] for row in shown]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(result.columns)]
    numeric = [
        bool(shown) and all(isinstance(r[i], int | float | Decimal) or r[i] is None for r in shown)
        for i in range(len(result.columns))
    ]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ).rstrip()

    out = [line(result.columns), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    more = len(result.rows) - len(shown)
    n = len(result.rows)
    out.append(
        f"({n} row{'s' if n != 1 else ''}"
        + (f"; the first {len(shown)} shown, --csv prints all" if more else "")
        + ")"
    )
    return "\n".join(out)


def as_csv(result: Result) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(result.columns)
    for row in result.rows:
        writer.writerow("" if v is None else _cell(v) if isinstance(v, Decimal) else v for v in row)
    return buf.getvalue().rstrip("\n")


def statements(lines: Iterator[str]) -> Iterator[str]:
    """Statements from a script or a prompt: lines gathered until one ends with `;` (as psql
    reads them); what is left at the end is the last statement."""
    buf: list[str] = []
    for raw in lines:
        text = raw.rstrip("\n")
        if not buf and not text.strip():
            continue
        buf.append(text)
        if text.rstrip().endswith(";"):
            yield "\n".join(buf).strip()
            buf = []
    if buf and "\n".join(buf).strip():
        yield "\n".join(buf).strip()
