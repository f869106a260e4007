"""The DuckDB store: connection, migrations, named queries."""

from mole_dag.store.db import Store, StoreBusy, StoreCorrupt, StoreError, StoreMissing, utcnow
from mole_dag.store.queries import q

__all__ = ["Store", "StoreBusy", "StoreCorrupt", "StoreError", "StoreMissing", "q", "utcnow"]
