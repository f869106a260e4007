"""tests/cpu_times.py, the per-test CPU recorder (issue 34): a test's CPU includes the child
processes it waited for, and the logs of several workers sum by file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests import cpu_times


def test_a_waited_for_child_process_counts_towards_the_test() -> None:
    before = cpu_times._cpu_now()
    # Work done in a child only: this process just waits for it.
    subprocess.run(
        [sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True, timeout=300
    )
    assert cpu_times._cpu_now() - before > 0.05


def test_logs_of_several_workers_sum_by_file(tmp_path: Path) -> None:
    rows = {
        "cpu-gw0-1.jsonl": [("tests/test_a.py::t1", 1.5), ("tests/test_b.py::t[x]", 0.25)],
        "cpu-gw1-2.jsonl": [("tests/test_a.py::t2", 2.0)],
    }
    for name, lines in rows.items():
        (tmp_path / name).write_text(
            "".join(json.dumps({"nodeid": n, "cpu_s": c}) + "\n" for n, c in lines)
        )
    (tmp_path / "other.txt").write_text("not a log")
    assert cpu_times.by_file(tmp_path) == {"tests/test_a.py": 3.5, "tests/test_b.py": 0.25}
