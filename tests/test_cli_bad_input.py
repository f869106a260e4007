"""Issue 11, bad input: each case is one line on stderr and exit status 2, with the true reason
and what to do, and nothing written. Absurd budgets are refused with the stated maximum; the same
check (mole_dag.launch.check_budget) serves the CLI, mole-mcp and the Dagster launch config."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mole_dag.budget import Ledger
from mole_dag.cli import main
from mole_dag.core import Unit
from mole_dag.launch import MAX_TOKENS, MAX_USD, LaunchError, check_budget
from mole_dag.session import BudgetSpecError, parse_budget
from mole_dag.store import Store, StoreError


def _one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    return err


# -- budgets --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--usd", "inf", "must be a finite amount"),
        ("--usd", "-Infinity", "must be a finite amount"),
        ("--usd", "nan", "must be a finite amount"),
        ("--usd", "1e30", "over the maximum of $10,000"),
        ("--usd", "99999999999999", "over the maximum of $10,000"),
        ("--usd", "1e999999999", "over the maximum of $10,000"),
        ("--usd", "0", "must be positive"),
        ("--usd", "-0.5", "must be positive"),
        ("--tokens", "12345678901234567890123", "over the maximum of 1,000,000,000,000"),
        ("--tokens", "9" * 5000, "over the maximum of 1,000,000,000,000"),
        ("--tokens", "0", "must be positive"),
        ("--tokens", "-5", "must be positive"),
    ],
)
def test_absurd_budgets_are_refused_before_anything_is_written(
    flag: str, value: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "cli.duckdb"
    err = _one_line_exit_2(["--db", str(db), "research", "q?", f"{flag}={value}"], capsys)
    assert message in err
    assert not db.exists()


def test_budget_at_the_ceiling_is_accepted() -> None:
    assert check_budget(str(MAX_USD), None) == (Unit.USD_MICROS, int(MAX_USD) * 1_000_000)
    assert check_budget(None, str(MAX_TOKENS)) == (Unit.TOKENS, MAX_TOKENS)
    assert check_budget(None, "1_000") == (Unit.TOKENS, 1000)
    assert check_budget("$0.50", None) == (Unit.USD_MICROS, 500_000)
    with pytest.raises(LaunchError, match="over the maximum"):
        check_budget(None, str(MAX_TOKENS + 1))
    with pytest.raises(LaunchError, match="over the maximum"):
        check_budget("10000.000001", None)


def test_dagster_launch_config_uses_the_same_check() -> None:
    # parse_budget (re-grounding's run config) words check_budget's refusals; the `session`
    # asset's launch config goes through check_launch itself (tests/test_ui_launch.py).
    for usd in ("inf", "1e30", "nan"):
        with pytest.raises(BudgetSpecError):
            parse_budget(usd, None)
    with pytest.raises(BudgetSpecError, match="over the maximum"):
        parse_budget(None, "1" * 23)


def test_tool_arguments_are_worded_without_dashes() -> None:
    with pytest.raises(LaunchError, match=r"^usd must be a finite amount"):
        check_budget("inf", None, flag="")


# -- the store: read-only commands never create or modify it ---------------------------------

READ_COMMANDS = [["sessions"], ["show", "s1"], ["trace", "s1"], ["eval", "s1"], ["crossings", "s1"]]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def good_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with one session and enough rows to span many blocks, checkpointed."""
    db = tmp_path_factory.mktemp("store") / "good.duckdb"
    # One checkpoint for the session and the filler, with the file kept open across them by
    # `pin` (a Store otherwise closes, and so checkpoints, after every transaction): the
    # catalogue then lands at the end of the file, the layout the truncation cases below cut.
    with Store(db) as st, st.read() as pin:
        Ledger(st).create_session("q?", Unit.TOKENS, 1000, session_id="s1")
        pin.execute(
            "CREATE TABLE filler AS SELECT range AS i, md5(range::VARCHAR) AS h FROM range(200000)"
        )
        pin.execute("CHECKPOINT")
    return db


