"""Ordered, idempotent schema migrations from sql/migrations/NNNN_name.sql.

Each file runs once, inside one transaction together with the row that records it, so a
failed migration leaves the schema at the previous version rather than half-applied."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from mole_dag.paths import sql_dir
from mole_dag.store.records import column, scalar

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


class MigrationsMissing(FileNotFoundError):
    """The migrations folder is absent or empty. Never read as "schema version 0": a store
    opened without its schema fails later, far from the cause (a named query that is not
    there), so the missing folder is named here instead."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path


def discover(directory: Path | None = None) -> list[Migration]:
    directory = directory or sql_dir() / "migrations"
    if not directory.is_dir():
        raise MigrationsMissing(
            f"no migrations folder at {directory}: the store's schema "
            "cannot be created (set MOLE_SQL_DIR, or reinstall mole)"
        )
    found: list[Migration] = []
    for path in sorted(directory.glob("*.sql")):
        m = _FILE.match(path.name)
        if not m:
            raise ValueError(f"{path}: migration files are named NNNN_name.sql")
        found.append(Migration(int(m.group(1)), m.group(2), path))
    if not found:
        raise MigrationsMissing(
            f"no NNNN_name.sql migrations in {directory}: the store's schema cannot be created"
        )
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise ValueError(f"{directory}: two migrations share a version number")
    return found


def current_version(conn: duckdb.DuckDBPyConnection) -> int:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
    )
    return scalar(conn, int, "SELECT coalesce(max(version), 0) FROM schema_migrations") or 0


def applied_versions(conn: duckdb.DuckDBPyConnection) -> set[int]:
    current_version(conn)  # creates the bookkeeping table if missing
    return set(column(conn, int, "SELECT version FROM schema_migrations"))


def apply(conn: duckdb.DuckDBPyConnection, directory: Path | None = None) -> list[int]:
    """Apply, in order, every migration not yet recorded; return the versions applied. By set
    rather than by "newer than the maximum", so a migration merged in with a lower number than
    one already applied still runs."""
    applied: list[int] = []
    have = applied_versions(conn)
    for mig in discover(directory):
        if mig.version in have:
            continue
        sql = mig.path.read_text(encoding="utf-8")
        conn.execute("BEGIN TRANSACTION")
        try:
            conn.execute(sql)
            conn.execute(
                "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                [mig.version, mig.name, datetime.now(UTC).replace(tzinfo=None)],
            )
            conn.execute("COMMIT")
        except Exception:
            conn.execute("ROLLBACK")
            raise
        applied.append(mig.version)
    return applied
