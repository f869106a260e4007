"""Issue 11, "Crash recovery", with a real `mole research` process against the simulated model
server (openai provider): SIGINT stops cleanly with one line naming the resume command, and
`mole resume` finishes the session. (SIGKILL mid-mining then `mole resume` is proven with every
other stage and signal in tests/test_resume_any_stop.py: issue 34 merged the two.)"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mole_dag import cli
from mole_dag.budget import Ledger
from mole_dag.store import Store
from tests.model_server import ModelServer, SimulatedModel
from tests.test_cli_ceiling import QUESTION, real_spend

MOLE = str(Path(sys.executable).parent / "mole")


@pytest.fixture
def env(dagster_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    db = tmp_path / "mole.duckdb"
    monkeypatch.setenv("MOLE_DB", str(db))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-resume")
    return db


def _start(server: ModelServer, corpus: Path, sid: str) -> subprocess.Popen[str]:
    os.environ["OPENAI_BASE_URL"] = server.url + "/v1"
    return subprocess.Popen(
        [
            MOLE,
            "research",
            QUESTION,
            "--usd",
            "0.50",
            "--corpus",
            str(corpus),
            "--provider",
            "openai",
            "--session-id",
            sid,
            "--no-report-print",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _resume(sid: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(["resume", sid, "--no-report-print"])
    out, err = capsys.readouterr()
    return code, out, err


def _no_duplicate_claims(store: Store, sid: str) -> None:
    dup = store.scalar(
        "SELECT count(*) FROM (SELECT source_id, quote_byte_start, quote_byte_end "
        "FROM claims WHERE session_id = ? GROUP BY ALL HAVING count(*) > 1)",
        [sid],
    )
    assert dup == 0
    dup_text = store.scalar(
        "SELECT count(*) FROM (SELECT source_id, text FROM claims "
        "WHERE session_id = ? GROUP BY ALL HAVING count(*) > 1)",
        [sid],
    )
    assert dup_text == 0


def test_sigint_stops_cleanly_and_resume_finishes(
    env: Path,
    mini_corpus: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = SimulatedModel(mine_delay_s=1.5)
    with ModelServer(model) as server:
        proc = _start(server, mini_corpus, "s-int")
        deadline = time.monotonic() + 120
        while not server.by_skill("mine") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.by_skill("mine"), "mining never started"
        proc.send_signal(signal.SIGINT)  # a mining call is in flight
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err
        tail = [ln for ln in err.splitlines() if not ln.startswith(("  · ", "round ", "session "))]
        # Dagster's step machinery may take the signal first, and then the line does not
        # guess which one it was.
        # The command as it was invoked (issue 33: `mole resume` where only the venv's
        # script exists), so it can be pasted back.
        again = shlex.join([MOLE, "resume", "s-int"])
        assert len(tail) == 1 and tail[0] in (
            f"mole: interrupted by SIGINT; continue with `{again}`",
            f"mole: interrupted by a signal; continue with `{again}`",
        ), err
        assert "Traceback" not in err and "Dagster" not in err
        store = Store(env)
        try:
            ledger = Ledger(store)
            assert ledger.balance("s-int").status == "interrupted"
            assert ledger.verify("s-int").ok and ledger.balance("s-int").held == 0
        finally:
            store.close()
        model.mine_delay_s = 0
        code, _out, err = _resume("s-int", capsys)
    assert code == 0, err
    store = Store(env)
    try:
        ledger = Ledger(store)
        assert ledger.balance("s-int").status == "done" and ledger.verify("s-int").ok
        assert ledger.balance("s-int").charged >= real_spend(model)
        _no_duplicate_claims(store, "s-int")
    finally:
        store.close()
    # A finished session has nothing to resume.
    assert cli.main(["resume", "s-int"]) == cli.EXIT_USAGE
    assert "nothing to resume" in capsys.readouterr().err
