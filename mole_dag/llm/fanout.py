"""A stage's independent model calls, made concurrently within the session's gate, their outcomes
handed back in plan order.

A stage builds its calls as a list of `Job`s, in the order it would have made them one by one
(the plan order), and reads one `Outcome` per job, in that order, whatever order the calls
complete in: the stage applies results exactly as it did sequentially, so the store and the
report do not depend on which call finished first.

The ledger's promise is kept call by call. Each call is reserved before it is dispatched and
settled (or released) when it ends, as `Ledger.hold` always did: the reservation is entered on
the dispatching thread, in plan order, and closed on the call's worker thread (an ExitStack
carries it across). A call is dispatched only when the session's gate has room
(mole_dag.llm.concurrency), so the reservations in flight, and the worst-case overshoot, are at
most the `parallel` setting's worth of estimates.

Refusals keep the sequential outcome. A call the budget (the ledger, or the stage's own
`Allowance`) refuses while earlier calls are still in flight may only have been refused because
their estimates are held in full: the dispatcher waits for every call in flight to end and asks
again. Only a refusal with nothing in flight is final, and at that point the books are exactly
what the one-at-a-time order would have had in front of it, so the same calls are made and the
same are refused. After a final refusal a stage either stops (mining, judging: nothing after it
is sent) or skips that call and goes on (grounding).

With `parallel` 1 (or a model-free stage) the calls are made on the calling thread, one after
another, exactly as before: the same order, and an interrupt lands inside the call's hold.

Progress goes through the stage's `progress` callback from the calling thread only (Dagster's
log is not touched from worker threads): a line every PROGRESS_EVERY_S with calls done of the
total and in flight, one at the end, and one naming the throttling if the provider refused
calls, which is also stored (`call_throttling`) for `mole show`."""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, Protocol, TypeVar

from mole_dag.budget import BudgetExhausted, Hold, Ledger, Usage, charging
from mole_dag.core import Role
from mole_dag.llm.concurrency import Gate, Slot, Watch, gate_for, holding, parallel_setting
from mole_dag.llm.provider import ModelCallFailed, ProviderUnavailable
from mole_dag.store import q, utcnow

log = logging.getLogger("mole.fanout")

# How often a long pass says how far it got. A guess, flagged as one: often enough that a user
# sees a stage of tens of calls moving, rarely enough not to drown the other lines.
PROGRESS_EVERY_S = 2.0


class Paid(Protocol):
    """What a call returns (a skill's Metered answer): what it cost, what it used, which model."""

    @property
    def cost(self) -> int: ...
    @property
    def usage(self) -> Usage: ...
    @property
    def model(self) -> str: ...


P = TypeVar("P", bound=Paid)


@dataclass(frozen=True)
class Job(Generic[P]):
    """One call: its estimate (an upper bound, reserved before dispatch) and the call. `key`
    names the work the call does (a lead's chunk, a batch of pairs) when its pass keeps
    answers (Pass.keep): a paid answer is then stored with its settlement, and a pass that
    asks for the same work again is handed it instead of paying for it twice."""

    estimate: int
    call: Callable[[], P]
    key: str = ""


@dataclass(frozen=True)
class Keep(Generic[P]):
    """How a pass keeps its paid answers (issue 29: a resume after SIGTERM paid again for
    mining done before the signal, whose answers were waiting in memory for a slower call to
    be applied in plan order). `encode` makes a stored text of an answer; `decode` makes the
    answer again from it, at no cost (it was paid for when it was asked)."""

    encode: Callable[[P], str]
    decode: Callable[[str], P]


class Status(StrEnum):
    DONE = "done"  # answered and settled
    FAILED = "failed"  # the model call failed (released, or settled if it was paid for)
    REFUSED = "refused"  # the budget refused it: never sent
    NOT_SENT = "not_sent"  # after a refusal that stopped the pass: never sent


@dataclass
class Outcome(Generic[P]):
    index: int
    status: Status
    value: P | None = None
    error: ModelCallFailed | None = None
    # The ledger's refusal; None for a refusal by the stage's own allowance.
    refusal: BudgetExhausted | None = None


