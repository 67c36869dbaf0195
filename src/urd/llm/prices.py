"""List prices per model, and the cost of metered usage."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..core.errors import InputError
from .scripted import SCRIPTED_MODEL
from .usage import Usage, base_model


@dataclass(frozen=True)
class Price:
    """US$ per million tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float

    def worst_case(self, input_tokens: int, max_tokens: int) -> float:
        """The most a call can cost: every input token at the dearer of the input and cache-write
        rates, and the whole output budget."""
        return (input_tokens * max(self.input, self.cache_write) + max_tokens * self.output) / 1_000_000

    def cost(self, usage: Usage) -> float:
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_write_tokens * self.cache_write
            + usage.cache_read_tokens * self.cache_read
        ) / 1_000_000


FREE = Price(0.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True)
class PriceBook:
    """Prices per model with the date they were checked. The scripted arm is free."""

    prices: Mapping[str, Price]
    checked: str
    source: str = ""
    origin: str = "agentmem.prices"

    @classmethod
    def from_settings(cls, prices: Mapping, origin: str = "agentmem.prices") -> PriceBook:
        table = {}
        for model, p in (prices.get("usd_per_mtok") or {}).items():
            try:
                table[model] = Price(
                    float(p["input"]), float(p["output"]), float(p["cache_write"]), float(p["cache_read"])
                )
            except (KeyError, TypeError, ValueError):
                raise InputError(
                    origin, f"usd_per_mtok.{model}", "input, output, cache_write, cache_read in US$", p
                ) from None
        return cls(table, str(prices.get("checked", "")), str(prices.get("source", "")), origin)

    def has(self, model: str) -> bool:
        return model == SCRIPTED_MODEL or base_model(model) in self.prices

    def price(self, model: str) -> Price:
        if model == SCRIPTED_MODEL:
            return FREE
        try:
            return self.prices[base_model(model)]
        except KeyError:
            raise InputError(
                self.origin, f"usd_per_mtok.{base_model(model)}", "a list price for this model"
            ) from None

    def cost(self, model: str, usage: Usage) -> float:
        return self.price(model).cost(usage)

    def as_dict(self) -> dict:
        return {
            "checked": self.checked,
            "source": self.source,
            "usd_per_mtok": {
                m: {"input": p.input, "output": p.output, "cache_write": p.cache_write, "cache_read": p.cache_read}
                for m, p in sorted(self.prices.items())
            },
        }
