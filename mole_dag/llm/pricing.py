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
# Not prices: when the price was last checked, and the dearer band of a model priced by prompt
# length (Claude Haiku 5.5).
EXTRA_FIELDS = ("as_of", "long_prompt")
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
    # The date the price was checked (the table's `checked`, a model's own `as_of`, or
    # "config" for a price from the config file).
    as_of: str = ""
    # (above, price): a call whose prompt is over `above` tokens is billed at `price`, every
    # token of it.
    long_prompt: tuple[int, Price] | None = None

    @property
    def max_input(self) -> Fraction:
        """The dearest way an input token can be billed: a bound has to assume it."""
        return max(self.input, self.cache_read, self.cache_write)

    def band(self, prompt_tokens: int) -> Price:
        """The price a call with this many prompt tokens (fresh, cache-read and cache-write
        together) is billed at."""
        if self.long_prompt is not None and prompt_tokens > self.long_prompt[0]:
            return self.long_prompt[1]
        return self


def _fraction(model: str, field: str, value: Any) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise PricingError(f"price {field} of {model!r} must be a number, got {value!r}")
    try:
        d = Decimal(str(value).strip())
    except InvalidOperation:
        raise PricingError(f"price {field} of {model!r} must be a number, got {value!r}") from None
    if not d.is_finite() or d < 0:
        raise PricingError(
            f"price {field} of {model!r} must be a non-negative number, got {value!r}"
        )
    return Fraction(d)


def _price(model: str, raw: Any, as_of: str = "") -> Price:
    if not isinstance(raw, Mapping):
        raise PricingError(f"the price of {model!r} must be an object with {', '.join(FIELDS)}")
    unknown = set(raw) - set(FIELDS) - set(EXTRA_FIELDS)
    if unknown:
        raise PricingError(
            f"price of {model!r} has unknown fields {sorted(unknown)}; expected {', '.join(FIELDS)}"
        )
    if "input" not in raw or "output" not in raw:
        raise PricingError(f"price of {model!r} needs at least input and output")
    stated = raw.get("as_of", as_of)
    if not isinstance(stated, str):
        raise PricingError(f"as_of of {model!r} must be a date written as a string")
    long_prompt = None
    if "long_prompt" in raw:
        band = raw["long_prompt"]
        above = band.get("above") if isinstance(band, Mapping) else None
        if isinstance(above, bool) or not isinstance(above, int) or above <= 0:
            raise PricingError(
                f"long_prompt of {model!r} needs a positive whole `above` "
                "(prompt tokens) and the band's prices"
            )
        long_prompt = (
            above,
            _price(model, {k: v for k, v in band.items() if k != "above"}, stated),
        )
    inp = _fraction(model, "input", raw["input"])
    # Without a stated cache price, cache tokens are priced as input: a bound that may
    # overstate, never understate, a cache discount.
    return Price(
        input=inp,
        output=_fraction(model, "output", raw["output"]),
        cache_read=_fraction(model, "cache_read", raw.get("cache_read", raw["input"])),
        cache_write=_fraction(model, "cache_write", raw.get("cache_write", raw["input"])),
        as_of=stated,
        long_prompt=long_prompt,
    )


@lru_cache(maxsize=1)
def _shipped_file() -> dict[str, Any]:
    raw = resources.files("mole_dag.data").joinpath("pricing.toml").read_text("utf-8")
    return tomllib.loads(raw)


def _shipped() -> dict[str, Any]:
    return dict(_shipped_file().get("models", {}))


def checked() -> str:
    """The date the shipped table was last checked against the providers' price pages."""
    return str(_shipped_file().get("checked", ""))


class PriceTable:
    def __init__(self, prices: Mapping[str, Price]) -> None:
        self.prices = dict(prices)

    @classmethod
    def load(cls, overrides: Mapping[str, Any] | None = None) -> PriceTable:
        """The shipped table with the config's `pricing` entries laid over it."""
        if overrides is not None and not isinstance(overrides, Mapping):
            raise PricingError('"pricing" in the config must be an object keyed by model name')
        shipped = {name: _price(name, raw, checked()) for name, raw in _shipped().items()}
        mine = {name: _price(name, raw, "config") for name, raw in dict(overrides or {}).items()}
        return cls({**shipped, **mine})

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
            return (
                usage.input_tokens
                + usage.output_tokens
                + usage.cache_read_tokens
                + usage.cache_write_tokens
            )
        p = self.require(model).band(
            usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        )
        total = (
            usage.input_tokens * p.input
            + usage.output_tokens * p.output
            + usage.cache_read_tokens * p.cache_read
            + usage.cache_write_tokens * p.cache_write
        )
        return math.ceil(total)

    def bound(self, model: str, input_tokens: int, max_tokens: int, unit: Unit) -> int:
        """The most a call can cost with at most `input_tokens` of prompt, however the provider
        splits them between fresh, cache-read and cache-write, and at most `max_tokens` out."""
        if unit == Unit.TOKENS:
            return input_tokens + max_tokens
        # The band of the largest prompt the call may send: a smaller one is never dearer.
        p = self.require(model).band(input_tokens)
        return math.ceil(input_tokens * p.max_input + max_tokens * p.output)
