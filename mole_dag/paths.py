"""Where things live. One place, so no module guesses a path of its own.

Two layouts, told apart by whether pyproject.toml sits beside the package:

    checkout (editable install, `make`)   data in <checkout>/.mole/, sql/ and examples/ read
                                          from the checkout
    installed (`pip install .`, a wheel)  data in $XDG_DATA_HOME/mole (default
                                          ~/.local/share/mole), sql/ and the demo corpus read
                                          from the package's own files

MOLE_HOME (the data folder), MOLE_DB (the store file) and DAGSTER_HOME win over both."""

from __future__ import annotations

import os
from pathlib import Path

from mole_dag.diskfull import write_text_atomic, writing

PACKAGE_DIR = Path(__file__).resolve().parent
# The checkout that holds sql/, dagster.yaml and examples/ when the package is installed
# editable. For an installed wheel this is site-packages, which is why nothing below writes
# here unless it is a checkout.
PROJECT_ROOT = PACKAGE_DIR.parent


def in_checkout() -> bool:
    """True when the package runs from a source checkout rather than an installed wheel."""
    return (PROJECT_ROOT / "pyproject.toml").is_file()


def _packaged(name: str) -> Path:
    """A file or folder shipped inside the package (mole_dag/_shipped/<name>): in a checkout it
    is a symlink to the top-level original, which stays the single source of truth; a wheel
    carries a copy."""
    return PACKAGE_DIR / "_shipped" / name


def sql_dir() -> Path:
    if "MOLE_SQL_DIR" in os.environ:
        return Path(os.environ["MOLE_SQL_DIR"]).resolve()
    # The checkout's own folder first: a checkout on a system without symlinks has no
    # usable mole_dag/_shipped/sql.
    return (PROJECT_ROOT / "sql" if in_checkout() else _packaged("sql")).resolve()


def user_data_dir() -> Path:
    """The per-user data folder of an installed mole: $XDG_DATA_HOME/mole, else
    ~/.local/share/mole (the XDG base-directory default)."""
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    # The XDG spec says a relative value is invalid and is to be ignored.
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "mole"


def mole_home() -> Path:
    """The folder for the store, reports, indexes and Dagster's own storage: MOLE_HOME, else
    `.mole/` in a checkout (where `make` and `dagster dev` run), else the per-user data
    folder (an installed mole must not write into site-packages)."""
    if os.environ.get("MOLE_HOME"):
        return Path(os.environ["MOLE_HOME"]).expanduser().resolve()
    return (PROJECT_ROOT / ".mole" if in_checkout() else user_data_dir()).resolve()


def default_store_path() -> Path | str:
    """MOLE_DB, else the DuckDB file in the data folder. A postgresql:// URL is returned as it
    is: the store on Postgres (issue 14)."""
    target = os.environ.get("MOLE_DB")
    if target and target.startswith(("postgresql://", "postgres://")):
        return target
    return Path(target or mole_home() / "mole.duckdb").resolve()


def reports_dir() -> Path:
    return mole_home() / "reports"


def index_dir() -> Path:
    return mole_home() / "index"


def dagster_yaml() -> Path:
    """The project's Dagster instance configuration (the checkout's top-level dagster.yaml, or
    the package's copy of it)."""
    return PROJECT_ROOT / "dagster.yaml" if in_checkout() else _packaged("dagster.yaml")


def dagster_home() -> Path:
    """DAGSTER_HOME, else <mole home>/dagster. The default home gets the project's
    dagster.yaml (kept in step with it), so Dagster's storage, run logs, telemetry queue and
    UI state all land under the data folder and never in the checkout or the working
    directory. A DAGSTER_HOME the user set is theirs: it is returned as it is."""
    if os.environ.get("DAGSTER_HOME"):
        return Path(os.environ["DAGSTER_HOME"]).expanduser().resolve()
    home = mole_home() / "dagster"
    with writing(home):  # a full disk: DiskFull(home), one line from the CLI
        home.mkdir(parents=True, exist_ok=True)
    wanted = dagster_yaml().read_text(encoding="utf-8")
    target = home / "dagster.yaml"
    if not target.is_file() or target.read_text(encoding="utf-8") != wanted:
        # Whole or not at all: another process may be reading it this instant.
        write_text_atomic(target, wanted)
    return home


def demo_corpus() -> Path:
    return (
        PROJECT_ROOT / "examples" / "corpus" if in_checkout() else _packaged("demo_corpus")
    ).resolve()
