"""Issue 22, "Dagster's instance created once": five `mole research` processes started at once
on a new data folder all succeed. Before, each created Dagster's SQLite storage on first use and
one could crash with `table secondary_indexes already exists` (2 of 6 trials with two processes).

"At once" is made as tight as the test can make it without timing anything: every process first
does its slow imports, says it is ready, and waits for one start file; the test creates that
file when all five are ready, so their first uses of the store and the instance overlap."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mole_dag.budget import Ledger
from mole_dag.store import Store

N = 5
WAIT_S = 600

STARTER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path

    import dagster  # noqa: F401  (the slow imports, before the start line)
    import assets.definitions  # noqa: F401
    from mole_dag import cli

    ready, go = Path(sys.argv[1]), Path(sys.argv[2])
    ready.touch()
    while not go.exists():
        time.sleep(0.002)
    sys.exit(cli.main(sys.argv[3:]))
    """
)


# Five whole sessions at once on a shared two-core machine: minutes, not the default 300 s.
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_five_first_sessions_on_a_new_data_folder_all_succeed(tmp_path: Path) -> None:
    # One page: the sessions are as small as a session gets; what is tested is their start.
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "tea.md").write_text(
        "---\ntitle: Tea\nurl: https://www.alpha-news.com/tea\npublished: 2021-03-01\n---\n"
        "Drinking green tea in the evening raises the risk of poor sleep in adults who are "
        "sensitive to caffeine.\n",
        "utf-8",
    )
    data = tmp_path / "data"  # not made yet: the first session makes everything in it
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOLE_", "DAGSTER_"))}
    env.update(MOLE_HOME=str(data), MOLE_CONFIG=str(tmp_path / "config.json"))
    go = tmp_path / "go"
    procs = []
    for i in range(N):
        argv = ["research", "Does green tea affect sleep?", "--tokens", "100000"]
        argv += ["--corpus", str(corpus), "--session-id", f"s{i}", "--quiet"]
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", STARTER, str(tmp_path / f"ready{i}"), str(go), *argv],
                env=env,
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    try:
        deadline = time.monotonic() + WAIT_S
        while not all((tmp_path / f"ready{i}").exists() for i in range(N)):
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
            assert time.monotonic() < deadline, "the processes never got ready"
            time.sleep(0.05)
        assert not data.exists()
        go.touch()
        results = [p.communicate(timeout=WAIT_S) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, (_out, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err
        assert "Traceback" not in err
    store = Store(data / "mole.duckdb", read_only=True)
    try:
        ledger = Ledger(store)
        for i in range(N):
            bal = ledger.balance(f"s{i}")
            assert bal.status == "done" and bal.held == 0, bal
            assert ledger.verify(f"s{i}").ok
    finally:
        store.close()
