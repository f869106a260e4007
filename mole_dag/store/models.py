"""dbt-style models: each `sql/models/<name>.sql` holds one SELECT, materialised as the view
`<name>`. Views, not tables, so they are never stale; users query them with the DuckDB CLI or
Python like any table."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mole_dag.paths import sql_dir

if TYPE_CHECKING:
    import duckdb

    from mole_dag.store.base import Store

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Model:
    name: str
    sql: str
    description: str


def discover(directory: Path | None = None) -> list[Model]:
    directory = directory or sql_dir() / "models"
    out = []
    for path in sorted(directory.glob("*.sql")):
        if not _NAME.match(path.stem):
            raise ValueError(f"{path}: model names are lower_snake_case")
        text = path.read_text("utf-8")
        desc = " ".join(
            line.removeprefix("--").strip() for line in text.splitlines() if line.startswith("--")
        )
        body = "\n".join(line for line in text.splitlines() if not line.startswith("--"))
        out.append(Model(path.stem, body.strip().rstrip(";"), desc))
    return out


def create_view(store: Store, model: Model) -> None:
    store.transact(lambda cur: cur.execute(f'CREATE OR REPLACE VIEW "{model.name}" AS {model.sql}'))


def materialize(store: Store, model: Model) -> int:
    """(Re)create the view and return how many rows it has now."""
    create_view(store, model)
    return int(store.scalar(f'SELECT count(*) FROM "{model.name}"'))


def materialize_all(store: Store, *, count: bool = False) -> dict[str, int]:
    """(Re)create every view in one transaction (one open of the file, one commit), then count
    their rows if asked."""
    models = discover()

    def tx(cur: duckdb.DuckDBPyConnection) -> None:
        for m in models:
            cur.execute(f'CREATE OR REPLACE VIEW "{m.name}" AS {m.sql}')

    store.transact(tx)
    if not count:
        return {m.name: -1 for m in models}
    return {m.name: int(store.scalar(f'SELECT count(*) FROM "{m.name}"')) for m in models}
