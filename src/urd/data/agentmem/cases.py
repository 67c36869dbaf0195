"""The trip-vs-move cases: their notes, dates, roles, and the digests they must match."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from ...core.errors import DigestMismatch, InputError
from ...core.io import sha256_bytes

NOTES_DIR = Path(__file__).parent / "notes"
VARIANTS = ("move", "trip-alone")
#: The protocol of record: three move runs and two trip-alone runs per model.
PROTOCOL = {"move": 3, "trip-alone": 2}

_HEADING_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")


@dataclass(frozen=True)
class Note:
    name: str
    date: date
    text: str

    @property
    def sha256(self) -> str:
        return sha256_bytes(self.text.encode("utf-8"))


@dataclass(frozen=True)
class Case:
    """One case. The checks pick claims by the note they came from: the home note states
    the residence, the trip note the week away, the move note the move."""

    name: str
    label: str
    variants: dict
    home: str
    trip: str
    move: str
    move_date: date
    #: Whether a trip claim whose own end date falls on or before the move stops reading
    #: as current (the reader's case: its week ends weeks before the move).
    lapse_counts: bool

    @property
    def notes(self) -> tuple[str, ...]:
        return self.variants["move"]


CASES = {
    "reader": Case(
        name="reader",
        label="A week away, then a move a month later",
        variants={"move": ("reader-01.md", "reader-02-moved.md"), "trip-alone": ("reader-01.md",)},
        home="reader-01.md",
        trip="reader-01.md",
        move="reader-02-moved.md",
        move_date=date(2026, 10, 1),
        lapse_counts=True,
    ),
    "mid-trip": Case(
        name="mid-trip",
        label="Change of plans mid-trip",
        variants={
            "move": ("session-04.md", "session-11.md", "session-12-moved.md"),
            "trip-alone": ("session-04.md", "session-11.md"),
        },
        home="session-04.md",
        trip="session-11.md",
        move="session-12-moved.md",
        move_date=date(2026, 10, 9),
        lapse_counts=False,
    ),
}


def case(name: str) -> Case:
    try:
        return CASES[name]
    except KeyError:
        raise InputError("--case", "case", f"one of {sorted(CASES)}", name) from None


def load_note(name: str, notes_dir: Path = NOTES_DIR) -> Note:
    path = notes_dir / name
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(path, "file", "a shipped trip-vs-move note") from None
    first = text.splitlines()[0] if text else ""
    found = _HEADING_DATE.search(first) if first.startswith("#") else None
    if not found:
        raise InputError(path, "heading", "a first line '# ... YYYY-MM-DD ...' dating the note", first)
    return Note(name=name, date=date.fromisoformat(found.group(1)), text=text)


def verify_notes(calibration_dir: Path, names: tuple[str, ...]) -> list[Note]:
    """Load ``names`` and refuse any whose bytes or date differ from the registry."""
    registry_path = Path(calibration_dir) / "notes.json"
    try:
        registry = json.loads(registry_path.read_text(encoding="utf-8"))["notes"]
    except FileNotFoundError:
        raise InputError(registry_path, "file", "the note digest registry") from None
    except (KeyError, ValueError) as exc:
        raise InputError(registry_path, "notes", "a JSON object of note digests", str(exc)) from None
    notes = []
    for name in names:
        note = load_note(name)
        entry = registry.get(name)
        if entry is None:
            raise InputError(registry_path, f"notes.{name}", "a registered digest")
        if entry.get("sha256") != note.sha256:
            raise DigestMismatch(NOTES_DIR / name, entry.get("sha256"), note.sha256)
        if entry.get("date") != note.date.isoformat():
            raise InputError(registry_path, f"notes.{name}.date", note.date.isoformat(), entry.get("date"))
        notes.append(note)
    return notes
