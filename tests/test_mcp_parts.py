"""mole-mcp's parts in process: the worker's command line, key redaction, a worker that fails,
a report asked for too early, and a store held by another process while an agent polls."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from mole_dag.cli import build_parser
from mole_dag.core import Unit
from mole_dag.launch import check_launch
from mole_dag.mcp import redact as redact_mod
from mole_dag.mcp import server, sessions
from mole_dag.mcp.toolkit import BadInput
from mole_dag.mcp.workers import Workers, WorkerState
from mole_dag.paths import default_store_path
from mole_dag.session import create_session
from mole_dag.store import Store


@pytest.mark.parametrize("question", ["--help", "-h", "--usd 5", "What does tea do?"])
def test_worker_argv_keeps_the_question_a_question(question: str, mini_corpus: Path) -> None:
    launch = check_launch(question, usd="0.50", tokens=None, corpus=str(mini_corpus))
    argv = server.research_argv("s-1", launch, usd="0.50", tokens=None, search=["local"])
    args = build_parser().parse_args(["research", *argv])
    assert args.question == question
    assert (args.session_id, args.usd, args.tokens) == ("s-1", "0.50", None)
    assert args.quiet and args.search == ["local"]
    assert args.corpus == str(mini_corpus.resolve()) and args.provider == "extractive"


def test_redact_masks_keys_from_the_environment_and_the_config(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SOME_API_KEY", "sk-live-0123456789abcdef")
    monkeypatch.setenv("TINY_TOKEN", "abc")  # too short to mask without mangling ordinary text
    cfg = tmp_path / "config.json"
    cfg.write_text(
        json.dumps(
            {"openai": {"api_key": "cfg-secret-key-987654321", "base_url": "http://127.0.0.1:1/v1"}}
        )
    )
    cfg.chmod(0o600)
    monkeypatch.setenv("MOLE_CONFIG", str(cfg))
    text = "failed with sk-live-0123456789abcdef and cfg-secret-key-987654321 at abc"
    assert redact_mod.redact(text) == "failed with [redacted] and [redacted] at abc"
    nested = {"a": ["x sk-live-0123456789abcdef"], "b": {"c": "http://127.0.0.1:1/v1"}, "n": 3}
    assert redact_mod.redact_all(nested) == {
        "a": ["x [redacted]"],
        "b": {"c": "http://127.0.0.1:1/v1"},
        "n": 3,
    }


def test_errors_leaving_the_server_are_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-CANARY-0000111122223333")
    with pytest.raises(ToolError) as exc, server._errors():
        raise BadInput("upstream said: bad key sk-ant-CANARY-0000111122223333")
    assert "CANARY" not in str(exc.value) and "[redacted]" in str(exc.value)


def _wait_ended(workers: Workers, sid: str) -> WorkerState:
    deadline = time.monotonic() + 120
    while True:
        st = workers.state(sid)
        assert st is not None
        if not st.running:
            return st
        assert time.monotonic() < deadline, "worker did not end"
        time.sleep(0.1)


def test_a_worker_that_fails_says_why() -> None:
    workers = Workers()
    # No budget: the CLI refuses before writing anything and exits with its usage status.
    workers.start("w-fails", ["--session-id", "w-fails", "--quiet", "--", "a question"])
    st = _wait_ended(workers, "w-fails")
    assert st.exit_code == 2
    got = sessions.starting("w-fails", st)
    assert got["status"] == "failed_to_start" and got["finished"] is True
    assert "a budget is required" in got["worker"]["log_tail"]
    # A later server (a new registry) reads the same ending from the files the worker left.
    again = Workers().state("w-fails")
    assert again is not None and not again.running and again.exit_code == 2
    assert not default_store_path().exists() or _sessions() == 0


def _sessions() -> int:
    with Store(default_store_path()) as st:
        return int(st.scalar("SELECT count(*) FROM sessions"))


def test_report_before_it_is_written(store: Store) -> None:
    bal = create_session(store, "Is tea good?", Unit.TOKENS, 1000)
    st = sessions.status(store, bal.session_id, None)
    assert st["status"] == "created" and st["finished"] is False
    assert st["report_ready"] is False and st["ledger"]["ok"] is True
    with pytest.raises(BadInput, match="no report yet"):
        sessions.report(store, bal.session_id)
    with pytest.raises(BadInput, match="no data attached"):
        sessions.local_query(store, bal.session_id, "SELECT count(*) FROM data")
    with pytest.raises(sessions.UnknownSession, match="no session 'other'"):
        sessions.status(store, "other", None)


HOLD = """
import sys, time
from mole_dag.store import Store
s = Store(sys.argv[1])
with s.write():  # a Store holds the file only inside a transaction
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_polling_while_another_process_holds_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    db = default_store_path()
    with Store(db) as st:
        sid = create_session(st, "Is tea good?", Unit.TOKENS, 1000).session_id
    monkeypatch.setattr(server, "STORE_WAIT_S", 0.5)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(db), "30"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        # Nobody known to be working on it: the caller hears that the store is busy.
        with pytest.raises(ToolError, match="held by another process"):
            server.session_status(sid)
        # Its research process is running: that is the answer, not an error.
        running = WorkerState(sid, holder.pid, True, None, Path("/nonexistent.log"))
        monkeypatch.setattr(server.workers, "state", lambda _sid: running)
        got = server.session_status(sid)
        assert got["status"] == "running" and got["finished"] is False
        assert "holding the store" in got["next"]
    finally:
        holder.terminate()
        holder.wait(timeout=30)
    got = server.session_status(sid)  # released: the real status again
    assert got["status"] == "created" and got["question"] == "Is tea good?"
