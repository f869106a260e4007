"""Pricing: the shipped table, config overrides, exact integer costs, and an estimate that bounds
every cost the same request could incur."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mole_dag.budget import Usage
from mole_dag.core import Unit
from mole_dag.llm.pricing import (
    EXTRA_FIELDS,
    FIELDS,
    PriceTable,
    PricingError,
    UnpricedModel,
    _shipped,
    checked,
)
from mole_dag.llm.registry import DEFAULT_TIERS


def test_shipped_table_is_complete() -> None:
    table = PriceTable.load()
    assert set(_shipped()) == set(table.prices)
    for name, raw in _shipped().items():
        # Every price stated in full: no model's cache price falls back to its input price.
        assert set(FIELDS) <= set(raw) <= set(FIELDS) | set(EXTRA_FIELDS), name
        p = table.prices[name]
        assert p.output >= p.input > 0, name
        assert p.cache_read <= p.input, name
        assert p.as_of, name
        if p.long_prompt is not None:  # the dearer band is dearer in every field
            long = p.long_prompt[1]
            assert (
                long.input >= p.input
                and long.output >= p.output
                and long.cache_read >= p.cache_read
                and long.cache_write >= p.cache_write
            )


def test_every_default_tier_model_is_priced_and_checked() -> None:
    """Issue 12: the defaults named models the table did not know, so a USD session with the
    provider's own defaults was refused as unpriced."""
    table = PriceTable.load()
    for provider, tiers in DEFAULT_TIERS.items():
        for tier, model in tiers.items():
            p = table.get(model)
            assert p is not None, f"{provider} {tier} default {model} has no price"
            # Checked with the table, or (OpenAI's page) reported within the month before it.
            assert p.as_of == checked() or p.as_of.startswith("2026-11"), model
    assert checked() >= "2026-12-02"


def test_a_long_prompt_is_billed_at_its_band() -> None:
    """Claude Haiku 5.5 costs 5x more, output included, when the prompt is over 100K tokens
    (cache reads and writes counted); the estimate of such a call assumes that band."""
    table = PriceTable.load()
    short = Usage(input_tokens=60_000, output_tokens=1_000, cache_read_tokens=40_000)
    assert table.cost("claude-haiku-5-5", short, Unit.USD_MICROS) == 6_000 + 500 + 400
    long = Usage(input_tokens=60_001, output_tokens=1_000, cache_read_tokens=40_000)
    assert table.cost("claude-haiku-5-5", long, Unit.USD_MICROS) == 30_001 + 2_500 + 2_000
    # The bound prices every prompt token at the dearest input kind (the cache write).
    assert table.bound("claude-haiku-5-5", 100_000, 1_000, Unit.USD_MICROS) == 12_500 + 500
    assert table.bound("claude-haiku-5-5", 100_001, 1_000, Unit.USD_MICROS) == 62_501 + 2_500


def test_cost_is_exact_integer_micro_dollars() -> None:
    table = PriceTable.load()
    # claude-3-5-haiku: $0.80 / $4 / $0.08 / $1.00 per million = micro-dollars per token.
    usage = Usage(input_tokens=3, output_tokens=1, cache_read_tokens=7, cache_write_tokens=0)
    exact = 3 * Fraction("0.8") + 4 + 7 * Fraction("0.08")
    assert table.cost("claude-3-5-haiku", usage, Unit.USD_MICROS) == 7 == -(-exact // 1)
    assert isinstance(table.cost("claude-3-5-haiku", usage, Unit.USD_MICROS), int)
    # Float arithmetic would drift; fractions do not: 10 million tokens at $0.075 is $0.75.
    big = Usage(cache_read_tokens=10_000_000)
    assert table.cost("gpt-4o-mini", big, Unit.USD_MICROS) == 750_000


def test_tokens_unit_counts_every_kind_once() -> None:
    usage = Usage(10, 20, 30, 40)
    assert PriceTable.load().cost("anything-unpriced", usage, Unit.TOKENS) == 100


def test_dated_model_names_find_their_price() -> None:
    table = PriceTable.load()
    assert table.get("claude-haiku-4-5-20251001") == table.get("claude-haiku-4-5")
    assert table.get("gpt-4o-2024-08-06") == table.get("gpt-4o")
    # Never a prefix match: these are different models.
    assert table.get("claude-sonnet-4-5-preview") is None
    assert table.get("claude-haiku") is None


def test_unpriced_model_is_refused_in_usd_only() -> None:
    table = PriceTable.load()
    with pytest.raises(UnpricedModel) as exc:
        table.cost("llama3.1:8b", Usage(1, 1), Unit.USD_MICROS)
    assert "llama3.1:8b" in str(exc.value) and "--tokens" in str(exc.value)
    with pytest.raises(UnpricedModel):
        table.bound("llama3.1:8b", 10, 10, Unit.USD_MICROS)
    assert table.bound("llama3.1:8b", 10, 10, Unit.TOKENS) == 20


def test_config_overrides_and_adds_models() -> None:
    table = PriceTable.load(
        {"llama3.1:8b": {"input": 0, "output": 0}, "claude-haiku-4-5": {"input": "2", "output": 10}}
    )
    assert table.cost("llama3.1:8b", Usage(1000, 1000), Unit.USD_MICROS) == 0
    assert table.cost("claude-haiku-4-5", Usage(1, 1), Unit.USD_MICROS) == 12
    # Cache prices default to the input price when not given: never an invented discount.
    p = table.require("claude-haiku-4-5")
    assert p.cache_read == p.cache_write == 2
    assert p.as_of == "config"  # `mole models` tells a config price from a checked one


@pytest.mark.parametrize(
    "bad",
    [
        {"m": {"input": -1, "output": 1}},
        {"m": {"input": "cheap", "output": 1}},
        {"m": {"input": 1}},
        {"m": {"input": 1, "output": 1, "surge": 2}},
        {"m": {"input": True, "output": 1}},
        {"m": {"input": 1, "output": 1, "long_prompt": {"input": 2, "output": 2}}},
        {"m": {"input": 1, "output": 1, "long_prompt": {"above": 0, "input": 2, "output": 2}}},
        {"m": {"input": 1, "output": 1, "as_of": 2026}},
        {"m": "free"},
        ["not", "a", "mapping"],
    ],
)
def test_malformed_override_is_refused(bad: object) -> None:
    with pytest.raises(PricingError):
        PriceTable.load(bad)  # type: ignore[arg-type]


_models = st.sampled_from(sorted(_shipped()))
_n = st.integers(min_value=0, max_value=2_000_000)


@settings(max_examples=300, deadline=None)
@given(_models, _n, _n, _n, _n, st.sampled_from(list(Unit)))
def test_bound_covers_every_split_of_the_same_tokens(
    model: str, a: int, b: int, c: int, out: int, unit: Unit
) -> None:
    """Whatever the provider bills as fresh, cache-read or cache-write input, a call with at most
    the bounded input and at most max_tokens out never costs more than the bound."""
    table = PriceTable.load()
    bound = table.bound(model, a + b + c, out, unit)
    usage = Usage(input_tokens=a, output_tokens=out, cache_read_tokens=b, cache_write_tokens=c)
    assert table.cost(model, usage, unit) <= bound
    # A prompt smaller than its bound never costs more either (a price band cannot invert it).
    smaller = Usage(
        input_tokens=a // 2, output_tokens=out, cache_read_tokens=b // 2, cache_write_tokens=c // 2
    )
    assert table.cost(model, smaller, unit) <= bound
