"""A pass's calls made concurrently within the session's gate, their outcomes handed back in
plan order (the rules are in mole_dag.llm.fanout's docstring): one thread dispatches, reserving
each call in plan order and waiting out a refusal while calls are in flight; a worker thread
per call makes it and ends its hold; the calling thread reads the outcomes in order, says how
far the pass got, and settles the calls in flight as assumed when it is interrupted.

Stays whole (some 400 lines): the three threads share one state under one condition, and
splitting them would spread that protocol across files."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Generic

from mole_dag.budget import BudgetExhausted, Hold, charging
from mole_dag.llm.calls_at_exit import (
    Exiting,
    call_ended,
    call_started,
    enter_ledger,
    leave_ledger,
)
from mole_dag.llm.concurrency import Gate, Slot, Watch, holding
from mole_dag.llm.passes import (
    PASSES,
    Job,
    Outcome,
    P,
    Paid,
    Pass,
    PassRecord,
    Status,
    paid_cost,
    record_throttling,
    settle_call,
)
from mole_dag.llm.provider import ModelCallFailed, ProviderUnavailable

log = logging.getLogger("mole.fanout")

# How often a long pass says how far it got. A guess, flagged as one: often enough that a user
# sees a stage of tens of calls moving, rarely enough not to drown the other lines.
PROGRESS_EVERY_S = 2.0


def _end_hold(
    p: Pass, flight: _Flight, got: Paid | None, failure: BaseException | None
) -> BaseException | None:
    """Settle the flight's hold at what the call cost, or end it as `with ledger.hold(...)`
    ends a failed call (released; settled if the provider charged; an error settling is the
    call's error). Returns the failure to report, None for a settled call. Skipped while the
    process exits (see _at_exit)."""
    if not enter_ledger():
        return failure or Exiting()
    try:
        if failure is None and got is not None:
            try:
                settle_call(flight.hold, got, p, flight.key)
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
        leave_ledger()
    return failure


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


class ConcurrentPass(Generic[P]):
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
                    if enter_ledger():
                        try:
                            flight.hold.release(note="not sent: the pass was stopped")
                            flight.stack.close()
                        finally:
                            leave_ledger()
                    slot.close()
                    if self.p.allowance is not None:
                        self.p.allowance.done(flight.estimate, 0)
                    break
                call_started()
                try:
                    threading.Thread(
                        target=self._work,
                        args=(flight, job),
                        name=f"model-call-{self.p.label}-{i}",
                        daemon=True,
                    ).start()
                except BaseException:
                    call_ended()
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
            if not enter_ledger():
                return None  # the process is exiting: nothing more is reserved
            try:
                hold = stack.enter_context(
                    p.ledger.hold(p.session_id, p.role, job.estimate, tool=p.tool, stage=p.stage)
                )
            except BudgetExhausted as exc:
                refusal = exc
            finally:
                leave_ledger()
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
            call_ended()

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
            cost = paid_cost(failure)
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
