"""Packages point one way (DESIGN.md, "Layout"; issue 13): the import-linter layers contract in
pyproject.toml, run over the import graph of mole_dag and assets, imports inside functions
included. A package that imports one above it fails here, and so does a module the contract does
not name (it would otherwise go unchecked)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    names = []
    for layer in contract["layers"]:
        for sep in ("|", ":"):
            layer = layer.replace(sep, " ")
        names += layer.split()
    return names


def test_every_module_of_the_package_is_in_a_layer() -> None:
    package = ROOT / "mole_dag"
    modules = {f"mole_dag.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"}
    modules |= {f"mole_dag.{p.parent.name}" for p in package.glob("*/__init__.py")}
    missing = sorted(modules - set(_layers()))
    assert not missing, f"place these in the layers contract in pyproject.toml: {missing}"


def test_no_package_imports_one_above_it() -> None:
    # In a child process: import-linter configures logging with dictConfig, which disables every
    # logger already created, and later tests read the library's log messages.
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True))",
            str(ROOT / "pyproject.toml"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