class Allowance:
    """A stage's own cap on what it spends, on top of the ledger's (the verifier's share of the
    budget, grounding's part of the escrow). A call fits when what was spent plus the estimates
    in flight plus its own estimate stays within the cap; a free call always fits."""

    def __init__(self, cap: int, spent: int = 0) -> None:
        self.cap = cap
        self.spent = spent
        self.pending = 0
        self._lock = threading.Lock()

    def fits(self, estimate: int) -> bool:
        with self._lock:
            return estimate <= 0 or self.spent + self.pending + estimate <= self.cap

    def take(self, estimate: int) -> None:
        with self._lock:
            self.pending += estimate

    def done(self, estimate: int, cost: int) -> None:
        with self._lock:
            self.pending -= estimate
            self.spent += cost


@dataclass(frozen=True)
class Pass:
    """Where a fan-out's calls are paid from and how they are labelled."""

    ledger: Ledger
    session_id: str
    role: Role
    stage: str  # the ledger's stage (mined_claims, claim_edges, grounding)
    tool: str  # the ledger's tool, e.g. "anthropic:mine"
    label: str  # the pass, for progress lines and the throttling record: mining, judging, ...
    parallel: int = 1
    progress: Callable[[str], None] | None = None
    allowance: Allowance | None = None
    # After a final refusal: stop (nothing after it is sent) or skip that call and go on.
    stop_on_refusal: bool = True
    # Keep each paid answer with its settlement, so the same work asked again is not paid twice.
    keep: Keep[Any] | None = None


@dataclass(frozen=True)
class PassRecord:
    """One pass as it ran: for benchmarks and logs (PASSES)."""

    label: str
    stage: str
    parallel: int
    calls: int  # calls sent (answered or failed)
    refused: int
    seconds: float
    max_in_flight: int
    refusals: int  # 429/529 answers met by the pass's calls
    lowest: int
    throttled_s: float


# The passes this process ran, newest last (a benchmark reads them; bounded for long processes).
PASSES: deque[PassRecord] = deque(maxlen=1000)


def parallel_for(uses_model: bool, parallel: int | None = None) -> int:
    """Calls in flight for a stage: the setting when a model answers them; one at a time when
    the calls are the model-free skills' (free, instant, and CPU-bound: threads buy nothing)."""
    if not uses_model:
        return 1
    return parallel if parallel is not None else parallel_setting()


def fan_out(p: Pass, jobs: Sequence[Job[P]]) -> Iterator[Outcome[P]]:
    """One Outcome per job, in the jobs' order (see the module's docstring)."""
    kept = _kept(p, jobs)
    if p.parallel <= 1 or len(jobs) - len(kept) <= 1:
        return _inline(p, jobs, kept)
    # The session's gate, per store: a session id names one session within a store (tests
    # run one id in several stores in one process).
    gate = gate_for(f"{p.ledger.store.path}\n{p.session_id}", p.parallel)
    return _Concurrent(p, jobs, gate, kept).outcomes()


def _kept(p: Pass, jobs: Sequence[Job[P]]) -> dict[int, P]:
    """The jobs whose answers an earlier run of the pass paid for and kept, by index: handed
    out again, free, instead of being asked again."""
    keys = sorted({j.key for j in jobs if j.key})
    if p.keep is None or not keys:
        return {}
    rows = p.ledger.store.named(
        "call_answers_kept", {"session_id": p.session_id, "stage": p.stage, "keys": keys}
    )
    stored = {r["call_key"]: r["answer"] for r in rows}
    return {i: p.keep.decode(stored[j.key]) for i, j in enumerate(jobs) if j.key in stored}


def _settle(h: Hold, got: Paid, p: Pass, key: str) -> None:
    """Settle a call at what it cost; a paid answer its pass keeps is stored in the same
    transaction (paid and kept, or neither)."""
    also = None
    if p.keep is not None and key and got.cost > 0:
        answer = p.keep.encode(got)

        def also(cur: Any) -> None:
            cur.execute(
                q("call_answer_keep"),
                {
                    "session_id": p.session_id,
                    "stage": p.stage,
                    "call_key": key,
                    "call_id": h.reservation.id,
                    "answer": answer,
                    "now": utcnow(),
                },
            )

    h.settle(got.cost, usage=got.usage, model=got.model or None, also=also)


def _paid_failure(exc: BaseException) -> int:
    return int(getattr(exc, "actual", None) or 0)


