"""Systems by name: the built-ins, plus plug-ins named in config as 'module:Class'.

Resolution happens when the workflow is parsed, so a misspelt or malformed system fails with a
clear error before any model is loaded.
"""

from __future__ import annotations

import importlib

from ..core.errors import InputError
from .base import MemorySystem

BUILTIN = {
    "vanilla": "urd.systems.vanilla:Vanilla",
    "gzip_tail": "urd.systems.gzip_tail:GzipTail",
    "retrieval": "urd.systems.retrieval:Retrieval",
    "summary": "urd.systems.summary:Summary",
    "state_carry": "urd.systems.state_carry:StateCarry",
    "replay_tune": "urd.systems.replay:ReplayTune",
    "replay_banc": "urd.systems.replay:ReplayBanc",
    "symbolic": "urd.systems.symbolic:Symbolic",  # rung 2's reference system (scores by arithmetic)
}

RESERVED = {"control"}  # the in-session control's results directory


#: class attributes the dry run prices a system by (urd.systems.base.MemorySystem)
PRICING_FLAGS = ("consolidates_from_text", "answers_with_model", "fiche_depends_on_budget", "fiche_depends_on_cap")

def _table(plugins: dict | None, source: str = "config") -> dict[str, str]:
    """Built-ins and plug-ins by name. A plug-in may not take a built-in's name: results,
    fiches and tables say 'vanilla' only of urd's vanilla."""
    clash = sorted(set(BUILTIN) & set(plugins or {}))
    if clash:
        raise InputError(source, f"plugins.{clash[0]}", "a name no built-in system has", clash[0])
    return {**BUILTIN, **(plugins or {})}


def system_module(name: str, plugins: dict | None = None) -> str:
    """The module that defines system ``name`` (its code digest's entry), without importing it."""
    target = _table(plugins).get(name)
    if target is None:
        raise InputError("config", "systems", "a known system or a plugins entry", name)
    return target.partition(":")[0]


def resolve(name: str, plugins: dict | None = None, source: str = "config") -> type:
    table = _table(plugins, source)
    if name in RESERVED:
        raise InputError(source, f"systems.{name}", "a system name other than the reserved 'control'")
    if name not in table:
        raise InputError(source, "systems", f"a known system (one of: {', '.join(sorted(table))}) or a plugins entry", name)
    target = table[name]
    module_name, _, attr = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise InputError(source, f"plugins.{name}", "'module:Class' naming a class Python can import (its module on PYTHONPATH, or an installed package)", f"{target} ({exc})") from None
    def own(m):  # implemented by the class, not inherited from MemorySystem's placeholders
        return callable(getattr(cls, m, None)) and getattr(cls, m) is not getattr(MemorySystem, m, None)

    if not isinstance(cls, type) or not issubclass(cls, MemorySystem) or not own("consolidate") or not (
        own("answer") or own("context")
    ):
        raise InputError(
            source, f"plugins.{name}" if name in (plugins or {}) else f"systems.{name}",
            "a MemorySystem subclass implementing consolidate(transcript, budget_bytes) and "
            "answer(fiche, query, header) (or context(fiche, header))", target,
        )
    for flag in PRICING_FLAGS:  # what the dry run prices it by
        if not isinstance(getattr(cls, flag), bool):
            key = f"plugins.{name}" if name in (plugins or {}) else f"systems.{name}"
            raise InputError(source, key, f"{target}.{flag} set to True or False", getattr(cls, flag))
    return cls


def replay_recipes(names, plugins: dict | None = None, source: str = "config") -> dict[str, str]:
    """{system: recipe} of the named systems that read tuning artifacts (urd.systems.replay)."""
    classes = {name: resolve(name, plugins, source) for name in names}
    return {name: cls.recipe for name, cls in classes.items() if getattr(cls, "needs_artifacts", False)}


def build(name: str, backbone, plugins: dict | None = None, settings: dict | None = None):
    """System `name` on `backbone`. It carries the name it is registered under, whatever its
    class says: that name keys its results, its fiche records and its points in rung 2's tables,
    so two entries of one class, or a class that never set `name`, stay apart. A plug-in also
    carries its 'module:Class', for errors that name the code at fault."""
    cls = resolve(name, plugins)
    system = cls(backbone, settings or {})
    if not isinstance(system, MemorySystem):
        raise InputError("config", f"plugins.{name}", "a subclass of urd.systems.base.MemorySystem", type(system).__name__)
    system.name = name
    if name in (plugins or {}):
        system.plugin = plugins[name]
    return system
