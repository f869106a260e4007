"""The DuckDB store: connection, migrations, named queries."""

from mole_dag.store.db import Store, StoreError, utcnow
from mole_dag.store.queries import q

__all__ = ["Store", "StoreError", "q", "utcnow"]
