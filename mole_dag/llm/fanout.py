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
calls, which is also stored (`call_throttling`) for `mole show`.

This module chooses how a pass runs and runs the one-at-a-time path; what a pass, a job and an
outcome are is mole_dag.llm.passes, the concurrent path mole_dag.llm.concurrent_pass, and what
becomes of calls in flight when the process exits mole_dag.llm.calls_at_exit."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

from mole_dag.budget import BudgetExhausted, charging
from mole_dag.llm.calls_at_exit import EXIT_GRACE_S
from mole_dag.llm.concurrency import gate_for, parallel_setting
from mole_dag.llm.concurrent_pass import ConcurrentPass
from mole_dag.llm.passes import (
    PASSES,
    Allowance,
    Job,
    Keep,
    Outcome,
    P,
    Paid,
    Pass,
    PassRecord,
    Status,
    kept_answers,
    paid_cost,
    record_throttling,
    settle_call,
)
from mole_dag.llm.provider import ModelCallFailed

# What a stage imports from here. EXIT_GRACE_S is read through this module by the CLI (a stop
# while the plan asked ahead is in flight waits the same grace as the calls of a pass).
__all__ = [
    "EXIT_GRACE_S",
    "PASSES",
    "Allowance",
    "Job",
    "Keep",
    "Outcome",
    "Paid",
    "Pass",
    "PassRecord",
    "Status",
    "fan_out",
    "parallel_for",
    "record_throttling",
]


def parallel_for(uses_model: bool, parallel: int | None = None) -> int:
    """Calls in flight for a stage: the setting when a model answers them; one at a time when
    the calls are the model-free skills' (free, instant, and CPU-bound: threads buy nothing)."""
    if not uses_model:
        return 1
    return parallel if parallel is not None else parallel_setting()


def fan_out(p: Pass, jobs: Sequence[Job[P]]) -> Iterator[Outcome[P]]:
    """One Outcome per job, in the jobs' order (see the module's docstring)."""
    kept = kept_answers(p, jobs)
    if p.parallel <= 1 or len(jobs) - len(kept) <= 1:
        return _inline(p, jobs, kept)
    # The session's gate, per store: a session id names one session within a store (tests
    # run one id in several stores in one process).
    gate = gate_for(f"{p.ledger.store.path}\n{p.session_id}", p.parallel)
    return ConcurrentPass(p, jobs, gate, kept).outcomes()


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
            # Before the last outcome is handed over (see ConcurrentPass.outcomes).
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
            settle_call(h, got, p, job.key)
    except BudgetExhausted as exc:
        return Outcome(i, Status.REFUSED, refusal=exc)
    except ModelCallFailed as exc:
        if p.allowance is not None:
            p.allowance.done(0, paid_cost(exc))
        return Outcome(i, Status.FAILED, error=exc)
    if p.allowance is not None:
        p.allowance.done(0, got.cost)
    return Outcome(i, Status.DONE, value=got)
