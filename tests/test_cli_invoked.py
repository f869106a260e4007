"""Issue 33, item 5: what `mole` prints back can be pasted back. The command to continue a
session is the one that was typed (`.venv/bin/mole`, with its `--db`); `mole --version` answers;
a resumed session's rounds are numbered as the session's, not from 1 again."""

from __future__ import annotations

from pathlib import Path

import pytest

from mole_dag import cli, invoked
from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.core import SessionStatus, Unit
from mole_dag.driver import run_round
from mole_dag.paths import default_store_path
from mole_dag.planner import plan_round
from mole_dag.session import create_session
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store


def test_the_command_printed_back_is_the_one_typed() -> None:
    try:
        invoked.remember(".venv/bin/mole", None)
        assert invoked.command("resume", "s-1") == ".venv/bin/mole resume s-1"
        invoked.remember("/opt/my tools/mole", "my store.duckdb")
        assert invoked.command("resume", "s-1") == (
            "'/opt/my tools/mole' --db 'my store.duckdb' resume s-1"
        )
        # Not mole's own script (python -m, a test runner): plain `mole`.
        invoked.remember("/usr/lib/python3/site-packages/mole_dag/cli/__main__.py", None)
        assert invoked.command("resume", "s-1") == "mole resume s-1"
    finally:
        invoked.remember("mole", None)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("mole ") and "required" not in out


def test_a_resumed_session_numbers_its_rounds_on(
    dagster_home: Path, mini_corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stopped after round 2 was planned: the resume says "round 2", not "round 1"."""
    with Store(default_store_path()) as st:
        sid = create_session(
            st, "Does green tea affect sleep?", Unit.TOKENS, 50_000, corpus=str(mini_corpus)
        ).session_id
        run = Run(st, Ledger(st), ExtractiveSkills(), sid, progress=lambda m: None)
        run_round(run)
        plan_round(run)  # round 2 planned, then the stop
        Ledger(st).set_status(sid, SessionStatus.INTERRUPTED, "stopped by SIGTERM")
    capsys.readouterr()
    assert cli.main(["resume", sid, "--no-report-print"]) == 0
    err = capsys.readouterr().err
    rounds = [ln for ln in err.splitlines() if ln.startswith("round ")]
    assert rounds and rounds[0].startswith("round 2"), err
    assert "round 1" not in err, err
