"""Issue 11: the MCP `resume` tool continues an interrupted session in a detached worker that
runs `mole resume`, and refuses a finished one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from mole_dag.budget import Ledger
from mole_dag.core import SessionStatus, Unit
from mole_dag.mcp import server, worker
from mole_dag.mcp.workers import WorkerState
from mole_dag.paths import default_store_path
from mole_dag.store import Store


def _session(sid: str, status: SessionStatus) -> None:
    with Store(default_store_path()) as store:
        ledger = Ledger(store)
        ledger.create_session("Does tea help?", Unit.TOKENS, 10_000, session_id=sid)
        ledger.set_status(sid, status, "stopped by SIGINT")


def test_resume_tool_starts_a_resume_worker(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    started: list[tuple[str, list[str]]] = []

    def start(sid: str, args: list[str]) -> WorkerState:
        started.append((sid, args))
        return WorkerState(sid, 4242, True, None, tmp_path / "log")

    monkeypatch.setattr(server.workers, "start", start)
    _session("s-int", SessionStatus.INTERRUPTED)
    got = server.resume("s-int")
    assert got["status"] == "resuming" and got["pid"] == 4242
    assert started == [("s-int", ["resume", "s-int", "--quiet"])]

    _session("s-done", SessionStatus.DONE)
    with pytest.raises(ToolError, match="only an interrupted session"):
        server.resume("s-done")
    with pytest.raises(ToolError, match="no session"):
        server.resume("s-none")


def test_worker_runs_mole_resume(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[list[str]] = []

    def fake_main(argv: Any) -> int:
        seen.append(list(argv))
        return 0

    monkeypatch.setattr("mole_dag.cli.main", fake_main)
    exit_file = tmp_path / "s.exit"
    assert worker.main([str(exit_file), "--", "resume", "s-int", "--quiet"]) == 0
    assert worker.main([str(exit_file), "--", "--session-id", "x", "--", "resume"]) == 0
    assert seen == [
        ["resume", "s-int", "--quiet"],
        ["research", "--session-id", "x", "--", "resume"],
    ]
    assert exit_file.read_text("utf-8").strip() == "0"
