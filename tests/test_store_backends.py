"""The store's two backends sit side by side behind one interface (issue 34): neither subclasses
the other, and the transaction code is written once, in the interface. (No loop among the
store's modules: tests/test_import_cycles.py; no module over 600 lines:
tests/test_module_size.py.)"""

from __future__ import annotations

import pytest


def test_the_two_backends_share_the_interface_and_neither_subclasses_the_other() -> None:
    pytest.importorskip("psycopg")
    from mole_dag.store import Store
    from mole_dag.store.duckdb_store import DuckDBStore
    from mole_dag.store.pg import PgStore

    assert issubclass(DuckDBStore, Store) and issubclass(PgStore, Store)
    assert not issubclass(PgStore, DuckDBStore) and not issubclass(DuckDBStore, PgStore)
    # The transaction code is written once, in the interface, not again in a backend.
    for name in ("write", "transact", "read", "rows", "scalar", "one", "many", "cursor"):
        assert name not in vars(DuckDBStore) and name not in vars(PgStore), name
