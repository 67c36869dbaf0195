"""The reference claim store: one SQLite file per run, in that run's own directory.

Claims carry their content, source note, asserted date, validity, and status: ACTIVE, or
RETIRED with a reason and the claim that retired it. A restatement links to the claim it
replaces and to the retired state it is anchored to. The events table keeps what the
store decided and why (supersessions with their probe answers, re-anchor examinations).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from ...core.errors import InputError
from ...core.io import canonical_json

ACTIVE, RETIRED = "ACTIVE", "RETIRED"
#: Why a claim was retired.
UPDATED, RESTATED, MATCHED_EXISTING = "updated", "restated", "matched_existing"

#: Event kinds. The checks read the first two; the report saves exactly those.
UPDATE_SUPERSESSION = "UPDATE_SUPERSESSION"
DEPENDENT_CLAIM_EXAMINED = "DEPENDENT_CLAIM_EXAMINED"
CHECKED_EVENTS = (UPDATE_SUPERSESSION, DEPENDENT_CLAIM_EXAMINED)
NOTE_INGESTED = "NOTE_INGESTED"
PAIR_EXAMINED = "PAIR_EXAMINED"

_SCHEMA = """
CREATE TABLE notes (
    name TEXT PRIMARY KEY,
    date TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE TABLE claims (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    content TEXT NOT NULL,
    subjects TEXT NOT NULL,
    source_note TEXT NOT NULL REFERENCES notes(name),
    asserted TEXT NOT NULL,
    read_at TEXT NOT NULL,
    valid_from TEXT,
    valid_until TEXT,
    stated_until TEXT,
    status TEXT NOT NULL CHECK (status IN ('ACTIVE', 'RETIRED')),
    retired_reason TEXT,
    retired_by TEXT REFERENCES claims(id),
    restatement INTEGER NOT NULL DEFAULT 0 CHECK (restatement IN (0, 1)),
    restates TEXT REFERENCES claims(id),
    anchor TEXT REFERENCES claims(id),
    CHECK ((status = 'ACTIVE') = (retired_reason IS NULL))
);
CREATE TABLE events (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class Claim:
    id: str
    seq: int
    content: str
    subjects: tuple[str, ...]
    source_note: str
    asserted: date
    read_at: date
    valid_from: date | None
    valid_until: date | None
    stated_until: date | None
    status: str
    retired_reason: str | None
    retired_by: str | None
    restatement: bool
    restates: str | None
    anchor: str | None

    @property
    def active(self) -> bool:
        return self.status == ACTIVE

    def row(self) -> dict:
        """The claim as a report and the checks read it."""
        return {
            "id": self.id,
            "content": self.content,
            "subjects": list(self.subjects),
            "sources": [self.source_note],
            "asserted": self.asserted.isoformat(),
            "read_at": self.read_at.isoformat(),
            "valid_from": _iso(self.valid_from),
            "valid_until": _iso(self.valid_until),
            "stated_until": _iso(self.stated_until),
            "status": self.status,
            "reason": self.retired_reason,
            "retired_by": self.retired_by,
            "restatement": self.restatement,
            "restates": self.restates,
            "anchor": self.anchor,
        }


def _iso(d: date | None) -> str | None:
    return d.isoformat() if d else None


def _date(s: str | None) -> date | None:
    return date.fromisoformat(s) if s else None


_COLUMNS = (
    "id, seq, content, subjects, source_note, asserted, read_at, valid_from, valid_until, "
    "stated_until, status, retired_reason, retired_by, restatement, restates, anchor"
)


def _claim(r: Sequence) -> Claim:
    return Claim(
        id=r[0],
        seq=r[1],
        content=r[2],
        subjects=tuple(json.loads(r[3])),
        source_note=r[4],
        asserted=date.fromisoformat(r[5]),
        read_at=date.fromisoformat(r[6]),
        valid_from=_date(r[7]),
        valid_until=_date(r[8]),
        stated_until=_date(r[9]),
        status=r[10],
        retired_reason=r[11],
        retired_by=r[12],
        restatement=bool(r[13]),
        restates=r[14],
        anchor=r[15],
    )


class ClaimStore:
    """One run's store. ``create`` refuses a path that already exists."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path, self._conn = path, conn

    @classmethod
    def create(cls, path: str | Path) -> ClaimStore:
        path = Path(path)
        if path.exists():
            raise InputError(path, "store", "a path no store exists at yet (one store per run)")
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.executescript(_SCHEMA)
        return cls(path, conn)

    @classmethod
    def open_read_only(cls, path: str | Path) -> ClaimStore:
        path = Path(path)
        if not path.exists():
            raise InputError(path, "store", "an existing claim store")
        return cls(path, sqlite3.connect(f"file:{path}?mode=ro", uri=True))

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ClaimStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def step(self) -> Iterator[None]:
        """One step (a note, or consolidation) commits whole or not at all: a run that
        stops mid-step keeps the store as the last finished step left it."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    # -- writes -------------------------------------------------------------------

    def add_note(self, name: str, day: date, sha256: str, text: str) -> None:
        self._conn.execute("INSERT INTO notes VALUES (?, ?, ?, ?)", (name, day.isoformat(), sha256, text))

    def add_claim(
        self,
        content: str,
        *,
        subjects: Iterable[str],
        source_note: str,
        asserted: date,
        read_at: date,
        valid_from: date | None = None,
        valid_until: date | None = None,
        stated_until: date | None = None,
        restates: str | None = None,
        anchor: str | None = None,
    ) -> str:
        seq = self._conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM claims").fetchone()[0]
        claim_id = f"c{seq}"
        self._conn.execute(
            "INSERT INTO claims (seq, id, content, subjects, source_note, asserted, read_at, valid_from,"
            " valid_until, stated_until, status, restatement, restates, anchor)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'ACTIVE', ?, ?, ?)",
            (
                seq,
                claim_id,
                content,
                json.dumps(list(subjects)),
                source_note,
                asserted.isoformat(),
                read_at.isoformat(),
                _iso(valid_from),
                _iso(valid_until),
                _iso(stated_until),
                int(restates is not None),
                restates,
                anchor,
            ),
        )
        return claim_id

    def retire(self, claim_id: str, reason: str, by: str) -> None:
        cur = self._conn.execute(
            "UPDATE claims SET status = 'RETIRED', retired_reason = ?, retired_by = ?"
            " WHERE id = ? AND status = 'ACTIVE'",
            (reason, by, claim_id),
        )
        if cur.rowcount != 1:
            raise InputError(self.path, f"claims.{claim_id}", "an ACTIVE claim to retire")

    def add_event(self, kind: str, payload: dict) -> int:
        cur = self._conn.execute("INSERT INTO events (kind, payload) VALUES (?, ?)", (kind, canonical_json(payload)))
        return cur.lastrowid

    # -- reads --------------------------------------------------------------------

    def claims(self) -> list[Claim]:
        return [_claim(r) for r in self._conn.execute(f"SELECT {_COLUMNS} FROM claims ORDER BY seq")]

    def claim(self, claim_id: str) -> Claim:
        r = self._conn.execute(f"SELECT {_COLUMNS} FROM claims WHERE id = ?", (claim_id,)).fetchone()
        if r is None:
            raise InputError(self.path, f"claims.{claim_id}", "an existing claim")
        return _claim(r)

    def active(self) -> list[Claim]:
        return [c for c in self.claims() if c.active]

    def note_text(self, name: str) -> tuple[str, date]:
        r = self._conn.execute("SELECT text, date FROM notes WHERE name = ?", (name,)).fetchone()
        if r is None:
            raise InputError(self.path, f"notes.{name}", "an ingested note")
        return r[0], date.fromisoformat(r[1])

    def events(self, kinds: Iterable[str] | None = None) -> list[tuple[str, dict]]:
        rows = self._conn.execute("SELECT kind, payload FROM events ORDER BY seq").fetchall()
        wanted = set(kinds) if kinds is not None else None
        return [(k, json.loads(p)) for k, p in rows if wanted is None or k in wanted]

    def rows(self) -> list[dict]:
        return [c.row() for c in self.claims()]
