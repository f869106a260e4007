"""The store on PostgreSQL (issue 14): the same schema, constraints, queries, views and sessions
as on DuckDB, with row locks where workers on different machines could interleave."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mole_dag.budget import Ledger, LedgerError
from mole_dag.cli import main
from mole_dag.context import Run
from mole_dag.core import Role, Unit
from mole_dag.driver import run_session
from mole_dag.paths import demo_corpus
from mole_dag.session import create_session
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store, StoreError, migrate
from mole_dag.store.dialect import DialectError, one_statement, to_postgres
from mole_dag.store.queries import load_queries

psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed")


def _pg_checks(store: Store) -> dict[str, int]:
    rows = store.rows(
        "SELECT rel.relname AS tbl, count(*) AS n FROM pg_constraint con"
        " JOIN pg_class rel ON rel.oid = con.conrelid"
        " WHERE con.contype = 'c' AND rel.relnamespace = 'public'::regnamespace"
        " GROUP BY rel.relname"
    )
    return {r["tbl"]: r["n"] for r in rows}


def _duck_checks(store: Store) -> dict[str, int]:
    rows = store.rows(
        "SELECT table_name AS tbl, count(*) AS n FROM duckdb_constraints()"
        " WHERE constraint_type = 'CHECK' GROUP BY table_name"
    )
    return {r["tbl"]: r["n"] for r in rows}


def test_migrations_give_postgres_the_same_tables_and_checks(pg_dsn: str, tmp_path: Path) -> None:
    pg, duck = Store(pg_dsn), Store(tmp_path / "d.duckdb")
    want = max(m.version for m in migrate.discover())
    assert pg.schema_version() == duck.schema_version() == want
    pg_tables = {
        r["t"] for r in pg.rows("SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public'")
    }
    duck_tables = {r["t"] for r in duck.rows("SELECT table_name AS t FROM duckdb_tables()")}
    assert pg_tables == duck_tables
    # Every CHECK constraint of the DuckDB schema exists on Postgres too (NOT NULLs aside:
    # Postgres does not list those as CHECKs).
    assert _pg_checks(pg) == _duck_checks(duck)
    # The dbt-style views are there and readable.
    for view in ("claim_overview", "spend_by_role_stage", "publishers_per_cluster"):
        assert pg.scalar(f'SELECT count(*) FROM "{view}"') == 0
    # Opening again migrates nothing twice.
    assert Store(pg_dsn).schema_version() == want


def test_every_named_query_translates_to_one_postgres_statement() -> None:
    for name, sql in load_queries().items():
        stmt = one_statement(sql)
        assert "$" not in re.sub(r"'[^']*'", "", stmt), name  # parameters became %(name)s / %s
    with pytest.raises(DialectError):
        one_statement("SELECT 1; SELECT 2")


def test_duckdb_only_functions_mean_the_same_on_both(pg_dsn: str, tmp_path: Path) -> None:
    """arg_min/arg_max (rows with a NULL key ignored), strlen in bytes, sum as an integer."""
    sql = (
        "SELECT g, arg_min(v, k) AS lo, arg_max(v, k) AS hi, strlen(min(v)) AS bytes,"
        " sum(k) AS total FROM (VALUES (1, 'é', 3), (1, 'b', NULL), (1, 'c', 1), (2, 'x', NULL))"
        " AS t(g, v, k) GROUP BY g ORDER BY g"
    )
    assert "array_agg" in to_postgres(sql)[0].lower()
    stores = {"pg": Store(pg_dsn), "duck": Store(tmp_path / "d.duckdb")}
    got = {name: s.rows(sql) for name, s in stores.items()}
    assert (
        got["pg"]
        == got["duck"]
        == [
            {"g": 1, "lo": "c", "hi": "é", "bytes": 1, "total": 4},
            {"g": 2, "lo": None, "hi": None, "bytes": 1, "total": None},
        ]
    )
    assert isinstance(got["pg"][0]["total"], int)


def test_a_settle_waits_for_another_machines_lock_and_never_charges_twice(pg_dsn: str) -> None:
    """Another worker (here a raw connection) is settling the same reservation and holds its
    row: this settle waits, then sees it settled and refuses, instead of charging it again.
    Without the row lock (Store.locked) it read 'reserved' at once and charged twice."""
    store = Store(pg_dsn)
    ledger = Ledger(store)
    sid = ledger.create_session("q?", Unit.TOKENS, 10_000).session_id
    res = ledger.reserve(sid, Role.EXECUTOR, 500, tool="t", stage="mine")
    other = psycopg.connect(pg_dsn)  # a transaction of its own, as another machine's
    other.execute("SELECT id FROM tool_calls WHERE id = %s FOR UPDATE", [res.id])
    outcome: list[BaseException | None] = []

    def settle() -> None:
        try:
            ledger.settle(res, 400)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    t = threading.Thread(target=settle)
    t.start()
    time.sleep(0.5)  # not a timing assertion: gives the settle the chance to run ahead
    assert not outcome, "the settle did not wait for the row lock"
    # The other worker settles it (its own charge) and commits.
    other.execute("UPDATE sessions SET held = held - 500, spent = spent + 300 WHERE id = %s", [sid])
    other.execute(
        "UPDATE tool_calls SET status = 'settled', actual = 300, completed_at = now()"
        " WHERE id = %s",
        [res.id],
    )
    other.commit()
    other.close()
    t.join(timeout=30)
    assert outcome and isinstance(outcome[0], LedgerError), outcome
    bal = ledger.balance(sid)
    assert (bal.spent, bal.held) == (300, 0)
    assert ledger.verify(sid).ok


def _normalised(text: str) -> str:
    """Session ids and clock times differ between two runs; nothing else may."""
    text = re.sub(r"\d{8}-[0-9a-f]{6}", "<sid>", text)
    return re.sub(r"\d{4}-\d{2}-\d{2}[ T][\d:.]+", "<time>", text)


DEMO_SESSION = "20261203-0b0b0b"


def _demo_report(target: str) -> tuple[str, int, str]:
    store = Store(target)
    sid = create_session(
        store,
        "What are the health effects of drinking coffee?",
        Unit.USD_MICROS,
        500_000,
        corpus=str(demo_corpus()),
        # One session id on both backends: ids (claims, pairs' canonical order, hence which
        # claim a rationale names first) derive from it.
        session_id=DEMO_SESSION,
    ).session_id
    _, done = run_session(Run(store, Ledger(store), ExtractiveSkills(), sid, lambda m: None))
    assert done is not None
    assert Ledger(store).verify(sid).ok
    claims = int(store.scalar("SELECT count(*) FROM claims WHERE session_id = ?", [sid]))
    return _normalised(done.report.markdown), claims, sid


def test_the_demo_session_gives_the_same_report_on_both_backends(
    pg_dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    duck = str(tmp_path / "demo.duckdb")
    pg_report, pg_claims, pg_sid = _demo_report(pg_dsn)
    duck_report, duck_claims, duck_sid = _demo_report(duck)
    assert pg_claims == duck_claims > 50
    assert pg_report == duck_report
    # The commands that read the store say the same about it on both.
    for command in ("show", "trace", "eval", "crossings"):
        said = []
        for target, sid in ((pg_dsn, pg_sid), (duck, duck_sid)):
            assert main(["--db", target, command, sid]) == 0
            said.append(_normalised(capsys.readouterr().out).splitlines())
        assert said[0] == said[1], command
    assert main(["--db", pg_dsn, "sessions"]) == 0
    assert f"{pg_claims} claims" in capsys.readouterr().out


def test_two_sessions_run_at_once_on_postgres(pg_dsn: str, tmp_path: Path) -> None:
    """Two `mole research` processes on one Postgres store at the same time (on DuckDB they
    take turns with the file): both finish, each with its own claims and exact books."""
    Store(pg_dsn)  # migrated once up front, so the two do not queue on the schema lock
    env_home = tmp_path / "home"
    procs = []
    for i, q in enumerate(("What are the health effects of drinking coffee?", "Is coffee safe?")):
        home = env_home / str(i)
        home.mkdir(parents=True)
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "mole_dag.cli", "--db", pg_dsn]
                + ["research", q, "--usd", "0.5"],
                env={**_env(), "MOLE_HOME": str(home)},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outs = [p.communicate(timeout=280) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err[-2000:]
    sids = [re.search(r"^session (\S+)$", out, re.MULTILINE).group(1) for out, _ in outs]  # type: ignore[union-attr]
    store = Store(pg_dsn)
    spans = []
    for sid in sids:
        assert Ledger(store).verify(sid).ok
        assert store.scalar("SELECT count(*) FROM claims WHERE session_id = ?", [sid]) > 0
        spans.append(
            store.row(
                "SELECT min(created_at) AS a, max(completed_at) AS b FROM tool_calls"
                " WHERE session_id = ?",
                [sid],
            )
        )
    # They overlapped: each one's calls began before the other's ended.
    assert spans[0]["a"] < spans[1]["b"] and spans[1]["a"] < spans[0]["b"], spans


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "MOLE_DB"}


def test_an_unreachable_server_is_one_line_without_the_password(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "postgresql://mole:s3cret-pw@127.0.0.1:1/nowhere"
    with pytest.raises(StoreError) as err:
        Store(url, lock_wait_s=1.0)
    assert "s3cret-pw" not in str(err.value) and "127.0.0.1:1" in str(err.value)
    # ... and at once: a reader's first connection is not retried as a lost one (that took
    # `mole sessions` 20 s of backoff before it said the server was not there).
    waits: list[float] = []
    monkeypatch.setattr("mole_dag.store.base.time.sleep", waits.append)
    rc = main(["--db", url, "sessions"])
    cap = capsys.readouterr()
    assert rc != 0 and not waits
    assert "s3cret-pw" not in cap.err + cap.out
    assert len(cap.err.strip().splitlines()) == 1, cap.err


def test_a_database_that_is_not_a_store_is_refused_read_only(pg_dsn: str) -> None:
    with pytest.raises(StoreError, match="not a mole store"):
        Store(pg_dsn, read_only=True)


def test_transact_retries_what_another_machine_won(pg_dsn: str) -> None:
    """A serialization failure or deadlock (another worker's transaction won the rows) is
    retried, not reported: the second attempt commits."""
    store = Store(pg_dsn)
    attempts = []

    def tx(cur: object) -> int:
        attempts.append(1)
        if len(attempts) == 1:
            raise psycopg.errors.SerializationFailure("could not serialize access")
        return 7

    assert store.transact(tx) == 7 and len(attempts) == 2


def test_processes_opening_a_new_database_at_once_migrate_it_once(pg_dsn: str) -> None:
    """Three workers start against an empty database together: the advisory lock lets one
    migrate while the others wait, and every version is recorded once."""
    code = (
        "import sys; from mole_dag.store import Store; print(Store(sys.argv[1]).schema_version())"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, pg_dsn],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    want = max(m.version for m in migrate.discover())
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err[-2000:]
        assert int(out.strip()) == want
    store = Store(pg_dsn)
    rows = store.rows("SELECT version, count(*) AS n FROM schema_migrations GROUP BY version")
    assert rows and all(r["n"] == 1 for r in rows)
    assert len(rows) == len(migrate.discover())
