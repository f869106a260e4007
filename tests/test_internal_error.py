"""A bug is not a fetch failure (issue 13 item 5): an actor that raises an unexpected exception
leaves an `internal_error` dead end with its traceback in the log, and `mole show` counts it;
the outside world failing (httpx, our fetch and search errors, timeouts, sockets) stays
`fetch_failed`, logged as a warning without a traceback."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mole_dag.actors.fetch.fetcher import FetchFailed
from mole_dag.budget import Ledger
from mole_dag.cli import main
from mole_dag.context import Run
from mole_dag.core import DeadEndCause, Unit
from mole_dag.executor import execute_leads
from mole_dag.executor import run as executor_run
from mole_dag.planner import plan_round
from mole_dag.session import create_session
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store

QUESTION = "Does green tea affect sleep?"


class _Raises:
    """An actor whose search raises `exc` (a bug, or the network failing)."""

    name = "local"

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def gather(self, query: str, limit: int) -> Iterator[object]:
        raise self.exc


def _round_with(
    store: Store, corpus: Path, exc: BaseException, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, list[str]]:
    sid = create_session(store, QUESTION, Unit.TOKENS, 50_000, corpus=str(corpus)).session_id
    run = Run(store, Ledger(store), ExtractiveSkills(), sid, progress=lambda m: None)
    plan_round(run)
    monkeypatch.setattr(executor_run, "actors_for", lambda sess, st: {"local": _Raises(exc)})
    got = execute_leads(run, workers=2)
    assert got.leads_run > 0
    causes = [
        r["cause"]
        for r in store.rows("SELECT cause FROM dead_ends WHERE session_id = ? ORDER BY id", [sid])
    ]
    return sid, causes


def test_a_bug_is_an_internal_error_with_its_traceback(
    tmp_path: Path,
    mini_corpus: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = tmp_path / "bug.duckdb"
    store = Store(db)
    try:
        with caplog.at_level(logging.WARNING, logger="mole.executor"):
            sid, causes = _round_with(
                store, mini_corpus, ZeroDivisionError("division by zero"), monkeypatch
            )
        detail = store.scalar("SELECT detail FROM dead_ends WHERE session_id = ? LIMIT 1", [sid])
    finally:
        store.close()
    assert causes and set(causes) == {DeadEndCause.INTERNAL_ERROR}
    assert "ZeroDivisionError" in detail
    logged = [r for r in caplog.records if r.exc_info]
    assert len(logged) == len(causes)  # one traceback per lead, at ERROR
    assert all(r.levelno == logging.ERROR and r.exc_info[0] is ZeroDivisionError for r in logged)
    capsys.readouterr()
    assert main(["--db", str(db), "show", sid]) == 0
    out = capsys.readouterr().out
    assert f"internal errors {len(causes)} (bugs in mole" in out
    assert f"internal_error {len(causes)}" in out  # and among the dead ends by cause


@pytest.mark.parametrize(
    "exc",
    [
        httpx.ConnectError("connection refused"),
        httpx.ReadTimeout("timed out"),
        TimeoutError("timed out"),
        ConnectionResetError("reset by peer"),
        FetchFailed(DeadEndCause.FETCH_FAILED, "HTTP 503", "https://example.org/"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_the_outside_world_failing_stays_fetch_failed(
    tmp_path: Path,
    mini_corpus: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    exc: BaseException,
) -> None:
    db = tmp_path / "net.duckdb"
    store = Store(db)
    try:
        with caplog.at_level(logging.WARNING, logger="mole.executor"):
            sid, causes = _round_with(store, mini_corpus, exc, monkeypatch)
    finally:
        store.close()
    assert causes and set(causes) == {DeadEndCause.FETCH_FAILED}
    assert not [r for r in caplog.records if r.exc_info]  # no traceback for the weather
    capsys.readouterr()
    assert main(["--db", str(db), "show", sid]) == 0
    assert "internal errors" not in capsys.readouterr().out


def test_the_migration_keeps_existing_dead_ends_and_admits_the_new_cause(tmp_path: Path) -> None:
    import shutil

    import duckdb

    from mole_dag.store.migrate import apply, discover

    mdir = tmp_path / "migs"
    mdir.mkdir()
    later = [m for m in discover() if m.version >= 11]
    for m in discover():
        if m.version < 11:
            shutil.copy(m.path, mdir)
    conn = duckdb.connect(str(tmp_path / "old.duckdb"))
    try:
        apply(conn, mdir)
        insert = (
            "INSERT INTO dead_ends (id, session_id, cause, detail, created_at) "
            "VALUES (?, 's', ?, 'd', now())"
        )
        conn.execute(insert, ["d1", "fetch_failed"])
        with pytest.raises(duckdb.ConstraintException):
            conn.execute(insert, ["d2", "internal_error"])  # what the old schema refused
        for m in later:
            shutil.copy(m.path, mdir)
        apply(conn, mdir)
        conn.execute(insert, ["d2", "internal_error"])
        with pytest.raises(duckdb.ConstraintException):
            conn.execute(insert, ["d3", "a_cause_nobody_named"])
        assert conn.execute("SELECT id, cause FROM dead_ends ORDER BY id").fetchall() == [
            ("d1", "fetch_failed"),
            ("d2", "internal_error"),
        ]
    finally:
        conn.close()
