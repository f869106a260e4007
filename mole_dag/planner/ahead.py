"""A session's first plan, asked for while the launching process starts Dagster (issue 20).

The first plan is one model call that needs only the stored session, and before it `mole
research` spends 1-1.5 s of CPU importing Dagster, opening its instance and starting the round's
run. The CLI therefore starts the plan in a thread of its own process first (`start`), and the
round's `sub_questions` asset, run in the same process, takes that plan's result (`take`)
instead of planning: the plan's latency and Dagster's start overlap. Everything else about the
plan is as in the asset: the same function, the same reservation before the call and
settlement after, the same rows.

A plan that nobody takes (the Dagster run never started) still finishes and is stored; the
round that runs next finds it planned (mole_dag.planner.plan_round) and does not pay twice; the
CLI waits for it before the process ends. A stop (Ctrl-C, SIGTERM) cannot interrupt the thread's
call: the CLI gives its answer the fan-out's grace to arrive and otherwise charges its
reservation in full (`assumed`), as a stage's call in flight at a stop is charged."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

_AHEAD: dict[str, Future[Any]] = {}
_GUARD = threading.Lock()


def start(session_id: str, work: Callable[[], T]) -> Future[T]:
    """Run `work` (the session's plan) in a daemon thread; its future is kept for `take`."""
    fut: Future[T] = Future()

    def run() -> None:
        try:
            fut.set_result(work())
        except BaseException as exc:  # noqa: BLE001 - handed to whoever takes the future
            fut.set_exception(exc)

    with _GUARD:
        if session_id in _AHEAD:
            raise RuntimeError(f"session {session_id} already has a plan under way")
        _AHEAD[session_id] = fut
    # A daemon: past the grace, a stop does not wait for the model's answer.
    threading.Thread(target=run, name=f"plan-ahead-{session_id}", daemon=True).start()
    return fut


def take(session_id: str) -> Future[Any] | None:
    """The session's plan started by `start` in this process, once: None if there is none."""
    with _GUARD:
        return _AHEAD.pop(session_id, None)
