"""Two stores without a model, one for each way the trip-vs-move write-up says a store fails:

* ``replace_latest`` treats every newer location as a permanent replacement: a claim about
  where the user is retires every older one (it should fail the trip);
* ``keep_all`` treats every location as travel: nothing is ever retired (it should fail the move).

Both read a note the same way, by fixed text rules: the claims are the user's own sentences
(the ``User:`` lines), cut at sentence ends, semicolons and ", but"; a claim is about the
user's whereabouts when it puts something *in*, *to* or *at* a capitalised place name. Both
keep their decisions as events (``keep_all`` never makes one), so check ii is measured.
"""

from __future__ import annotations

import re
from datetime import date

from .base import UPDATE_SUPERSESSION, MemoryStore, Note, StoreRun, claim_row

_USER_LINE = re.compile(r"^User:\s*(?P<text>.+?)\s*$", re.MULTILINE)
_CLAUSE_END = re.compile(r"(?<=[.!?;])\s+|,\s+but\s+")
_WHEREABOUTS = re.compile(r"\b(?:in|to|at)\s+(?:the\s+)?[A-Z][a-z]+")


def clauses(text: str) -> list[str]:
    """The user's sentences and clauses in a note, each ending in its punctuation."""
    out = []
    for line in _USER_LINE.finditer(text):
        for part in _CLAUSE_END.split(line["text"]):
            part = part.strip().rstrip(";").strip()
            if part:
                out.append(part if part[-1] in ".!?" else part + ".")
    return out


def about_whereabouts(claim: str) -> bool:
    """A claim that places someone in, to or at a named place."""
    return bool(_WHEREABOUTS.search(claim)) and not claim.endswith("?")


class _TextRuleStore(MemoryStore):
    """Claims from text rules, kept in memory (a run's store lives no longer than its process)."""

    replaces_whereabouts = False

    def __init__(self, run: StoreRun) -> None:
        super().__init__(run)
        self._claims: list[dict] = []
        self._events: list[tuple[str, dict]] = []

    def deposit(self, note: Note, read_at: date) -> dict:
        written, retired = [], []
        for text in clauses(note.text):
            claim = claim_row(text, note.name, id=f"c{len(self._claims) + 1}")
            if self.replaces_whereabouts and about_whereabouts(text):
                for older in self._claims:
                    if older["status"] == "ACTIVE" and about_whereabouts(older["content"]):
                        older["status"] = "RETIRED"
                        retired.append(older["id"])
                        self._events.append((UPDATE_SUPERSESSION, {"retired_id": older["id"], "winner_id": claim["id"]}))
            self._claims.append(claim)
            written.append(claim["id"])
        return {"note": note.name, "claims": written, "retired": retired}

    def consolidate(self) -> None:
        return None  # nothing is ever rewritten as history

    def rows(self) -> list[dict]:
        return [dict(c) for c in self._claims]

    def events(self) -> list[tuple[str, dict]]:
        return list(self._events)

    def decides_update(self, older: str, newer: str, sample: str) -> bool:
        return self.replaces_whereabouts and about_whereabouts(older) and about_whereabouts(newer)


class ReplaceLatest(_TextRuleStore):
    """Every newer claim about the user's whereabouts retires every older one."""

    name = "replace_latest"
    replaces_whereabouts = True


class KeepAll(_TextRuleStore):
    """Nothing is ever retired."""

    name = "keep_all"
    replaces_whereabouts = False