def _inline(p: Pass, jobs: Sequence[Job[P]], kept: dict[int, P]) -> Iterator[Outcome[P]]:
    """One at a time on this thread: the order and the holds of the sequential stages."""
    started, sent, refused, stopped = time.monotonic(), 0, 0, False
    for i, job in enumerate(jobs):
        if i in kept:
            got: Outcome[P] = Outcome(i, Status.DONE, value=kept[i])
        else:
            got = _one(p, i, job) if not stopped else Outcome(i, Status.NOT_SENT)
        if got.status == Status.REFUSED:
            refused += 1
            stopped = p.stop_on_refusal
        elif got.status != Status.NOT_SENT and i not in kept:
            sent += 1
        if i == len(jobs) - 1 and (sent or refused):
            # Before the last outcome is handed over (see _Concurrent.outcomes).
            PASSES.append(
                PassRecord(
                    p.label,
                    p.stage,
                    p.parallel,
                    sent,
                    refused,
                    time.monotonic() - started,
                    1 if sent else 0,
                    0,
                    1,
                    0.0,
                )
            )
        yield got


def _one(p: Pass, i: int, job: Job[P]) -> Outcome[P]:
    if p.allowance is not None and not p.allowance.fits(job.estimate):
        return Outcome(i, Status.REFUSED)
    try:
        with p.ledger.hold(p.session_id, p.role, job.estimate, tool=p.tool, stage=p.stage) as h:
            with charging(h):
                got = job.call()
            _settle(h, got, p, job.key)
    except BudgetExhausted as exc:
        return Outcome(i, Status.REFUSED, refusal=exc)
    except ModelCallFailed as exc:
        if p.allowance is not None:
            p.allowance.done(0, _paid_failure(exc))
        return Outcome(i, Status.FAILED, error=exc)
    if p.allowance is not None:
        p.allowance.done(0, got.cost)
    return Outcome(i, Status.DONE, value=got)


def _end_hold(
    p: Pass, flight: _Flight, got: Paid | None, failure: BaseException | None
) -> BaseException | None:
    """Settle the flight's hold at what the call cost, or end it as `with ledger.hold(...)`
    ends a failed call (released; settled if the provider charged; an error settling is the
    call's error). Returns the failure to report, None for a settled call. Skipped while the
    process exits (see _at_exit)."""
    if not _enter_ledger():
        return failure or _Exiting()
    try:
        if failure is None and got is not None:
            try:
                _settle(flight.hold, got, p, flight.key)
            except BaseException as exc:
                failure = exc
        if failure is not None and flight.slot.cancelled and not flight.hold.done:
            # Sent, then its pass was interrupted, and no answer came: what the provider
            # billed is unknown, so it costs its reservation (the interrupt's own settlement
            # of it did not get through).
            flight.hold.settle_assumed(note=f"interrupted, then failed: {type(failure).__name__}")
        if failure is None:
            flight.stack.close()
        else:
            flight.stack.__exit__(type(failure), failure, failure.__traceback__)
    finally:
        _leave_ledger()
    return failure


class _Exiting(Exception):
    """The process exited before this call's hold could be ended: it was settled as assumed
    by the interrupt that stopped the pass, or recovery will settle it so."""


# A call's worker thread is a daemon; the dispatching thread is not. An interrupted pass
# (Ctrl-C, SIGTERM) leaves its calls in flight charged at their reservations (outcomes());
# the process then exits without waiting for their answers, as a one-at-a-time stage
# interrupted inside its call does: a worker waiting on a request the provider is slow to
# answer would otherwise hold the exit for up to the HTTP client's timeout, and then its
# retry would send a request the ledger has no row for. Exit does give the calls in flight
# EXIT_GRACE_S to end on their own, so an answer about to arrive replaces its assumed charge
# with what it used (Ledger.settle).
# A daemon thread still running while the interpreter finalizes is stopped wherever it is, and
# inside DuckDB that aborts the process (seen: "terminate called ... FATAL: exception not
# rethrown"). So a worker does its ledger work only between _enter_ledger and _leave_ledger:
# once exit handlers run no new ledger work starts, and the work under way is let finish.
_EXIT = threading.Condition()
_exit_state = {"exiting": False, "inside": 0, "calls": 0}
# How long exit waits for ledger work under way: transactions take milliseconds, a store lock
# wait more. A guess, flagged as one.
EXIT_WAIT_S = 30.0
# How long exit waits for calls in flight to be answered. A guess, flagged as one: long enough
# for answers already on their way, short enough that a stop is a stop (a service manager
# follows SIGTERM with SIGKILL after some seconds).
EXIT_GRACE_S = 5.0


def _enter_ledger() -> bool:
    with _EXIT:
        if _exit_state["exiting"]:
            return False
        _exit_state["inside"] += 1
        return True


