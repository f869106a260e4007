"""`python -m mole_dag.cli`: the `mole` command."""

from mole_dag.cli.entry import run

run()
