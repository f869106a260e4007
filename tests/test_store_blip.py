"""Issue 22, "the PostgreSQL store survives a blip": the server restarted during a model call,
and at its next statement mole exited 1 (`server closed the connection unexpectedly`): the pool
handed back a dead connection and nothing retried. Now pooled connections are checked before
use, a transaction whose connection is lost before it commits runs again, one whose COMMIT went
out unanswered asks the server what became of it, and the ledger's reserve, settle and release
take effect once by call id however often their transaction runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mole_dag.budget import Ledger
from mole_dag.core import Role, Unit
from mole_dag.paths import PROJECT_ROOT
from mole_dag.store import Store
from tests import pg_server
from tests.conftest import with_dbname
from tests.model_server import HeldModel, ModelServer
from tests.test_cli_ceiling import QUESTION, real_spend

MOLE = str(Path(sys.executable).parent / "mole")
CORPUS = Path(__file__).parent / "fixtures" / "model_corpus"


@pytest.fixture
def private_server(pg_bindir: Path) -> Iterator[pg_server.PgServer]:
    """A server of this test's own: it is restarted mid-session, which a shared one (CI's, or
    the test process's) must not be."""
    server = pg_server.start(bindir=pg_bindir)
    try:
        yield server
    finally:
        server.stop()


def _database(server: pg_server.PgServer) -> str:
    import psycopg

    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE DATABASE mole_blip")
    return with_dbname(server.dsn, "mole_blip")


