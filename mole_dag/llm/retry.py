"""Bounded retries for model calls: 429, 529 (overloaded), other 5xx, timeouts and refused
connections are retried with exponential backoff and jitter, honouring the server's
`retry-after` (or `retry-after-ms`) when it sends one.

One policy for every provider, rather than each SDK's own: the Anthropic SDK and a hand-rolled
httpx client would otherwise retry differently, and a test could only pin down one of them. The
SDK's own retries are switched off. Bounded three times: in attempts, in how long a server may
ask us to wait (a server asking for ten minutes is better answered with an error now), and in
how long one call may wait in all (`max_wait_s`). A call that gets no answer within those raises
ProviderUnavailable, which stops the session as `interrupted` (mole_dag.llm.provider).

Inside a fan-out (mole_dag.llm.fanout) a call has a slot in its session's gate
(mole_dag.llm.concurrency): a 429 or 529 then also lowers the session's concurrency, the call
waits out its backoff without holding a request slot, and a refusal the session's own
concurrency may have caused (the call was sent at a limit that is now lowered) is retried
without counting against `max_attempts`, up to MAX_FREE_RETRIES: a call is not lost because
the session sent too many at once. A refusal of a call that was alone on the wire counts as
any other failure. Every retry happens inside the reservation the call already holds, and none
happens once the call's pass was interrupted (its slot is cancelled).

An attempt that timed out waiting for its answer (`maybe_billed`) was sent and may have been
worked on and billed: it is settled at its reservation, flagged `assumed`, as an interrupted
call is, and its retry is made under a reservation of its own (Hold.renew), so the ledger
never charges two requests as one. Refusals (429, 5xx) and refused connections were not
worked on, and are retried inside the reservation the call already holds."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypeVar

from mole_dag.budget import BudgetExhausted, Hold, current_hold
from mole_dag.llm.concurrency import THROTTLE_STATUSES, Slot, current_slot
from mole_dag.llm.provider import CallNotRetried, ProviderUnavailable

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    # Guesses, flagged as such: four attempts ride out a short overload without turning one
    # stuck call into minutes of waiting; the cap on retry-after is the longest a user waiting
    # on a research session is likely to accept for one call.
    max_attempts: int = 4
    base_delay_s: float = 1.0
    max_delay_s: float = 20.0
    max_retry_after_s: float = 60.0
    # What one call may spend waiting out backoffs and retry-after in all: the bound on how long
    # a session can sit on a provider that keeps refusing (docs/providers.md, "When the
    # provider stops answering").
    max_wait_s: float = 180.0


DEFAULT_POLICY = RetryPolicy()
# Retries of a call refused because the session had too many in flight, not counted as
# attempts. A guess, flagged as one: the limit halves at each round of refusals, so a handful
# reaches one call at a time from any setting; the cap stops a flapping server from keeping a
# call forever.
MAX_FREE_RETRIES = 8


class Retryable(Exception):
    """Raised by a provider's single attempt when trying again may help."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        maybe_billed: bool = False,
    ) -> None:
        self.status, self.retry_after = status, retry_after
        # The request reached the server and no answer came back in time: the provider may
        # have billed it (module docstring).
        self.maybe_billed = maybe_billed
        super().__init__(message)


def retryable_status(status: int) -> bool:
    # 408 timeout, 409 (Anthropic: a transient conflict), 429 rate limit, 5xx incl. 529 overload.
    return status in (408, 409, 429) or status >= 500


def retry_after_seconds(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The wait a server asked for: `retry-after-ms`, then `retry-after` as seconds or as an
    HTTP date. None when absent or unreadable (then backoff decides)."""
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    raw = lower.get("retry-after")
    if raw is None:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)


def backoff(attempt: int, policy: RetryPolicy, rng: Callable[[], float] = random.random) -> float:
    """Exponential, capped, with jitter in [50 %, 100 %] so parallel workers spread out."""
    ceiling = min(policy.max_delay_s, policy.base_delay_s * (2 ** (attempt - 1)))
    return ceiling * (0.5 + 0.5 * rng())


def with_retries(
    attempt: Callable[[], T],
    *,
    policy: RetryPolicy = DEFAULT_POLICY,
    sleep: Callable[[float], None] = time.sleep,
    provider: str = "",
    model: str = "",
) -> T:
    slot = current_slot()
    hold = current_hold()
    last: Retryable | None = None
    counted = free = 0
    waited = 0.0
    since: datetime | None = None
    while True:
        try:
            got = attempt()
        except Retryable as exc:
            last = exc
            since = since or datetime.now(UTC)
            crowded = (
                slot is not None
                and exc.status in THROTTLE_STATUSES
                and slot.throttled(exc.status)
                and free < MAX_FREE_RETRIES
            )
            if crowded:
                free += 1
            else:
                counted += 1
            if counted >= policy.max_attempts:
                break
            if exc.retry_after is not None and exc.retry_after > policy.max_retry_after_s:
                _charge_unanswered(hold, exc)
                raise ProviderUnavailable(
                    f"{provider} unreachable since {_hhmm(since)}: it asked to wait "
                    f"{exc.retry_after:.0f}s before retrying, more than the "
                    f"{policy.max_retry_after_s:.0f}s this client waits: {exc}",
                    provider=provider,
                    model=model,
                    status=exc.status,
                    attempts=counted + free,
                    since=since,
                ) from None
            delay = (
                exc.retry_after if exc.retry_after is not None else backoff(counted + free, policy)
            )
            waited += delay
            if waited > policy.max_wait_s:
                break
            if slot is not None:
                _not_cancelled(slot, provider, model, exc, counted + free)
                slot.pause(delay, sleep)
                _not_cancelled(slot, provider, model, exc, counted + free)
            else:
                sleep(delay)
            if exc.maybe_billed and hold is not None:
                _renew(hold, provider, model, exc)
            continue
        if slot is not None:
            slot.succeeded()
        return got
    assert last is not None
    _charge_unanswered(hold, last)
    raise ProviderUnavailable(
        f"{provider} unreachable since {_hhmm(since)}: a call failed after {counted + free} "
        f"attempts: {last}",
        provider=provider,
        model=model,
        status=last.status,
        attempts=counted + free,
        since=since,
    ) from None


def _charge_unanswered(hold: Hold | None, last: Retryable) -> None:
    """The call ends without an answer, its last attempt perhaps billed: charged its
    reservation (`assumed`) instead of released for free."""
    if last.maybe_billed and hold is not None and not hold.done:
        hold.settle_assumed(note=f"no answer in time, may have been billed: {last}"[:200])


def _renew(hold: Hold, provider: str, model: str, last: Retryable) -> None:
    try:
        hold.renew(note=f"timed out, retried; may have been billed: {last}"[:200])
    except BudgetExhausted as exc:
        raise CallNotRetried(
            f"{provider} call not retried: its attempt timed out and was charged its "
            f"reservation, and the budget cannot cover another ({exc})",
            provider=provider,
            model=model,
        ) from None


def _hhmm(when: datetime | None) -> str:
    return (when or datetime.now(UTC)).strftime("%H:%M UTC")


def _not_cancelled(slot: Slot, provider: str, model: str, last: Retryable, attempts: int) -> None:
    """An interrupted pass sends nothing more: a call of it whose attempt failed is not tried
    again (its reservation was charged in full by the interrupt; another request would be
    one the ledger has no row for, and its answer would replace that charge while the failed
    attempt may have been billed too)."""
    if slot.cancelled:
        raise CallNotRetried(
            f"{provider} call not retried: the pass was interrupted ({last})",
            provider=provider,
            model=model,
        )
