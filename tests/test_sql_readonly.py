"""Issue 29, item 4: `mole sql` reads the store and nothing else. Each of these exited 0 on a
read-only DuckDB open: COPY ... TO wrote a file (a script, even), EXPORT DATABASE wrote every
table, read_csv printed /etc/passwd, ATTACH read another database. Now each is refused in one
line with exit status 2, by the statement allow-list (console_guard.py), and a DuckDB statement
that slipped past it meets a sealed connection (Store.seal) that cannot reach a file."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from mole_dag.budget import Ledger
from mole_dag.cli import main
from mole_dag.core import Unit
from mole_dag.store import Store
from mole_dag.store.console import StatementRefused, run
from mole_dag.store.console_guard import Refused, check

SECRET = "TOP-SECRET-LINE"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A folder with a store, another database and a private file: what a statement must not
    reach. Returns the folder; the test compares its listing before and after."""
    db = tmp_path / "mole.duckdb"
    with Store(db) as st:
        Ledger(st).create_session("q?", Unit.TOKENS, 1000, session_id="s1")
    other = duckdb.connect(str(tmp_path / "other.duckdb"))
    other.execute("CREATE TABLE t AS SELECT 'from the other database' AS x")
    other.close()
    (tmp_path / "private.csv").write_text(f"a\n{SECRET}\n")
    (tmp_path / "private.csv").chmod(0o600)
    return tmp_path


def _attacks(home: Path) -> list[tuple[str, str]]:
    """(statement, what its refusal names)."""
    p = home
    return [
        (f"COPY sessions TO '{p}/out.csv'", "COPY"),
        (f"COPY (SELECT 'hello') TO '{p}/evil.sh' (HEADER false, QUOTE '')", "COPY"),
        (f"EXPORT DATABASE '{p}/exportdir'", "EXPORT DATABASE"),
        (f"SELECT * FROM read_csv('{p}/private.csv')", "read_csv"),
        (f"SELECT * FROM '{p}/private.csv'", "names a file"),
        (f'SELECT * FROM "{p}/private.csv"', "names a file"),
        (f"SELECT content FROM read_text('{p}/private.csv')", "read_text"),
        (f"SELECT * FROM read_blob('{p}/private.csv')", "read_blob"),
        (f"SELECT * FROM glob('{p}/*')", "glob"),
        (f"SELECT * FROM read_parquet('{p}/x.parquet')", "read_parquet"),
        (f"SELECT * FROM read_json('{p}/x.json')", "read_json"),
        (f"SELECT * FROM sniff_csv('{p}/private.csv')", "sniff_csv"),
        (f"ATTACH '{p}/other.duckdb' AS o (READ_ONLY)", "ATTACH"),
        (f"IMPORT DATABASE '{p}/exportdir'", "IMPORT DATABASE"),
        ("INSTALL httpfs", "INSTALL"),
        ("LOAD httpfs", "LOAD"),
        ("SET enable_external_access = true", "SET"),
        ("RESET lock_configuration", "RESET"),
        (f"PRAGMA profiling_output = '{p}/prof.txt'", "PRAGMA"),
        ("CALL pragma_version()", "CALL"),
        ("SELECT * FROM query('SELECT 1')", "query"),
        (f"EXPLAIN COPY sessions TO '{p}/out.csv'", "COPY"),
        (f"DESCRIBE SELECT * FROM read_csv('{p}/private.csv')", "read_csv"),
        (f"SELECT 1; COPY sessions TO '{p}/out.csv'", "more than one statement"),
        (f"/* a comment first */ COPY sessions TO '{p}/out.csv'", "COPY"),
        ("CREATE TABLE mine (a INT)", "read-only"),
        ("CHECKPOINT", "read-only"),
    ]


