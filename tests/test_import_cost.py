"""Nothing heavy is imported until it is used (issue 12: imports were 27 % of a demo session).
A fresh interpreter imports the pipeline and the CLI, and must not have loaded scipy, numpy, the
local-data boundary, trafilatura or the web stack: a demo session (local corpus, no data)
needs none of them."""

from __future__ import annotations

import json
import subprocess
import sys

from mole_dag.paths import PROJECT_ROOT

# Not yet listed: sqlglot (~0.1 s), which the report still loads through
# compute.statements -> compute.connector for a few constants.
HEAVY = (
    "scipy",
    "numpy",
    "trafilatura",
    "httpx",
    "mole_dag.local_data.boundary",
    "mole_dag.local_data.gate",
    "mole_dag.actors.search.base",
    "mole_dag.actors.fetch.fetcher",
)


def _loaded_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_the_pipeline_and_the_cli_load_nothing_heavy() -> None:
    loaded = _loaded_after("import mole_dag.cli, mole_dag.driver, mole_dag.actors.registry")
    assert not [m for m in HEAVY if m in loaded]


def test_the_heavy_parts_still_load_when_used() -> None:
    loaded = _loaded_after(
        "from mole_dag.local_data.stats import welch\n"
        "welch('a', [1.0, 2.0, 3.0], 'b', [2.0, 3.0, 5.0])\n"
        "from mole_dag.actors.search import Api, SPECS\n"
        "from mole_dag.actors.fetch import Fetcher"
    )
    assert {"scipy", "numpy", "httpx", "mole_dag.actors.fetch.fetcher"} <= loaded
