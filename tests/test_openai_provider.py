"""The OpenAI-compatible provider over httpx against a chat-completions server on 127.0.0.1:
success, JSON mode and its fallback, retries, refusals, empty content, truncated JSON and usage
accounting (cached prompt tokens, and a server that reports no usage)."""

from __future__ import annotations

import json

import pytest

from mole_dag.budget import Usage
from mole_dag.core import Unit
from mole_dag.llm.openai_compat import OpenAICompatProvider
from mole_dag.llm.pricing import PriceTable
from mole_dag.llm.provider import (
    Call,
    EmptyOutput,
    Message,
    ProviderRejected,
    ProviderUnavailable,
    Tier,
)
from mole_dag.llm.retry import RetryPolicy
from mole_dag.skills.protocol import MineRequest
from mole_dag.skillsets.model import ModelSkills
from tests.model_server import ModelServer, Reply, chat_completion, scripted

KEY = "sk-openai-test-9876543210"
MODELS = {Tier.CHEAP: "gpt-4o-mini", Tier.STRONG: "gpt-4o"}


def _call(json_mode: bool = True, max_tokens: int = 64) -> Call:
    return Call(
        Tier.CHEAP,
        (Message("user", "Reply in JSON."),),
        max_tokens,
        system="Be brief.",
        json=json_mode,
    )


def _provider(
    server: ModelServer,
    sleeps: list[float] | None = None,
    *,
    key: str | None = KEY,
    json_mode: bool | None = None,
    policy: RetryPolicy | None = None,
) -> OpenAICompatProvider:
    return OpenAICompatProvider(
        base_url=f"{server.url}/v1",
        api_key=key,
        models=MODELS,
        json_mode=json_mode,
        sleep=(sleeps.append if sleeps is not None else (lambda _s: None)),
        **({"policy": policy} if policy else {}),
    )


def test_success_with_json_mode_and_bearer_key() -> None:
    reply = chat_completion('{"ok": true}', prompt_tokens=30, completion_tokens=4, cached=10)
    with ModelServer(scripted([Reply(200, reply)])) as server:
        done = _provider(server).complete(_call(max_tokens=55))
    assert done.text == '{"ok": true}'
    # prompt_tokens includes the cached ones; they are split out so each kind is priced once.
    assert done.usage == Usage(input_tokens=20, output_tokens=4, cache_read_tokens=10)
    (req,) = server.received
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {KEY}"
    body = req.json
    assert body["model"] == "gpt-4o-mini"
    assert body["max_tokens"] == 55
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Reply in JSON."},
    ]


def test_no_key_sends_no_authorization_header() -> None:
    with ModelServer(scripted([Reply(200, chat_completion("hi"))])) as server:
        _provider(server, key=None).complete(_call())
    assert "authorization" not in server.received[0].headers


def test_plain_call_does_not_ask_for_json_mode() -> None:
    with ModelServer(scripted([Reply(200, chat_completion("prose"))])) as server:
        _provider(server).complete(_call(json_mode=False))
    assert "response_format" not in server.received[0].json


def test_server_without_json_mode_is_asked_again_plainly_and_remembered() -> None:
    refuse = Reply(400, {"error": {"message": "unknown field: response_format"}})
    ok = Reply(200, chat_completion('{"a": 1}'))
    with ModelServer(scripted([refuse, ok, ok])) as server:
        provider = _provider(server)
        assert provider.complete(_call()).text == '{"a": 1}'
        provider.complete(_call())
    bodies = [r.json for r in server.received]
    assert "response_format" in bodies[0]
    assert "response_format" not in bodies[1] and "response_format" not in bodies[2]
    assert len(bodies) == 3  # one refusal, then plain requests only


def test_json_mode_switched_off_in_config_is_never_sent() -> None:
    with ModelServer(scripted([Reply(200, chat_completion("{}"))])) as server:
        _provider(server, json_mode=False).complete(_call())
    assert "response_format" not in server.received[0].json


def test_429_then_success_honours_retry_after() -> None:
    sleeps: list[float] = []
    replies = [
        Reply(429, {"error": {"message": "slow down"}}, {"retry-after": "2"}),
        Reply(200, chat_completion("done")),
    ]
    with ModelServer(scripted(replies)) as server:
        assert _provider(server, sleeps).complete(_call()).text == "done"
    assert sleeps == [2.0]


def test_503_is_retried_and_bounded() -> None:
    policy = RetryPolicy(max_attempts=3)
    with (
        ModelServer(scripted([Reply(503, {"error": {"message": "busy"}})] * 5)) as server,
        pytest.raises(ProviderUnavailable) as exc,
    ):
        _provider(server, [], policy=policy).complete(_call())
    assert len(server.received) == 3 and exc.value.status == 503


