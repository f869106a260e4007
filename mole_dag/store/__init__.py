"""The store: a DuckDB file or a PostgreSQL database behind one interface (store/base.py),
opened with `open_store()`; migrations, named queries, typed rows."""

from mole_dag.store.base import Store, utcnow
from mole_dag.store.errors import (
    StoreBusy,
    StoreCorrupt,
    StoreError,
    StoreMissing,
    StoreOutdated,
)
from mole_dag.store.factory import open_store
from mole_dag.store.file_checks import check_target
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
    "open_store",
    "q",
    "scalar",
    "utcnow",
]
