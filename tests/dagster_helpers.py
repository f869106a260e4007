"""What the tests that run the asset graph in process share: the resources over one store file,
and the metadata of an asset's last materialisation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg

from mole_dag.resources import BudgetResource, StoreResource


def resources(db: Path) -> dict[str, Any]:
    store = StoreResource(database=str(db))
    return {"store": store, "budget": BudgetResource(store=store)}


def metadata(result: dg.ExecuteInProcessResult, asset: str) -> dict[str, Any]:
    mats = result.asset_materializations_for_node(asset)
    assert mats, f"{asset} was not materialised"
    return {k: v.value for k, v in mats[-1].metadata.items()}
