"""How many model calls a session has in flight at once, and how that adapts to the provider.

One `Gate` per session in this process: every stage's fan-out (mole_dag.llm.fanout) takes its
slots from it, so the bound is the session's, whichever stage is calling. The bound is the
`parallel` setting (`--parallel N`, MOLE_PARALLEL, or "parallel" in the config file; default 8;
1 is today's one call at a time). A 429 (rate limited) or 529 (overloaded) answer lowers it:
additive increase, multiplicative decrease, as TCP does with a congestion window. Each success
adds 1/limit (about one slot per round of calls); a refusal halves the limit, at most once per
round of calls sent at the old limit (a refusal of a call sent before the last decrease is
already answered by it). The limit never goes below one call, nor above the setting.

Two counts, kept apart on purpose:
- `outstanding`: calls a fan-out dispatched and that have not ended, each holding its ledger
  reservation. A new call is dispatched only while this is below the limit, so the
  reservations in flight, and with them the worst-case overshoot, stay within the setting.
- `attempting`: HTTP requests on the wire. A throttled call gives up its request slot while it
  waits out its backoff, and takes one again (before any new call) to retry; its reservation
  stays held meanwhile, so a retry is always paid for by the hold it already has.

A worker thread's call carries its `Slot` in a context variable, so the retry loop every
provider shares (mole_dag.llm.retry) can report a refusal and wait its turn without the
provider, the skills or the stages passing it along."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from mole_dag.config import ConfigError, config_path, load_config

# Calls in flight per session by default. A guess, flagged as one: enough to hide most of a
# stage's latency (a round mines tens of chunks, judges a few batches), few enough that a
# provider's usual per-key concurrency and the reservations held at once stay modest.
DEFAULT_PARALLEL = 8
# Far above what any provider tier lets one key do; a typo of 1000 is refused, not obeyed.
MAX_PARALLEL = 64
ENV = "MOLE_PARALLEL"
# Answers that say "fewer at once, please": rate limited, overloaded.
THROTTLE_STATUSES = (429, 529)


def parse_parallel(value: Any, where: str) -> int:
    """A `parallel` setting: a whole number from 1 to MAX_PARALLEL, else ConfigError naming
    `where` it came from and what to write instead."""
    text = str(value).strip() if not isinstance(value, bool) else ""
    if isinstance(value, int) and not isinstance(value, bool):
        n: int | None = value
    elif text.isdigit():
        n = int(text)
    else:
        n = None
    if n is None or not 1 <= n <= MAX_PARALLEL:
        raise ConfigError(
            f"{where} must be a whole number of model calls in flight from 1 to "
            f"{MAX_PARALLEL} (1: one at a time), got {value!r}"
        )
    return n


def parallel_setting(config: Mapping[str, Any] | None = None) -> int:
    """MOLE_PARALLEL (what `--parallel` sets), else "parallel" in the config file, else
    DEFAULT_PARALLEL."""
    env = os.environ.get(ENV)
    if env is not None and env.strip():
        return parse_parallel(env, f"{ENV} (or --parallel)")
    cfg = load_config() if config is None else config
    got = cfg.get("parallel")
    if got is None:
        return DEFAULT_PARALLEL
    return parse_parallel(got, f'"parallel" in {config_path()}')


@dataclass
class Watch:
    """What a gate saw while one pass of calls was being made: refusals by status, the lowest
    limit, the most requests on the wire at once, and how long the limit stood below the
    setting."""

    parallel: int
    lowest: int
    refusals: Counter[int] = field(default_factory=Counter)
    max_attempting: int = 0
    throttled_s: float = 0.0

    @property
    def refused(self) -> int:
        return sum(self.refusals.values())

    def describe(self) -> str:
        by = ", ".join(f"{n} x HTTP {status}" for status, n in sorted(self.refusals.items()))
        return (
            f"throttled by the provider ({by}): concurrency lowered to {self.lowest} of "
            f"{self.parallel}, below it for {self.throttled_s:.1f}s"
        )


class Gate:
    """One session's bound on its model calls (see the module's docstring)."""

    def __init__(self, parallel: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.parallel = parallel
        self.clock = clock
        self._limit = float(parallel)
        self._outstanding = 0
        self._attempting = 0
        self._retry_waiters = 0
        self._epoch = 0
        self._cond = threading.Condition()
        self.max_attempting = 0
        self.max_outstanding = 0
        # The passes making calls now, each keeping its own record.
        self._watches: list[Watch] = []
        self._ticked = clock()

    # -- the limit ----------------------------------------------------------------------------

    @property
    def limit(self) -> int:
        return max(1, int(self._limit))

    def _tick(self) -> None:
        """Advance the watches' below-the-setting clocks to now (under the lock)."""
        now = self.clock()
        if self.limit < self.parallel:
            for w in self._watches:
                w.throttled_s += now - self._ticked
        self._ticked = now

    def _set_limit(self, value: float) -> None:
        self._tick()
        self._limit = min(float(self.parallel), max(1.0, value))
        for w in self._watches:
            w.lowest = min(w.lowest, self.limit)
        self._cond.notify_all()

    def _attempt(self) -> None:
        self._attempting += 1
        self.max_attempting = max(self.max_attempting, self._attempting)
        for w in self._watches:
            w.max_attempting = max(w.max_attempting, self._attempting)

    # -- slots --------------------------------------------------------------------------------

    def dispatch(self, cancelled: Callable[[], bool] = lambda: False) -> Slot | None:
        """A slot for a new call: waits while the session has as many calls outstanding as
        its limit allows, or a throttled call is waiting to retry (those go first). None if
        `cancelled()` turns true meanwhile (looked at least once a second)."""
        with self._cond:
            while (
                self._outstanding >= self.limit
                or self._attempting >= self.limit
                or self._retry_waiters
            ):
                if cancelled():
                    return None
                self._cond.wait(timeout=1.0)
            if cancelled():
                return None
            self._outstanding += 1
            self.max_outstanding = max(self.max_outstanding, self._outstanding)
            self._attempt()
            return Slot(self, self._epoch)

    def _pause(self, slot: Slot, delay: float, sleep: Callable[[float], None]) -> None:
        with self._cond:
            self._attempting -= 1
            self._cond.notify_all()
        sleep(delay)
        with self._cond:
            self._retry_waiters += 1
            try:
                while self._attempting >= self.limit:
                    self._cond.wait(timeout=1.0)
            finally:
                self._retry_waiters -= 1
            self._attempt()
            slot.epoch = self._epoch
            self._cond.notify_all()

    def _throttled(self, slot: Slot, status: int | None) -> bool:
        """Record a refusal; halve the limit if the call was sent at the current one. True
        when the refusal may be the session's own doing (the call was sent at a concurrency
        above one that is now, or by this refusal, lowered): the retry is then free."""
        with self._cond:
            for w in self._watches:
                w.refusals[status or 0] += 1
            if slot.epoch == self._epoch:
                if self.limit <= 1:
                    return False  # alone on the wire and still refused: not our concurrency
                self._set_limit(self._limit / 2)
                self._epoch += 1
            return True

    def _succeeded(self) -> None:
        with self._cond:
            if self._limit < self.parallel:
                self._set_limit(self._limit + 1.0 / self._limit)

    def _close(self, slot: Slot) -> None:
        with self._cond:
            if slot.attempting:
                self._attempting -= 1
            self._outstanding -= 1
            self._cond.notify_all()

    # -- passes and their records ------------------------------------------------------------

    @contextmanager
    def watch(self) -> Iterator[Watch]:
        """A pass is making calls: what the gate sees meanwhile is recorded in the Watch."""
        with self._cond:
            self._tick()
            w = Watch(self.parallel, self.limit)
            self._watches.append(w)
        try:
            yield w
        finally:
            with self._cond:
                self._tick()
                self._watches.remove(w)


