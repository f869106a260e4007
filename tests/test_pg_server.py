"""The PostgreSQL test server (tests/pg_server.py, the pg_dsn fixture): a test gets a database
of its own on a real server, and a server the helper starts is gone once it is stopped."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from tests import pg_server
from tests.conftest import with_dbname

# The server CI installs from the OS packages (Debian 12: 15); a newer one is fine too.
MIN_MAJOR = 15


def test_pg_dsn_is_a_fresh_database_on_a_real_server(pg_dsn: str) -> None:
    import psycopg

    with psycopg.connect(pg_dsn) as conn:
        version = conn.execute("SELECT version()").fetchone()
        num = conn.execute("SELECT current_setting('server_version_num')::int").fetchone()
        db = conn.execute("SELECT current_database()").fetchone()
        tables = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone()
    assert version and version[0].startswith("PostgreSQL "), version
    assert num and num[0] // 10000 >= MIN_MAJOR, version
    bindir = pg_server.find_bindir()
    if bindir is not None and not os.environ.get("MOLE_TEST_PG_DSN"):
        # The private server is the installed one: "PostgreSQL 15.x" for the 15 binaries.
        assert version[0].startswith(f"PostgreSQL {pg_server.server_major(bindir)}."), version
    assert db and db[0].startswith("mole_t_")
    assert tables == (0,)


def test_each_test_gets_its_own_database(pg_dsn: str, pg_superuser_dsn: str) -> None:
    import psycopg

    name = pg_dsn.rsplit("/", 1)[1]
    with psycopg.connect(pg_superuser_dsn) as conn:
        rows = conn.execute("SELECT datname FROM pg_database WHERE datname = %s", [name])
        assert rows.fetchall() == [(name,)]
    assert with_dbname(pg_superuser_dsn, "x").endswith("/x")


def _refuses(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_a_started_server_is_gone_after_stop(pg_bindir: Path) -> None:
    """Started and stopped here (not the session's server): no process, no postmaster.pid, no
    folder, and the port refuses connections."""
    import psycopg

    server = pg_server.start(bindir=pg_bindir)
    try:
        pidfile = server.datadir / "postmaster.pid"
        assert pidfile.exists() and server.running()
        with psycopg.connect(server.dsn) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()
    assert not server.running()
    assert not pg_server._alive(server.pid)
    assert not pidfile.exists() and not server.root.exists()
    assert _refuses(server.port)
    server.stop()  # twice is harmless


def test_ci_script_start_and_stop(tmp_path: Path, pg_bindir: Path) -> None:
    """The command line .ci/postgres uses: start prints a DSN that works; stop ends it."""
    script = Path(pg_server.__file__)
    state = tmp_path / "state"
    out = subprocess.run(
        [sys.executable, str(script), "start", str(state)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    dsn = out.stdout.strip()
    root = Path((state / "server").read_text().strip())
    server = pg_server.found(root)
    try:
        import psycopg

        with psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        subprocess.run([sys.executable, str(script), "stop", str(state)], check=True, timeout=120)
    assert not pg_server._alive(server.pid) and not root.exists()
    assert _refuses(server.port)
