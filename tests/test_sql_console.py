"""Issue 23: SQL for the people who use it. `mole sql` opens the store read-only with its views,
waits its turn while a session writes (a raw read-only client failed with "Could not set lock"
on 45 of ~200 connects), lets go after each statement, refuses writes in one line; and the USD
column of the views prints as money (scale 6) on both backends, where psql printed
0.000000000000000000000000."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from mole_dag.budget import Ledger
from mole_dag.cli import main
from mole_dag.core import Role, Unit
from mole_dag.store import Store
from mole_dag.store.console import as_table, run, statements
from mole_dag.store.models import materialize_all


def _usd_session(store: Store) -> str:
    ledger = Ledger(store)
    sid = ledger.create_session("q?", Unit.USD_MICROS, 500_000, session_id="s-usd").session_id
    res = ledger.reserve(sid, Role.PLANNER, 75_000, tool="t", stage="plan")
    ledger.settle(res, 75_000)
    materialize_all(store)
    return sid


@pytest.mark.both_backends
def test_usd_prints_as_money_on_both_backends(store: Store, store_target: str) -> None:
    _usd_session(store)
    got = run(store_target, "SELECT usd FROM spend_by_role_stage")
    assert got.rows == [(Decimal("0.075000"),)]
    assert str(got.rows[0][0]) == "0.075000"  # what psql and DuckDB's shell print
    assert "0.075000" in as_table(got)


HOLD = """
import sys, time
from mole_dag.store import Store
s = Store(sys.argv[1])
def tx(cur):
    print("holding", flush=True)
    time.sleep(float(sys.argv[2]))
    cur.execute("INSERT INTO schema_notes VALUES (1)")
s.transact(lambda cur: cur.execute("CREATE TABLE IF NOT EXISTS schema_notes (n INT)"))
s.transact(tx)
print("done", flush=True)
"""


def test_mole_sql_waits_for_a_writer_instead_of_failing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A writer holds the file (a transaction 3 s long, far longer than any of mole's): a raw
    read-only connect fails at once; `mole sql` waits for the file and answers."""
    import duckdb

    db = tmp_path / "busy.duckdb"
    with Store(db) as st:
        _usd_session(st)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(db), "3"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
        with pytest.raises(duckdb.IOException):
            duckdb.connect(str(db), read_only=True).close()
        assert main(["--db", str(db), "sql", "SELECT count(*) AS n FROM schema_notes"]) == 0
        out = capsys.readouterr().out
        assert out.splitlines()[2].strip() == "1", out  # after the writer's commit
    finally:
        proc.wait(timeout=120)
        if proc.stdout:
            proc.stdout.close()


def test_mole_sql_reads_views_and_refuses_writes_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "ro.duckdb"
    with Store(db) as st:
        _usd_session(st)
    assert main(["--db", str(db), "sql", "SELECT role, usd FROM spend_by_role_stage"]) == 0
    out = capsys.readouterr().out
    assert "planner  0.075000" in out and "(1 row)" in out
    assert main(["--db", str(db), "sql", "--csv", "FROM spend_by_role_stage"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("session_id,unit,role")
    assert main(["--db", str(db), "sql", "CREATE TABLE mine (a INT)"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mole sql: ") and "read-only" in err and "\n" not in err
    with Store(db) as st:
        assert (
            st.scalar("SELECT count(*) FROM information_schema.tables WHERE table_name = 'mine'")
            == 0
        )
    # Released after the statement: a writer gets the file at once.
    import duckdb

    duckdb.connect(str(db)).close()


def test_a_script_on_stdin_runs_statement_by_statement() -> None:
    text = "SELECT 1;\n\nSELECT 'a;b'\n  AS x;\nSELECT 3"
    assert list(statements(iter(text.splitlines()))) == [
        "SELECT 1;",
        "SELECT 'a;b'\n  AS x;",
        "SELECT 3",
    ]


def test_mole_sql_without_a_store_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--db", str(tmp_path / "none.duckdb"), "sql", "SELECT 1"]) == 2
    err = capsys.readouterr().err
    assert "no store at" in err and not (tmp_path / "none.duckdb").exists()
