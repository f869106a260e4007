"""The shared retry policy: which failures are retried, how long to wait, and that it stops."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mole_dag.llm.provider import ProviderRejected, ProviderUnavailable
from mole_dag.llm.retry import (
    Retryable,
    RetryPolicy,
    backoff,
    retry_after_seconds,
    retryable_status,
    with_retries,
)


@pytest.mark.parametrize(
    ("status", "retry"),
    [
        (408, True),
        (409, True),
        (429, True),
        (500, True),
        (502, True),
        (503, True),
        (529, True),
        (400, False),
        (401, False),
        (403, False),
        (404, False),
        (413, False),
        (422, False),
    ],
)
def test_retryable_statuses(status: int, retry: bool) -> None:
    assert retryable_status(status) is retry


def test_retry_after_forms() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds({"Retry-After": "7"}) == 7.0
    assert retry_after_seconds({"retry-after": "1.5"}) == 1.5
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after_seconds({"retry-after": "Wed, 01 Jan 2025 12:00:30 GMT"}, now) == 30.0
    assert retry_after_seconds({"retry-after": "Wed, 01 Jan 2025 11:00:00 GMT"}, now) == 0.0
    assert retry_after_seconds({"retry-after": "-3"}) == 0.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_backoff_is_exponential_jittered_and_capped() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=5.0)
    assert backoff(1, policy, rng=lambda: 0.0) == 0.5
    assert backoff(1, policy, rng=lambda: 1.0) == 1.0
    assert backoff(3, policy, rng=lambda: 1.0) == 4.0
    assert backoff(10, policy, rng=lambda: 1.0) == 5.0


def test_gives_up_after_max_attempts() -> None:
    calls, sleeps = [], []

    def attempt() -> str:
        calls.append(1)
        raise Retryable("busy", status=503, retry_after=0.1)

    with pytest.raises(ProviderUnavailable) as exc:
        with_retries(attempt, policy=RetryPolicy(max_attempts=5), sleep=sleeps.append, provider="p")
    assert len(calls) == 5 and sleeps == [0.1] * 4
    assert exc.value.attempts == 5 and exc.value.status == 503


def test_success_after_retries_returns_the_value() -> None:
    outcomes = [Retryable("x"), Retryable("y"), "ok"]

    def attempt() -> str:
        got = outcomes.pop(0)
        if isinstance(got, Exception):
            raise got
        return got

    assert with_retries(attempt, sleep=lambda _s: None) == "ok"


def test_non_retryable_errors_pass_through_at_once() -> None:
    calls = []

    def attempt() -> str:
        calls.append(1)
        raise ProviderRejected("no", status=400)

    with pytest.raises(ProviderRejected):
        with_retries(attempt, sleep=lambda _s: None)
    assert len(calls) == 1
