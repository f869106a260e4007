"""The Anthropic provider, driven through the real `anthropic` SDK against a Messages-API server
on 127.0.0.1: success, retries (429 with retry-after, 529, 5xx), refusals, empty content,
truncated JSON, and usage accounting including cache tokens."""

from __future__ import annotations

import json

import pytest

from mole_dag.budget import Usage
from mole_dag.core import Unit
from mole_dag.llm.anthropic_provider import AnthropicProvider
from mole_dag.llm.pricing import PriceTable
from mole_dag.llm.provider import (
    Call,
    EmptyOutput,
    Message,
    ModelCallFailed,
    ProviderRejected,
    ProviderUnavailable,
    Tier,
    utf8_token_bound,
)
from mole_dag.llm.retry import RetryPolicy
from mole_dag.skills.protocol import MineRequest
from mole_dag.skillsets.model import ModelSkills
from tests.model_server import ModelServer, Reply, claude_error, claude_message, scripted

KEY = "sk-ant-test-0123456789"


def _call(max_tokens: int = 64) -> Call:
    return Call(Tier.CHEAP, (Message("user", "Say hello."),), max_tokens, system="Be brief.")


def _provider(
    server: ModelServer, sleeps: list[float] | None = None, policy: RetryPolicy | None = None
) -> AnthropicProvider:
    return AnthropicProvider(
        api_key=KEY,
        base_url=server.url,
        models={Tier.CHEAP: "claude-haiku-4-5", Tier.STRONG: "claude-sonnet-4-5"},
        sleep=(sleeps.append if sleeps is not None else (lambda _s: None)),
        **({"policy": policy} if policy else {}),
    )


def _sent_key(server: ModelServer) -> bool:
    return all(any(KEY in v for v in r.headers.values()) for r in server.received)


def test_success_returns_text_usage_and_sends_the_request() -> None:
    reply = claude_message("Hello.", input_tokens=21, output_tokens=3, cache_read=5, cache_write=7)
    with ModelServer(scripted([Reply(200, reply)])) as server:
        done = _provider(server).complete(_call(max_tokens=77))
    assert done.text == "Hello."
    assert done.usage == Usage(
        input_tokens=21, output_tokens=3, cache_read_tokens=5, cache_write_tokens=7
    )
    assert done.model == "claude-haiku-4-5" and not done.truncated
    (req,) = server.received
    assert req.path == "/v1/messages"
    body = req.json
    assert body["model"] == "claude-haiku-4-5"
    assert body["max_tokens"] == 77
    assert body["system"] == "Be brief."
    assert body["messages"] == [{"role": "user", "content": "Say hello."}]
    assert _sent_key(server)


def test_strong_tier_uses_the_strong_model() -> None:
    with ModelServer(scripted([Reply(200, claude_message("ok"))])) as server:
        done = _provider(server).complete(Call(Tier.STRONG, (Message("user", "x"),), 10))
    assert server.received[0].json["model"] == "claude-sonnet-4-5" == done.model


def test_429_then_success_honours_retry_after() -> None:
    sleeps: list[float] = []
    replies = [
        Reply(429, claude_error(429, "rate_limit_error").body, {"retry-after": "3"}),
        Reply(200, claude_message("after the wait")),
    ]
    with ModelServer(scripted(replies)) as server:
        done = _provider(server, sleeps).complete(_call())
    assert done.text == "after the wait"
    assert sleeps == [3.0]
    assert len(server.received) == 2


def test_retry_after_ms_is_preferred() -> None:
    sleeps: list[float] = []
    replies = [
        Reply(
            429,
            claude_error(429, "rate_limit_error").body,
            {"retry-after": "9", "retry-after-ms": "250"},
        ),
        Reply(200, claude_message("ok")),
    ]
    with ModelServer(scripted(replies)) as server:
        _provider(server, sleeps).complete(_call())
    assert sleeps == [0.25]


