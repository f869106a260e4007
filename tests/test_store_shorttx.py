"""Issue 12: the store file is held only while a transaction or a read runs (and lingers for
LINGER_S after the last, so a burst of reads opens it once). A read-only client gets in while a
Store (in another process or this one) is idle between transactions; a process waiting for the
file is let in at the holder's next idle moment; `mole
sessions` answers during a research run; migrations, views and recovery run once per process;
threads of one process share the file without conflicts; a nested write joins its transaction
and a read inside it sees the transaction's rows."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from mole_dag.budget import Ledger
from mole_dag.cli import main
from mole_dag.core import Role, Unit
from mole_dag.store import Store, StoreError, migrate, models, recovery, shared_file
from tests import slowweb


def released(store: Store, within_s: float = 10.0) -> bool:
    """Whether the Store let go of the file once idle (it lingers LINGER_S after its last use).
    A bound for a hang, not a timing assertion."""
    deadline = time.monotonic() + within_s
    while store.is_open and time.monotonic() < deadline:
        time.sleep(0.01)
    return not store.is_open


def connect_when_idle(path: Path, within_s: float = 10.0) -> duckdb.DuckDBPyConnection:
    """A user's read-only client that retries a lock, as the README says to."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            return duckdb.connect(str(path), read_only=True)
        except duckdb.IOException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


IDLE = """
import sys, time
from mole_dag.budget import Ledger
from mole_dag.core import Unit
from mole_dag.store import Store
s = Store(sys.argv[1])
Ledger(s).create_session("q?", Unit.TOKENS, 1000, session_id="s-idle")
print("idle", flush=True)
time.sleep(float(sys.argv[2]))
Ledger(s).create_session("q2?", Unit.TOKENS, 1000, session_id="s-after")
print("wrote", flush=True)
"""


