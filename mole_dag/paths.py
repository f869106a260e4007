"""Where things live. One place, so no module guesses a path of its own."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
# The checkout that holds sql/, dagster.yaml and examples/ (the package is installed editable).
PROJECT_ROOT = PACKAGE_DIR.parent


def sql_dir() -> Path:
    return Path(os.environ.get("MOLE_SQL_DIR", PROJECT_ROOT / "sql")).resolve()


def mole_home() -> Path:
    """The folder for the store, reports, indexes and Dagster's own storage (default `.mole/` in
    the project root, which is where `make` and `dagster dev` run)."""
    return Path(os.environ.get("MOLE_HOME", PROJECT_ROOT / ".mole")).resolve()


def default_store_path() -> Path:
    return Path(os.environ.get("MOLE_DB", mole_home() / "mole.duckdb")).resolve()


def reports_dir() -> Path:
    return mole_home() / "reports"


def index_dir() -> Path:
    return mole_home() / "index"


def demo_corpus() -> Path:
    return PROJECT_ROOT / "examples" / "corpus"
