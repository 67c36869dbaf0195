"""urd's reference claim store: the write-up's engine, on SQLite, through the store interface.

Each note's claims are extracted by the model, an update gate retires the older claims a new
one updates (``ingest``), and consolidation restates as dated history the claims that relied on
a retired state (``consolidate``). Every step commits whole or not at all.
"""

from __future__ import annotations

from datetime import date

from ..base import MemoryStore, Note, StoreRun
from .claims import CHECKED_EVENTS, ClaimStore
from .consolidate import consolidate
from .gates import GATES, retires
from .ingest import ingest_note
from .probes import PairProbe


class ReferenceStore(MemoryStore):
    """The reference store; option ``gate`` (default ``agentmem.trip_vs_move.gate``) picks the
    update gate."""

    name = "reference"

    def __init__(self, run: StoreRun) -> None:
        super().__init__(run)
        settings = run.settings
        self.gate = run.options.get("gate") or settings.raw["trip_vs_move"]["gate"]
        if self.gate not in GATES:
            raise ValueError(f"unknown gate {self.gate!r}; expected one of {GATES}")
        self.limits, self.max_tokens = settings.limits, settings.max_tokens
        self.claims = ClaimStore.create(run.directory / "store.sqlite")

    def deposit(self, note: Note, read_at: date) -> dict:
        with self.claims.step():
            r = ingest_note(self.claims, self.llm, note, read_at=read_at, gate=self.gate, limits=self.limits,
                            max_tokens=self.max_tokens, replica=self.run.replica)
        return {"note": r.note, "claims": r.claims, "retired": r.retired, "end_dates_dropped": r.end_dates_dropped,
                "dropped_outside_bound": r.dropped}

    def consolidate(self) -> dict:
        with self.claims.step():
            c = consolidate(self.claims, self.llm, limits=self.limits, max_tokens=self.max_tokens, replica=self.run.replica)
        return {"examined": c.examined, "restated": c.restated, "kept_back": c.kept_back}

    def rows(self) -> list[dict]:
        return self.claims.rows()

    def events(self) -> list[tuple[str, dict]]:
        return self.claims.events(CHECKED_EVENTS)

    def close(self) -> None:
        self.claims.close()

    def decides_update(self, older: str, newer: str, sample: str) -> bool:
        """The gate's decision on one pair, from its probes (asked lazily, as ingest asks them)."""
        return retires(self.gate, older, PairProbe(self.llm, older, newer, max_tokens=self.max_tokens, replica=sample))