@pytest.mark.parametrize("argv", READ_COMMANDS, ids=lambda a: a[0])
def test_read_commands_do_not_create_a_store(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "typo" / "path.duckdb"
    err = _one_line_exit_2(["--db", str(db), *argv], capsys)
    assert f"no store at {db}; run `mole research` first or pass --db" in err
    assert not db.exists() and not db.parent.exists()


# Cut points measured on this fixture with duckdb 2.0: at 0.3 DuckDB cannot even open the file;
# at 0.8 and 0.9 it opens, then fails when a query reaches a lost block, and before this fix a
# read command wrote to the file (the view refresh on open) before the traceback. A cut at 0.95
# only drops trailing free blocks: that store is still whole and readable.
@pytest.mark.parametrize("argv", READ_COMMANDS, ids=lambda a: a[0])
@pytest.mark.parametrize("keep", [0.3, 0.8, 0.9])
def test_truncated_store_is_one_line_and_left_unchanged(
    argv: list[str],
    keep: float,
    good_store: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _truncated_case(argv, keep, good_store, tmp_path, capsys)


def test_research_refuses_a_store_it_cannot_open(
    good_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _truncated_case(["research", "q?", "--tokens", "100"], 0.3, good_store, tmp_path, capsys)


def _truncated_case(
    argv: list[str],
    keep: float,
    good_store: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = good_store.read_bytes()
    db = tmp_path / "truncated.duckdb"
    db.write_bytes(data[: int(len(data) * keep) // 4096 * 4096])
    before = _sha(db)
    err = _one_line_exit_2(["--db", str(db), *argv], capsys)
    assert f"{db} is not a readable mole store (truncated" in err
    assert _sha(db) == before
    assert not Path(f"{db}.wal").exists()


def test_damaged_block_is_reported_as_a_damaged_store(
    good_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Same length, garbage in the middle: only DuckDB's block checksums can tell.
    data = bytearray(good_store.read_bytes())
    mid = len(data) // 2 // 4096 * 4096
    data[mid : mid + 65536] = b"\xa5" * 65536
    db = tmp_path / "damaged.duckdb"
    db.write_bytes(bytes(data))
    before = _sha(db)
    for argv in (["sessions"], ["show", "s1"]):
        code = main(["--db", str(db), *argv])
        err = capsys.readouterr().err.strip()
        if code == 0:  # the garbage fell in a block this command never reads
            continue
        assert code == 2 and len(err.splitlines()) == 1, err
        assert f"{db} is not a readable mole store" in err
    with (
        pytest.raises(StoreError, match="not a readable mole store"),
        Store(db, read_only=True) as st,
    ):
        st.scalar("SELECT sum(i), max(h) FROM filler")
    assert _sha(db) == before


def test_not_a_duckdb_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "notes.duckdb"
    db.write_text("these are my notes\n" * 1000)
    before = _sha(db)
    err = _one_line_exit_2(["--db", str(db), "sessions"], capsys)
    assert f"{db} is not a readable mole store (not a DuckDB database file)" in err
    assert _sha(db) == before


def test_read_commands_work_on_a_good_store_without_changing_it(
    good_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "copy.duckdb"
    db.write_bytes(good_store.read_bytes())
    before = _sha(db)
    assert main(["--db", str(db), "sessions"]) == 0
    assert "s1" in capsys.readouterr().out
    assert main(["--db", str(db), "show", "s1"]) == 0
    assert _sha(db) == before


# -- terminal output: controls and bidi shown as visible escapes ------------------------------

HOSTILE = "Is tea \x1b[31msafe\x1b[0m?\x07 \u202eevil\u202c \x1b]0;pwned\x07"


def _no_raw_controls(text: str) -> None:
    for ch in ("\x1b", "\x07", "\u202e", "\u202c"):
        assert ch not in text, repr(text)


def test_listings_escape_controls_and_bidi(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "hostile.duckdb"
    with Store(db) as st:
        Ledger(st).create_session(HOSTILE, Unit.TOKENS, 1000, session_id="s1")
    for argv in (["sessions"], ["show", "s1"], ["trace", "s1"]):
        assert main(["--db", str(db), *argv]) == 0
        out = capsys.readouterr()
        _no_raw_controls(out.out + out.err)
        if argv != ["trace", "s1"]:
            assert "\\x1b[31msafe" in out.out and "\\u202eevil" in out.out, out.out


def test_error_lines_escape_controls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "x\x1b[2J\u202e" / "s.duckdb"
    err = _one_line_exit_2(["--db", str(db), "sessions"], capsys)
    _no_raw_controls(err)
    assert "x\\x1b[2J\\u202e" in err


def test_progress_lines_escape_controls(capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    from mole_dag.cli.common import EscapingFormatter

    log = logging.getLogger("mole.test.progress")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(EscapingFormatter("  · %(message)s"))
    log.addHandler(handler)
    try:
        log.warning("lead %s via local: done", "tea \x1b[31m\u202e")
    finally:
        log.removeHandler(handler)
    err = capsys.readouterr().err
    _no_raw_controls(err)
    assert "tea \\x1b[31m\\u202e" in err


# -- the parallel setting (issue 20) ---------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-2", "65", "eight", "2.5"])
def test_a_bad_parallel_flag_is_refused_before_anything_is_written(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "cli.duckdb"
    err = _one_line_exit_2(
        ["--db", str(db), "research", "q?", "--usd", "0.5", f"--parallel={value}"], capsys
    )
    assert "--parallel must be a whole number of model calls in flight from 1 to 64" in err
    assert not db.exists()
    err = _one_line_exit_2(["--db", str(db), "resume", "s-1", f"--parallel={value}"], capsys)
    assert "--parallel must be" in err


def test_a_bad_parallel_in_the_config_file_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_text('{"parallel": "lots"}', "utf-8")
    cfg.chmod(0o600)
    monkeypatch.setenv("MOLE_CONFIG", str(cfg))
    db = tmp_path / "cli.duckdb"
    err = _one_line_exit_2(["--db", str(db), "research", "q?", "--usd", "0.5"], capsys)
    assert f'"parallel" in {cfg} must be a whole number' in err and "got 'lots'" in err
    assert not db.exists()


# -- issue 22: the smaller promises -----------------------------------------------------------

MOLE = str(Path(sys.executable).parent / "mole")


def test_a_question_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    # Bytes on the command line, as a shell in another encoding passes them.
    db = tmp_path / "data" / "mole.duckdb"
    res = subprocess.run(
        [MOLE, "--db", str(db), "research", b"tea \xff\xfe and sleep?", "--usd", "0.5"],
        capture_output=True,
        text=True,
        env={**os.environ, "MOLE_HOME": str(tmp_path / "data")},
        timeout=120,
    )
    err = res.stderr.strip()
    assert res.returncode == 2, err
    assert err.splitlines() == [
        "mole research: the question is not valid UTF-8 text (byte 0xff at character 5); "
        "pass it in UTF-8"
    ], err
    assert not (tmp_path / "data").exists()


def test_resume_of_an_unknown_id_leaves_the_store_as_it_was(
    good_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "copy.duckdb"
    db.write_bytes(good_store.read_bytes())
    before = _sha(db)
    err = _one_line_exit_2(["--db", str(db), "resume", "nope"], capsys)
    assert err == "mole resume: no session 'nope'; `mole sessions` lists them"
    assert _sha(db) == before
    assert not Path(f"{db}.wal").exists()
    # No store at all: none is made for a session that cannot be in it.
    missing = tmp_path / "none" / "mole.duckdb"
    err = _one_line_exit_2(["--db", str(missing), "resume", "nope"], capsys)
    assert "no store at" in err
    assert not missing.parent.exists()


@pytest.mark.parametrize(
    "argv",
    [["research", "What is tea?", "--usd", "0.5"], ["resume", "s1"], ["sessions"], ["show", "s1"]],
    ids=lambda a: a[0],
)
def test_a_corrupt_store_gets_nothing_created_beside_it(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    db = home / "mole.duckdb"
    db.write_bytes(bytes(range(256)) * 80)  # 20 KiB that are not a DuckDB file
    before = _sha(db)
    err = _one_line_exit_2(["--db", str(db), *argv], capsys)
    assert f"{db} is not a readable mole store" in err
    assert _sha(db) == before
    assert sorted(p.name for p in home.iterdir()) == ["mole.duckdb"]


def test_an_unusable_store_folder_is_one_line(tmp_path: Path) -> None:
    # The data folder (store and corpus index cache) lies under a file: nothing can be made
    # there, whoever runs the command (root included). A fresh process: the corpus index is
    # cached per process, and a first use is what tries to write it.
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    res = subprocess.run(
        [MOLE, "research", "What is tea?", "--usd", "0.5"],
        capture_output=True,
        text=True,
        env={**os.environ, "MOLE_HOME": str(blocker / "home")},
        timeout=120,
    )
    err = res.stderr.strip()
    assert res.returncode == 2, err
    assert len(err.splitlines()) == 1 and "cannot create the store folder" in err, err


def test_an_unwritable_store_folder_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if os.geteuid() == 0:
        pytest.skip("root can write anywhere; the permission check cannot be exercised")
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o500)
    monkeypatch.setenv("MOLE_HOME", str(home))
    try:
        err = _one_line_exit_2(["research", "What is tea?", "--usd", "0.5"], capsys)
    finally:
        home.chmod(0o700)
    assert "is not writable" in err
    assert list(home.iterdir()) == []


def test_checking_a_store_file_never_drops_this_process_lock(tmp_path: Path) -> None:
    """The check that a file is a store reads its first bytes; closing that descriptor would
    drop DuckDB's fcntl lock on the file if this process has it open, and let another process
    open it beside us (the lost write of issue 14). So it is skipped while the file is open."""
    from mole_dag.store import check_target

    db = tmp_path / "s.duckdb"
    Store(db).close()
    other = [sys.executable, "-c", "import duckdb, sys; duckdb.connect(sys.argv[1]).close()"]
    with Store(db) as st, st.read():  # this process holds the file, and DuckDB's lock on it
        Store(db)  # a second handle: its writability check
        check_target(db)  # the CLI's check before a launch
        got = subprocess.run([*other, str(db)], capture_output=True, text=True, timeout=120)
    assert got.returncode != 0 and "lock" in got.stderr.lower(), got.stderr


# Issue 29, item 7: refusing a damaged store, mole still left `<store>.lock` beside it (every
# command: the hand-over lock is taken to open the file) and `index/corpus-*.json` (research
# built the corpus index before the store was opened). The data folder is the store's folder
# here (MOLE_HOME), so the index would land beside it too.
CORPUS = Path(__file__).resolve().parents[1] / "examples" / "corpus"
DAMAGE_COMMANDS = [
    ["sessions"],
    ["show", "s1"],
    ["sql", "SELECT 1"],
    ["research", "q?", "--tokens", "1000", "--corpus", str(CORPUS)],
]


@pytest.mark.parametrize("argv", DAMAGE_COMMANDS, ids=lambda a: a[0])
@pytest.mark.parametrize("damage", ["cut-0.3", "cut-0.8", "garbage", "header-only"])
def test_a_damaged_store_gets_nothing_created_beside_it(
    argv: list[str],
    damage: str,
    good_store: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("MOLE_HOME", str(home))
    db = home / "mole.duckdb"
    data = good_store.read_bytes()
    if damage.startswith("cut-"):
        db.write_bytes(data[: int(len(data) * float(damage[4:])) // 4096 * 4096])
    elif damage == "header-only":  # DuckDB's magic, then the file ends
        db.write_bytes(data[:5000])
    else:
        db.write_bytes(bytes(range(256)) * 80)
    if damage == "cut-0.8" and argv[0] == "sql":
        # That store opens, and SELECT 1 reaches no lost block: nothing can tell it damaged.
        # A statement that reads the lost blocks can.
        argv = ["sql", "SELECT * FROM sessions"]
    before = _sha(db)
    err = _one_line_exit_2(["--db", str(db), *argv], capsys)
    assert f"{db} is not a readable mole store" in err
    assert _sha(db) == before
    assert sorted(p.name for p in home.iterdir()) == ["mole.duckdb"]
