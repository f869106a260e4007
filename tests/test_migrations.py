"""The schema: migrations apply once, record their version, and refuse the states the design
forbids (the CHECK constraints are the last line of defence, so they are tested directly)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from mole_dag.store import Store, StoreError, utcnow
from mole_dag.store.migrate import MigrationsMissing, apply, current_version, discover


def test_migrations_apply_once_and_record_version(tmp_path: Path) -> None:
    path = tmp_path / "m.duckdb"
    s1 = Store(path)
    v = s1.schema_version()
    assert v == max(m.version for m in discover())
    s1.close()
    conn = duckdb.connect(str(path))
    try:
        assert apply(conn) == []  # idempotent: nothing left to apply
        assert current_version(conn) == v
        n = conn.execute("SELECT count(*) FROM schema_migrations").fetchone()[0]
        assert n == len(discover())
    finally:
        conn.close()


def test_failed_migration_leaves_previous_version(tmp_path: Path) -> None:
    mdir = tmp_path / "migs"
    mdir.mkdir()
    (mdir / "0001_ok.sql").write_text("CREATE TABLE t (x INTEGER);")
    (mdir / "0002_bad.sql").write_text("CREATE TABLE u (y INTEGER); SELECT * FROM nope;")
    conn = duckdb.connect(str(tmp_path / "x.duckdb"))
    try:
        with pytest.raises(duckdb.Error):
            apply(conn, mdir)
        assert current_version(conn) == 1
        tables = {
            r[0]
            for r in conn.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }
        assert "t" in tables and "u" not in tables
    finally:
        conn.close()


def test_badly_named_migration_is_refused(tmp_path: Path) -> None:
    (tmp_path / "init.sql").write_text("SELECT 1;")
    with pytest.raises(ValueError, match="NNNN_name"):
        discover(tmp_path)


def _session(cur, **over) -> None:  # type: ignore[no-untyped-def]
    row = {
        "id": "s1",
        "question": "q?",
        "unit": "tokens",
        "total": 100,
        "spent": 0,
        "held": 0,
        "escrow": 15,
        "status": "created",
    } | over
    cur.execute(
        "INSERT INTO sessions (id, question, unit, total, spent, held, escrow, status, created_at,"
        " updated_at) VALUES ($id, $question, $unit, $total, $spent, $held, $escrow, $status,"
        " $now, $now)",
        row | {"now": utcnow()},
    )


@pytest.mark.parametrize(
    "over",
    [
        {"spent": -1},
        {"held": -1},
        {"escrow": -1},
        {"spent": 80, "held": 10},  # 80 + 10 + 15 > 100: the ceiling
        {"total": 0},
        {"unit": "euros"},
        {"status": "sleeping"},
        {"question": "   "},
    ],
)
def test_sessions_constraints_refuse_bad_rows(store: Store, over: dict) -> None:
    with pytest.raises(duckdb.ConstraintException), store.write() as cur:
        _session(cur, **over)


def test_ceiling_refuses_update_that_overspends(store: Store) -> None:
    with store.write() as cur:
        _session(cur)
    with pytest.raises(duckdb.ConstraintException), store.write() as cur:
        cur.execute("UPDATE sessions SET spent = 86 WHERE id = 's1'")
    # ...and exactly at the ceiling is fine.
    with store.write() as cur:
        cur.execute("UPDATE sessions SET spent = 85 WHERE id = 's1'")


def test_claim_quote_floor_and_role_and_edge_enums(store: Store) -> None:
    now = utcnow()
    base = {
        "id": "c1",
        "session_id": "s1",
        "source_id": "x",
        "chunk_id": "x-0",
        "sub_question_id": "sq",
        "text": "t",
        "qs": 0,
        "qe": 30,
        "by": "test",
        "now": now,
    }
    sql = (
        "INSERT INTO claims (id, session_id, source_id, chunk_id, sub_question_id, text, quote,"
        " quote_byte_start, quote_byte_end, created_by, created_at) VALUES ($id, $session_id,"
        " $source_id, $chunk_id, $sub_question_id, $text, $quote, $qs, $qe, $by, $now)"
    )
    with pytest.raises(duckdb.ConstraintException), store.write() as cur:
        # 23 characters once whitespace collapses, though longer raw.
        cur.execute(sql, base | {"quote": "short   quote \n\n of 23 ch"[:25]})
    with store.write() as cur:
        cur.execute(sql, base | {"quote": "a quote of at least twenty-four characters"})
    with pytest.raises(duckdb.ConstraintException), store.write() as cur:
        cur.execute(
            "INSERT INTO tool_calls (id, session_id, role, stage, tool, reserved, status,"
            " created_at, expires_at) VALUES ('t', 's1', 'janitor', 'x', 'x', 0,"
            " 'reserved', $n, $n)",
            {"n": now},
        )
    with pytest.raises(duckdb.ConstraintException), store.write() as cur:
        cur.execute(
            "INSERT INTO claim_edges (id, session_id, src_claim_id, dst_claim_id, kind,"
            " created_by, created_at) VALUES ('e', 's1', 'a', 'b', 'supports', 'x', $n)",
            {"n": now},
        )
    with pytest.raises(duckdb.ConstraintException), store.write() as cur:
        # Symmetric edges are stored in canonical order only.
        cur.execute(
            "INSERT INTO claim_edges (id, session_id, src_claim_id, dst_claim_id, kind,"
            " created_by, created_at) VALUES ('e', 's1', 'b', 'a', 'contradicts', 'x', $n)",
            {"n": now},
        )
    with pytest.raises(duckdb.ConstraintException), store.write() as cur:
        cur.execute(
            "INSERT INTO dead_ends (id, session_id, cause, created_at)"
            " VALUES ('d', 's1', 'bad_luck', $n)",
            {"n": now},
        )


def test_chunk_text_must_match_its_byte_span(store: Store) -> None:
    sql = (
        "INSERT INTO chunks (id, session_id, source_id, ordinal, byte_start, byte_end, text)"
        " VALUES ('k', 's', 'src', 0, 0, $end, $text)"
    )
    with pytest.raises(duckdb.ConstraintException), store.write() as cur:
        cur.execute(sql, {"end": 3, "text": "日本"})  # 6 bytes, not 3
    with store.write() as cur:
        cur.execute(sql, {"end": 6, "text": "日本"})


def test_settled_call_needs_actual(store: Store) -> None:
    with pytest.raises(duckdb.ConstraintException), store.write() as cur:
        cur.execute(
            "INSERT INTO tool_calls (id, session_id, role, stage, tool, reserved, status,"
            " created_at, expires_at, completed_at) VALUES ('t', 's1', 'planner', 'x',"
            " 'x', 5, 'settled', $n, $n, $n)",
            {"n": utcnow()},
        )


def test_a_lower_numbered_migration_added_later_still_runs(tmp_path: Path) -> None:
    mdir = tmp_path / "migs"
    mdir.mkdir()
    (mdir / "0001_a.sql").write_text("CREATE TABLE a (x INTEGER);")
    (mdir / "0003_c.sql").write_text("CREATE TABLE c (x INTEGER);")
    conn = duckdb.connect(str(tmp_path / "y.duckdb"))
    try:
        assert apply(conn, mdir) == [1, 3]
        (mdir / "0002_b.sql").write_text("CREATE TABLE b (x INTEGER);")  # merged from a branch
        assert apply(conn, mdir) == [2]
        assert apply(conn, mdir) == []
    finally:
        conn.close()


def test_a_missing_migrations_folder_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 12: with sql/ missing (a wheel built without it) the store opened at schema 0 and
    failed much later with UnknownQuery. Now opening it fails at once, naming the folder."""
    missing = tmp_path / "no-sql"
    monkeypatch.setenv("MOLE_SQL_DIR", str(missing))
    # One StoreError line (the CLI prints it as such), naming the folder.
    with pytest.raises(StoreError, match=str(missing / "migrations")):
        Store(tmp_path / "s.duckdb")
    (missing / "migrations").mkdir(parents=True)  # there, but empty: no schema either
    with pytest.raises(MigrationsMissing, match="no NNNN_name.sql migrations in"):
        discover()
