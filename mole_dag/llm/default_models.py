"""Each model provider's default model per tier, in one table the providers and the registry
both read (the providers importing it from the registry, which builds them, was a loop)."""

from __future__ import annotations

from mole_dag.llm.provider import Tier

# The two tiers' default models, per provider: a cheap current model for the many calls (mining,
# judging), a strong one for the few (planning, the report). Every one must be in the shipped
# price table (tests/test_pricing.py checks), or a USD session with the defaults is refused.
# Configurable under "<provider>": {"models": {...}}. Checked against the providers' model and
# price pages on 2026-12-02 (sources in mole_dag/data/pricing.toml).
DEFAULT_TIERS: dict[str, dict[Tier, str]] = {
    "anthropic": {Tier.CHEAP: "claude-haiku-5-5", Tier.STRONG: "claude-sonnet-5-5"},
    # The OpenAI-compatible provider also serves local servers, whose model names the config
    # gives; these are for OpenAI's own API.
    "openai": {Tier.CHEAP: "gpt-5.4-mini", Tier.STRONG: "gpt-5.4"},
}