@pytest.mark.slow
def test_a_server_restart_during_a_model_call_does_not_fail_the_session(
    private_server: pg_server.PgServer, tmp_path: Path
) -> None:
    url = _database(private_server)
    home = tmp_path / "home"
    (home / "dagster").mkdir(parents=True)
    shutil.copy(PROJECT_ROOT / "dagster.yaml", home / "dagster" / "dagster.yaml")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MOLE_", "DAGSTER_", "ANTHROPIC_", "OPENAI_"))
    }
    # The second mining call is held while the server restarts: the store's pooled connections
    # (used by planning, fetching and the first mining call) all die under the session.
    model = HeldModel("mine", 2)
    with ModelServer(model) as server:
        env.update(
            MOLE_HOME=str(home),
            MOLE_DB=url,
            DAGSTER_HOME=str(home / "dagster"),
            MOLE_CONFIG=str(home / "config.json"),
            OPENAI_API_KEY="sk-test-blip",
            OPENAI_BASE_URL=f"{server.url}/v1",
        )
        proc = subprocess.Popen(
            [MOLE, "research", QUESTION, "--usd", "0.50", "--corpus", str(CORPUS),
             "--provider", "openai", "--session-id", "s-blip", "--no-report-print"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert model.arrived.wait(600), "mining never reached its second call"
            restarts_before = _server_starts(private_server)
            private_server.restart()
            assert _server_starts(private_server) == restarts_before + 1
            model.release.set()
            _out, err = proc.communicate(timeout=600)
        finally:
            model.release.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, err
    assert "OperationalError" not in err and "Traceback" not in err
    store = Store(url, read_only=True)
    try:
        ledger = Ledger(store)
        check = ledger.verify("s-blip")
        assert check.ok, check.explain()
        bal = ledger.balance("s-blip")
        assert bal.status == "done" and bal.held == 0
        calls = store.scalar(
            "SELECT count(*) FROM tool_calls WHERE session_id = 's-blip' AND tool LIKE 'openai:%'"
        )
        # Every request the provider got is one ledger row: none lost, none written twice.
        assert int(calls) == len(server.received)
        assert bal.charged >= real_spend(model)
        assert store.scalar("SELECT count(*) FROM reports WHERE session_id = 's-blip'") == 1
    finally:
        store.close()
        from mole_dag.store import pg

        pg.close_url(url)


def _server_starts(server: pg_server.PgServer) -> int:
    return server.logfile.read_text(errors="replace").count("ready to accept connections")


# -- exactly once ---------------------------------------------------------------------------


def _twice(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make every transaction run twice, each run committed: what a transaction whose commit
    was not heard looks like when it is run again. Returns a counter of doubled runs."""
    doubled = [0]
    real = Store.transact

    def transact(self: Store, fn: Callable[[Any], Any], retries: int | None = None) -> Any:
        real(self, fn, retries)
        doubled[0] += 1
        return real(self, fn, retries)

    monkeypatch.setattr(type(store), "transact", transact)
    return doubled


@pytest.mark.both_backends
def test_reserve_settle_and_release_take_effect_once_however_often_they_run(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger(store)
    ledger.create_session("q?", Unit.TOKENS, 10_000, session_id="s1")
    doubled = _twice(store, monkeypatch)
    kept = ledger.reserve("s1", Role.EXECUTOR, 1000, tool="t", stage="s")
    dropped = ledger.reserve("s1", Role.EXECUTOR, 500, tool="t", stage="s")
    assert ledger.balance("s1").held == 1500
    got = ledger.settle(kept, 700)
    assert (got.actual, got.charged, got.overrun) == (700, 700, 0)
    ledger.release(dropped)
    assert doubled[0] >= 4
    bal = ledger.balance("s1")
    assert (bal.spent, bal.held) == (700, 0)
    assert store.scalar("SELECT count(*) FROM tool_calls WHERE session_id = 's1'") == 2
    check = ledger.verify("s1")
    assert check.ok, check.explain()


@pytest.mark.both_backends
def test_an_overrun_settled_twice_is_charged_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger(store)
    ledger.create_session("q?", Unit.TOKENS, 10_000, session_id="s1")
    res = ledger.reserve("s1", Role.EXECUTOR, 1000, tool="t", stage="s")
    _twice(store, monkeypatch)
    got = ledger.settle(res, 1300)
    assert (got.charged, got.overrun) == (1000, 300)
    bal = ledger.balance("s1")
    assert (bal.spent, bal.overrun, bal.held) == (1000, 300, 0)
    assert ledger.verify("s1").ok


def test_a_commit_whose_answer_is_lost_is_asked_about_not_repeated(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The COMMIT reaches the server and commits; its answer never comes back (the connection
    drops). The store asks the server (txid_status) and takes the transaction as written:
    nothing is run twice, and a session row is not inserted twice (which would fail)."""
    import psycopg

    from mole_dag.store import pg

    store = Store(pg_dsn)
    lost = [0]
    real = pg.PgCursor.execute

    def execute(self: pg.PgCursor, sql: str, params: Any = None) -> pg.PgCursor:
        got = real(self, sql, params)
        if sql == "COMMIT" and lost[0] == 0:
            lost[0] += 1
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        return got

    monkeypatch.setattr(pg.PgCursor, "execute", execute)
    runs = [0]

    def insert(cur: Any) -> str:
        runs[0] += 1
        cur.execute(
            "INSERT INTO sessions (id, question, unit, total, escrow, created_at, updated_at) "
            "VALUES ('s1', 'q?', 'tokens', 100, 15, now(), now())"
        )
        return "written"

    try:
        assert store.transact(insert) == "written"
        assert (lost[0], runs[0]) == (1, 1)
        assert store.scalar("SELECT count(*) FROM sessions WHERE id = 's1'") == 1
    finally:
        store.close()


def _kill_backends(superuser_dsn: str, dsn: str, only_pid: int | None = None) -> int:
    """Terminate the server processes serving `dsn`'s database (or just `only_pid`)."""
    import psycopg

    dbname = dsn.rsplit("/", 1)[1]
    with psycopg.connect(superuser_dsn, autocommit=True) as conn:
        got = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid() AND (%s::int IS NULL OR pid = %s)",
            (dbname, only_pid, only_pid),
        ).fetchone()
    return int(got[0]) if got else 0


def test_dead_pooled_connections_are_not_handed_out(
    pg_dsn: str, pg_superuser_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every pooled connection is killed between two transactions (as a restart does). With
    no retry allowed, the next transaction and reads still work: the pool checks a connection
    before handing it out and makes a new one for a dead one."""
    from mole_dag.store import pg

    store = Store(pg_dsn)
    try:
        ledger = Ledger(store)
        ledger.create_session("q?", Unit.TOKENS, 10_000, session_id="s1")
        assert _kill_backends(pg_superuser_dsn, pg_dsn) >= 1
        monkeypatch.setattr(pg.PgStore, "_RECONNECTS", 0)
        res = ledger.reserve("s1", Role.EXECUTOR, 100, tool="t", stage="s")
        ledger.settle(res, 60)
        assert ledger.balance("s1").spent == 60
    finally:
        store.close()


def test_a_transaction_whose_connection_drops_midway_runs_again(
    pg_dsn: str, pg_superuser_dsn: str
) -> None:
    """The connection dies inside a transaction, before it commits (the pool's check cannot
    see that coming): nothing of it was written, so it runs again, and its row is there once."""
    store = Store(pg_dsn)
    runs = [0]

    def insert(cur: Any) -> None:
        runs[0] += 1
        cur.execute(
            "INSERT INTO sessions (id, question, unit, total, escrow, created_at, updated_at) "
            "VALUES ('s1', 'q?', 'tokens', 100, 15, now(), now())"
        )
        if runs[0] == 1:
            pid = cur.execute("SELECT pg_backend_pid()").fetchone()[0]
            assert _kill_backends(pg_superuser_dsn, pg_dsn, only_pid=pid) == 1
            cur.execute("SELECT 1")  # the server is gone from under this transaction

    try:
        store.transact(insert)
        assert runs[0] == 2
        assert store.scalar("SELECT count(*) FROM sessions WHERE id = 's1'") == 1
    finally:
        store.close()
