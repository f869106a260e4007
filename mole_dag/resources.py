"""The Dagster resources that wrap the library: the store, and the budget bound to it.

The library's one Dagster module (cli/, a front door like assets/, imports Dagster too, lazily,
to run the asset jobs and find the project's instance). The store resource holds no connection: like
dagster-duckdb's DuckDBResource (a connection per `get_connection()` use), the Store opens the
file for each transaction or read and closes it, so a run holds the file lock only while it
writes, and readers (`mole sessions`, a SQL client, the sensor) get in between. DuckDBResource
itself is not used: it always opens read-write (a reader would take the writer's lock), retries
a held file ten times silently instead of waiting MOLE_LOCK_WAIT and saying so, and adds a
connection option that DuckDB counts as a different configuration, so its connections and the
Store's cannot be open in one process at once."""

import logging
from collections.abc import Callable

import dagster as dg
from pydantic import PrivateAttr

from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.paths import default_store_path
from mole_dag.skillsets import skills_for
from mole_dag.store import Store, open_store, q
from mole_dag.store.records import SessionRow

progress_log = logging.getLogger("mole.progress")


class StoreResource(dg.ConfigurableResource):
    """The store: a DuckDB file or a postgresql:// URL. Empty `database` means $MOLE_DB, else
    `.mole/mole.duckdb`, resolved when the run starts (so no machine path, and no database
    password, is baked into the definitions or a run's config)."""

    database: str = ""
    # None: the store's default (MOLE_LOCK_WAIT, else 30 minutes).
    lock_wait_s: float | None = None

    _store: Store | None = PrivateAttr(default=None)

    @property
    def path(self) -> str:
        return self.database or str(default_store_path())

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        # Cheap after the first run in a process: the Store opens nothing until it is used, and
        # checks migrations and views once per process per file.
        log = context.log
        self._store = open_store(
            self.path, lock_wait_s=self.lock_wait_s, on_wait=(log.info if log else None)
        )

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        self._store = None

    @property
    def store(self) -> Store:
        if self._store is None:  # used outside a run (tests, scripts)
            self._store = open_store(self.path, lock_wait_s=self.lock_wait_s)
        return self._store


class BudgetResource(dg.ConfigurableResource):
    """The ledger, bound to the same store every asset writes to: every paid call inside an
    asset reserves through this before dispatch and settles after."""

    store: dg.ResourceDependency[StoreResource]

    @property
    def ledger(self) -> Ledger:
        return Ledger(self.store.store)


def make_run(
    store: StoreResource, budget: BudgetResource, session_id: str, log: Callable[[str], None]
) -> Run:
    row = store.store.one(SessionRow, q("session_get"), {"session_id": session_id})
    provider = row.provider if row else None

    def progress(message: str) -> None:
        log(message)
        progress_log.info(message)

    return Run(store.store, budget.ledger, skills_for(provider), session_id, progress)
