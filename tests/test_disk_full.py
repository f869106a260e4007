"""Issue 29, item 6: a full disk wherever mole writes (Dagster's instance folder, the corpus
index folder, report files) is one line naming the folder and what to do, a non-zero exit,
nothing half-written left behind, and the session `interrupted` (resumable), never `running`;
`mole resume` on a disk still full is one line too, and with space back it finishes to `done`.

The disk is simulated in-process (a tmpfs needs root): for a folder marked full, opening a file
there for writing creates it (as a full disk does) and then fails with ENOSPC, a new folder
cannot be made, and every SQLite database inside it is capped at the pages it has (SQLite's own
max_page_count), so Dagster's run and event storage fail as SQLite fails on a full disk:
"database or disk is full". One more test uses a real tmpfs where this machine lets it mount
one, and skips otherwise."""

from __future__ import annotations

import builtins
import contextlib
import errno
import io
import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from mole_dag import cli
from mole_dag.store import Store

QUESTION = "Does green tea affect sleep?"
NO_ROOM = "mole: no space left on device in "


class Disk:
    """Folders whose disk is full, while the test says so."""

    def __init__(self) -> None:
        self.full: list[Path] = []

    def fill(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.full.append(folder.resolve())

    def free(self) -> None:
        self.full.clear()

    def holds(self, path: Any) -> bool:
        if isinstance(path, int):
            return False
        where = Path(os.fsdecode(path)).absolute()
        return any(where == f or f in where.parents for f in self.full)


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[Disk]:
    disk = Disk()
    real_open, real_mkdir = io.open, os.mkdir

    def open_(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if any(c in mode for c in "wax+") and disk.holds(file):
            # The entry is made (a full disk still has inodes), the data never lands.
            real_open(file, "ab").close()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fsdecode(file))
        return real_open(file, mode, *args, **kwargs)

    def mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        if disk.holds(path) and not os.path.isdir(path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fsdecode(path))
        real_mkdir(path, *args, **kwargs)

    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        if not disk.full:
            return
        for _seq, _name, file in dbapi_conn.execute("PRAGMA database_list").fetchall():
            if file and disk.holds(file):
                # Not one page more: SQLite then answers SQLITE_FULL itself.
                pages = dbapi_conn.execute("PRAGMA page_count").fetchone()[0]
                dbapi_conn.execute(f"PRAGMA max_page_count = {max(int(pages), 1)}")

    monkeypatch.setattr(io, "open", open_)
    monkeypatch.setattr(builtins, "open", open_)
    monkeypatch.setattr(os, "mkdir", mkdir)
    sa.event.listen(sa.engine.Engine, "connect", on_connect)
    try:
        yield disk
    finally:
        sa.event.remove(sa.engine.Engine, "connect", on_connect)


@pytest.fixture
def home(_isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """MOLE_HOME with Dagster's folder in it (no DAGSTER_HOME: the case the issue saw) and the
    store beside it; the CLI changes into Dagster's folder, monkeypatch changes back."""
    monkeypatch.setenv("MOLE_DB", str(tmp_path / "mole.duckdb"))
    monkeypatch.chdir(tmp_path)
    return _isolated_home


def _research(sid: str, *extra: str) -> int:
    return cli.main(
        [
            "research",
            QUESTION,
            "--usd",
            "0.10",
            "--provider",
            "extractive",
            "--session-id",
            sid,
            "--no-report-print",
            *extra,
        ]
    )


def _status(db: Path, sid: str) -> tuple[str, str | None] | None:
    if not db.exists():
        return None
    store = Store(db)
    try:
        row = store.row("SELECT status, stop_reason FROM sessions WHERE id = ?", [sid])
    finally:
        store.close()
    return None if row is None else (str(row["status"]), row["stop_reason"])


def _one_line(err: str) -> str:
    """The error: one line, no traceback. Progress lines (indented) and the lines a session
    prints as it starts may come before it."""
    assert "Traceback" not in err, err
    said = [
        line
        for line in err.splitlines()
        if line.strip()
        and not line.startswith(("  ", "session ", "round ", "report", "resuming session"))
    ]
    assert len(said) == 1, err
    return said[0]


def _refused(code: int, capsys: pytest.CaptureFixture[str]) -> str:
    """The command failed with one line; that line."""
    err = capsys.readouterr().err
    assert code != 0, err
    return _one_line(err)


def _fill_while_mining(
    disk: Disk, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[], None]:
    """The disk under `folder` fills while round 1 runs (its runs and events are already being
    written); returns what puts mining back."""
    import assets.research as research

    mine = research.mine_claims

    def fill_then_mine(run: Any) -> Any:
        disk.fill(folder)
        return mine(run)

    monkeypatch.setattr(research, "mine_claims", fill_then_mine)
    return lambda: monkeypatch.setattr(research, "mine_claims", mine)


def _leftovers(folder: Path) -> list[Path]:
    """Half-written files: temporary names, or empty files."""
    return [
        p
        for p in folder.rglob("*")
        if p.is_file()
        and (".tmp" in p.name or p.name.startswith(".dagster.yaml.") or p.stat().st_size == 0)
        and p.name != ".mole-instance.lock"
    ]


def test_dagster_folder_full_at_research_start(
    home: Path, disk: Disk, capsys: pytest.CaptureFixture[str]
) -> None:
    dagster = home / "dagster"
    disk.fill(dagster)
    line = _refused(_research("s-start"), capsys)
    assert line.startswith(f"{NO_ROOM}{dagster}: free some space, then "), line
    assert _leftovers(dagster) == []
    # Dagster's folder is made ready before the session: nothing was created, nothing strands.
    assert _status(Path(os.environ["MOLE_DB"]), "s-start") is None
    assert line.endswith("then run the command again"), line


def test_dagster_folder_full_mid_session_then_resume(
    home: Path, disk: Disk, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    dagster = home / "dagster"
    db = Path(os.environ["MOLE_DB"])
    unfill = _fill_while_mining(disk, dagster, monkeypatch)
    said = f"{NO_ROOM}{dagster}: free some space, then `mole resume s-mid`"
    assert _refused(_research("s-mid"), capsys) == said
    got = _status(db, "s-mid")
    assert got is not None and got[0] == "interrupted", got
    assert got[1] and "no space left on device" in got[1], got
    unfill()

    # Still full: one line again, and still resumable.
    assert _refused(cli.main(["resume", "s-mid", "--no-report-print"]), capsys) == said
    got = _status(db, "s-mid")
    assert got is not None and got[0] == "interrupted", got

    # Space back: the session finishes.
    disk.free()
    code = cli.main(["resume", "s-mid", "--no-report-print"])
    out, err = capsys.readouterr()
    assert code == 0, err
    got = _status(db, "s-mid")
    assert got is not None and got[0] == "done", got
    assert "report " in out


def test_index_folder_full(home: Path, disk: Disk, capsys: pytest.CaptureFixture[str]) -> None:
    index = home / "index"
    disk.fill(index)
    line = _refused(_research("s-index"), capsys)
    assert line.startswith(f"{NO_ROOM}{index}: free some space, then "), line
    assert _leftovers(index) == []
    got = _status(Path(os.environ["MOLE_DB"]), "s-index")
    assert got is None or got[0] == "interrupted", got


def test_report_folder_full_for_show_html(
    home: Path, disk: Disk, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _research("s-html") == 0
    capsys.readouterr()
    out_dir = home / "elsewhere"
    disk.fill(out_dir)
    line = _refused(cli.main(["show", "s-html", "--html", str(out_dir / "s-html.html")]), capsys)
    assert line.startswith(f"{NO_ROOM}{out_dir}: free some space"), line
    assert list(out_dir.iterdir()) == []


def test_store_folder_full_mid_session_then_resume(
    home: Path,
    disk: Disk,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The store on the full disk: DuckDB fails the commit with the C library's words (the
    message below is the one it gave on a full tmpfs). The step fails; the session is not
    `failed` but waits for `mole resume`."""
    import duckdb

    from mole_dag.store.duckdb_store import DuckDBStore as DuckStore

    folder = tmp_path / "store"
    folder.mkdir()
    db = folder / "mole.duckdb"
    monkeypatch.setenv("MOLE_DB", str(db))
    real_write = DuckStore.write
    refused: list[str] = []

    @contextlib.contextmanager
    def write(self: DuckStore) -> Iterator[Any]:
        if disk.holds(self.path):
            refused.append(str(self.path))
            raise duckdb.TransactionException(
                "TransactionContext Error: Failed to commit: Could not write file "
                f'"{self.path}.wal": No space left on device'
            )
        with real_write(self) as cur:
            yield cur

    monkeypatch.setattr(DuckStore, "write", write)
    unfill = _fill_while_mining(disk, folder, monkeypatch)
    said = f"{NO_ROOM}{folder}: free some space, then `mole resume s-store`"
    assert _refused(_research("s-store"), capsys) == said
    # A commit that found no room is not a lost race: not retried (200 times a transaction).
    assert 0 < len(refused) <= 20, len(refused)
    unfill()
    disk.free()  # to look, and to stand in for the process ending: its owner tag is dead
    got = _status(db, "s-store")
    # The status could not be written either: still `running`, never `failed`.
    assert got is not None and got[0] in ("running", "interrupted"), got
    dead = subprocess.Popen(["true"])
    dead.wait()
    store = Store(db)
    try:
        store.transact(
            lambda cur: cur.execute(
                "UPDATE sessions SET owner = ? WHERE id = 's-store'",
                [f"{socket.gethostname()}:{dead.pid}"],
            )
        )
    finally:
        store.close()

    # Still full: `mole resume` is one line too.
    disk.fill(folder)
    assert _refused(cli.main(["resume", "s-store", "--no-report-print"]), capsys) == said

    disk.free()
    code = cli.main(["resume", "s-store", "--no-report-print"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert _status(db, "s-store") == ("done", None)


# A real full disk: a 1 MiB tmpfs over Dagster's folder, where this machine allows mounting one.


@contextlib.contextmanager
def _tmpfs(where: Path, size: str) -> Iterator[None]:
    where.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        pytest.skip("no mount command")
    got = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if got.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {got.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _fill_up(folder: Path) -> Path:
    """Write zeros into `folder` until its file system is full; returns the file."""
    ballast = folder / f"ballast-{uuid.uuid4().hex}"
    with contextlib.suppress(OSError), ballast.open("wb", buffering=0) as f:
        while True:
            f.write(b"\0" * 4096)
    return ballast


def test_real_full_tmpfs_under_dagster_folder(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dagster = home / "dagster"
    db = Path(os.environ["MOLE_DB"])
    with _tmpfs(dagster, "16m"):
        ballast = _fill_up(dagster)
        line = _refused(_research("s-tmpfs"), capsys)
        assert line.startswith(f"{NO_ROOM}{dagster}: free some space, then "), line
        assert _leftovers(dagster) == []
        got = _status(db, "s-tmpfs")
        assert got is None or got[0] == "interrupted", got
        # Space back, a fresh start; then full again once Dagster's storage exists.
        ballast.unlink()
        assert _research("s-tmpfs-2") == 0, capsys.readouterr().err
        capsys.readouterr()
        ballast = _fill_up(dagster)
        line = _refused(_research("s-tmpfs-3"), capsys)
        assert line.startswith(f"{NO_ROOM}{dagster}: free some space, then "), line
        # dagster.yaml is in place, so the session starts and its first run finds no room.
        assert line.endswith("`mole resume s-tmpfs-3`"), line
        assert _status(db, "s-tmpfs-3") == ("interrupted", f"no space left on device in {dagster}")
        ballast.unlink()
        assert cli.main(["resume", "s-tmpfs-3", "--no-report-print"]) == 0
        assert _status(db, "s-tmpfs-3") == ("done", None)
