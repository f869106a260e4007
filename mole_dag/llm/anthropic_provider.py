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

from mole_dag.budget import Usage
from mole_dag.llm.cassette import CassetteError
from mole_dag.llm.default_models import DEFAULT_TIERS
from mole_dag.llm.provider import Call, Tier, redact
from mole_dag.llm.provider_base import Answer, ProviderBase
from mole_dag.llm.retry import DEFAULT_POLICY, RetryPolicy

NAME = "anthropic"
# The tiers' defaults live in llm/default_models.py, beside the other providers'. Configurable
# under "anthropic": {"models": {...}}.
DEFAULT_MODELS = DEFAULT_TIERS["anthropic"]
# Per attempt. A guess, flagged as one: long enough for a strong model writing a report.
DEFAULT_TIMEOUT_S = 120.0


class AnthropicProvider(ProviderBase):
    name = NAME
    key_variable = "ANTHROPIC_API_KEY"

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
        super().__init__(
            api_key=api_key,
            models=models,
            default_models=DEFAULT_MODELS,
            policy=policy,
            sleep=sleep,
        )
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
            detail = redact(str(exc.message), self._secret)[:300]
            self._refused(exc.status_code, detail, exc.response.headers, model, NAME)
        except (anthropic.APITimeoutError, anthropic.APIConnectionError) as exc:
            # The SDK wraps whatever its transport raised; a cassette with no answer for this
            # request is not a connection problem and must not be retried as one.
            if isinstance(exc.__cause__, CassetteError):
                raise exc.__cause__ from None
            # A timeout after the request was sent (not while connecting): the server may have
            # done, and billed, the work.
            raise self._unreachable(
                exc,
                maybe_billed=isinstance(exc, anthropic.APITimeoutError)
                and not isinstance(exc.__cause__, httpx2.ConnectTimeout),
            ) from None

    def _answer(self, raw: Any) -> Answer:
        u = raw.usage
        usage = Usage(
            input_tokens=int(u.input_tokens or 0),
            output_tokens=int(u.output_tokens or 0),
            cache_read_tokens=int(getattr(u, "cache_read_input_tokens", None) or 0),
            cache_write_tokens=int(getattr(u, "cache_creation_input_tokens", None) or 0),
        )
        text = "".join(
            getattr(b, "text", "") for b in raw.content if getattr(b, "type", "") == "text"
        )
        return Answer(text, usage, raw.stop_reason, truncated=raw.stop_reason == "max_tokens")
