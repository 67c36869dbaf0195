"""Context strategies as sets of features, and what each shows a character at the decision.

An arm is a set of feature values read from config (``planting.arms``): ``history``
(``verbatim``: every stored event; ``layered``: the current term verbatim, one model-written
summary of the middle stretch, and the distant past only in the kept categories) and
``promise_table`` (the store's due promises as a table of their own). A factor is credited
only between two arms that differ in exactly that feature (`credit_pairs`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import combinations

from ..core.errors import InputError
from .store import Store

FEATURES = {"history": ("verbatim", "layered"), "promise_table": (False, True)}


@dataclass(frozen=True)
class Arm:
    name: str
    features: Mapping[str, object]

    @property
    def layered(self) -> bool:
        return self.features["history"] == "layered"


def arms_from(planting: Mapping, source: str = "agentmem.planting.arms") -> list[Arm]:
    out = []
    for name, feats in planting["arms"].items():
        for key, allowed in FEATURES.items():
            if feats.get(key) not in allowed:
                raise InputError(source, f"{name}.{key}", f"one of {list(allowed)}", feats.get(key))
        out.append(Arm(name, dict(feats)))
    return out


def credit_pairs(arms: list[Arm]) -> tuple[list[tuple[Arm, Arm, str]], list[tuple[Arm, Arm, list[str]]]]:
    """(pairs that differ in exactly one feature, with it; pairs that differ in more, with them)."""
    single, multi = [], []
    for a, b in combinations(arms, 2):
        differ = sorted(k for k in FEATURES if a.features[k] != b.features[k])
        if len(differ) == 1:
            single.append((a, b, differ[0]))
        elif differ:
            multi.append((a, b, differ))
    return single, multi


@dataclass(frozen=True)
class Layout:
    """Where the layered arm cuts the past: terms before `summary_from` are the distant past,
    `summary_from`..`current_from - 1` the middle stretch, the rest the current term(s)."""

    summary_from: int
    current_from: int
    keep_categories: tuple[str, ...]
    summary_words: int

    @classmethod
    def from_settings(cls, planting: Mapping, terms: int) -> Layout:
        lay = planting["layered"]
        current_from = terms - lay["current_terms"] + 1
        if not 1 < lay["summary_from"] < current_from:
            raise InputError("agentmem.planting.layered", "summary_from",
                             f"a term after 1 and before the current stretch (term {current_from})", lay["summary_from"])
        return cls(lay["summary_from"], current_from, tuple(lay["keep_categories"]), lay["summary_words"])


Summarizer = Callable[[str, int, int], str]  # (event lines, first term, last term) -> summary


def sections(arm: Arm, store: Store, world: str, character: str, *, decision_term: int, layout: Layout,
             summarize: Summarizer) -> list[tuple[str, str]]:
    """The (fence label, text) sections the arm shows, read from the store."""
    terms = list(range(1, decision_term))
    out: list[tuple[str, str]] = []
    if arm.layered:
        distant = [t for t in terms if t < layout.summary_from]
        middle = [t for t in terms if layout.summary_from <= t < layout.current_from]
        current = [t for t in terms if t >= layout.current_from]
        kept = store.events(world, character, distant, layout.keep_categories)
        out.append(("distant_past", _lines(kept)))
        middle_lines = _lines(store.events(world, character, middle))
        out.append(("middle_summary", summarize(middle_lines, middle[0], middle[-1])))
        out.append(("current_term", _lines(store.events(world, character, current))))
    else:
        out.append(("events", _lines(store.events(world, character, terms))))
    if arm.features["promise_table"]:
        due = store.due_promises(world, character, decision_term)
        out.append(("due_promises", "\n".join(p.line(decision_term) for p in due) or "none"))
    return out


def _lines(events) -> str:
    return "\n".join(e.line() for e in events) or "none"
