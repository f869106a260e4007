"""Issue 20, "the ledger's promise holds under concurrency", on both store backends: many
concurrent model calls (the stage fan-out, mole_dag/llm/fanout.py) against a budget that runs
out mid-stage. With an honest provider the overshoot is 0, and the calls made are the ones a
one-at-a-time stage would have made; with a provider that reports more than a call was allowed,
no call is dispatched once the first overrun is settled, and the excess comes only from calls
already in flight.

The calls are plain functions with a random delay (seeded per call, so each call costs the
same in every run while the order in which they finish differs): the ledger, not a server, is
under test here."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

import pytest

from mole_dag.budget import BudgetOverrun, Ledger, Usage
from mole_dag.core import Role, Unit
from mole_dag.llm.fanout import Allowance, Job, Outcome, Pass, Status, fan_out
from mole_dag.skills.protocol import Metered

pytestmark = pytest.mark.both_backends

ESTIMATE = 100
CALLS = 48
# 3000 tokens, 450 in escrow: 2550 outside it, room for 25 holds of 100 at once, and for more
# calls than that as settled calls return what they did not use.
TOTAL = 3000
PARALLEL = 8


class Calls:
    """The stand-in for a stage's calls: each sleeps a little, reports a cost (at most its
    estimate when honest) and counts how many are running at once."""

    def __init__(self, over_from: int | None = None) -> None:
        self.over_from = over_from  # calls from this index on report 3x their estimate
        self.running = 0
        self.max_running = 0
        self.started: list[int] = []
        self._lock = threading.Lock()

    def cost(self, i: int) -> int:
        if self.over_from is not None and i >= self.over_from:
            return 3 * ESTIMATE
        return random.Random(i).randint(40, ESTIMATE)  # the same for call i in every run

    def call(self, i: int) -> Callable[[], Metered[None]]:
        def run() -> Metered[None]:
            with self._lock:
                self.running += 1
                self.max_running = max(self.max_running, self.running)
                self.started.append(i)
            time.sleep(random.uniform(0.0, 0.03))  # completion order differs from call order
            with self._lock:
                self.running -= 1
            cost = self.cost(i)
            return Metered(None, cost, Usage(input_tokens=cost), "stand-in")

        return run

    def jobs(self) -> list[Job[Metered[None]]]:
        return [Job(ESTIMATE, self.call(i)) for i in range(CALLS)]


def _session(ledger: Ledger, sid: str) -> None:
    ledger.create_session("q?", Unit.TOKENS, TOTAL, session_id=sid, provider="anthropic")


def _pass(ledger: Ledger, sid: str, parallel: int, label: str = "mining", **kw: object) -> Pass:
    return Pass(ledger, sid, Role.EXECUTOR, "mined_claims", "stand-in:mine", label, parallel, **kw)  # type: ignore[arg-type]


def _run(ledger: Ledger, sid: str, parallel: int, calls: Calls) -> list[Outcome[Metered[None]]]:
    _session(ledger, sid)
    return list(fan_out(_pass(ledger, sid, parallel), calls.jobs()))


def test_budget_runs_out_mid_stage_overshoot_zero(ledger: Ledger) -> None:
    honest = Calls()
    got = _run(ledger, "s-par", PARALLEL, honest)
    done = [o.index for o in got if o.status == Status.DONE]
    refused = [o for o in got if o.status == Status.REFUSED]
    # The budget ran out mid-stage: some calls made, one refused, the rest never sent.
    assert done and len(refused) == 1 and got[-1].status == Status.NOT_SENT
    assert refused[0].refusal is not None
    assert 1 < honest.max_running <= PARALLEL  # concurrent, within the setting
    bal = ledger.balance("s-par")
    assert bal.overrun == 0 and bal.held == 0
    assert bal.spent + bal.escrow <= bal.total  # overshoot 0: not a token past the ceiling
    assert bal.spent == sum(honest.cost(i) for i in done)
    check = ledger.verify("s-par")
    assert check.ok and not check.over_ceiling, check.explain()

    # The same calls as one at a time would make: a refusal while calls were in flight was
    # asked again once they had settled, so the books it was refused on were the sequential
    # ones (mole_dag/llm/fanout.py).
    one = Calls()
    seq = _run(ledger, "s-seq", 1, one)
    assert one.max_running == 1
    assert [(o.index, o.status) for o in seq] == [(o.index, o.status) for o in got]
    assert ledger.balance("s-seq").spent == bal.spent


def test_over_reporting_provider_stops_dispatch_at_the_first_overrun(ledger: Ledger) -> None:
    honest_first = 10
    calls = Calls(over_from=honest_first)
    got = _run(ledger, "s-over", PARALLEL, calls)
    rows = ledger.store.rows(
        "SELECT reserved, actual, overrun, status FROM tool_calls WHERE session_id = 's-over'"
    )
    overran = [r for r in rows if r["overrun"]]
    assert overran, "the provider over-reported, and the ledger recorded it"
    # Every call that overran was dispatched before the first overrun settled: once it did,
    # the ledger refused every reservation (BudgetOverrun), so at most the calls in flight at
    # that moment (the setting's worth) overran, and at most that many were dispatched beyond
    # the honest calls that finished before it.
    assert len(overran) <= PARALLEL
    assert len(rows) <= honest_first + PARALLEL
    assert len(calls.started) == len(rows)  # every call sent was reserved, none twice
    stopped = [o for o in got if o.status == Status.REFUSED]
    assert len(stopped) == 1 and isinstance(stopped[0].refusal, BudgetOverrun)
    assert all(o.status == Status.NOT_SENT for o in got[stopped[0].index + 1 :])
    # The excess is exactly what the calls in flight reported beyond their holds.
    bal = ledger.balance("s-over")
    assert bal.overrun == sum(r["overrun"] for r in rows) <= PARALLEL * 2 * ESTIMATE
    assert bal.held == 0
    check = ledger.verify("s-over")
    assert check.ok, check.explain()
    with pytest.raises(BudgetOverrun):
        ledger.reserve("s-over", Role.EXECUTOR, 1, tool="t", stage="s")


def test_a_stage_allowance_is_kept_under_concurrency(ledger: Ledger) -> None:
    """The judge's share of the budget (and grounding's part of the escrow) is a cap of the
    stage's own: calls in flight count against it, and a call it refuses with calls in flight
    is asked again once they have ended. Skipping (grounding) goes on past a refused call."""
    cap = 1000
    made: dict[int, list[tuple[int, Status]]] = {}
    for parallel in (1, PARALLEL):
        sid = f"s-allow-{parallel}"
        _session(ledger, sid)
        calls = Calls()
        allowance = Allowance(cap)
        got = list(
            fan_out(
                _pass(ledger, sid, parallel, allowance=allowance, stop_on_refusal=False),
                calls.jobs(),
            )
        )
        assert allowance.spent <= cap and allowance.pending == 0
        assert allowance.spent == ledger.balance(sid).spent
        assert any(o.status == Status.REFUSED for o in got)
        assert not any(o.status == Status.NOT_SENT for o in got)  # skipped, not stopped
        made[parallel] = [(o.index, o.status) for o in got]
    assert made[1] == made[PARALLEL]


def test_throttling_is_recorded_for_mole_show(ledger: Ledger) -> None:
    """What a provider's refusals did to a pass is stored (migration 0018) and summed per
    session (the `throttled` line of `mole show`), on both backends."""
    from collections import Counter

    from mole_dag.llm.concurrency import Watch
    from mole_dag.llm.fanout import record_throttling
    from mole_dag.store import q

    _session(ledger, "s-thr")
    assert ledger.store.row(q("session_throttling"), {"session_id": "s-thr"}) is None
    for label, refusals, lowest, secs in (
        ("mining", Counter({429: 5}), 2, 3.5),
        ("judging", Counter({429: 1, 529: 2}), 1, 1.25),
    ):
        watch = Watch(PARALLEL, lowest, refusals, 6, secs)
        record_throttling(_pass(ledger, "s-thr", PARALLEL, label=label), watch, 9.0)
    row = ledger.store.row(q("session_throttling"), {"session_id": "s-thr"})
    assert row is not None
    assert (int(row["rate_limited"]), int(row["overloaded"]), int(row["lowest"])) == (6, 2, 1)
    assert int(row["parallel"]) == PARALLEL and row["labels"] == "judging, mining"
    assert abs(float(row["throttled_s"]) - 4.75) < 1e-6


def test_an_interrupted_pass_sends_nothing_more_not_even_a_retry(ledger: Ledger) -> None:
    """An interrupt with calls in flight charges each its reservation (its answer may be lost
    while the provider bills it). Those calls send nothing more: an attempt of theirs that
    fails afterwards is not retried, for a retry would be a request the ledger has no row of its
    own for, and its answer would replace the charge for the attempt that may have been billed.
    (A stopped `mole research` once waited out the HTTP timeout on such a call, then retried
    it: issue 22's resume test charged less than the provider billed.)"""
    from mole_dag.llm.retry import Retryable, with_retries

    _session(ledger, "s-int")
    in_flight = 3
    go = threading.Event()
    lock = threading.Lock()
    attempts: list[int] = []
    ended = threading.Semaphore(0)

    def call(i: int) -> Callable[[], Metered[None]]:
        def attempt() -> Metered[None]:
            with lock:
                attempts.append(i)
            if i == 0:
                return Metered(None, 10, Usage(input_tokens=10), "stand-in")
            go.wait(60)
            raise Retryable("overloaded", status=529)

        def run() -> Metered[None]:
            try:
                return with_retries(attempt, sleep=lambda _s: None, provider="stand-in")
            finally:
                ended.release()

        return run

    jobs = [Job(ESTIMATE, call(i)) for i in range(1 + in_flight)]
    outcomes = fan_out(_pass(ledger, "s-int", PARALLEL), jobs)
    first = next(outcomes)
    assert first.status == Status.DONE
    deadline = time.monotonic() + 60
    while len(attempts) < 1 + in_flight and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(attempts) == list(range(1 + in_flight))  # each call's first attempt is out
    with pytest.raises(KeyboardInterrupt):
        outcomes.throw(KeyboardInterrupt)
    rows = ledger.store.rows(
        "SELECT reserved, actual, assumed FROM tool_calls WHERE session_id = 's-int' "
        "ORDER BY actual"
    )
    assert [(r["actual"], r["assumed"]) for r in rows] == [(10, False)] + [
        (ESTIMATE, True)
    ] * in_flight
    # Now the attempts on the wire fail, as an overloaded provider's would.
    go.set()
    for _ in range(in_flight):
        assert ended.acquire(timeout=60)
    assert sorted(attempts) == list(range(1 + in_flight))  # none tried again
    after = ledger.store.rows(
        "SELECT reserved, actual, assumed FROM tool_calls WHERE session_id = 's-int' "
        "ORDER BY actual"
    )
    assert after == rows  # still charged their reservations: the provider may have billed them
    bal = ledger.balance("s-int")
    assert bal.held == 0 and bal.spent == 10 + in_flight * ESTIMATE
    check = ledger.verify("s-int")
    assert check.ok, check.explain()
