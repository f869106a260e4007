"""`open_store(target)`: the one way to get a Store. A postgresql:// URL opens the PostgreSQL
backend (store/pg.py, which needs the postgres extra); anything else is a DuckDB file."""

from __future__ import annotations

import os
from collections.abc import Callable

from mole_dag.store.base import Store, _Opens
from mole_dag.store.dialect import is_postgres_url
from mole_dag.store.duckdb_store import DuckDBStore
from mole_dag.store.errors import StoreError


def open_store(
    target: str | os.PathLike[str],
    *,
    lock_wait_s: float | None = None,
    on_wait: Callable[[str], None] | None = None,
    migrate_schema: bool = True,
    read_only: bool = False,
) -> Store:
    """The store at `target` (a file path, or a postgresql:// URL). A writing open migrates the
    schema, recovers what a killed process left and creates the views, once per process;
    `read_only` opens an existing store without changing it (reading never creates one).
    `on_wait` hears a long wait for another process (DuckDB's file lock)."""
    if is_postgres_url(target):
        try:
            from mole_dag.store.pg import PgStore  # psycopg is only needed for Postgres
        except ImportError as exc:
            raise StoreError(
                f"a Postgres store needs the postgres extra ({exc.name} is missing): "
                "pip install 'mole-dag[postgres]'"
            ) from None
        return PgStore(
            str(target),
            lock_wait_s=lock_wait_s,
            on_wait=on_wait,
            migrate_schema=migrate_schema,
            read_only=read_only,
        )
    return DuckDBStore(
        target,
        lock_wait_s=lock_wait_s,
        on_wait=on_wait,
        migrate_schema=migrate_schema,
        read_only=read_only,
    )


# `Store(target, ...)` stays a thin alias of this for the tests that construct stores so.
_Opens.opener = open_store
