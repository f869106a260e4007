"""What the two model providers do alike, written once in mole_dag/llm/provider_base.py, proven
once for each of them against a server on 127.0.0.1: a refused key points to the provider's own
key variable, a refusal names who refused, an overloaded server is retried, and the answer is
masked for the key before it leaves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mole_dag.llm.anthropic_provider import AnthropicProvider
from mole_dag.llm.openai_compat import OpenAICompatProvider
from mole_dag.llm.provider import Call, Message, ProviderRejected, Tier
from mole_dag.llm.provider_base import ProviderBase
from mole_dag.llm.retry import RetryPolicy
from tests.model_server import (
    ModelServer,
    Reply,
    chat_completion,
    claude_error,
    claude_message,
    scripted,
)

KEY = "sk-shared-base-test-0123456789"
CALL = Call(Tier.CHEAP, (Message("user", "Say something."),), 64)
NO_WAIT = RetryPolicy(max_attempts=3, base_delay_s=0.0, max_delay_s=0.0)


def _anthropic(url: str) -> ProviderBase:
    return AnthropicProvider(api_key=KEY, base_url=url, sleep=lambda _s: None, policy=NO_WAIT)


def _openai(url: str) -> ProviderBase:
    return OpenAICompatProvider(
        base_url=f"{url}/v1", api_key=KEY, sleep=lambda _s: None, policy=NO_WAIT
    )


def _anthropic_error(status: int) -> Reply:
    kind = "authentication_error" if status == 401 else "overloaded_error"
    return claude_error(status, kind, "no")


def _openai_error(status: int) -> Reply:
    return Reply(status, {"error": {"message": "no", "type": "invalid_request_error"}})


PROVIDERS = [
    pytest.param(_anthropic, _anthropic_error, claude_message, "ANTHROPIC_API_KEY", id="anthropic"),
    pytest.param(_openai, _openai_error, chat_completion, "OPENAI_API_KEY", id="openai"),
]


@pytest.mark.parametrize(("make", "error", "answer", "variable"), PROVIDERS)
def test_a_refused_key_names_the_providers_key_variable_and_who_refused(
    make: Callable[[str], ProviderBase],
    error: Callable[[int], Reply],
    answer: Callable[..., dict[str, Any]],
    variable: str,
) -> None:
    with ModelServer(scripted([error(401)] * 3)) as server, pytest.raises(ProviderRejected) as exc:
        make(server.url).complete(CALL)
    assert len(server.received) == 1  # final: not asked again
    assert exc.value.status == 401
    message = str(exc.value)
    assert f"(check {variable} or the key in the config file)" in message
    assert "refused the call (HTTP 401)" in message


@pytest.mark.parametrize(("make", "error", "answer", "variable"), PROVIDERS)
def test_an_overloaded_server_is_asked_again_and_the_answer_is_masked(
    make: Callable[[str], ProviderBase],
    error: Callable[[int], Reply],
    answer: Callable[..., dict[str, Any]],
    variable: str,
) -> None:
    replies = [error(529), Reply(200, answer(f"the key is {KEY}"))]
    with ModelServer(scripted(replies)) as server:
        got = make(server.url).complete(CALL)
    assert len(server.received) == 2
    assert KEY not in got.text and got.text.startswith("the key is ")
