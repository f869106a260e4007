"""What the two model providers (Anthropic's SDK, an OpenAI-compatible endpoint) do alike.

Each provider makes one attempt its own way and reads its own answer; everything around that is
written once here: the tier models and the key kept out of sight, the byte bound on input
tokens, a refused request sorted into retryable or final, a transport failure turned into a
retryable one (saying whether the server may have billed it), the shared retry policy, and the
answer checked for text and masked for known secrets before it leaves."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from mole_dag import redaction
from mole_dag.budget import Usage
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


@dataclass(frozen=True)
class Answer:
    """One answered attempt, as its provider read it."""

    text: str
    usage: Usage
    stop_reason: str | None
    truncated: bool  # stopped at max_tokens
    usage_reported: bool = True


class ProviderBase(ABC):
    name: str
    # The environment variable a refused key points the user to (401 or 403).
    key_variable: str

    def __init__(
        self,
        *,
        api_key: str | None,
        models: Mapping[Tier, str] | None,
        default_models: Mapping[Tier, str],
        policy: RetryPolicy = DEFAULT_POLICY,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.models = {**default_models, **dict(models or {})}
        self.policy, self.sleep = policy, sleep
        self._secret = api_key
        redaction.remember(api_key)

    def model_for(self, tier: Tier) -> str:
        return self.models[tier]

    def input_token_bound(self, call: Call) -> int:
        # A provider's own token counter is a network call (free, but neither local nor
        # offline) or absent, so the byte bound is used: provably above the real count.
        return utf8_token_bound(call)

    @abstractmethod
    def _attempt(self, model: str, call: Call) -> Any:
        """Send the call once; raise Retryable for what may be asked again."""

    @abstractmethod
    def _answer(self, raw: Any) -> Answer:
        """Read what an attempt returned."""

    def _refused(
        self, status: int, detail: str, headers: Mapping[str, str], model: str, who: str
    ) -> NoReturn:
        """An HTTP error answer: Retryable when asking again may help (429, 529, 5xx), else
        ProviderRejected naming `who` refused it. `detail` is already redacted."""
        if retryable_status(status):
            raise Retryable(
                f"HTTP {status}: {detail}",
                status=status,
                retry_after=retry_after_seconds(headers),
            ) from None
        hint = (
            f" (check {self.key_variable} or the key in the config file)"
            if status in (401, 403)
            else ""
        )
        raise ProviderRejected(
            f"{who} refused the call (HTTP {status}){hint}: {detail}",
            provider=self.name,
            model=model,
            status=status,
        ) from None

    def _unreachable(self, exc: BaseException, *, maybe_billed: bool) -> Retryable:
        """A transport failure, redacted. `maybe_billed`: the request was sent and no answer
        came in time, so the server may have done (and billed) the work."""
        return Retryable(
            f"{type(exc).__name__}: {redact(str(exc), self._secret)}", maybe_billed=maybe_billed
        )

    def complete(self, call: Call) -> Completion:
        model = call.model or self.model_for(call.tier)
        raw = with_retries(
            lambda: self._attempt(model, call),
            policy=self.policy,
            sleep=self.sleep,
            provider=self.name,
            model=model,
        )
        got = self._answer(raw)
        if not got.text.strip():
            raise EmptyOutput(
                provider=self.name,
                model=model,
                usage=got.usage,
                stop_reason=got.stop_reason,
                usage_reported=got.usage_reported,
            )
        return Completion(
            text=mask_output(got.text, self._secret),
            usage=got.usage,
            model=model,
            truncated=got.truncated,
            usage_reported=got.usage_reported,
        )
