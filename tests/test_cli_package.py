"""The `mole` command line is a package of files of one job each (issue 34): none over 600 lines
without saying why in its docstring, and both ways in still work (the console script's
`mole_dag.cli:run`, and `python -m mole_dag.cli`)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 600


def test_the_cli_is_files_of_one_job_each() -> None:
    package = ROOT / "mole_dag" / "cli"
    assert (package / "__init__.py").is_file(), "mole_dag/cli is not a package"
    long = []
    for path in sorted(package.glob("*.py")):
        text = path.read_text("utf-8")
        doc = ast.get_docstring(ast.parse(text)) or ""
        if len(text.splitlines()) > LIMIT and "whole" not in doc:
            long.append(path.name)
    assert long == []


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