def _leave_ledger() -> None:
    with _EXIT:
        _exit_state["inside"] -= 1
        _EXIT.notify_all()


def _call_started() -> None:
    with _EXIT:
        _exit_state["calls"] += 1


def _call_ended() -> None:
    with _EXIT:
        _exit_state["calls"] -= 1
        _EXIT.notify_all()


@atexit.register
def _at_exit() -> None:
    grace = time.monotonic() + EXIT_GRACE_S
    with _EXIT:
        while _exit_state["calls"] and time.monotonic() < grace:
            _EXIT.wait(0.1)
        deadline = time.monotonic() + EXIT_WAIT_S
        _exit_state["exiting"] = True
        while _exit_state["inside"] and time.monotonic() < deadline:
            _EXIT.wait(0.1)


class _Wait:
    """A reservation refused while earlier calls hold their estimates: ask again once they
    have ended."""


_WAIT = _Wait()


@dataclass
class _Flight:
    """A dispatched call: its reservation (closed by the worker) and its slot."""

    index: int
    estimate: int
    hold: Hold
    stack: ExitStack
    slot: Slot
    # Its worker took it up to send (under the fan-out's lock): from then on the worker ends
    # the hold; before, an interrupt that cancels it does (it was never sent).
    taken: bool = False
    key: str = ""  # the job's (Job.key)


@dataclass
class _State:
    results: dict[int, Outcome[Paid]] = field(default_factory=dict)
    flying: dict[int, _Flight] = field(default_factory=dict)
    # A bug in a call, raised to the stage when its outcome's turn comes.
    bugs: dict[int, BaseException] = field(default_factory=dict)
    sent: int = 0
    done: int = 0
    refused: int = 0
    dispatched_all: bool = False
    stop: bool = False
    finished: bool = False
    error: BaseException | None = None  # a bug on the dispatching thread


