"""The per-domain limiter: slots spaced by the interval whoever takes them (threads of one process,
or another process on the same machine), a slot too far away refused as rate-limited, a 429
parking the domain. Time is a stand-in clock, so nothing here depends on the machine's speed."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mole_dag.actors.fetch.fetcher import domain_key
from mole_dag.actors.fetch.ratelimit import MAX_PENALTY_S, DomainLimiter, RateLimited


class Clock:
    def __init__(self, t: float = 1_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_slots_are_spaced_by_the_interval(tmp_path: Path) -> None:
    lim = DomainLimiter(tmp_path, clock=Clock())
    waits = [lim.reserve("example.org", 2.0, max_wait_s=100) for _ in range(4)]
    assert waits == [0.0, 2.0, 4.0, 6.0]
    assert lim.reserve("other.org", 2.0) == 0.0  # domains do not share a queue


def test_threads_share_one_queue(tmp_path: Path) -> None:
    lim = DomainLimiter(tmp_path, clock=Clock())
    waits: list[float] = []
    lock = threading.Lock()

    def take() -> None:
        w = lim.reserve("example.org", 1.0, max_wait_s=1000)
        with lock:
            waits.append(w)

    threads = [threading.Thread(target=take) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(waits) == [float(i) for i in range(16)]  # no two workers got one slot


def test_processes_share_one_queue(tmp_path: Path) -> None:
    """Another process (a second `mole research`) takes slots from the same files."""
    code = (
        "import sys\n"
        "from mole_dag.actors.fetch.ratelimit import DomainLimiter\n"
        "from pathlib import Path\n"
        f"lim = DomainLimiter(Path({str(tmp_path)!r}), clock=lambda: 1000.0)\n"
        "print(','.join(str(lim.reserve('example.org', 1.0, 1000)) for _ in range(5)))\n"
    )
    lim = DomainLimiter(tmp_path, clock=Clock())
    mine = [lim.reserve("example.org", 1.0, 1000) for _ in range(5)]
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parent.parent,
    ).stdout.strip()
    theirs = [float(x) for x in out.split(",")]
    assert mine == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert theirs == [5.0, 6.0, 7.0, 8.0, 9.0]


def test_slot_too_far_away_is_rate_limited_and_not_taken(tmp_path: Path) -> None:
    lim = DomainLimiter(tmp_path, clock=Clock())
    for _ in range(3):
        lim.reserve("example.org", 10.0, max_wait_s=100)
    with pytest.raises(RateLimited):
        lim.reserve("example.org", 10.0, max_wait_s=15)
    assert lim.reserve("example.org", 10.0, max_wait_s=100) == 30.0  # the refusal took nothing


def test_penalty_parks_the_domain_and_is_bounded(tmp_path: Path) -> None:
    clock = Clock()
    lim = DomainLimiter(tmp_path, clock=clock)
    lim.penalise("example.org", 120)
    with pytest.raises(RateLimited):
        lim.reserve("example.org", 1.0, max_wait_s=60)
    clock.t += 121
    assert lim.reserve("example.org", 1.0) == 0.0
    lim.penalise("example.org", 10**9)
    assert lim.reserve("example.org", 0.0, max_wait_s=10**9) <= MAX_PENALTY_S + 1


def test_acquire_sleeps_for_its_slot(tmp_path: Path) -> None:
    slept: list[float] = []
    lim = DomainLimiter(tmp_path, clock=Clock(), sleep=slept.append)
    lim.acquire("example.org", 0.5)
    lim.acquire("example.org", 0.5)
    assert slept == [0.5]


def test_pacing_is_per_registrable_domain() -> None:
    assert domain_key("https://www.bbc.co.uk/news") == domain_key("https://news.bbc.co.uk/x")
    assert domain_key("https://alice.github.io/") != domain_key("https://bob.github.io/")
