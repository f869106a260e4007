"""The `mole` CLI: bad input is one clear line and a non-zero exit with nothing written; a real
session runs through the Dagster instance; `dagster asset materialize` works on a session."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mole_dag.cli import main
from mole_dag.paths import PROJECT_ROOT
from mole_dag.store import Store
from tests.sessions import run_mole

BIN = Path(sys.executable).parent


def _sessions_in(db: Path) -> int:
    if not db.exists():
        return 0
    with Store(db) as st:
        return int(st.scalar("SELECT count(*) FROM sessions"))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["research", "q?"], "a budget is required: pass --usd AMOUNT or --tokens N"),
        (["research", "q?", "--usd", "1", "--tokens", "5"], "not both"),
        (["research", "   ", "--usd", "1"], "the question is empty"),
        (["research", "q?", "--usd", "abc"], "--usd expects an amount"),
        (["research", "q?", "--usd", "-1"], "--usd must be positive"),
        (["research", "q?", "--tokens", "1.5"], "--tokens expects a whole number"),
        (["research", "q?", "--usd", "1", "--corpus", "/definitely/not/here"], "does not exist"),
        (["research", "q?", "--usd", "1", "--provider", "oracle"], "unknown provider"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "cli.duckdb"
    code = main(["--db", str(db), *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert message in err
    assert len(err.splitlines()) == 1
    assert _sessions_in(db) == 0


def test_unknown_flag_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["research", "q?", "--usd", "1", "--colour", "red"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "unrecognized arguments: --colour red" in err and len(err.splitlines()) == 1


def test_unwritable_store_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if os.geteuid() == 0:
        pytest.skip("root can write anywhere; the read-only check cannot be exercised")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        code = main(["--db", str(ro / "x.duckdb"), "research", "q?", "--usd", "1"])
    finally:
        ro.chmod(0o700)
    assert code == 2
    assert "not writable" in capsys.readouterr().err


def test_store_path_that_is_a_file_parent_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code = main(["--db", str(blocker / "x.duckdb"), "research", "q?", "--usd", "1"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "cannot create the store folder" in err and len(err.splitlines()) == 1


def test_show_unknown_session(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Store(tmp_path / "s.duckdb").close()  # `show` reads only: it no longer creates a store
    assert main(["--db", str(tmp_path / "s.duckdb"), "show", "nope"]) == 2
    assert "no session 'nope'" in capsys.readouterr().err


def _env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "dagster-home"
    home.mkdir(exist_ok=True)
    shutil.copy(PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    env = dict(os.environ)
    env.update(
        {
            "MOLE_HOME": str(tmp_path / "mole-home"),
            "DAGSTER_HOME": str(home),
            "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        }
    )
    env.pop("MOLE_DB", None)
    return env


def test_research_end_to_end_in_the_dagster_instance(
    tmp_path: Path, mini_corpus: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    env = _env(tmp_path)
    out = subprocess.run(
        [
            str(BIN / "mole"),
            "research",
            "Does green tea affect sleep and stroke risk?",
            "--tokens",
            "20000",
            "--corpus",
            str(mini_corpus),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    sid = next(line.split()[1] for line in lines if line.startswith("session "))
    assert "made without a language model" in out.stdout
    assert "[1]" in out.stdout and "## Sources" in out.stdout
    assert any(line.startswith("report ") and line.endswith(f"{sid}.md") for line in lines)
    assert "ledger consistent" in out.stdout
    assert "round 1" in out.stderr and "mined" in out.stderr  # progress while it runs
    # The runs are in the same Dagster instance the UI reads.
    runs = list((tmp_path / "dagster-home" / "history" / "runs").iterdir())
    assert runs, "no run storage under DAGSTER_HOME"

    # The read commands in this process, with the same environment (tests/sessions.py; issue
    # 34): the `mole` process above is the entry point's smoke test.
    shown = run_mole(env, ["show", sid])
    assert shown.code == 0 and f"session {sid}" in shown.out
    assert "status    done" in shown.out
    listed = run_mole(env, ["sessions"])
    assert sid in listed.out

    # Re-materialising the whole graph for the finished session works from Dagster's own CLI,
    # naming the session's question and budget as the `session` asset's config (README).
    launch = {
        "question": "Does green tea affect sleep and stroke risk?",
        "budget": {"tokens": "20000"},
    }
    # Dagster's CLI in this process (issue 34; the `dagster` entry point's own start is the
    # unknown-partition test's below). The README's form, `--select 'group:research'`, is run
    # by tests/test_readme_commands.py, and what it selects is checked by
    # tests/test_ui_launch.py::test_readme_selects_only_the_research_group.
    config = json.dumps({"ops": {"session": {"config": launch}}})
    args = ["asset", "materialize", "-m", "assets.definitions", "--select", "*"]
    logged = _dagster_in_process(env, [*args, "--partition", sid, "--config-json", config], capfd)
    with Store(Path(env["MOLE_HOME"]) / "mole.duckdb") as st:
        assert st.scalar("SELECT count(*) FROM reports WHERE session_id = ?", [sid]) == 2
        # '*' took in regrounding too, which must not open a maintenance session for it.
        assert st.scalar("SELECT count(*) FROM sessions") == 1
    assert "regrounding skipped" in logged
    # ... and watched_questions, which must not run a watch (none is named) for it.
    assert "watched_questions skipped" in logged


def _dagster_in_process(
    env: dict[str, str], args: list[str], capfd: pytest.CaptureFixture[str]
) -> str:
    """`dagster ARGS` through Dagster's own CLI in this process, from DAGSTER_HOME with ENV;
    what it logged."""
    from dagster._cli import cli as dagster_cli

    from tests.sessions import as_process

    capfd.readouterr()
    with as_process(env, Path(env["DAGSTER_HOME"])):
        try:
            dagster_cli.main(args=args, standalone_mode=False)
        except SystemExit as exc:
            assert not exc.code, capfd.readouterr().err[-2000:]
    cap = capfd.readouterr()
    return cap.out + cap.err


def test_materialize_of_an_unknown_session_is_refused_before_any_run(tmp_path: Path) -> None:
    """What the README says a user sees for a session id the instance does not know: Dagster
    refuses it in its CLI, before loading a run, so no asset code can word it; its last line
    names the partition."""
    env = _env(tmp_path)
    out = subprocess.run(
        [
            str(BIN / "dagster"),
            "asset",
            "materialize",
            "-m",
            "assets.definitions",
            "--select",
            "group:research",
            "--partition",
            "no-such-session",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=env["DAGSTER_HOME"],
        timeout=120,
        check=False,
    )
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "dagster._core.errors.DagsterInvalidSubsetError: All selected assets "
        "must have a PartitionsDefinition containing the passed partition "
        "key `no-such-session`"
    ), last
    assert not (Path(env["MOLE_HOME"]) / "mole.duckdb").exists(), "no asset ran"


def test_store_path_that_is_a_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--db", str(tmp_path), "research", "q?", "--usd", "1"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    # Refused before anything is written (issue 22: the store is checked before the launch).
    assert "is a folder, not a DuckDB file" in err and len(err.splitlines()) == 1