class _Concurrent(Generic[P]):
    def __init__(self, p: Pass, jobs: Sequence[Job[P]], gate: Gate, kept: dict[int, P]) -> None:
        self.p, self.jobs, self.gate = p, jobs, gate
        self.cond = threading.Condition()
        self.st = _State()
        # Answers paid for by an earlier run of the pass: outcomes already, never dispatched.
        for i, value in kept.items():
            self.st.results[i] = Outcome(i, Status.DONE, value=value)

    def _stopped(self) -> bool:
        # No lock: called under the gate's, and a stale read only costs one more look.
        return self.st.stop

    # -- the dispatching thread ---------------------------------------------------------------

    def _dispatch_all(self) -> None:
        try:
            for i, job in enumerate(self.jobs):
                if i in self.st.results:
                    continue  # a kept answer (or a refusal posted already)
                taken = self._slot_and_hold(i, job)
                if taken is None:
                    break
                slot, flight = taken
                if flight is None:
                    slot.close()
                    continue
                with self.cond:
                    stopped = self.st.stop
                    if not stopped:
                        self.st.flying[i] = flight
                        self.st.sent += 1
                if stopped:  # stopped while this call was being reserved: it is not sent
                    if _enter_ledger():
                        try:
                            flight.hold.release(note="not sent: the pass was stopped")
                            flight.stack.close()
                        finally:
                            _leave_ledger()
                    slot.close()
                    if self.p.allowance is not None:
                        self.p.allowance.done(flight.estimate, 0)
                    break
                _call_started()
                try:
                    threading.Thread(
                        target=self._work,
                        args=(flight, job),
                        name=f"model-call-{self.p.label}-{i}",
                        daemon=True,
                    ).start()
                except BaseException:
                    _call_ended()
                    raise
        except BaseException as exc:  # a bug here must reach the stage, not vanish
            with self.cond:
                self.st.error = exc
        finally:
            with self.cond:
                self.st.dispatched_all = True
                self.cond.notify_all()

    def _slot_and_hold(self, i: int, job: Job[P]) -> tuple[Slot, _Flight | None] | None:
        """A slot in the gate and job i's reservation (None for the flight: refused or
        stopped). None when the pass stopped while waiting for a slot."""
        while True:
            slot = self.gate.dispatch(cancelled=self._stopped)
            if slot is None:
                return None
            try:
                flight = self._reserve(i, job, slot)
            except BaseException:
                slot.close()
                raise
            if not isinstance(flight, _Wait):
                return slot, flight
            # Refused while earlier calls hold their estimates: the slot goes back before the
            # wait, since a call in flight may need it to retry (a throttled call waits for a
            # request slot; holding this one while waiting for that call deadlocked, issue 29).
            slot.close()
            self._wait_for_flights_to_end()

    def _reserve(self, i: int, job: Job[P], slot: Slot) -> _Flight | None | _Wait:
        """Reserve job i. A refusal while calls are in flight is answered with _WAIT: the
        dispatcher waits for them all to end and asks again; a refusal with none in flight is
        final (module docstring). None when refused or stopped; a refusal's Outcome is posted
        here."""
        p = self.p
        with self.cond:
            if self.st.stop:
                return None
            # Only this thread dispatches, so nothing can take off while it asks.
            alone = not self.st.flying
        refusal: BudgetExhausted | None = None
        if p.allowance is None or p.allowance.fits(job.estimate):
            stack = ExitStack()
            if not _enter_ledger():
                return None  # the process is exiting: nothing more is reserved
            try:
                hold = stack.enter_context(
                    p.ledger.hold(p.session_id, p.role, job.estimate, tool=p.tool, stage=p.stage)
                )
            except BudgetExhausted as exc:
                refusal = exc
            finally:
                _leave_ledger()
            if refusal is None:
                if p.allowance is not None:
                    p.allowance.take(job.estimate)
                return _Flight(i, job.estimate, hold, stack, slot, key=job.key)
        if not alone:
            return _WAIT  # earlier calls still hold their estimates
        with self.cond:
            self.st.results[i] = Outcome(i, Status.REFUSED, refusal=refusal)
            self.st.refused += 1
            if p.stop_on_refusal:
                self.st.stop = True
            self.cond.notify_all()
        return None

    def _wait_for_flights_to_end(self) -> None:
        with self.cond:
            while self.st.flying and not self.st.stop:
                self.cond.wait(timeout=1.0)

    # -- a call's worker thread ---------------------------------------------------------------

    def _work(self, flight: _Flight, job: Job[P]) -> None:
        try:
            self._work_on(flight, job)
        finally:
            _call_ended()

    def _work_on(self, flight: _Flight, job: Job[P]) -> None:
        outcome: Outcome[Paid]
        cost = 0
        bug: BaseException | None = None
        got: P | None = None
        failure: BaseException | None = None
        with self.cond:
            flight.taken = not flight.slot.cancelled
        if not flight.taken:
            # Interrupted between its dispatch and its start: never sent, and the interrupt
            # released its hold.
            flight.slot.close()
            self._ended(flight, Outcome(flight.index, Status.NOT_SENT), 0, None)
            return
        try:
            try:
                with holding(flight.slot), charging(flight.hold):
                    got = job.call()
            except BaseException as exc:
                failure = exc
            finally:
                flight.slot.close()
            failure = _end_hold(self.p, flight, got, failure)
        except BaseException as exc:  # ending the hold failed: a bug, reported as one
            failure = exc
        if failure is None and got is not None:
            outcome = Outcome(flight.index, Status.DONE, value=got)
            cost = got.cost
        elif isinstance(failure, ModelCallFailed):
            outcome = Outcome(flight.index, Status.FAILED, error=failure)
            cost = _paid_failure(failure)
        else:  # a bug in the call: raised to the stage in plan order
            outcome = Outcome(flight.index, Status.FAILED)
            bug = failure
        self._ended(flight, outcome, cost, bug)

    def _ended(
        self, flight: _Flight, outcome: Outcome[Paid], cost: int, bug: BaseException | None
    ) -> None:
        if self.p.allowance is not None:
            self.p.allowance.done(flight.estimate, cost)
        with self.cond:
            self.st.flying.pop(flight.index, None)
            self.st.results[flight.index] = outcome
            if bug is not None:
                self.st.bugs[flight.index] = bug
                self.st.stop = True
            self.st.done += 1
            self.cond.notify_all()

    # -- the calling thread -------------------------------------------------------------------

    def _next(self, i: int, last_line: list[float]) -> Outcome[P]:
        st = self.st
        while True:
            line = None
            with self.cond:
                if st.error is not None:
                    raise st.error
                if i in st.results:
                    if i in st.bugs and not isinstance(st.bugs[i], ProviderUnavailable):
                        raise st.bugs[i]
                    if i not in st.bugs:
                        return st.results[i]  # type: ignore[return-value]
                    down = st.bugs[i]
                    break
                if st.dispatched_all and not st.flying:
                    return Outcome(i, Status.NOT_SENT)  # never dispatched: the pass stopped
                self.cond.wait(timeout=0.5)
                now = time.monotonic()
                if now - last_line[0] >= PROGRESS_EVERY_S:
                    last_line[0] = now
                    line = f"{st.done} of {len(self.jobs)} calls done, {len(st.flying)} in flight"
            if line is not None:
                self._say(line)
        # The provider stopped answering: nothing more is sent (the worker stopped the pass),
        # and the calls in flight end by themselves, settled and kept if answered, before the
        # stage hears of it; none is charged as if interrupted.
        self._wait_for_flights()
        raise down

    def outcomes(self) -> Iterator[Outcome[P]]:
        started = time.monotonic()
        last_line = [started]
        n = len(self.jobs)
        with ExitStack() as pass_open:
            watch = pass_open.enter_context(self.gate.watch())

            def finish() -> None:
                # Before the last outcome is handed over: a stage reads exactly one outcome
                # per job and need not ask for the end of the iteration.
                pass_open.close()
                self._finish(watch, time.monotonic() - started)

            threading.Thread(target=self._dispatch_all, name=f"fan-out-{self.p.label}").start()
            try:
                for i in range(n):
                    got = self._next(i, last_line)
                    if i == n - 1:
                        finish()
                    yield got
            except GeneratorExit:
                # The stage stopped reading (it raised, or has what it needs): nothing more is
                # sent, and the calls in flight end as they would have, each settling itself.
                self._stop()
                self._wait_for_flights()
                finish()
                raise
            except BaseException as exc:
                # Interrupted (Ctrl-C, SIGTERM, Dagster's interrupt) or a bug: nothing more is
                # sent, and each call in flight is charged its reservation now, as an
                # interrupted call always is; a worker that still gets its answer replaces
                # that with what it used (Ledger.settle).
                self._stop()
                with self.cond:
                    flying = list(self.st.flying.values())
                    for flight in flying:
                        flight.slot.cancel()  # no retry, nor a first request, from now on
                    sent = [f for f in flying if f.taken]
                    unsent = [f for f in flying if not f.taken]
                for flight in sent:
                    if not flight.hold.done:
                        try:
                            flight.hold.settle_assumed(note=f"interrupted: {type(exc).__name__}")
                        except Exception:
                            log.exception("could not settle an interrupted call as assumed")
                for flight in unsent:  # their workers will not send them (_work_on)
                    try:
                        flight.hold.release(note="not sent: the pass was interrupted")
                    except Exception:
                        log.exception("could not release an interrupted call that was not sent")
                raise

    def _stop(self) -> None:
        with self.cond:
            self.st.stop = True
            self.cond.notify_all()

    def _wait_for_flights(self) -> None:
        with self.cond:
            while self.st.flying or not self.st.dispatched_all:
                self.cond.wait(timeout=0.5)

    def _say(self, line: str) -> None:
        if self.p.progress is not None:
            self.p.progress(f"{self.p.label}: {line}")

    def _finish(self, watch: Watch, seconds: float) -> None:
        p, st = self.p, self.st
        if st.finished:
            return
        st.finished = True
        PASSES.append(
            PassRecord(
                p.label,
                p.stage,
                p.parallel,
                st.sent,
                st.refused,
                seconds,
                watch.max_attempting,
                watch.refused,
                watch.lowest,
                watch.throttled_s,
            )
        )
        if st.sent:
            self._say(
                f"{st.sent} calls in {seconds:.1f}s, at most {watch.max_attempting} in flight "
                f"(parallel {p.parallel})"
            )
        if watch.refused:
            self._say(watch.describe())
            record_throttling(p, watch, seconds)


def record_throttling(p: Pass, watch: Watch, seconds: float) -> None:
    """Store what the provider's refusals did to this pass, for `mole show`."""
    now = utcnow()
    params = {
        "session_id": p.session_id,
        "stage": p.stage,
        "label": p.label,
        "parallel": watch.parallel,
        "lowest": watch.lowest,
        "rate_limited": watch.refusals.get(429, 0),
        "overloaded": watch.refusals.get(529, 0),
        "throttled_s": round(watch.throttled_s, 3),
        "pass_s": round(seconds, 3),
        "now": now,
    }
    try:
        p.ledger.store.transact(lambda cur: cur.execute(q("throttling_insert"), params))
    except Exception:
        # A record about the session, not the session's work: losing it must not lose the pass.
        log.exception(
            "session %s: could not record the %s pass's throttling", p.session_id, p.label
        )
