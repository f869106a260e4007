"""Model calls in flight when the process exits.

A call's worker thread is a daemon; the dispatching thread is not. An interrupted pass (Ctrl-C,
SIGTERM) leaves its calls in flight charged at their reservations (ConcurrentPass.outcomes); the
process then exits without waiting for their answers, as a one-at-a-time stage interrupted
inside its call does: a worker waiting on a request the provider is slow to answer would
otherwise hold the exit for up to the HTTP client's timeout, and then its retry would send a
request the ledger has no row for. Exit does give the calls in flight EXIT_GRACE_S to end on
their own, so an answer about to arrive replaces its assumed charge with what it used
(Ledger.settle).

A daemon thread still running while the interpreter finalizes is stopped wherever it is, and
inside DuckDB that aborts the process (seen: "terminate called ... FATAL: exception not
rethrown"). So a worker does its ledger work only between enter_ledger and leave_ledger:
once exit handlers run no new ledger work starts, and the work under way is let finish."""

from __future__ import annotations

import atexit
import threading
import time


class Exiting(Exception):
    """The process exited before this call's hold could be ended: it was settled as assumed
    by the interrupt that stopped the pass, or recovery will settle it so."""


_EXIT = threading.Condition()
_exit_state = {"exiting": False, "inside": 0, "calls": 0}
# How long exit waits for ledger work under way: transactions take milliseconds, a store lock
# wait more. A guess, flagged as one.
EXIT_WAIT_S = 30.0
# How long exit waits for calls in flight to be answered. A guess, flagged as one: long enough
# for answers already on their way, short enough that a stop is a stop (a service manager
# follows SIGTERM with SIGKILL after some seconds).
EXIT_GRACE_S = 5.0


def enter_ledger() -> bool:
    with _EXIT:
        if _exit_state["exiting"]:
            return False
        _exit_state["inside"] += 1
        return True


def leave_ledger() -> None:
    with _EXIT:
        _exit_state["inside"] -= 1
        _EXIT.notify_all()


def call_started() -> None:
    with _EXIT:
        _exit_state["calls"] += 1


def call_ended() -> None:
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