def test_529_overloaded_is_retried_then_gives_up_bounded() -> None:
    sleeps: list[float] = []
    policy = RetryPolicy(max_attempts=3, base_delay_s=0.5, max_delay_s=4.0)
    overloaded = claude_error(529, "overloaded_error", "Overloaded")
    with (
        ModelServer(scripted([overloaded] * 10)) as server,
        pytest.raises(ProviderUnavailable) as exc,
    ):
        _provider(server, sleeps, policy).complete(_call())
    assert len(server.received) == 3  # bounded: exactly max_attempts requests
    assert exc.value.status == 529 and exc.value.attempts == 3
    # Not a failed call a stage goes on without: the provider is down (issue 29).
    assert not isinstance(exc.value, ModelCallFailed)
    # Backoff without retry-after: exponential with jitter, capped.
    assert len(sleeps) == 2
    assert 0.25 <= sleeps[0] <= 0.5 and 0.5 <= sleeps[1] <= 1.0


def test_529_then_success() -> None:
    replies = [claude_error(529, "overloaded_error"), Reply(200, claude_message("fine"))]
    with ModelServer(scripted(replies)) as server:
        assert _provider(server, []).complete(_call()).text == "fine"


@pytest.mark.parametrize("status", [500, 502, 503])
def test_5xx_is_retried(status: int) -> None:
    replies = [claude_error(status, "api_error"), Reply(200, claude_message("fine"))]
    with ModelServer(scripted(replies)) as server:
        assert _provider(server, []).complete(_call()).text == "fine"
    assert len(server.received) == 2


def test_retry_after_beyond_the_cap_fails_now() -> None:
    sleeps: list[float] = []
    replies = [Reply(429, claude_error(429, "rate_limit_error").body, {"retry-after": "600"})]
    with (
        ModelServer(scripted(replies * 3)) as server,
        pytest.raises(ProviderUnavailable, match="asked to wait 600s"),
    ):
        _provider(server, sleeps).complete(_call())
    assert sleeps == [] and len(server.received) == 1


@pytest.mark.parametrize("status", [400, 401, 404])
def test_4xx_is_not_retried_and_never_echoes_the_key(status: int) -> None:
    body = claude_error(status, "invalid_request_error", f"bad request carrying {KEY}").body
    with (
        ModelServer(scripted([Reply(status, body)] * 3)) as server,
        pytest.raises(ProviderRejected) as exc,
    ):
        _provider(server, []).complete(_call())
    assert len(server.received) == 1
    assert exc.value.status == status
    assert KEY not in str(exc.value)
    assert "[redacted]" in str(exc.value)


def test_connection_refused_is_retried_then_named() -> None:
    with ModelServer(scripted([])) as server:
        url = server.url
    # The server is gone: every attempt is refused.
    provider = AnthropicProvider(
        api_key=KEY, base_url=url, sleep=lambda _s: None, policy=RetryPolicy(max_attempts=2)
    )
    with pytest.raises(ProviderUnavailable, match="after 2 attempts"):
        provider.complete(_call())


@pytest.mark.parametrize(
    "content",
    [
        [],
        [{"type": "text", "text": "  \n"}],
        [{"type": "thinking", "thinking": "hmm", "signature": "s"}],
    ],
)
def test_no_content_is_a_named_error_that_carries_usage(content: list) -> None:
    reply = claude_message(
        None, content=content, input_tokens=40, output_tokens=64, stop_reason="max_tokens"
    )
    with ModelServer(scripted([Reply(200, reply)])) as server, pytest.raises(EmptyOutput) as exc:
        _provider(server).complete(_call())
    err = exc.value
    assert not isinstance(err, json.JSONDecodeError)
    assert err.usage == Usage(input_tokens=40, output_tokens=64)
    assert err.stop_reason == "max_tokens"
    assert "returned no text" in str(err)


