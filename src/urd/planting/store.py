"""The planting suite's memory store: SQLite, written term by term.

A character's events enter the store one term at a time, and only the next term may be
written (terms advance; none is skipped or rewritten). Promises go through due-date logic
here: a promise is open until an event that keeps it is written, and due at a term when its
due term is at or before it. The arms read the store, never the generator: the due-promise
table at the decision term is a query, and an ID a character cites is real only if the store
holds it. Plant labels are not stored.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import InputError, UrdError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    world TEXT NOT NULL, character TEXT NOT NULL, id TEXT NOT NULL, term INTEGER NOT NULL,
    n INTEGER NOT NULL, category TEXT NOT NULL, text TEXT NOT NULL, due_term INTEGER, closes TEXT,
    PRIMARY KEY (world, character, id)
);
CREATE TABLE IF NOT EXISTS clock (
    world TEXT NOT NULL, character TEXT NOT NULL, term INTEGER NOT NULL,
    PRIMARY KEY (world, character)
);
"""


class TermOrder(UrdError):
    """A term written out of order: the store's terms advance one at a time."""


@dataclass(frozen=True)
class StoredEvent:
    id: str
    term: int
    n: int
    category: str
    text: str
    due_term: int | None
    closes: str | None

    def line(self) -> str:
        return f"{self.id} (term {self.term}, {self.category}): {self.text}"


@dataclass(frozen=True)
class DuePromise:
    id: str
    text: str
    made_term: int
    due_term: int

    def line(self, at: int) -> str:
        state = "due this term" if self.due_term == at else f"overdue since term {self.due_term}"
        return f"{self.id}: {self.text} (made in term {self.made_term}; {state}; not yet kept)"


class Store:
    def __init__(self, path: str | Path = ":memory:"):
        self.path = str(path)
        self.db = sqlite3.connect(self.path)
        self.db.executescript(_SCHEMA)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def term(self, world: str, character: str) -> int:
        """The last term written for this character in this world (0: none)."""
        row = self.db.execute("SELECT term FROM clock WHERE world = ? AND character = ?", (world, character)).fetchone()
        return row[0] if row else 0

    def write_term(self, world: str, character: str, term: int, events: Iterable) -> None:
        """Write one term's events (objects with id, term, n, category, text, due_term, closes) and
        advance the character's clock to it; only the term after the last one written is taken."""
        now = self.term(world, character)
        if term != now + 1:
            raise TermOrder(f"planting store: {world}/{character}: term {term} written after term {now} "
                            f"(terms advance one at a time)")
        rows = []
        for e in events:
            if e.term != term:
                raise InputError(f"{world}/{character}", f"{e.id}.term", f"term {term}", e.term)
            if e.closes is not None and not self._is_open(world, character, e.closes, term):
                raise InputError(f"{world}/{character}", f"{e.id}.closes", "an open promise in the store", e.closes)
            rows.append((world, character, e.id, e.term, e.n, e.category, e.text, e.due_term, e.closes))
        with self.db:
            self.db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            self.db.execute("INSERT OR REPLACE INTO clock VALUES (?, ?, ?)", (world, character, term))

    def _is_open(self, world: str, character: str, promise_id: str, before_term: int) -> bool:
        row = self.db.execute(
            "SELECT 1 FROM events p WHERE p.world = ? AND p.character = ? AND p.id = ? AND p.due_term IS NOT NULL "
            "AND p.term < ? AND NOT EXISTS (SELECT 1 FROM events k WHERE k.world = p.world AND "
            "k.character = p.character AND k.closes = p.id)",
            (world, character, promise_id, before_term)).fetchone()
        return row is not None

    def events(self, world: str, character: str, terms: Sequence[int] | None = None,
               categories: Sequence[str] | None = None) -> list[StoredEvent]:
        """The stored events, in order, optionally of some terms and categories only."""
        sql = "SELECT id, term, n, category, text, due_term, closes FROM events WHERE world = ? AND character = ?"
        args: list = [world, character]
        if terms is not None:
            sql += f" AND term IN ({','.join('?' * len(terms))})"
            args += list(terms)
        if categories is not None:
            sql += f" AND category IN ({','.join('?' * len(categories))})"
            args += list(categories)
        return [StoredEvent(*r) for r in self.db.execute(sql + " ORDER BY term, n", args)]

    def due_promises(self, world: str, character: str, at_term: int) -> list[DuePromise]:
        """Promises made before `at_term`, due at or before it, and not kept by then. Asking
        about a term past the next one to be written is an error: the store cannot know it."""
        now = self.term(world, character)
        if at_term > now + 1:
            raise TermOrder(f"planting store: {world}/{character}: due promises at term {at_term} asked "
                            f"when only terms up to {now} are written")
        rows = self.db.execute(
            "SELECT p.id, p.text, p.term, p.due_term FROM events p WHERE p.world = ? AND p.character = ? "
            "AND p.due_term IS NOT NULL AND p.due_term <= ? AND p.term < ? AND NOT EXISTS ("
            "SELECT 1 FROM events k WHERE k.world = p.world AND k.character = p.character AND k.closes = p.id "
            "AND k.term < ?) ORDER BY p.term, p.n",
            (world, character, at_term, at_term, at_term))
        return [DuePromise(*r) for r in rows]

    def has_id(self, world: str, character: str, event_id: str) -> bool:
        return self.db.execute("SELECT 1 FROM events WHERE world = ? AND character = ? AND id = ?",
                               (world, character, event_id)).fetchone() is not None
