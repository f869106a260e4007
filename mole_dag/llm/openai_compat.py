"""Any OpenAI-compatible chat-completions endpoint over httpx: OpenAI itself, Ollama, the
llama.cpp server, vLLM, OpenRouter.

JSON mode (`response_format: {"type": "json_object"}`) is asked for when a call wants JSON,
unless the config switches it off; a server that rejects the field with a 400 naming it is
asked again without it, once, and not asked again for the life of the provider. Usage is read
from the standard `usage` object (cached prompt tokens from `prompt_tokens_details`); a server
that reports none is charged the whole reservation, never a guess."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from mole_dag.budget import Usage
from mole_dag.core import json_object
from mole_dag.llm.default_models import DEFAULT_TIERS
from mole_dag.llm.provider import Call, ProviderRejected, Tier, redact
from mole_dag.llm.provider_base import Answer, ProviderBase
from mole_dag.llm.retry import DEFAULT_POLICY, RetryPolicy

NAME = "openai"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Defaults only make sense for OpenAI itself; for a local server, name its models in the config.
# The tiers' defaults live in the registry, beside the other providers'.
DEFAULT_MODELS = DEFAULT_TIERS["openai"]
# Per attempt. A guess, flagged as one: local servers on modest hardware are slow.
DEFAULT_TIMEOUT_S = 300.0


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # some servers return content parts
        return "".join(
            p.get("text", "")
            for p in content
            if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


class OpenAICompatProvider(ProviderBase):
    name = NAME
    key_variable = "OPENAI_API_KEY"

    def __init__(
        self,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        models: Mapping[Tier, str] | None = None,
        json_mode: bool | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        policy: RetryPolicy = DEFAULT_POLICY,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(
            api_key=api_key,
            models=models,
            default_models=DEFAULT_MODELS,
            policy=policy,
            sleep=sleep,
        )
        # None: ask for JSON mode and fall back if the server refuses; False: never ask.
        self.json_mode = json_mode
        # OpenAI's reasoning models (o-series, gpt-5) refuse `max_tokens` and want
        # `max_completion_tokens`, which many compatible servers do not know: send the common
        # one and switch, for this provider, when a server asks for the other.
        self.limit_field = "max_tokens"
        headers = {"content-type": "application/json"}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(
            base_url=base_url.rstrip("/") + "/",
            headers=headers,
            timeout=timeout_s,
            transport=transport,
        )
        # How messages name the server: without a password its URL may carry.
        self._shown = redact(str(self._client.base_url), api_key)

    def __repr__(self) -> str:  # never the key
        return f"OpenAICompatProvider(base_url={self._shown!r})"

    def _body(self, model: str, call: Call, json_mode: bool) -> bytes:
        messages = [{"role": "system", "content": call.system}] if call.system else []
        messages += [{"role": m.role, "content": m.content} for m in call.messages]
        body: dict[str, Any] = {
            "model": model,
            "messages": messages,
            self.limit_field: call.max_tokens,
        }
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        # Serialised here, not by httpx, so the bytes (and a cassette's keys) do not depend on
        # the HTTP library's JSON settings.
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def _attempt(self, model: str, call: Call) -> dict[str, Any]:
        want_json = call.json and self.json_mode is not False
        try:
            resp = self._client.post("chat/completions", content=self._body(model, call, want_json))
        except httpx.TransportError as exc:
            # Sent, and no answer in time: the server may have done (and billed) the work.
            raise self._unreachable(exc, maybe_billed=isinstance(exc, httpx.ReadTimeout)) from None
        status = resp.status_code
        detail = redact(resp.text, self._secret)[:300]
        if (
            status == 400
            and want_json
            and self.json_mode is None
            and "response_format" in resp.text
        ):
            self.json_mode = False  # this server has no JSON mode; ask plainly from now on
            return self._attempt(model, call)
        if (
            status == 400
            and self.limit_field == "max_tokens"
            and "max_completion_tokens" in resp.text
        ):
            # The output bound is still sent, under the name this model wants: the ledger's
            # reservation rests on it.
            self.limit_field = "max_completion_tokens"
            return self._attempt(model, call)
        if status >= 400:
            self._refused(status, detail, resp.headers, model, self._shown)
        try:
            data = resp.json()
        except ValueError:
            raise ProviderRejected(
                f"{self._shown} answered HTTP {status} with a body "
                f"that is not JSON: {detail[:120]!r}",
                provider=NAME,
                model=model,
                status=status,
            ) from None
        if not isinstance(data, dict):
            raise ProviderRejected(
                "the chat-completions answer is not a JSON object",
                provider=NAME,
                model=model,
                status=status,
            )
        return data

    def _answer(self, raw: Any) -> Answer:
        data: dict[str, Any] = raw
        raw_usage = data.get("usage")
        reported = isinstance(raw_usage, dict) and "prompt_tokens" in raw_usage
        usage = Usage()
        if reported:
            assert isinstance(raw_usage, dict)
            details = raw_usage.get("prompt_tokens_details") or {}
            cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
            prompt = _int(raw_usage.get("prompt_tokens"))
            usage = Usage(
                input_tokens=max(prompt - cached, 0),
                output_tokens=_int(raw_usage.get("completion_tokens")),
                cache_read_tokens=min(cached, prompt),
            )
        choices = data.get("choices") or []
        first = choices[0] if isinstance(choices, list) and choices else {}
        first = first if isinstance(first, dict) else {}
        message = json_object(first.get("message"))
        finish = first.get("finish_reason")
        return Answer(
            _text_of(message.get("content")),
            usage,
            str(finish) if finish else None,
            truncated=finish == "length",
            usage_reported=reported,
        )
