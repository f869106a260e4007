"""What a model call costs, in the session's unit, exactly.

Prices are a data file (mole_dag/data/pricing.toml) merged with the config's `pricing` section.
A dollar per million tokens is a micro-dollar per token, so a USD cost is the integer ceiling of
sum(tokens x price) computed in exact fractions: no float ever reaches the ledger. In a tokens
session a call costs the tokens it used, every kind counted once.

The estimate is priced from the same table, so the only way actual can exceed estimate is the
token bound being wrong, which the ledger records as an overrun instead of hiding."""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import lru_cache
from importlib import resources
from typing import Any

from mole_dag.budget import Usage
from mole_dag.core import Unit

FIELDS = ("input", "output", "cache_read", "cache_write")
_DATE_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")


class PricingError(ValueError):
    """A malformed price (in the data file or the config)."""


class UnpricedModel(LookupError):
    """A USD session asked for a model nobody priced. Raised before the call, never after."""

    def __init__(self, model: str) -> None:
        self.model = model
        super().__init__(
            f"model {model!r} has no price, so a USD budget cannot be enforced for it; add it "
            'to ~/.config/mole/config.json as "pricing": {"' + model + '": {"input": ..., '
            '"output": ..., "cache_read": ..., "cache_write": ...}} (USD per million tokens), '
            "or budget in --tokens"
        )


@dataclass(frozen=True)
class Price:
    """USD per million tokens, kept as exact fractions."""

    input: Fraction
    output: Fraction
    cache_read: Fraction
    cache_write: Fraction

    @property
    def max_input(self) -> Fraction:
        """The dearest way an input token can be billed: a bound has to assume it."""
        return max(self.input, self.cache_read, self.cache_write)


def _fraction(model: str, field: str, value: Any) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise PricingError(f"price {field} of {model!r} must be a number, got {value!r}")
    try:
        d = Decimal(str(value).strip())
    except InvalidOperation:
        raise PricingError(f"price {field} of {model!r} must be a number, got {value!r}") from None
    if not d.is_finite() or d < 0:
        raise PricingError(f"price {field} of {model!r} must be a non-negative number, "
                           f"got {value!r}")
    return Fraction(d)


def _price(model: str, raw: Any) -> Price:
    if not isinstance(raw, Mapping):
        raise PricingError(f"the price of {model!r} must be an object with {', '.join(FIELDS)}")
    unknown = set(raw) - set(FIELDS)
    if unknown:
        raise PricingError(f"price of {model!r} has unknown fields {sorted(unknown)}; "
                           f"expected {', '.join(FIELDS)}")
    if "input" not in raw or "output" not in raw:
        raise PricingError(f"price of {model!r} needs at least input and output")
    inp = _fraction(model, "input", raw["input"])
    # Without a stated cache price, cache tokens are priced as input: a bound that may
    # overstate, never understate, a cache discount.
    return Price(
        input=inp,
        output=_fraction(model, "output", raw["output"]),
        cache_read=_fraction(model, "cache_read", raw.get("cache_read", raw["input"])),
        cache_write=_fraction(model, "cache_write", raw.get("cache_write", raw["input"])),
    )


@lru_cache(maxsize=1)
def _shipped() -> dict[str, Any]:
    raw = resources.files("mole_dag.data").joinpath("pricing.toml").read_text("utf-8")
    return dict(tomllib.loads(raw).get("models", {}))


class PriceTable:
    def __init__(self, prices: Mapping[str, Price]) -> None:
        self.prices = dict(prices)

    @classmethod
    def load(cls, overrides: Mapping[str, Any] | None = None) -> PriceTable:
        """The shipped table with the config's `pricing` entries laid over it."""
        if overrides is not None and not isinstance(overrides, Mapping):
            raise PricingError('"pricing" in the config must be an object keyed by model name')
        merged = {**_shipped(), **dict(overrides or {})}
        return cls({name: _price(name, raw) for name, raw in merged.items()})

    def get(self, model: str) -> Price | None:
        if model in self.prices:
            return self.prices[model]
        undated = _DATE_SUFFIX.sub("", model)
        return self.prices.get(undated)

    def require(self, model: str) -> Price:
        p = self.get(model)
        if p is None:
            raise UnpricedModel(model)
        return p

    def cost(self, model: str, usage: Usage, unit: Unit) -> int:
        """What a call with this usage costs, in the unit (rounded up to a whole micro-dollar)."""
        if unit == Unit.TOKENS:
            return (usage.input_tokens + usage.output_tokens + usage.cache_read_tokens
                    + usage.cache_write_tokens)
        p = self.require(model)
        total = (usage.input_tokens * p.input + usage.output_tokens * p.output
                 + usage.cache_read_tokens * p.cache_read
                 + usage.cache_write_tokens * p.cache_write)
        return math.ceil(total)

    def bound(self, model: str, input_tokens: int, max_tokens: int, unit: Unit) -> int:
        """The most a call can cost with at most `input_tokens` of prompt, however the provider
        splits them between fresh, cache-read and cache-write, and at most `max_tokens` out."""
        if unit == Unit.TOKENS:
            return input_tokens + max_tokens
        p = self.require(model)
        return math.ceil(input_tokens * p.max_input + max_tokens * p.output)