class Slot:
    """One dispatched call's place in its gate. `attempting`: whether it holds a request slot
    now (not while it waits out a backoff). `cancelled`: the pass that made the call was
    interrupted; the request on the wire may still be answered, but no other is sent for it
    (mole_dag.llm.retry)."""

    def __init__(self, gate: Gate, epoch: int) -> None:
        self.gate = gate
        self.epoch = epoch
        self.attempting = True
        self.closed = False
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def throttled(self, status: int | None) -> bool:
        return self.gate._throttled(self, status)

    def succeeded(self) -> None:
        self.gate._succeeded()

    def pause(self, delay: float, sleep: Callable[[float], None]) -> None:
        """Give up the request slot, wait `delay` (the backoff or the server's retry-after),
        and take a slot again before the retry."""
        self.attempting = False
        self.gate._pause(self, delay, sleep)
        self.attempting = True

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.gate._close(self)


# The slot of the call running on this thread (set by the fan-out's worker), for the retry loop.
_SLOT: ContextVar[Slot | None] = ContextVar("mole_model_call_slot", default=None)


def current_slot() -> Slot | None:
    return _SLOT.get()


@contextmanager
def holding(slot: Slot) -> Iterator[Slot]:
    """Run a call with `slot` as this thread's current one."""
    token = _SLOT.set(slot)
    try:
        yield slot
    finally:
        _SLOT.reset(token)


# One gate per session in this process: a session's stages run one after another (each a
# Dagster run in the same process, or plain functions), and a limit lowered by a refusal in
# mining still holds when the judge starts.
# Kept for the sessions used last, so a long-lived process (mole-mcp) does not collect them.
_GATES: OrderedDict[str, Gate] = OrderedDict()
_GATES_LOCK = threading.Lock()
_GATES_KEPT = 256


def gate_for(session: str, parallel: int) -> Gate:
    """The gate of `session` (a key naming it), made at `parallel` (a changed setting makes a
    new one)."""
    with _GATES_LOCK:
        gate = _GATES.get(session)
        if gate is None or gate.parallel != parallel:
            gate = _GATES[session] = Gate(parallel)
        _GATES.move_to_end(session)
        while len(_GATES) > _GATES_KEPT:
            _GATES.popitem(last=False)
        return gate
