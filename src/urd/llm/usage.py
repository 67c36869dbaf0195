"""Metering: every call's tokens, model and purpose, its cost, and model leaks."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field

_SNAPSHOT = re.compile(r"-\d{8}$")


def base_model(name: str) -> str:
    """A model name without a dated snapshot suffix (``claude-x-20260101`` → ``claude-x``)."""
    return _SNAPSHOT.sub("", name)


def same_model(pinned: str, answered: str) -> bool:
    """Whether the answering model is the pinned one, or a dated snapshot of that alias."""
    return answered == pinned or base_model(answered) == pinned


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
        )


@dataclass(frozen=True)
class CallRecord:
    """One answered call. ``replayed`` calls came from the cache and spent nothing."""

    purpose: str
    pinned_model: str
    answered_model: str
    usage: Usage
    list_cost_usd: float
    replayed: bool = False
    batched: bool = False  # sent in a Message Batch: list_cost_usd is already the batch price

    @property
    def spent_usd(self) -> float:
        return 0.0 if self.replayed else self.list_cost_usd


@dataclass
class Meter:
    """Everything one run asked: answered calls, refusals and failures."""

    records: list[CallRecord] = field(default_factory=list)
    refused: Counter = field(default_factory=Counter)
    failed: Counter = field(default_factory=Counter)
    truncated: Counter = field(default_factory=Counter)  # replies cut at max_tokens (billed, not parsed)
    retried: Counter = field(default_factory=Counter)  # the SDK's retries (429, 529, 5xx, connection), per purpose
    lost: Counter = field(default_factory=Counter)  # replies billed whose body never arrived, per model

    def add(self, record: CallRecord) -> None:
        self.records.append(record)

    @property
    def spent_usd(self) -> float:
        """Measured spend: fresh calls at list price."""
        return sum(r.spent_usd for r in self.records)

    @property
    def replayed_usd(self) -> float:
        """What the replayed calls cost when they were first made."""
        return sum(r.list_cost_usd for r in self.records if r.replayed)

    def leaks(self) -> list[str]:
        """Every call answered by a model other than the one its purpose was pinned to."""
        seen: list[str] = []
        for r in self.records:
            if not same_model(r.pinned_model, r.answered_model):
                line = f"{r.purpose} was pinned to {r.pinned_model} and answered by {r.answered_model}"
                if line not in seen:
                    seen.append(line)
        return seen

    def summary(self) -> dict:
        """Calls, tokens and cost per (purpose, model, replayed, batched), plus totals."""
        rows: dict[tuple[str, str, bool, bool], dict] = {}
        for r in self.records:
            key = (r.purpose, r.answered_model, r.replayed, r.batched)
            row = rows.setdefault(
                key,
                {
                    "purpose": r.purpose,
                    "model": r.answered_model,
                    "replayed": r.replayed,
                    "batched": r.batched,
                    "calls": 0,
                    **asdict(Usage()),
                    "list_cost_usd": 0.0,
                },
            )
            row["calls"] += 1
            for k, v in asdict(r.usage).items():
                row[k] += v
            row["list_cost_usd"] += r.list_cost_usd
        out = [rows[k] for k in sorted(rows)]
        for row in out:
            row["list_cost_usd"] = round(row["list_cost_usd"], 6)
        return {
            "by_purpose": out,
            "calls": len(self.records),
            "spent_usd": round(self.spent_usd, 6),
            "replayed_usd": round(self.replayed_usd, 6),
            "refused": dict(sorted(self.refused.items())),
            "failed": dict(sorted(self.failed.items())),
            "truncated": dict(sorted(self.truncated.items())),
            # only where the wire misbehaved, so a report of a run without faults keeps its bytes
            **({"retried": dict(sorted(self.retried.items()))} if self.retried else {}),
            **({"lost": dict(sorted(self.lost.items()))} if self.lost else {}),
        }
