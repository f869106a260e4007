"""Claude through the official `anthropic` SDK.

The key and base URL are resolved the way the SDK itself resolves them (ANTHROPIC_API_KEY,
ANTHROPIC_BASE_URL), with the config file as the fallback, and handed to the client; they go
nowhere else. The SDK's own retries are off (max_retries=0): mole_dag.llm.retry is the one retry
policy every provider shares. A cassette plugs in as the SDK's HTTP transport, so a replay runs
the SDK's real parsing."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import anthropic
import httpx2

from mole_dag import redaction
from mole_dag.budget import Usage
from mole_dag.llm.cassette import CassetteError
from mole_dag.llm.default_models import DEFAULT_TIERS
from mole_dag.llm.provider import (
    Call,
    Completion,
    EmptyOutput,
    ProviderRejected,
    Tier,
    mask_output,
    redact,
    utf8_token_bound,
)
from mole_dag.llm.retry import (
    DEFAULT_POLICY,
    Retryable,
    RetryPolicy,
    retry_after_seconds,
    retryable_status,
    with_retries,
)

NAME = "anthropic"
# The tiers' defaults live in the registry, beside the other providers'. Configurable under
# "anthropic": {"models": {...}}.
DEFAULT_MODELS = DEFAULT_TIERS["anthropic"]
# Per attempt. A guess, flagged as one: long enough for a strong model writing a report.
DEFAULT_TIMEOUT_S = 120.0


class AnthropicProvider:
    name = NAME

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        models: Mapping[Tier, str] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        policy: RetryPolicy = DEFAULT_POLICY,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        self.models = {**DEFAULT_MODELS, **dict(models or {})}
        self.policy, self.sleep = policy, sleep
        self._secret = api_key
        redaction.remember(api_key)
        http_client = (
            httpx2.Client(transport=transport, timeout=timeout_s) if transport is not None else None
        )
        self._client = anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=timeout_s,
            http_client=http_client,
        )

    def __repr__(self) -> str:  # never the key
        return f"AnthropicProvider(models={dict(self.models)!r})"

    def model_for(self, tier: Tier) -> str:
        return self.models[tier]

    def input_token_bound(self, call: Call) -> int:
        # The SDK's token counter is a network call (free, but neither local nor offline), so
        # the byte bound is used: provably above the real count, see utf8_token_bound.
        return utf8_token_bound(call)

    def _attempt(self, model: str, call: Call) -> Any:
        kwargs: dict[str, Any] = {
            "model": model,
            "max_tokens": call.max_tokens,
            "messages": [{"role": m.role, "content": m.content} for m in call.messages],
        }
        if call.system:
            kwargs["system"] = call.system
        try:
            return self._client.messages.create(**kwargs)
        except anthropic.APIStatusError as exc:
            status = exc.status_code
            detail = redact(str(exc.message), self._secret)[:300]
            if retryable_status(status):
                raise Retryable(
                    f"HTTP {status}: {detail}",
                    status=status,
                    retry_after=retry_after_seconds(exc.response.headers),
                ) from None
            hint = (
                " (check ANTHROPIC_API_KEY or the key in the config file)"
                if status in (401, 403)
                else ""
            )
            raise ProviderRejected(
                f"anthropic refused the call (HTTP {status}){hint}: {detail}",
                provider=NAME,
                model=model,
                status=status,
            ) from None
        except (anthropic.APITimeoutError, anthropic.APIConnectionError) as exc:
            # The SDK wraps whatever its transport raised; a cassette with no answer for this
            # request is not a connection problem and must not be retried as one.
            if isinstance(exc.__cause__, CassetteError):
                raise exc.__cause__ from None
            raise Retryable(
                f"{type(exc).__name__}: {redact(str(exc), self._secret)}",
                # A timeout after the request was sent (not while connecting): the server may
                # have done, and billed, the work.
                maybe_billed=isinstance(exc, anthropic.APITimeoutError)
                and not isinstance(exc.__cause__, httpx2.ConnectTimeout),
            ) from None

    def complete(self, call: Call) -> Completion:
        model = call.model or self.model_for(call.tier)
        msg = with_retries(
            lambda: self._attempt(model, call),
            policy=self.policy,
            sleep=self.sleep,
            provider=NAME,
            model=model,
        )
        u = msg.usage
        usage = Usage(
            input_tokens=int(u.input_tokens or 0),
            output_tokens=int(u.output_tokens or 0),
            cache_read_tokens=int(getattr(u, "cache_read_input_tokens", None) or 0),
            cache_write_tokens=int(getattr(u, "cache_creation_input_tokens", None) or 0),
        )
        text = "".join(
            getattr(b, "text", "") for b in msg.content if getattr(b, "type", "") == "text"
        )
        if not text.strip():
            raise EmptyOutput(provider=NAME, model=model, usage=usage, stop_reason=msg.stop_reason)
        return Completion(
            text=mask_output(text, self._secret),
            usage=usage,
            model=model,
            truncated=msg.stop_reason == "max_tokens",
        )
