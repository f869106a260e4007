"""The provider boundary: one call to a language model, and what it actually used.

A call names its tier (cheap or strong), its messages and the `max_tokens` it will send; the
answer is the text and the usage the provider reported, cache tokens included. Pricing, prompts
and parsing live above this line; HTTP, SDKs and retries below it. Everything a provider can
fail with is a `ModelCallFailed`, so stages can tell "the model call failed" from a bug."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Protocol

from mole_dag import redaction
from mole_dag.budget import PaidCallFailed, Usage


class Tier(StrEnum):
    """Cheap for the many per-chunk and per-batch calls (mining, adjudication); strong for the
    few that shape the session (planning, synthesis). One model for both either overpays on the
    many calls or underperforms on the few."""

    CHEAP = "cheap"
    STRONG = "strong"


@dataclass(frozen=True)
class Message:
    role: str  # "user" | "assistant"
    content: str


@dataclass(frozen=True)
class Call:
    tier: Tier
    messages: tuple[Message, ...]
    max_tokens: int
    system: str = ""
    # Ask for a JSON object where the provider has a switch for it. The answer is parsed
    # defensively either way: a JSON mode is a request to the server, not a guarantee.
    json: bool = False
    # What the call is for (plan, mine, judge, write): for messages and logs only.
    purpose: str = ""
    # A model for this call instead of its tier's (a configured judge model). None: the tier's.
    model: str | None = None

    def __post_init__(self) -> None:
        if self.max_tokens <= 0:
            raise ValueError(f"max_tokens must be positive, got {self.max_tokens}")
        if not self.messages:
            raise ValueError("a call needs at least one message")


@dataclass(frozen=True)
class Completion:
    text: str
    usage: Usage
    model: str  # the model the call was priced for (the tier's configured model)
    truncated: bool = False  # stopped at max_tokens
    # False when the server did not report usage; the caller then charges the whole
    # reservation rather than guessing low.
    usage_reported: bool = True


class Provider(Protocol):
    name: str

    def model_for(self, tier: Tier) -> str: ...

    def input_token_bound(self, call: Call) -> int: ...

    def complete(self, call: Call) -> Completion: ...


# -- the input-token bound --------------------------------------------------------------------

# Tokens a chat template may add around the text: role markers, turn separators, a default
# system preamble some local servers insert. A guess, flagged as one, set generously; if it is
# ever too small the ledger records the overrun and flags the session, it does not hide it.
TEMPLATE_TOKENS_PER_MESSAGE = 16
TEMPLATE_TOKENS_BASE = 256


def utf8_token_bound(call: Call) -> int:
    """An input-token count no real tokenizer can exceed for this call's text.

    Every byte-level BPE (Claude's, OpenAI's, Llama's with byte fallback) emits tokens that each
    cover at least one UTF-8 byte of the text, so a text of n bytes is at most n tokens; a
    tokenizer without byte fallback emits at most one token per character, which is fewer.
    The template allowance covers what the server wraps around the text. Pessimistic (English
    runs about four bytes a token) on purpose: the estimate only has to be an upper bound, and
    the unused part of the hold is returned at settle."""
    text_bytes = len(call.system.encode("utf-8")) + sum(
        len(m.content.encode("utf-8")) for m in call.messages
    )
    n_messages = len(call.messages) + (1 if call.system else 0)
    return text_bytes + TEMPLATE_TOKENS_PER_MESSAGE * n_messages + TEMPLATE_TOKENS_BASE


# -- errors -----------------------------------------------------------------------------------


class ModelCallFailed(RuntimeError):
    """A model call that produced no usable answer. The reservation is released, unless the
    provider charged for it (see EmptyOutput), in which case it is settled at what it cost."""

    def __init__(self, message: str, *, provider: str = "", model: str = "") -> None:
        self.provider, self.model = provider, model
        super().__init__(message)


class ProviderUnavailable(Exception):
    """Retryable failures (429, 529, 5xx, timeouts, refused connections) that outlasted the
    bounded retries, or a server that asked to wait longer than we are willing to.

    Not a ModelCallFailed, on purpose (issue 29): a stage goes on without a call that failed
    on its own account (an empty answer, a refused request), but not without its provider. A
    session that went on reported "done" with most of its work released unasked and nothing
    left to resume. This one stops the stage, and the session is left `interrupted` with the
    unanswered work pending, for `mole resume` once the provider answers again. `since`: when
    the failing call was first refused (UTC)."""

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        model: str = "",
        status: int | None = None,
        attempts: int = 0,
        since: datetime | None = None,
    ) -> None:
        self.provider, self.model = provider, model
        self.status, self.attempts = status, attempts
        self.since = since or datetime.now(UTC)
        super().__init__(message)


class CallNotRetried(ModelCallFailed):
    """A call whose attempt failed after its pass was interrupted: not tried again (see
    mole_dag.llm.retry), and not a judgement on the provider."""


class ProviderRejected(ModelCallFailed):
    """A 4xx the server will not change its mind about (bad key, unknown model, bad request).
    Not retried: asking again costs time and gives the same answer."""

    def __init__(
        self, message: str, *, provider: str = "", model: str = "", status: int | None = None
    ) -> None:
        self.status = status
        super().__init__(message, provider=provider, model=model)


class EmptyOutput(ModelCallFailed, PaidCallFailed):
    """The model answered with no text: typically a reasoning model that spent its whole output
    allowance thinking. A named error, not a JSON parse failure, and a paid one: the tokens were
    used, so the ledger settles the call at its price instead of releasing it."""

    def __init__(
        self,
        *,
        provider: str,
        model: str,
        usage: Usage,
        stop_reason: str | None,
        usage_reported: bool = True,
    ) -> None:
        self.stop_reason = stop_reason
        self.usage_reported = usage_reported
        PaidCallFailed.__init__(self, usage=usage)
        ModelCallFailed.__init__(
            self,
            f"{provider} model {model} returned no text (stop reason {stop_reason or 'none'}, "
            f"{usage.output_tokens} output tokens): a reasoning model may have spent its "
            "max_tokens thinking; raise the tier's max_tokens or use a non-reasoning model",
            provider=provider,
            model=model,
        )


def redact(text: str, *secrets: str | None) -> str:
    """Remove secrets from text that may reach a log or an exception (a server that echoes the
    request back in an error body would otherwise put the key in our logs): `secrets`, every
    secret the process knows of and the shapes of credentials (mole_dag.redaction)."""
    return redaction.redact(text, secrets)


def mask_output(text: str, *secrets: str | None) -> str:
    """A model's answer with the known secrets masked (a server that echoes the key in its
    answer must not put it into the store). Only exact known values: the answer quotes pages,
    and a quote must stay byte for byte what the page says."""
    for value in [*secrets, *redaction.known_secrets()]:
        if value and len(value) >= 4 and value in text:
            text = text.replace(value, redaction.MASK)
    return text