def test_400_is_not_retried_and_key_is_redacted() -> None:
    body = {"error": {"message": f"model not found (key {KEY})"}}
    with (
        ModelServer(scripted([Reply(404, body)] * 3)) as server,
        pytest.raises(ProviderRejected) as exc,
    ):
        _provider(server).complete(_call())
    assert len(server.received) == 1
    assert KEY not in str(exc.value)


def test_non_json_200_is_a_clear_refusal() -> None:
    with (
        ModelServer(scripted([Reply(200, "<html>proxy error</html>")])) as server,
        pytest.raises(ProviderRejected, match="not JSON"),
    ):
        _provider(server).complete(_call())


@pytest.mark.parametrize("content", [None, "", "   "])
def test_empty_content_is_a_named_error(content: str | None) -> None:
    reply = chat_completion(content, prompt_tokens=50, completion_tokens=64, finish_reason="length")
    with ModelServer(scripted([Reply(200, reply)])) as server, pytest.raises(EmptyOutput) as exc:
        _provider(server).complete(_call())
    assert exc.value.usage == Usage(input_tokens=50, output_tokens=64)
    assert exc.value.stop_reason == "length"


def test_truncated_json_is_salvaged() -> None:
    claims = [
        {"text": f"Claim {i} about tea.", "quote": f"a verbatim quote number {i} here"}
        for i in range(4)
    ]
    full = json.dumps({"claims": claims})
    cut = full[: full.index("Claim 3") + 3]
    reply = chat_completion(cut, prompt_tokens=100, completion_tokens=300, finish_reason="length")
    with ModelServer(scripted([Reply(200, reply)])) as server:
        skills = ModelSkills(_provider(server), PriceTable.load())
        got = skills.mine(MineRequest("q?", "sub", "passage"), Unit.TOKENS)
    assert [d.text for d in got.value] == [c["text"] for c in claims[:3]]


def test_usage_priced_with_cache_discount() -> None:
    reply = chat_completion(
        '{"claims": []}', prompt_tokens=5000, completion_tokens=1000, cached=4000
    )
    with ModelServer(scripted([Reply(200, reply)])) as server:
        skills = ModelSkills(_provider(server), PriceTable.load())
        got = skills.mine(MineRequest("q?", "sub", "passage"), Unit.USD_MICROS)
    # gpt-4o-mini: $0.15 in, $0.60 out, $0.075 cached, per million tokens.
    assert got.cost == 1000 * 0.15 + 1000 * 0.6 + 4000 * 0.075 == 1050


def test_missing_usage_charges_the_whole_reservation() -> None:
    reply = chat_completion('{"claims": []}', usage=False)
    with ModelServer(scripted([Reply(200, reply)])) as server:
        skills = ModelSkills(_provider(server), PriceTable.load())
        req = MineRequest("q?", "sub", "passage")
        estimate = skills.estimate_mine(req, Unit.TOKENS)
        got = skills.mine(req, Unit.TOKENS)
    assert got.cost == estimate > 0


def test_base_url_and_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from mole_dag.llm.registry import build_provider

    with ModelServer(scripted([Reply(200, chat_completion("from env"))])) as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        provider = build_provider("openai", {"openai": {"models": {"cheap": "llama3.1:8b"}}})
        assert provider.complete(_call()).text == "from env"
    assert server.received[0].json["model"] == "llama3.1:8b"
    assert server.received[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(provider)


def test_a_model_that_wants_max_completion_tokens_gets_the_bound_under_that_name() -> None:
    """OpenAI's reasoning models (o-series, gpt-5) answer 400 to `max_tokens`; the bound the
    ledger reserved on must still be sent, under the name the server asks for, and from then
    on without the failed first try."""
    refusal = json.dumps(
        {
            "error": {
                "message": "Unsupported parameter: 'max_tokens' is not supported with this "
                "model. Use "
                "'max_completion_tokens' instead.",
                "type": "invalid_request_error",
                "param": "max_tokens",
                "code": "unsupported_parameter",
            }
        }
    )
    replies = [
        Reply(400, refusal),
        Reply(200, chat_completion('{"ok": 1}')),
        Reply(200, chat_completion('{"ok": 2}')),
    ]
    with ModelServer(scripted(replies)) as server:
        provider = _provider(server)
        assert provider.complete(_call(max_tokens=55)).text == '{"ok": 1}'
        assert provider.complete(_call(max_tokens=56)).text == '{"ok": 2}'
    first, second, third = (r.json for r in server.received)
    assert first["max_tokens"] == 55 and "max_completion_tokens" not in first
    assert second["max_completion_tokens"] == 55 and "max_tokens" not in second
    assert third["max_completion_tokens"] == 56 and "max_tokens" not in third
