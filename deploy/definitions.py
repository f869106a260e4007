"""The project's definitions (assets/definitions.py) with the scale-out executor: every step of
every run is a task on the dask cluster at $MOLE_DASK_SCHEDULER, so the steps of several runs
(several sessions, the re-grounding schedule) execute at once on the cluster's workers.

The store must be one that many processes on many machines can write at once: MOLE_DB set to a
postgresql:// URL in the environment of the run processes and of every dask worker. A DuckDB
file takes one writer at a time (and lives on one machine), so this profile is not for it."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from assets.definitions import build_definitions
from deploy.executor import mole_dask_executor

DAGSTER_PG_ENV = "MOLE_DAGSTER_PG_URL"
# dagster-postgres is written for psycopg2 (its NOTIFY statements bind parameters client-side,
# which psycopg 3 does not), and SQLAlchemy 2.1 maps a bare postgresql:// URL to psycopg 3.
DAGSTER_PG_SCHEME = "postgresql+psycopg2"


def check_dagster_pg_url(url: str | None) -> None:
    """Say plainly what is wrong with MOLE_DAGSTER_PG_URL, instead of the SQL syntax error the
    first run's first event would otherwise end with. The URL itself is never repeated."""
    if not url:
        return  # Dagster itself says the variable is missing, when it opens the instance
    scheme = urlsplit(url).scheme
    if scheme != DAGSTER_PG_SCHEME:
        raise ValueError(
            f"{DAGSTER_PG_ENV} must start with {DAGSTER_PG_SCHEME}:// (it starts with "
            f"{scheme or 'no scheme'}://): dagster-postgres runs on psycopg2, and SQLAlchemy "
            "2.1 takes a bare postgresql:// to mean psycopg 3"
        )


check_dagster_pg_url(os.environ.get(DAGSTER_PG_ENV))
# Each round and report a queued run of its own, so its steps go to the cluster.
defs = build_definitions(mole_dask_executor, drive_in_process=False)
