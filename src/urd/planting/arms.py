"""Context strategies as sets of features, and what each shows a character at the decision.

An arm is a context strategy with the features it declares, from config (``planting.arms``).
A built-in arm is a set of feature values: ``history`` (``verbatim``: every stored event;
``layered``: the current term verbatim, one model-written summary of the middle stretch, and the
distant past only in the kept categories) and ``promise_table`` (the store's due promises as a
table of their own). A plug-in arm names ``strategy: module:Class``, a :class:`ContextStrategy`
subclass that declares its ``features`` and builds the sections from the store. A factor is
credited only between two arms that differ in exactly that feature (`credit_pairs`), built-in
or plug-in alike.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from itertools import combinations

from ..core.errors import InputError
from ..core.rng import Stream
from .store import Store

FEATURES = {"history": ("verbatim", "layered"), "promise_table": (False, True)}
# A feature a built-in arm may add: `keep: seeded`, a layered arm whose distant past keeps
# categories drawn by the world's seed instead of the configured ones (the sensitivity of the
# layered arm to a kept set chosen without knowledge of the plants: `Layout.for_seed`).
OPTIONAL_FEATURES = {"keep": ("seeded",)}
Summarizer = Callable[[str, int, int], str]  # (event lines, first term, last term) -> summary


@dataclass(frozen=True)
class DecisionView:
    """What a strategy reads to build one decision's context: the store (events by world,
    character, term and category; due promises), the decision term, the layered layout of the
    config, ``summarize`` (the suite's summary call, cached per character and world) and ``llm``
    (urd's LLM layer, for a strategy's own calls: metered, cached, under the run's ceiling)."""

    store: Store
    world: str
    character: str
    decision_term: int
    layout: Layout
    summarize: Summarizer
    llm: object = None


class ContextStrategy:
    """Subclass: declare ``features`` (feature name -> value; the built-ins' are ``history`` and
    ``promise_table``) and implement ``sections(view)`` -> [(fence label, text), ...]."""

    features: Mapping[str, object] = {}

    def sections(self, view: DecisionView) -> list[tuple[str, str]]:
        raise NotImplementedError


class FeatureStrategy(ContextStrategy):
    """A built-in arm: the sections its ``history`` and ``promise_table`` features call for."""

    def __init__(self, features: Mapping[str, object]) -> None:
        self.features = dict(features)

    def sections(self, view: DecisionView) -> list[tuple[str, str]]:
        return feature_sections(self.features, view)


@dataclass(frozen=True)
class Arm:
    name: str
    features: Mapping[str, object]
    strategy: ContextStrategy = field(compare=False, repr=False, default=None)
    source: str = "built-in"  # or the plug-in's 'module:Class'

    @property
    def layered(self) -> bool:
        return self.features.get("history") == "layered"

    @property
    def seeded_keep(self) -> bool:
        return self.features.get("keep") == "seeded"

    def sections(self, view: DecisionView) -> list[tuple[str, str]]:
        return (self.strategy or FeatureStrategy(self.features)).sections(view)


def arms_from(planting: Mapping, source: str = "agentmem.planting.arms") -> list[Arm]:
    out = []
    for name, feats in planting["arms"].items():
        if "strategy" in feats:
            out.append(_plugin_arm(name, feats["strategy"], source))
            continue
        for key, allowed in FEATURES.items():
            if feats.get(key) not in allowed:
                raise InputError(source, f"{name}.{key}", f"one of {list(allowed)}", feats.get(key))
        for key in sorted(set(feats) - set(FEATURES)):
            if key not in OPTIONAL_FEATURES:
                raise InputError(source, f"{name}.{key}", f"a feature of {sorted({*FEATURES, *OPTIONAL_FEATURES})}",
                                 "an unknown feature")
            if feats[key] not in OPTIONAL_FEATURES[key]:
                raise InputError(source, f"{name}.{key}", f"one of {list(OPTIONAL_FEATURES[key])}", feats[key])
        if feats.get("keep") is not None and feats["history"] != "layered":
            raise InputError(source, f"{name}.keep", "an arm whose history is layered (only it keeps categories)",
                             feats["history"])
        twin = next((a for a in out if a.source == "built-in" and dict(a.features) == dict(feats)), None)
        if twin is not None:  # the same context twice: a credit between them could only be noise
            raise InputError(source, name, f"features no other built-in arm declares ({twin.name} declares the same)",
                             dict(feats))
        out.append(Arm(name, dict(feats), FeatureStrategy(feats)))
    return out


def _plugin_arm(name: str, spec: str, source: str) -> Arm:
    where = f"{name}.strategy"
    module_name, sep, attr = str(spec).partition(":")
    if not sep or not module_name or not attr:
        raise InputError(source, where, "'module:Class'", spec)
    try:
        cls = getattr(importlib.import_module(module_name), attr, None)
    except ImportError as exc:
        raise InputError(source, where, "'module:Class' naming a module Python can import (on PYTHONPATH, or an installed package)", f"{spec} ({exc})") from None
    if not (isinstance(cls, type) and issubclass(cls, ContextStrategy)):
        raise InputError(source, where, "a subclass of urd.planting.arms.ContextStrategy", spec)
    if cls.sections is ContextStrategy.sections:
        raise InputError(source, where, "a strategy implementing sections(view)", f"{spec} lacks sections")
    feats = getattr(cls, "features", None)
    if not isinstance(feats, Mapping) or not feats or not all(
            isinstance(k, str) and isinstance(v, (str, bool, int)) for k, v in feats.items()):
        raise InputError(source, where, "a class declaring features: a non-empty {name: str, bool or int}", spec)
    return Arm(name, dict(feats), cls(), spec)


def credit_pairs(arms: list[Arm]) -> tuple[list[tuple[Arm, Arm, str]], list[tuple[Arm, Arm, list[str]]]]:
    """(pairs that differ in exactly one feature, with it; pairs that differ in more, or in none,
    with the features they differ in). A feature one arm does not declare differs."""
    single, multi = [], []
    for a, b in combinations(arms, 2):
        keys = sorted(set(a.features) | set(b.features))
        differ = [k for k in keys if a.features.get(k, _ABSENT) != b.features.get(k, _ABSENT)]
        if len(differ) == 1:
            single.append((a, b, differ[0]))
        else:
            multi.append((a, b, differ))
    return single, multi


_ABSENT = object()


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

    def for_seed(self, seed: int, categories) -> Layout:
        """The same cut with as many kept categories drawn from `categories` by the world's seed
        alone: one set for every variant and character of a seed (so a twin stays a twin), chosen
        without looking at where the plants are."""
        drawn = Stream("planting", "seeded-keep", seed).sample(sorted(categories), len(self.keep_categories))
        return replace(self, keep_categories=tuple(sorted(drawn)))


def feature_sections(features: Mapping[str, object], view: DecisionView) -> list[tuple[str, str]]:
    """The (fence label, text) sections a built-in arm shows, read from the store."""
    store, world, character, layout, summarize = view.store, view.world, view.character, view.layout, view.summarize
    decision_term = view.decision_term
    terms = list(range(1, decision_term))
    out: list[tuple[str, str]] = []
    if features["history"] == "layered":
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
    if features["promise_table"]:
        due = store.due_promises(world, character, decision_term)
        out.append(("due_promises", "\n".join(p.line(decision_term) for p in due) or "none"))
    return out


def _lines(events) -> str:
    return "\n".join(e.line() for e in events) or "none"
