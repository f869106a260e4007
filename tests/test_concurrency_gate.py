"""Issue 20, the session's gate (mole_dag/llm/concurrency.py) and how the shared retry loop uses
it: the limit halves on a 429/529 (once per round of calls sent at the old limit), grows back by
about one call per round of successes, never leaves [1, setting]; a throttled call gives up its
request slot while it waits and takes one back before any new call; a refusal caused by the
session's own concurrency is retried without counting as an attempt, one of a call alone on
the wire counts; the setting is read from MOLE_PARALLEL, then the config file, and refused in
one line when it is not a number from 1 to 64."""

from __future__ import annotations

import threading

import pytest

from mole_dag.config import ConfigError
from mole_dag.llm.concurrency import (
    DEFAULT_PARALLEL,
    MAX_PARALLEL,
    Gate,
    holding,
    parallel_setting,
    parse_parallel,
)
from mole_dag.llm.provider import ProviderUnavailable
from mole_dag.llm.retry import MAX_FREE_RETRIES, Retryable, RetryPolicy, with_retries

NO_WAIT = RetryPolicy(max_attempts=3, base_delay_s=0.0, max_delay_s=0.0)


def test_limit_halves_once_per_round_and_grows_back() -> None:
    gate = Gate(8)
    slots = [gate.dispatch() for _ in range(8)]
    assert all(s is not None for s in slots)
    with gate.watch() as watch:
        # Five of the eight sent at the limit of 8 are refused: one halving, not five.
        assert all(s.throttled(429) for s in slots[:5] if s)
        assert gate.limit == 4
        assert watch.refused == 5 and watch.lowest == 4
    for s in slots:
        assert s is not None
        s.close()
    # A call sent at 4 and refused halves it again; alone on the wire at 1, a refusal is the
    # provider's, not the session's: it does not lower anything and is not free.
    for want in (2, 1):
        s = gate.dispatch()
        assert s is not None and s.throttled(529)
        s.close()
        assert gate.limit == want
    s = gate.dispatch()
    assert s is not None and not s.throttled(429) and gate.limit == 1
    # Additive increase: about one more call per round of successes, up to the setting.
    for _ in range(200):
        s.succeeded()
    s.close()
    assert gate.limit == 8


def test_dispatch_waits_for_room_and_retries_go_first() -> None:
    gate = Gate(2)
    a, b = gate.dispatch(), gate.dispatch()
    assert a is not None and b is not None
    got: list[str] = []

    def new_call() -> None:
        s = gate.dispatch()
        got.append("new")
        assert s is not None
        s.close()

    t = threading.Thread(target=new_call)
    t.start()
    t.join(0.3)
    assert t.is_alive() and not got  # two outstanding: no room for a third
    # `a` is throttled: it lowers the limit to 1 and waits out its backoff without a request
    # slot, then takes one back; the new call waits as long as `a`'s retry is waiting.
    assert a.throttled(429) and gate.limit == 1
    retried = threading.Event()

    def retry() -> None:
        a.pause(0.0, lambda _s: None)
        got.append("retry")
        retried.set()

    r = threading.Thread(target=retry)
    r.start()
    assert not retried.wait(0.3)  # b still holds the only request slot
    b.close()
    assert retried.wait(10)
    a.close()
    t.join(10)
    assert got == ["retry", "new"]
    assert gate.max_outstanding == 2


def test_cancelled_dispatch_returns_none() -> None:
    gate = Gate(1)
    held = gate.dispatch()
    assert held is not None
    assert gate.dispatch(cancelled=lambda: True) is None
    held.close()


class Flaky:
    """An attempt that raises Retryable(status) `fails` times, then answers."""

    def __init__(self, fails: int, status: int = 429) -> None:
        self.fails, self.status, self.calls = fails, status, 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.fails:
            raise Retryable("busy", status=self.status, retry_after=None)
        return "ok"


def test_a_refusal_of_the_sessions_own_making_is_not_counted() -> None:
    """Five refusals with a policy of three attempts: the call still answers, because each
    refusal met a limit above one (8, 4, 2), or came from a round sent before the last decrease."""
    gate = Gate(8)
    others = [gate.dispatch() for _ in range(7)]
    slot = gate.dispatch()
    assert slot is not None
    attempt = Flaky(fails=5)
    # The other seven were refused in the same round: the limit went down once (to 4).
    for o in others:
        assert o is not None and o.throttled(429)
        o.close()
    with holding(slot):
        assert with_retries(attempt, policy=NO_WAIT, sleep=lambda _s: None) == "ok"
    slot.close()
    assert attempt.calls == 6
    # Without a slot (a call outside any fan-out) the same refusals exhaust the policy.
    with pytest.raises(ProviderUnavailable, match="after 3 attempts"):
        with_retries(Flaky(fails=5), policy=NO_WAIT, sleep=lambda _s: None)


def test_refusals_alone_on_the_wire_count_and_free_retries_are_capped() -> None:
    gate = Gate(1)
    slot = gate.dispatch()
    assert slot is not None
    attempt = Flaky(fails=10, status=529)
    with holding(slot), pytest.raises(ProviderUnavailable, match="after 3 attempts"):
        with_retries(attempt, policy=NO_WAIT, sleep=lambda _s: None)
    slot.close()
    assert attempt.calls == 3
    # A server that keeps refusing however low the limit goes: free retries are capped.
    big = Gate(MAX_PARALLEL)
    s = big.dispatch()
    assert s is not None

    def flapping() -> str:
        big._limit = float(MAX_PARALLEL)  # something keeps raising the limit again
        big._epoch += 1
        raise Retryable("busy", status=429)

    calls = {"n": 0}

    def counted() -> str:
        calls["n"] += 1
        return flapping()

    with holding(s), pytest.raises(ProviderUnavailable):
        with_retries(counted, policy=NO_WAIT, sleep=lambda _s: None)
    s.close()
    assert calls["n"] == NO_WAIT.max_attempts + MAX_FREE_RETRIES


def test_other_failures_are_not_adapted_to() -> None:
    """A 500 or a timeout says nothing about concurrency: counted, and the limit stays."""
    gate = Gate(4)
    slot = gate.dispatch()
    assert slot is not None
    with holding(slot), pytest.raises(ProviderUnavailable):
        with_retries(Flaky(fails=9, status=500), policy=NO_WAIT, sleep=lambda _s: None)
    slot.close()
    assert gate.limit == 4


def test_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MOLE_PARALLEL", raising=False)
    assert parallel_setting({}) == DEFAULT_PARALLEL == 8
    assert parallel_setting({"parallel": 3}) == parallel_setting({"parallel": "3"}) == 3
    for bad in (0, -1, 65, True, 2.0, "two", "1.5", [], None):
        with pytest.raises(ConfigError, match=r'"parallel" in .* from 1 to 64'):
            parallel_setting({"parallel": bad} if bad is not None else {"parallel": {}})
    monkeypatch.setenv("MOLE_PARALLEL", "2")
    assert parallel_setting({"parallel": 3}) == 2  # the flag (through the variable) wins
    monkeypatch.setenv("MOLE_PARALLEL", "0")
    with pytest.raises(ConfigError, match=r"MOLE_PARALLEL \(or --parallel\) must be"):
        parallel_setting({})
    with pytest.raises(ConfigError, match=r"--parallel must be .* got 'x'"):
        parse_parallel("x", "--parallel")
