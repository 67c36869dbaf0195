"""urd rung 3: naturalistic tasks. Two families of preference types, a user's preferences (P,
`prefs`) and a codebase's conventions (C, `code`), their seeded episodes and their checkers.

`family(name, plugins)` is the family's types, the built-ins first, then the plug-ins named in
config (`urd3.types`: NAME -> 'module:attribute', a Preference), each checked by `kinds.validate`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from ...core.errors import InputError
from . import code, prefs
from .kinds import FAMILIES, Preference, validate

HEADERS = {
    "prefs": "A conversation between a user and their assistant, who follows the user's stated preferences.",
    "code": "A code review between a developer and their assistant, who follows the project's stated conventions.",
}
WRITERS = {"prefs": prefs.write, "code": code.write}
BUILTIN = {"prefs": prefs.TYPES, "code": code.TYPES}


@dataclass(frozen=True)
class Family:
    name: str
    header: str
    kinds: tuple[Preference, ...]

    def write(self, request: str, sides: dict[str, int]) -> str:
        """The reply a reader keeping `sides` writes to `request`."""
        return WRITERS[self.name](request, sides, self.kinds)

    def kind(self, name: str) -> Preference:
        return next(k for k in self.kinds if k.name == name)


def load_plugin(name: str, target: str, source: str = "config") -> Preference:
    module, _, attr = target.partition(":")
    try:
        kind = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise InputError(source, f"urd3.types.{name}", "'module:attribute' naming a Preference Python can import",
                         f"{target} ({exc})") from None
    if not isinstance(kind, Preference) or kind.name != name:
        raise InputError(source, f"urd3.types.{name}", f"a Preference named {name!r}", target)
    return kind


def family(name: str, plugins: dict[str, str] | None = None, source: str = "config") -> Family:
    """Family `name` with its built-in types and the plug-ins of that family, each validated."""
    if name not in FAMILIES:
        raise InputError(source, "urd3.families", f"one of {', '.join(FAMILIES)}", name)
    kinds = list(BUILTIN[name])
    for plug, target in (plugins or {}).items():
        kind = load_plugin(plug, target, source)
        if any(k.name == plug for f in BUILTIN.values() for k in f):
            raise InputError(source, f"urd3.types.{plug}", "a name no built-in type has", plug)
        if kind.family == name:
            kinds.append(kind)
    for k in kinds:
        validate(k, f"{source}: urd3.types" if k.name in (plugins or {}) else "rung 3 types")
    _distinct(kinds, source)
    return Family(name, HEADERS[name], tuple(kinds))


def _distinct(kinds: list[Preference], source: str) -> None:
    """A reader finds a statement by its phrase: no type's phrase may contain another type's."""
    phrases = [(k.name, p.lower()) for k in kinds for p in k.phrases]
    for a, pa in phrases:
        for b, pb in phrases:
            if a != b and pa in pb:
                raise InputError(source, f"urd3.types.{b}", f"phrases that do not contain {a}'s ({pa!r})", pb)
