"""What differs between the store's two backends, for tests that run on both (issue 14)."""

from __future__ import annotations

import duckdb

try:
    from psycopg.errors import IntegrityError as _PgIntegrityError
except ImportError:  # a machine without the Postgres extra: only DuckDB's errors exist
    _PgIntegrityError = duckdb.ConstraintException  # type: ignore[assignment,misc]

# A CHECK, NOT NULL or UNIQUE constraint refused a row, on either backend.
CONSTRAINT_ERRORS: tuple[type[Exception], ...] = (duckdb.ConstraintException, _PgIntegrityError)
