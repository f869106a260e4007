"""The dbt-style views in sql/models/, one asset each: materialising it (re)creates the view in
the store and reports its row count. Users query the views with the DuckDB CLI or Python."""

import dagster as dg

from mole_dag.resources import StoreResource
from mole_dag.store.models import Model, discover, materialize


def _model_asset(model: Model) -> dg.AssetsDefinition:
    @dg.asset(
        name=model.name,
        group_name="models",
        description=model.description or None,
        kinds={"duckdb"},
    )
    def _view(store: StoreResource) -> dg.MaterializeResult:
        rows = materialize(store.store, model)
        return dg.MaterializeResult(
            metadata={"rows": rows, "sql": dg.MetadataValue.md(f"```sql\n{model.sql}\n```")}
        )

    return _view


MODEL_ASSETS = [_model_asset(m) for m in discover()]
