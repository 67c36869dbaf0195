"""The store interface: what the agent-memory suites put through trip-vs-move and update-gate.

A store is made in its run's own, empty directory; it is handed the case's dated notes one at a
time (``deposit``), asked to ``consolidate``, and read back as rows, the claims the checks read,
plus, where it keeps them, the events check ii reads. Subclass :class:`MemoryStore`::

    deposit(note, read_at)  -> dict | None   store what the note says, reading it at read_at
    consolidate()           -> dict | None   tidy up after the last note (may do nothing)
    rows()                  -> list[dict]    one dict a claim, with the fields in ROW_FIELDS
    events()                -> list | None   (kind, payload) pairs, or None: keeps no events
    decides_update(older, newer, sample) -> bool   optional: the update-gate suite asks it

A store that needs a model asks ``self.llm`` (urd's LLM layer: metered, cached, replayable,
under the run's ceiling, answered from the scripted table offline). A store that calls a model
by its own means sets ``own_model = True``: every report then says "spend not metered".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from ..core.errors import UrdError
from ..data.agentmem.cases import Note
from ..llm import LLM
from .settings import Settings

ACTIVE, RETIRED = "ACTIVE", "RETIRED"

#: What a row must carry for the checks: the claim's text, the notes it came from, ACTIVE or
#: RETIRED, whether the store rewrote it as dated history, and its end date (ISO, or None).
ROW_FIELDS = ("content", "sources", "status", "restatement", "valid_until")

#: The event kinds check ii reads (the reference store's names): an update that retired a
#: claim (payload: retired_id, winner_id), and a claim examined for restatement.
UPDATE_SUPERSESSION = "UPDATE_SUPERSESSION"
DEPENDENT_CLAIM_EXAMINED = "DEPENDENT_CLAIM_EXAMINED"

__all__ = [
    "ACTIVE", "RETIRED", "ROW_FIELDS", "MemoryStore", "Note", "StoreFailed", "StoreRun", "checked_events", "checked_rows",
    "claim_row",
]


class StoreFailed(UrdError):
    """A store gave the suite something the checks cannot read."""


@dataclass(frozen=True)
class StoreRun:
    """What a store is given: its run's own empty directory, the LLM layer, the name of this
    run's independent sample (pass it as a request's ``replica``), the suite's settings, and
    the store's options (the reference store reads its ``gate`` there)."""

    directory: Path
    llm: LLM
    replica: str
    settings: Settings
    options: Mapping = field(default_factory=dict)


class MemoryStore:
    """Subclass this and implement deposit(), consolidate() and rows(); see the module doc."""

    name = "unnamed"
    #: True: the store calls a model by its own means, so its spend is not metered by urd.
    own_model = False

    def __init__(self, run: StoreRun) -> None:
        self.run = run
        self.directory = run.directory
        self.llm = run.llm

    def deposit(self, note: Note, read_at: date) -> dict | None:
        raise NotImplementedError

    def consolidate(self) -> dict | None:
        raise NotImplementedError

    def rows(self) -> list[dict]:
        raise NotImplementedError

    def events(self) -> list[tuple[str, dict]] | None:
        """None: this store keeps no events, so check ii is not measurable for it."""
        return None

    def close(self) -> None:
        """Release what the store holds open; called once, after the rows are read."""


def claim_row(content: str, note: str, *, active: bool = True, restatement: bool = False,
              valid_until: date | None = None, **extra) -> dict:
    """A row as the checks read it, for a claim written from one note."""
    return {
        "content": content,
        "sources": [note],
        "status": ACTIVE if active else RETIRED,
        "restatement": restatement,
        "valid_until": valid_until.isoformat() if valid_until else None,
        **extra,
    }


def checked_rows(rows: Sequence, store: str) -> list[dict]:
    """The store's rows, refused with the row and field named where the checks could not read them."""
    if not isinstance(rows, (list, tuple)):
        raise StoreFailed(f"store {store}: rows() returned {type(rows).__name__}, expected a list of dicts")
    for i, row in enumerate(rows):
        where = f"store {store}: rows()[{i}]"
        if not isinstance(row, Mapping):
            raise StoreFailed(f"{where} is {type(row).__name__}, expected a dict")
        missing = [f for f in ROW_FIELDS if f not in row]
        if missing:
            raise StoreFailed(f"{where} lacks {missing}; a row carries {list(ROW_FIELDS)}")
        if not isinstance(row["content"], str):
            raise StoreFailed(f"{where}.content is {row['content']!r}, expected a string")
        if not isinstance(row["sources"], (list, tuple)) or not all(isinstance(s, str) for s in row["sources"]):
            raise StoreFailed(f"{where}.sources is {row['sources']!r}, expected a list of note names")
        if row["status"] not in (ACTIVE, RETIRED):
            raise StoreFailed(f"{where}.status is {row['status']!r}, expected {ACTIVE!r} or {RETIRED!r}")
        if not isinstance(row["restatement"], bool):
            raise StoreFailed(f"{where}.restatement is {row['restatement']!r}, expected true or false")
        until = row["valid_until"]
        if until is not None:
            try:
                date.fromisoformat(str(until)[:10])
            except ValueError:
                raise StoreFailed(f"{where}.valid_until is {until!r}, expected null or YYYY-MM-DD") from None
    return [dict(r) for r in rows]


def checked_events(events, store: str) -> list[tuple[str, dict]] | None:
    """The store's events as (kind, payload) pairs; None stays None (no events kept)."""
    if events is None:
        return None
    out = []
    for i, item in enumerate(events):
        if not (isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str)
                and isinstance(item[1], Mapping)):
            raise StoreFailed(f"store {store}: events()[{i}] is {item!r}, expected a (kind, payload dict) pair")
        out.append((item[0], dict(item[1])))
    return out
