"""A pytest plugin that records each test's CPU-seconds (issue 34), for finding where the suite's
time goes on a shared machine, where wall time mostly measures the other engineers' load.

Set MOLE_TEST_CPU_LOG to a folder: each test process (each xdist worker) appends one JSON line a
test, `{"nodeid": ..., "cpu_s": ...}`, to its own file there. A test's CPU is its process's user
and system time over setup, call and teardown, plus that of the child processes it waited for
(a `mole` subprocess, a server it stopped); module and session fixtures count towards the test
that first needed them. `python -m tests.cpu_times FOLDER` sums the lines by file.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path

import pytest

ENV = "MOLE_TEST_CPU_LOG"


def _cpu_now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _log_file(folder: Path) -> Path:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    return folder / f"cpu-{worker}-{os.getpid()}.jsonl"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    folder = os.environ.get(ENV)
    if not folder:
        yield
        return
    start = _cpu_now()
    yield
    spent = _cpu_now() - start
    Path(folder).mkdir(parents=True, exist_ok=True)
    with _log_file(Path(folder)).open("a", encoding="utf-8") as out:
        out.write(json.dumps({"nodeid": item.nodeid, "cpu_s": round(spent, 3)}) + "\n")


def by_file(folder: Path) -> dict[str, float]:
    """CPU-seconds summed by test file over every log in `folder`."""
    totals: dict[str, float] = defaultdict(float)
    for log in sorted(folder.glob("cpu-*.jsonl")):
        for line in log.read_text("utf-8").splitlines():
            row = json.loads(line)
            totals[row["nodeid"].split("::", 1)[0]] += float(row["cpu_s"])
    return dict(totals)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.cpu_times FOLDER", file=sys.stderr)
        return 2
    totals = by_file(Path(argv[0]))
    for name, cpu in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"{cpu:9.1f}  {name}")
    print(f"{sum(totals.values()):9.1f}  total ({len(totals)} files)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
