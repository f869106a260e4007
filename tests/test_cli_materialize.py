"""`mole materialize`: Dagster's `asset materialize` for one session, with the session checked
against the store first. Seen (issue 12): `dagster asset materialize --partition <unknown>`
printed Dagster's DagsterInvalidSubsetError traceback; Dagster's own CLI refuses it before any
of our code runs, so the project's command says it in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from mole_dag import cli
from mole_dag.core import Unit
from mole_dag.paths import default_store_path
from mole_dag.session import create_session
from mole_dag.store import Store


def _one_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


def test_an_unknown_session_is_one_line_and_nothing_runs(
    dagster_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Store(default_store_path()).close()  # a store with no such session
    code = cli.main(["materialize", "no-such-session"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE
    line = _one_line(err)
    assert "no session 'no-such-session'" in line and "mole sessions" in line
    assert "Traceback" not in err and "DagsterInvalidSubsetError" not in err
    assert not list(dagster_home.glob("history/runs/*.db")), "no Dagster run was made"


def test_a_missing_store_is_one_line(
    dagster_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["materialize", "s-1"])
    assert code == cli.EXIT_USAGE
    assert "no store" in _one_line(capsys.readouterr().err)
    assert not default_store_path().exists()


def test_a_selection_that_matches_nothing_is_one_line(
    dagster_home: Path, mini_corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store(default_store_path()) as st:
        sid = create_session(
            st, "Does green tea affect sleep?", Unit.TOKENS, 10_000, corpus=str(mini_corpus)
        ).session_id
    code = cli.main(["materialize", sid, "--select", "no_such_asset"])
    assert code == cli.EXIT_USAGE
    line = _one_line(capsys.readouterr().err)
    assert "--select 'no_such_asset'" in line and "group:research" in line


def test_a_known_session_gets_a_round_and_a_report(
    dagster_home: Path, mini_corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A session the store knows but this instance does not (made outside Dagster): its
    partition is added and the research group materialised, as the README's Dagster command
    would after `mole research`."""
    with Store(default_store_path()) as st:
        sid = create_session(
            st, "Does green tea affect sleep?", Unit.TOKENS, 10_000, corpus=str(mini_corpus)
        ).session_id
    code = cli.main(["materialize", sid])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "report" in out.split("(run", 1)[0] and f"session {sid}" in out
    with Store(default_store_path()) as st:
        assert st.scalar("SELECT count(*) FROM reports WHERE session_id = ?", [sid]) == 1
        assert st.scalar("SELECT count(*) FROM claims WHERE session_id = ?", [sid]) > 0
