"""How much slower this machine is right now than an idle core, for the tests' hang bounds.

A bound on how long something may take before a test calls it hung (pytest-timeout's per-test
limit, a deadline in a wait loop) is a margin, not a speed claim; a fixed one that suits an idle
machine fails on a loaded one (issue 23: `make test` beside another `make test` on two cores).
So the bounds are scaled by `slowdown()`: a fixed piece of pure-Python work timed now, against
what it takes on an idle core. Speed itself is measured in bench/, never asserted in tests."""

from __future__ import annotations

import functools
import time

# The work below on an idle core of the two-core development machine (about 0.05 s); a guess
# for any other machine, and only ever used to make bounds longer.
IDLE_S = 0.05


def _work() -> float:
    t0 = time.perf_counter()
    total = 0
    for i in range(1_000_000):
        total += i * i % 7
    assert total > 0
    return time.perf_counter() - t0


@functools.cache
def slowdown() -> float:
    """At least 1: the best of three timings of the work, over its idle time."""
    return max(1.0, min(_work() for _ in range(3)) / IDLE_S)


def bound(seconds: float) -> float:
    """A hang bound of `seconds` on an idle machine, scaled to this one now."""
    return seconds * slowdown()