def test_each_way_out_of_the_store_is_refused_in_one_line(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = home / "mole.duckdb"
    before = sorted(p.name for p in home.iterdir())
    for sql, names in _attacks(home):
        code = main(["--db", str(db), "sql", sql])
        out, err = capsys.readouterr()
        assert code == 2, (sql, out, err)
        assert err.startswith("mole sql: refused: ") and err.count("\n") == 1, (sql, err)
        assert names in err, (sql, err)
        assert SECRET not in out and "from the other database" not in out, sql
        assert sorted(p.name for p in home.iterdir()) == before, sql


def test_the_sealed_connection_stops_what_the_guard_would_miss(home: Path) -> None:
    """The second wall alone: the statements the guard refuses, run on a sealed read-only
    connection, fail in DuckDB itself and reach no file (a bare read-only open wrote them)."""
    before = sorted(p.name for p in home.iterdir())
    st = Store(home / "mole.duckdb", read_only=True)
    try:
        with st.read() as cur:
            st.seal(cur)
            for sql, _ in _attacks(home):
                # Those that reach no file: the read-only open refuses them, or, once sealed,
                # they are harmless (query() runs SQL on the same sealed instance).
                if sql.startswith(
                    ("CREATE", "CHECKPOINT", "CALL", "SELECT 1;", "/*", "SELECT * FROM query")
                ):
                    continue
                with pytest.raises(duckdb.Error) as got:
                    cur.execute(sql).fetchall()
                assert SECRET not in str(got.value), sql
    finally:
        st.close()
    assert sorted(p.name for p in home.iterdir()) == before


def test_a_sealed_instance_is_never_handed_to_another_user(home: Path) -> None:
    """The seal is the whole DuckDB instance's and cannot be undone, so the next unit of work in
    the same process (a writer, a local-data read) gets a fresh one with file access."""
    db = home / "mole.duckdb"
    assert run(db, "SELECT count(*) FROM sessions").rows == [(1,)]
    with Store(db) as st:
        assert st.scalar("SELECT current_setting('enable_external_access')") is True
        # `mole sql` joining an instance this process already has open seals it too; once
        # its users are done it is closed, not left to linger for the next one.
        with st.read():
            assert run(db, "SELECT count(*) FROM sessions").rows == [(1,)]
        assert st.scalar("SELECT current_setting('enable_external_access')") is True
        st.transact(lambda cur: cur.execute("CREATE TABLE after_sql AS SELECT 1 AS a"))
        assert st.scalar("SELECT count(*) FROM after_sql") == 1


LEGIT = [
    "SELECT s.id, count(t.id) AS calls FROM sessions s LEFT JOIN tool_calls t "
    "ON t.session_id = s.id GROUP BY s.id",
    "WITH a AS (SELECT id FROM sessions) SELECT count(*) FROM a",
    "FROM spend_by_role_stage",
    "SELECT * FROM claim_overview LIMIT 5",
    "SELECT table_name FROM duckdb_tables() ORDER BY table_name LIMIT 3",
    "SELECT * FROM pragma_table_info('sessions') LIMIT 2",
    "DESCRIBE sessions",
    "SHOW TABLES",
    "SHOW sessions",
    "SUMMARIZE sessions",
    "EXPLAIN SELECT * FROM claim_overview",
    "SELECT 1 UNION ALL SELECT 2",
    "SELECT 'COPY x TO y' AS text_mentioning_copy;",
    "select count(*) from sessions -- ; copy",
]


@pytest.mark.parametrize("sql", LEGIT)
def test_reads_of_the_store_still_run(
    home: Path, sql: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--db", str(home / "mole.duckdb"), "sql", sql])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.strip() and not err


# PostgreSQL: a read-only transaction refuses writes, but reads the server's files
# (pg_read_file), exports large objects to them (lo_export) and reaches other databases
# (dblink); the guard is what stops those, on the same allow-list.
PG_REFUSED = [
    ("SELECT pg_read_file('/etc/passwd')", "pg_read_file"),
    ("SELECT pg_catalog.pg_read_binary_file('/etc/passwd')", "pg_read_binary_file"),
    ("SELECT * FROM pg_ls_dir('/')", "pg_ls_dir"),
    ("SELECT pg_stat_file('/etc/passwd')", "pg_stat_file"),
    ("SELECT lo_import('/etc/passwd')", "lo_import"),
    ("SELECT lo_export(1, '/tmp/x')", "lo_export"),
    ("COPY sessions TO '/tmp/x.csv'", "COPY"),
    ("COPY sessions FROM '/tmp/x.csv'", "COPY"),
    ("COPY (SELECT 1) TO PROGRAM 'touch /tmp/x'", "COPY"),
    ("SELECT * FROM dblink('dbname=x', 'SELECT 1') AS t(a int)", "dblink"),
    ("SELECT set_config('default_transaction_read_only', 'off', false)", "set_config"),
    ("SELECT query_to_xml('SELECT pg_read_file(''/etc/passwd'')', true, true, '')", "query_to_xml"),
    ("WITH d AS (DELETE FROM sessions RETURNING id) SELECT * FROM d", "writes"),
    ("SELECT * INTO copy_of_sessions FROM sessions", "writes"),
    ("SELECT U&\"\\0070g_read_file\"('/etc/passwd')", 'U&"'),
    ("SET default_transaction_read_only = off", "SET"),
    ("DO $$ BEGIN PERFORM 1; END $$", "DO"),
]


@pytest.mark.parametrize(("sql", "names"), PG_REFUSED)
def test_postgres_server_files_are_refused_by_the_guard(sql: str, names: str) -> None:
    with pytest.raises(Refused, match=r"^refused: ") as got:
        check(sql, postgres=True)
    assert names in str(got.value) and "\n" not in str(got.value)


@pytest.mark.parametrize(
    "sql", ["SHOW search_path", "EXPLAIN (ANALYZE, COSTS off) SELECT 1", "SELECT pg_typeof(1)"]
)
def test_postgres_reads_pass_the_guard(sql: str) -> None:
    check(sql, postgres=True)


@pytest.mark.both_backends
def test_refused_the_same_on_both_backends(
    store: Store, store_target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # where a relative 'x.csv' would land, were it not refused
    Ledger(store).create_session("q?", Unit.TOKENS, 1000, session_id="s1")
    store.close()
    for sql in ("COPY sessions TO 'x.csv'", "SELECT * FROM read_csv('x.csv')", "SET x = 1"):
        with pytest.raises(StatementRefused, match=r"^refused: "):
            run(store_target, sql)
    assert run(store_target, "SELECT id FROM sessions").rows == [("s1",)]
    assert not (tmp_path / "x.csv").exists()
