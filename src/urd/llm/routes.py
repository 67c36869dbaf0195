"""Which model answers each purpose: one model for all, with per-purpose pins."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..core.errors import InputError


@dataclass(frozen=True)
class Routes:
    """The model under test and the model each purpose is pinned to."""

    model: str
    by_purpose: Mapping[str, str]

    @classmethod
    def build(
        cls,
        model: str,
        purposes: Iterable[str],
        pins: Mapping[str, str] | None = None,
        *,
        source: str = "agentmem.llm.pins",
    ) -> Routes:
        purposes = tuple(purposes)
        pins = dict(pins or {})
        unknown = sorted(set(pins) - set(purposes))
        if unknown:
            raise InputError(source, ", ".join(unknown), f"one of the purposes {list(purposes)}")
        for purpose, pinned in pins.items():
            if not isinstance(pinned, str) or not pinned.strip():
                raise InputError(source, purpose, "a model name", pinned)
        if not model or not model.strip():
            raise InputError(source, "model", "a model name", model)
        return cls(model=model, by_purpose={p: pins.get(p, model) for p in purposes})

    def model_for(self, purpose: str) -> str:
        try:
            return self.by_purpose[purpose]
        except KeyError:
            raise InputError("llm routes", purpose, f"a known purpose {sorted(self.by_purpose)}") from None

    @property
    def mixed(self) -> bool:
        """Whether any purpose runs on a model other than the one under test."""
        return any(m != self.model for m in self.by_purpose.values())

    def as_dict(self) -> dict[str, str]:
        return dict(sorted(self.by_purpose.items()))
