"""The `mole` command line is a package of files of one job each (issue 34): none over 600 lines
without saying why in its docstring, and both ways in still work (the console script's
`mole_dag.cli:run`, and `python -m mole_dag.cli`)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_cli_is_a_package() -> None:
    # Its files' length is checked with every module's (tests/test_module_size.py).
    assert (ROOT / "mole_dag" / "cli" / "__init__.py").is_file(), "mole_dag/cli is not a package"


def test_the_console_script_names_a_function() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["scripts"]
    module, _, name = scripts["mole"].partition(":")
    assert callable(getattr(importlib.import_module(module), name))


def test_python_dash_m_runs_the_command() -> None:
    got = subprocess.run(
        [sys.executable, "-m", "mole_dag.cli", "--version"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout.startswith("mole ")
