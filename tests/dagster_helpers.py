"""What the tests that run the asset graph in process share: the resources over one store file,
the run config naming a stored session (the `session` asset's config is required), and the
metadata of an asset's last materialisation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg

from assets.session_config import session_run_config
from mole_dag.resources import BudgetResource, StoreResource
from mole_dag.store import Store, q
from mole_dag.store.records import SessionRow


def resources(db: Path) -> dict[str, Any]:
    store = StoreResource(database=str(db))
    return {"store": store, "budget": BudgetResource(store=store)}


def session_config(db: Path | str, sid: str) -> dict[str, Any]:
    """Run config for a run that materialises `session` of a session already in `db`."""
    with Store(db) as st:
        row = st.one(SessionRow, q("session_get"), {"session_id": sid})
    assert row is not None, sid
    return session_run_config(row)


def metadata(result: dg.ExecuteInProcessResult, asset: str) -> dict[str, Any]:
    mats = result.asset_materializations_for_node(asset)
    assert mats, f"{asset} was not materialised"
    return {k: v.value for k, v in mats[-1].metadata.items()}