def test_read_only_client_gets_in_while_another_process_is_idle(tmp_path: Path) -> None:
    path = tmp_path / "idle.duckdb"
    proc = subprocess.Popen(
        [sys.executable, "-c", IDLE, str(path), "30"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "idle"
        # A user's own DuckDB client, read-only: the Store holds nothing once idle.
        conn = connect_when_idle(path)
        try:
            got = conn.execute("SELECT id FROM sessions").fetchall()
        finally:
            conn.close()
        assert got == [("s-idle",)]
        # And a read-only Store in this process, as `mole sessions` opens it.
        assert (
            Store(path, read_only=True, lock_wait_s=0).scalar("SELECT count(*) FROM sessions") == 1
        )
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_read_only_client_gets_in_while_a_store_here_is_idle(tmp_path: Path) -> None:
    path = tmp_path / "here.duckdb"
    store = Store(path)
    ledger = Ledger(store)
    sid = ledger.create_session("q?", Unit.TOKENS, 1000).session_id
    ledger.reserve(sid, Role.EXECUTOR, 10, tool="t", stage="s")
    assert released(store)
    conn = duckdb.connect(str(path), read_only=True)
    try:
        assert conn.execute("SELECT held FROM sessions").fetchone() == (10,)
    finally:
        conn.close()
    # The Store still works afterwards (its next unit of work opens the file again).
    assert ledger.balance(sid).held == 10


def test_migrations_views_and_recovery_run_once_per_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = {"migrate": 0, "views": 0, "recover": 0}

    def counting(name: str, fn):  # type: ignore[no-untyped-def]
        def wrapped(*a, **k):  # type: ignore[no-untyped-def]
            calls[name] += 1
            return fn(*a, **k)

        return wrapped

    monkeypatch.setattr(migrate, "apply", counting("migrate", migrate.apply))
    monkeypatch.setattr(models, "materialize_all", counting("views", models.materialize_all))
    monkeypatch.setattr(recovery, "recover_store", counting("recover", recovery.recover_store))
    path = tmp_path / "once.duckdb"
    for i in range(5):
        store = Store(path)
        Ledger(store).create_session("q?", Unit.TOKENS, 1000, session_id=f"s{i}")
        store.close()
    for _ in range(3):
        assert Store(path, read_only=True).scalar("SELECT count(*) FROM sessions") == 5
    assert calls == {"migrate": 1, "views": 1, "recover": 1}
    # Another file is another file.
    Store(tmp_path / "other.duckdb")
    assert calls == {"migrate": 2, "views": 2, "recover": 2}


def test_the_file_is_released_after_every_unit_of_work(store: Store) -> None:
    ledger = Ledger(store)
    sid = ledger.create_session("q?", Unit.TOKENS, 1000).session_id
    assert released(store)
    with store.write() as cur:
        cur.execute("UPDATE sessions SET question = 'changed?' WHERE id = ?", [sid])
        assert store.is_open
    assert released(store)
    with pytest.raises(RuntimeError), store.write() as cur:
        cur.execute("UPDATE sessions SET question = 'rolled back?' WHERE id = ?", [sid])
        raise RuntimeError("boom")
    assert released(store)
    assert store.scalar("SELECT question FROM sessions") == "changed?"
    store.close()  # no waiting for the linger: released now
    assert not store.is_open
    with pytest.raises(StoreError, match="only valid inside write"):
        store.cursor()


def test_a_burst_of_reads_opens_the_file_once(store: Store) -> None:
    """Seen: a demo session opened its store 187 times (24 ms each, plus a checkpoint at every
    close): more than the pipeline's own work. Reads in quick succession share one open."""
    store.close()
    before = store._file.opens
    for _ in range(20):
        store.scalar("SELECT count(*) FROM sessions")
    assert store._file.opens - before == 1


def test_with_no_linger_every_unit_of_work_opens_the_file(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shared_file, "LINGER_S", 0.0)
    store.close()
    before = store._file.opens
    for _ in range(3):
        store.scalar("SELECT count(*) FROM sessions")
        assert not store.is_open
    assert store._file.opens - before == 3


def test_a_waiting_process_is_let_in_at_the_next_idle_moment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that keeps reading (never idle for LINGER_S) still lets a waiting reader in:
    the reader announces itself, the holder releases at its next idle moment and waits for it
    before reopening. (MAX_HOLD_S is lifted so only that handshake can let the reader in.)"""
    monkeypatch.setattr(shared_file, "MAX_HOLD_S", 1e9)
    path = tmp_path / "busy.duckdb"
    store = Store(path)
    Ledger(store).create_session("q?", Unit.TOKENS, 1000, session_id="s-busy")
    stop = threading.Event()
    reads = [0]

    def busy() -> None:
        while not stop.is_set():
            store.scalar("SELECT count(*) FROM sessions")
            reads[0] += 1
            time.sleep(0.002)  # far shorter than the linger: never idle long enough

    t = threading.Thread(target=busy)
    t.start()
    try:
        out = subprocess.run(
            [sys.executable, "-c", READER, str(path)], capture_output=True, text=True, timeout=120
        )
    finally:
        stop.set()
        t.join()
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["1"]
    assert reads[0] > 0
    assert not (tmp_path / "busy.duckdb.waiting").exists()  # the marker went with the waiter


READER = """
import sys
from mole_dag.store import Store
# A short wait: without the handshake a busy holder would keep it out.
print(Store(sys.argv[1], read_only=True, lock_wait_s=20).scalar("SELECT count(*) FROM sessions"))
"""


def test_nested_write_joins_and_reads_inside_see_the_transaction(store: Store) -> None:
    store.transact(lambda cur: cur.execute("CREATE TABLE t (i INTEGER)"))
    with pytest.raises(RuntimeError), store.write() as outer:
        outer.execute("INSERT INTO t VALUES (1)")
        with store.write() as inner:
            assert inner is outer
            inner.execute("INSERT INTO t VALUES (2)")
        # This thread's reads use the transaction's connection: its rows are visible.
        assert store.scalar("SELECT count(*) FROM t") == 2
        assert store.rows("SELECT i FROM t ORDER BY i") == [{"i": 1}, {"i": 2}]
        # Another Store on the same file, same thread: the same transaction.
        assert Store(store.path).scalar("SELECT count(*) FROM t") == 2
        # Another thread sees only what is committed.
        seen: list[int] = []
        t = threading.Thread(target=lambda: seen.append(store.scalar("SELECT count(*) FROM t")))
        t.start()
        t.join()
        assert seen == [0]
        raise RuntimeError("roll the whole thing back")
    assert store.scalar("SELECT count(*) FROM t") == 0


def test_threads_share_the_file_without_conflicts(store: Store) -> None:
    """Writers queue on the process's lock, readers share the open instance; a read-only Store
    in the same process joins the read-write instance rather than failing on DuckDB's
    one-configuration-per-file rule."""
    store.transact(lambda cur: cur.execute("CREATE TABLE t (i INTEGER)"))
    reader = Store(store.path, read_only=True)
    errors: list[BaseException] = []
    stop = threading.Event()

    def write(n: int) -> None:
        try:
            for j in range(20):
                store.transact(
                    lambda cur, v=n * 100 + j: cur.execute("INSERT INTO t VALUES (?)", [v])
                )
        except BaseException as exc:
            errors.append(exc)

    def read(s: Store) -> None:
        try:
            while not stop.is_set():
                s.scalar("SELECT count(*) FROM t")
        except BaseException as exc:
            errors.append(exc)

    readers = [threading.Thread(target=read, args=(s,)) for s in (store, reader, reader)]
    writers = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    assert not errors, errors[:3]
    assert store.scalar("SELECT count(*) FROM t") == 120
    assert released(store)


def test_mole_sessions_answers_during_a_research_run(
    tmp_path: Path, _isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A research process against a slow web (every response 1-2 s late) writes throughout;
    `mole sessions` and a read-only DuckDB client keep answering. No timing threshold: the
    point is that they answer at all during the run, and `mole sessions` never reports
    waiting for the store (it says so only after a wait of REPORT_WAIT_AFTER_S)."""
    web, sx = slowweb.start()
    proc = subprocess.Popen(
        slowweb.research_argv(sx, "s-slow"),
        env=slowweb.research_env(tmp_path / "dagster", _isolated_home),
        cwd=slowweb.ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    db_path = _isolated_home / "mole.duckdb"
    answered = listed = raw = 0
    try:
        while proc.poll() is None:
            time.sleep(0.3)
            if not db_path.exists():
                continue
            code = main(["sessions"])
            out, err = capsys.readouterr()
            if "no store" in err or "not a mole store" in err or "schema version" in err:
                continue  # the research process is still creating it
            assert code == 0, err
            assert "waiting for the store" not in err
            answered += 1
            if proc.poll() is None and "s-slow" in out:
                listed += 1
            try:
                conn = duckdb.connect(str(db_path), read_only=True)
            except duckdb.IOException as exc:
                assert "lock" in str(exc).lower()  # mid-transaction: retried on the next pass
            else:
                try:
                    conn.execute("SELECT count(*) FROM sessions").fetchone()
                    raw += 1
                finally:
                    conn.close()
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        web.stop()
    assert proc.returncode == 0, stderr[-2000:]
    assert "session s-slow" in stdout
    assert listed >= 3 and raw >= 1, (answered, listed, raw)
