"""Stores by name: the built-ins, plus plug-ins named in config as 'module:Class'
(``agentmem.stores.plugins``).

The workflow resolves every store a target names while it builds the DAG, so a misspelt name,
a module that does not import or a class without the interface fails in one line, naming the
config key, before anything runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from ..core.errors import InputError
from .base import MemoryStore

BUILTIN = {
    "reference": "urd.stores.reference:ReferenceStore",
    "replace_latest": "urd.stores.baselines:ReplaceLatest",
    "keep_all": "urd.stores.baselines:KeepAll",
}
REFERENCE = "reference"
REQUIRED = ("deposit", "consolidate", "rows")
#: The optional method the update-gate suite asks.
UPDATE_DECISION = "decides_update"
#: A store name as a target path segment.
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_-]*"


def _table(plugins: Mapping | None, source: str = "config") -> dict[str, str]:
    clash = sorted(set(BUILTIN) & set(plugins or {}))
    if clash:
        raise InputError(source, f"agentmem.stores.plugins.{clash[0]}", "a name no built-in store has", clash[0])
    return {**BUILTIN, **dict(plugins or {})}


def target(name: str, plugins: Mapping | None = None, source: str = "config") -> str:
    """The 'module:Class' a store name stands for, without importing it."""
    table = _table(plugins, source)
    if name not in table:
        raise InputError(source, "agentmem.stores", f"a known store (one of: {', '.join(sorted(table))}) or a plugins entry", name)
    return table[name]


def store_module(name: str, plugins: Mapping | None = None) -> str:
    """The module that defines store ``name`` (its code digest's entry)."""
    return target(name, plugins).partition(":")[0]


def resolve(name: str, plugins: Mapping | None = None, source: str = "config") -> type[MemoryStore]:
    """The store's class, checked for the interface."""
    where = f"agentmem.stores.plugins.{name}" if name in (plugins or {}) else f"agentmem.stores ({name})"
    spec = target(name, plugins, source)
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise InputError(source, where, "'module:Class'", spec)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(source, where, "'module:Class' naming a module Python can import (on PYTHONPATH, or an installed package)", f"{spec} ({exc})") from None
    cls = getattr(module, attr, None)
    if not isinstance(cls, type):
        raise InputError(source, where, f"a class {attr} in module {module_name}", spec)
    if not issubclass(cls, MemoryStore):
        raise InputError(source, where, "a subclass of urd.stores.base.MemoryStore", spec)
    missing = [m for m in REQUIRED if getattr(cls, m) is getattr(MemoryStore, m)]
    if missing:
        raise InputError(source, where, f"a store implementing {', '.join(REQUIRED)}", f"{spec} lacks {', '.join(missing)}")
    return cls


def has_update_decision(cls: type) -> bool:
    return callable(getattr(cls, UPDATE_DECISION, None))


def describe(name: str, plugins: Mapping | None = None) -> dict:
    """What a report says of its store."""
    cls = resolve(name, plugins)
    return {
        "name": name,
        "class": target(name, plugins),
        "kind": "built-in" if name in BUILTIN else "plug-in",
        "spend": "not metered" if cls.own_model else "metered",
        "update_decision": has_update_decision(cls),
    }
