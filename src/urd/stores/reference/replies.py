"""Parsers for every reply grammar. An off-protocol reply parses to ``None``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from ...llm.parse import json_object
from .gates import CHANGES, DIFFERENT, FIXED

_VERDICT = re.compile(r"^\W*VERDICT\W*:\W*(YES|NO)\W*$", re.IGNORECASE)
_SLOT = re.compile(r"^\W*SLOT\W*:\W*(CHANGES|FIXED|NONE)\W*$", re.IGNORECASE)


def verdict(reply: str) -> bool | None:
    """The final VERDICT line, when it is the only verdict given; YES is True."""
    lines = [ln.strip() for ln in reply.strip().splitlines() if ln.strip()]
    found = {m.group(1).upper() for ln in lines if (m := _VERDICT.match(ln))}
    if len(found) != 1 or not lines or not _VERDICT.match(lines[-1]):
        return None
    return found.pop() == "YES"


def update_verdict(reply: str) -> str | None:
    """CHANGES, FIXED, DIFFERENT, or None when the reply does not settle it."""
    same_slot = verdict(reply)
    if same_slot is None:
        return None
    if not same_slot:
        return DIFFERENT
    kinds = {m.group(1).upper() for ln in reply.splitlines() if (m := _SLOT.match(ln.strip()))}
    if kinds == {"CHANGES"}:
        return CHANGES
    if kinds == {"FIXED"}:
        return FIXED
    return None



@dataclass(frozen=True)
class Extracted:
    content: str
    subjects: tuple[str, ...]
    valid_from: date | None
    valid_until: date | None


def _iso(value) -> date | None:
    if not isinstance(value, str):
        return None
    try:
        return date.fromisoformat(value.strip()[:10])
    except ValueError:
        return None


def normalise_subject(name: str) -> str:
    """Subjects compare case-free, without a leading article or trailing punctuation."""
    s = " ".join(name.casefold().split()).strip(" .,:;!?\"'")
    for article in ("the ", "a ", "an "):
        if s.startswith(article):
            s = s[len(article) :]
    return s


def extraction(reply: str) -> list[Extracted] | None:
    data = json_object(reply)
    if data is None or not isinstance(data.get("claims"), list):
        return None
    out = []
    for item in data["claims"]:
        if not isinstance(item, dict):
            continue
        content = item.get("content")
        if not isinstance(content, str) or not content.strip():
            continue
        subjects = item.get("subjects") if isinstance(item.get("subjects"), list) else []
        names = tuple(dict.fromkeys(normalise_subject(s) for s in subjects if isinstance(s, str) and s.strip()))
        out.append(
            Extracted(
                content=" ".join(content.split()),
                subjects=names,
                valid_from=_iso(item.get("valid_from")),
                valid_until=_iso(item.get("valid_until")),
            )
        )
    return out


@dataclass(frozen=True)
class Dependency:
    label: str
    depends: bool
    restatement: str | None
    reason: str


def reanchor(reply: str, labels: list[str]) -> list[Dependency] | None:
    """Per-candidate verdicts; an item with an unknown label or verdict is dropped."""
    data = json_object(reply)
    if data is None or not isinstance(data.get("claims"), list):
        return None
    wanted = {"".join(ch for ch in lab.casefold() if ch.isalnum()): lab for lab in labels}
    out: dict[str, Dependency] = {}
    for item in data["claims"]:
        if not isinstance(item, dict):
            continue
        key = "".join(ch for ch in str(item.get("claim", "")).casefold() if ch.isalnum())
        label = wanted.get(key)
        kind = str(item.get("verdict", "")).strip().upper()
        if label is None or label in out or kind not in ("HOLDS", "DEPENDS"):
            continue
        restatement = item.get("restatement") if kind == "DEPENDS" else None
        restatement = " ".join(restatement.split()) if isinstance(restatement, str) and restatement.strip() else None
        out[label] = Dependency(label, kind == "DEPENDS", restatement, str(item.get("reason") or ""))
    return [out[lab] for lab in labels if lab in out]


@dataclass(frozen=True)
class Reading:
    depended: bool
    faithful: bool
    reason: str


def reanchor_check(reply: str) -> Reading | None:
    data = json_object(reply)
    if data is None:
        return None
    depended, faithful = data.get("depended"), data.get("faithful")
    if not isinstance(depended, bool) or not isinstance(faithful, bool):
        return None
    return Reading(depended, faithful, str(data.get("reason") or ""))
