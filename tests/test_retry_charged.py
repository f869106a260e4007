"""Issue 33, item 1: a model call that timed out and was retried in an uninterrupted run.

The timed-out attempt reached the server, which may have done and billed the work; the retry
is a second request. The ledger charges the first at its reservation, flagged `assumed` (as a
call interrupted in flight is), and the retry under a reservation of its own, at its price:
two requests, two rows, never one row at the final answer's price. A stand-in server answers
the first request only after the client's timeout, over a real socket."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from mole_dag.budget import Ledger, charging
from mole_dag.core import Role, Unit
from mole_dag.llm.anthropic_provider import AnthropicProvider
from mole_dag.llm.fanout import Job, Pass, Status, fan_out
from mole_dag.llm.openai_compat import OpenAICompatProvider
from mole_dag.llm.provider import Call, Message, Provider, ProviderUnavailable, Tier
from mole_dag.llm.retry import RetryPolicy
from mole_dag.skills.protocol import Metered
from tests.model_server import ModelServer, Received, Reply, chat_completion, claude_message

# The client's timeout, and how long the stand-in keeps the first request: seconds apart, so a
# busy machine cannot make the slow answer arrive in time, nor the quick one late.
TIMEOUT_S = 2.0
SLOW_S = 5.0
ESTIMATE = 5_000


def _slow_first(answer: dict[str, object]) -> Callable[[Received], Reply]:
    seen: list[int] = []

    def respond(_got: Received) -> Reply:
        seen.append(1)
        if len(seen) == 1:
            time.sleep(SLOW_S)
        return Reply(200, answer)

    return respond


def _openai(server: ModelServer, policy: RetryPolicy | None = None) -> Provider:
    return OpenAICompatProvider(
        base_url=f"{server.url}/v1",
        api_key="sk-test-0000",
        models={Tier.CHEAP: "m", Tier.STRONG: "m"},
        timeout_s=TIMEOUT_S,
        sleep=lambda _s: None,
        **({"policy": policy} if policy else {}),
    )


def _anthropic(server: ModelServer, policy: RetryPolicy | None = None) -> Provider:
    return AnthropicProvider(
        api_key="sk-ant-test-0000",
        base_url=server.url,
        timeout_s=TIMEOUT_S,
        sleep=lambda _s: None,
        **({"policy": policy} if policy else {}),
    )


ANSWERS = {
    "openai": chat_completion("fine", prompt_tokens=100, completion_tokens=20),
    "anthropic": claude_message("fine", input_tokens=100, output_tokens=20),
}
PROVIDERS = {"openai": _openai, "anthropic": _anthropic}
CALL = Call(Tier.CHEAP, (Message("user", "hello"),), 64)


def _rows(ledger: Ledger, sid: str) -> list[tuple[object, ...]]:
    got = ledger.store.rows(
        "SELECT status, reserved, actual, assumed FROM tool_calls WHERE session_id = ?", [sid]
    )
    # The assumed charge (the first attempt) first, then by price.
    return sorted(
        ((r["status"], r["reserved"], r["actual"], r["assumed"]) for r in got),
        key=lambda t: (not t[3], t[2]),
    )


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_a_timed_out_attempt_is_charged_its_reservation_and_the_retry_its_price(
    ledger: Ledger, name: str
) -> None:
    sid = ledger.create_session("q?", Unit.TOKENS, 100_000).session_id
    with ModelServer(_slow_first(ANSWERS[name])) as server:
        provider = PROVIDERS[name](server)
        with ledger.hold(sid, Role.EXECUTOR, ESTIMATE, tool="t:mine", stage="s") as h, charging(h):
            done = provider.complete(CALL)
            h.settle(done.usage.input_tokens + done.usage.output_tokens, usage=done.usage)
        assert len(server.received) == 2  # the timed-out request and its retry
    assert done.text == "fine"
    rows = _rows(ledger, sid)
    assert rows == [("settled", ESTIMATE, ESTIMATE, True), ("settled", ESTIMATE, 120, False)]
    assert ledger.balance(sid).spent == ESTIMATE + 120
    assert ledger.verify(sid).ok


def test_a_call_that_never_answers_in_time_is_charged_not_released(ledger: Ledger) -> None:
    """The last attempt timed out too: the call fails, and what it may have cost stays on the
    books instead of being released for free."""
    sid = ledger.create_session("q?", Unit.TOKENS, 100_000).session_id
    one = RetryPolicy(max_attempts=1)
    with ModelServer(_slow_first(ANSWERS["openai"])) as server:
        provider = _openai(server, one)
        with (
            pytest.raises(ProviderUnavailable),
            ledger.hold(sid, Role.EXECUTOR, ESTIMATE, tool="t", stage="s") as h,
            charging(h),
        ):
            provider.complete(CALL)
    assert _rows(ledger, sid) == [("settled", ESTIMATE, ESTIMATE, True)]
    assert ledger.verify(sid).ok


def test_in_a_fan_out_the_retry_is_charged_on_its_own(ledger: Ledger) -> None:
    """A fan-out makes its calls in worker threads, which hold their own reservations."""
    sid = ledger.create_session("q?", Unit.TOKENS, 100_000).session_id
    with ModelServer(_slow_first(ANSWERS["openai"])) as server:
        provider = _openai(server)

        def job() -> Metered[str]:
            done = provider.complete(CALL)
            cost = done.usage.input_tokens + done.usage.output_tokens
            return Metered(done.text, cost=cost, usage=done.usage)

        p = Pass(ledger, sid, Role.EXECUTOR, "mined_claims", "t:mine", "mining", parallel=2)
        got = list(fan_out(p, [Job(ESTIMATE, job), Job(ESTIMATE, job)]))
    assert [o.status for o in got] == [Status.DONE, Status.DONE]
    assert _rows(ledger, sid) == [
        ("settled", ESTIMATE, ESTIMATE, True),
        ("settled", ESTIMATE, 120, False),
        ("settled", ESTIMATE, 120, False),
    ]
    assert ledger.verify(sid).ok
