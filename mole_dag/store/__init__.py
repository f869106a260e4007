"""The DuckDB store: connection, migrations, named queries, typed rows."""

from mole_dag.store.db import (
    Store,
    StoreBusy,
    StoreCorrupt,
    StoreError,
    StoreMissing,
    StoreOutdated,
    check_target,
    utcnow,
)
from mole_dag.store.queries import q
from mole_dag.store.records import MissingColumn, column, fetch_all, fetch_one, scalar

__all__ = [
    "MissingColumn",
    "Store",
    "StoreBusy",
    "StoreCorrupt",
    "StoreError",
    "StoreMissing",
    "StoreOutdated",
    "check_target",
    "column",
    "fetch_all",
    "fetch_one",
    "q",
    "scalar",
    "utcnow",
]