def test_truncated_json_is_salvaged_claim_by_claim() -> None:
    claims = [
        {
            "text": f"Claim number {i} about green tea and stroke risk.",
            "quote": f"quote number {i} copied from the passage verbatim",
        }
        for i in range(3)
    ]
    full = json.dumps({"claims": claims})
    cut = full[: full.index("quote number 2") + 5]  # stops inside the third claim
    reply = claude_message(cut, input_tokens=300, output_tokens=1200, stop_reason="max_tokens")
    with ModelServer(scripted([Reply(200, reply)])) as server:
        skills = ModelSkills(_provider(server), PriceTable.load())
        got = skills.mine(MineRequest("q?", "sub", "passage"), Unit.TOKENS)
    assert [d.text for d in got.value] == [c["text"] for c in claims[:2]]
    assert [d.quote for d in got.value] == [c["quote"] for c in claims[:2]]
    assert got.cost == 300 + 1200


def test_usage_accounting_prices_every_token_kind() -> None:
    reply = claude_message(
        '{"claims": []}', input_tokens=1000, output_tokens=200, cache_read=4000, cache_write=300
    )
    with ModelServer(scripted([Reply(200, reply)] * 2)) as server:
        skills = ModelSkills(_provider(server), PriceTable.load())
        req = MineRequest("q?", "sub", "passage")
        usd = skills.mine(req, Unit.USD_MICROS)
        tok = skills.mine(req, Unit.TOKENS)
    # claude-haiku-4-5: $1 in, $5 out, $0.10 cache read, $1.25 cache write per million tokens
    # = micro-dollars per token.
    assert usd.cost == 1000 * 1 + 200 * 5 + 4000 * 0.1 + 300 * 1.25 == 2775
    assert tok.cost == 1000 + 200 + 4000 + 300
    assert usd.usage == Usage(1000, 200, 4000, 300)
    assert usd.model == "claude-haiku-4-5"


def test_estimate_is_the_bound_of_the_request_actually_sent() -> None:
    with ModelServer(scripted([Reply(200, claude_message('{"claims": []}'))])) as server:
        skills = ModelSkills(_provider(server), PriceTable.load())
        req = MineRequest("What does green tea do?", "green tea", "Green tea is a drink. " * 50)
        estimate = skills.estimate_mine(req, Unit.TOKENS)
        skills.mine(req, Unit.TOKENS)
    sent = server.received[0].json
    text_bytes = len(sent["system"].encode()) + sum(
        len(m["content"].encode()) for m in sent["messages"]
    )
    # Input bound: at least one token per byte of what was sent, plus the template allowance;
    # output bound: exactly the max_tokens the request carried.
    assert estimate >= text_bytes + sent["max_tokens"]
    from mole_dag.mining.prompts import mine_call

    assert estimate == utf8_token_bound(mine_call(req)) + sent["max_tokens"]


def test_base_url_and_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from mole_dag.llm.registry import build_provider

    with ModelServer(scripted([Reply(200, claude_message("from env"))])) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        provider = build_provider("anthropic", {})
        assert provider.complete(_call()).text == "from env"
    assert _sent_key(server)
    assert KEY not in repr(provider)


def test_ground_skill_through_the_sdk() -> None:
    from mole_dag.skills.protocol import GroundRequest

    reply = claude_message(
        '{"verdict": "unsupported", "rationale": "the page says 2019"}',
        input_tokens=400,
        output_tokens=20,
    )
    with ModelServer(scripted([Reply(200, reply)])) as server:
        skills = ModelSkills(_provider(server), PriceTable.load())
        req = GroundRequest("Tea was reclassified in 2021.", "In 2019 the agency reclassified tea.")
        estimate = skills.estimate_ground(req, Unit.USD_MICROS)
        got = skills.ground(req, Unit.USD_MICROS)
    assert got.value.verdict == "unsupported" and "2019" in got.value.rationale
    assert got.cost == 400 * 1 + 20 * 5 <= estimate
    assert server.received[0].json["model"] == "claude-haiku-4-5"
