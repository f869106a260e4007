"""What a writing open does to a store once per process: migrate its schema, recover what a
killed process left (store/recovery.py), and (re)create its views (store/models.py). In that
order: recovery's reads reach the ledger's rows, so a damaged store is refused before the views
are written into it. Each backend decides when and under which lock this runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mole_dag.store import migrate, models, recovery

if TYPE_CHECKING:
    from mole_dag.store.base import Cursor, Store


def prepare(store: Store, cur: Cursor) -> None:
    """Migrations on `cur` (a connection the backend holds for the whole preparation), then
    crash recovery and the views through `store`."""
    migrate.apply(cur)
    # Crash recovery at the first writing open (issue 11): a killed process's reservations are
    # settled as assumed and its sessions marked interrupted, without waiting for some later
    # session's sweep.
    recovery.recover_store(store)
    # The dbt-style views are part of the product: every store a user opens has them.
    models.materialize_all(store)
