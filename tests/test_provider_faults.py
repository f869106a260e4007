"""Issue 29, faults a real provider brings, at the level of the fan-out and the round driver:

- a rate-limit storm cannot deadlock the session's gate, the retry pause and the fan-out's
  reservations (a call refused by the stage's allowance used to keep its request slot while it
  waited for the calls in flight, one of which waited for that slot to retry: forever);
- a provider that stays unreachable stops the pass and raises `ProviderDown`, after the calls
  in flight have ended, instead of a pass that "completes" with its calls failed;
- a call whose answer was paid for is not paid for again: its answer is kept with its ledger
  row, so a stage run again after an interrupt (SIGTERM, SIGINT) takes it from the store."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from mole_dag.budget import Ledger, Usage
from mole_dag.core import Role, Unit
from mole_dag.llm.fanout import Allowance, Job, Outcome, Pass, Status, fan_out
from mole_dag.llm.retry import Retryable, RetryPolicy, with_retries
from mole_dag.skills.protocol import Metered, Verdict, keep_list

# Generous: a deadlock is forever, a busy machine finishes these passes in well under a second.
HANG_S = 60.0


def _pass(ledger: Ledger, sid: str, parallel: int, allowance: Allowance | None = None) -> Pass:
    return Pass(
        ledger,
        sid,
        Role.EXECUTOR,
        "mined_claims",
        "test:mine",
        "mining",
        parallel=parallel,
        allowance=allowance,
        stop_on_refusal=False,
    )


def _run_in_thread(fn: Callable[[], list[Outcome[Metered[int]]]]) -> list[Outcome[Metered[int]]]:
    box: list[list[Outcome[Metered[int]]]] = []
    t = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    t.start()
    t.join(HANG_S)
    assert not t.is_alive(), "the pass hung: gate, retry pause and reservations deadlocked"
    return box[0]


class Watched(Allowance):
    """A stage's allowance that says when it first refused a call (the dispatcher then waits
    for the calls in flight)."""

    def __init__(self, cap: int) -> None:
        super().__init__(cap)
        self.refused = threading.Event()

    def fits(self, estimate: int) -> bool:
        ok = super().fits(estimate)
        if not ok:
            self.refused.set()
        return ok


class Throttled:
    """Calls whose every other request (the first included) is refused with a 429 and
    retry-after 0, as a provider in a rate-limit storm answers half of them. The first request
    is answered only once `first_after` is set: the interleaving that hung, made certain."""

    def __init__(self, first_after: threading.Event) -> None:
        self.requests = 0
        self.first_after = first_after
        self._lock = threading.Lock()

    def call(self, i: int) -> Callable[[], Metered[int]]:
        def attempt() -> Metered[int]:
            with self._lock:
                self.requests += 1
                n = self.requests
            if n == 1:
                self.first_after.wait(HANG_S / 4)
            if n % 2 == 1:
                raise Retryable("429 rate limited", status=429, retry_after=0.0)
            return Metered(i, cost=1, usage=Usage(1, 0))

        return lambda: with_retries(
            attempt, policy=RetryPolicy(base_delay_s=0.0), provider="test", model="m"
        )


@pytest.mark.parametrize("parallel", [8, 2, 1])
def test_a_rate_limit_storm_with_a_tight_allowance_ends(ledger: Ledger, parallel: int) -> None:
    """The stage's allowance fits one call's estimate at a time (grounding's share of the
    escrow is such a cap): a dispatch while a call is in flight is refused, so the dispatcher
    waits for the calls in flight; meanwhile the call in flight is refused by the provider and
    waits to retry. Both must get through."""
    sid = ledger.create_session("q", Unit.TOKENS, 100_000).session_id
    allowance = Watched(cap=150)
    if parallel == 1:
        allowance.refused.set()  # one at a time: nothing is dispatched beside the first call
    calls = Throttled(first_after=allowance.refused)
    jobs = [Job(100, calls.call(i)) for i in range(12)]

    got = _run_in_thread(lambda: list(fan_out(_pass(ledger, sid, parallel, allowance), jobs)))

    assert [o.status for o in got] == [Status.DONE] * 12
    assert [o.value.value for o in got if o.value is not None] == list(range(12))
    assert ledger.verify(sid).ok


class Kept:
    """Calls that answer with their index, paid 5 each; call `hold` waits for `release`."""

    def __init__(self, hold: int | None = None) -> None:
        self.hold = hold
        self.release = threading.Event()
        self.made: list[int] = []
        self.answered: list[int] = []
        self._lock = threading.Lock()

    def jobs(self, n: int) -> list[Job[Metered[list[Verdict]]]]:
        return [Job(20, self._call(i), key=f"work-{i}") for i in range(n)]

    def _call(self, i: int) -> Callable[[], Metered[list[Verdict]]]:
        def call() -> Metered[list[Verdict]]:
            with self._lock:
                self.made.append(i)
            if i == self.hold:
                self.release.wait(HANG_S)
            with self._lock:
                self.answered.append(i)
            return Metered([Verdict(i, "neither", f"call {i}")], cost=5, model="m")

        return call


def _keeping(ledger: Ledger, sid: str, parallel: int) -> Pass:
    return Pass(
        ledger,
        sid,
        Role.VERIFIER,
        "claim_edges",
        "test:judge",
        "judging",
        parallel=parallel,
        keep=keep_list(Verdict),
    )


@pytest.mark.parametrize("parallel", [4, 1])
def test_a_paid_answer_is_kept_and_not_paid_for_again(ledger: Ledger, parallel: int) -> None:
    sid = ledger.create_session("q", Unit.TOKENS, 100_000).session_id
    first = Kept()
    got = [o.value for o in fan_out(_keeping(ledger, sid, parallel), first.jobs(5))]
    spent = ledger.balance(sid).charged

    again = Kept()
    replayed = list(fan_out(_keeping(ledger, sid, parallel), again.jobs(6)))

    assert again.made == [5]  # only the work not done before is asked for
    assert [o.status for o in replayed] == [Status.DONE] * 6
    assert [o.value for o in replayed[:5]] == [
        Metered(v.value, cost=0, model="m") for v in got if v is not None
    ]
    assert ledger.balance(sid).charged == spent + 5
    assert ledger.verify(sid).ok


def test_an_interrupted_pass_keeps_the_answers_that_arrived(ledger: Ledger) -> None:
    """SIGTERM (a KeyboardInterrupt in the stage) while the first call is still out and later
    ones have answered: the answers that arrived are not lost with the process. The pass run
    again asks only for the call that was in flight."""
    sid = ledger.create_session("q", Unit.TOKENS, 100_000).session_id
    first = Kept(hold=1)
    outcomes = fan_out(_keeping(ledger, sid, 4), first.jobs(6))
    assert next(outcomes).status == Status.DONE  # call 0; call 1 is held
    deadline = threading.Event()
    for _ in range(int(HANG_S * 10)):
        kept = ledger.store.scalar("SELECT count(*) FROM call_answers WHERE session_id = ?", [sid])
        if kept == 5:  # 0, 2, 3, 4, 5 answered and settled
            break
        deadline.wait(0.1)
    assert kept == 5
    with pytest.raises(KeyboardInterrupt):
        outcomes.throw(KeyboardInterrupt)
    first.release.set()

    again = Kept()
    assert [o.status for o in fan_out(_keeping(ledger, sid, 4), again.jobs(6))] == [Status.DONE] * 6
    assert again.made == [1]
