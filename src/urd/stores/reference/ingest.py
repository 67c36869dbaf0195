"""Ingest one note: extract its claims at the reading clock, then let the gate retire
the older claims the new ones update."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from ...core.errors import UrdError
from ...data.agentmem.cases import Note
from ...llm import LLM
from ...llm import purposes as P
from ..settings import StoreLimits
from . import prompts, replies
from .claims import NOTE_INGESTED, PAIR_EXAMINED, UPDATE_SUPERSESSION, UPDATED, Claim, ClaimStore
from .gates import retires
from .probes import PairProbe

_WORD = re.compile(r"[a-z0-9']+")


class StepFailed(UrdError):
    """A step could not finish (an unusable reply after its re-ask)."""


@dataclass
class IngestOutcome:
    note: str
    claims: list[str] = field(default_factory=list)
    end_dates_dropped: int = 0
    dropped: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)


def keep_end_date(valid_until: date | None, read_at: date) -> date | None:
    """An end date is kept only while it is still in the future at the reading time."""
    return valid_until if valid_until is not None and valid_until > read_at else None


def words(text: str) -> set[str]:
    return set(_WORD.findall(text.casefold()))


def pair_partners(new: Claim, existing: list[Claim], limit: int) -> list[Claim]:
    """The claims a new claim is probed against: ACTIVE, not restatements, from an
    earlier note, sharing a subject; most shared subjects and words first."""
    pool = [
        c
        for c in existing
        if c.active and not c.restatement and c.source_note != new.source_note and set(c.subjects) & set(new.subjects)
    ]
    wanted = words(new.content)
    pool.sort(key=lambda c: (-len(set(c.subjects) & set(new.subjects)), -len(words(c.content) & wanted), c.seq))
    return pool[:limit]


def extract(llm: LLM, note: Note, limits: StoreLimits, max_tokens: int, replica: str) -> list[replies.Extracted]:
    request = prompts.extraction(
        note.text, note.date.isoformat(), max_claims=limits.max_claims_per_note, max_tokens=max_tokens, replica=replica
    )
    claims = replies.extraction(llm.ask(request))
    if claims is None:
        # One re-ask, as its own replica so a replayed bad reply is not served again.
        retry = prompts.extraction(
            note.text,
            note.date.isoformat(),
            max_claims=limits.max_claims_per_note,
            max_tokens=max_tokens,
            replica=f"{replica}/re-ask",
        )
        claims = replies.extraction(llm.ask(retry))
    if claims is None:
        raise StepFailed(f"the extraction reply for {note.name} was not the JSON object asked for, twice")
    return claims


def ingest_note(
    store: ClaimStore,
    llm: LLM,
    note: Note,
    *,
    read_at: date,
    gate: str,
    limits: StoreLimits,
    max_tokens: dict[str, int],
    replica: str,
) -> IngestOutcome:
    store.add_note(note.name, note.date, note.sha256, note.text)
    outcome = IngestOutcome(note.name)
    extracted = extract(llm, note, limits, max_tokens[P.EXTRACT], replica)
    kept = []
    for item in extracted:
        if len(kept) >= limits.max_claims_per_note or len(item.content) > limits.max_claim_chars:
            # Outside the stated bound the estimate relies on: recorded, never stored.
            outcome.dropped.append(item.content)
            continue
        kept.append(item)
    before = store.claims()
    new_claims = []
    for item in kept:
        until = keep_end_date(item.valid_until, read_at)
        if item.valid_until is not None and until is None:
            outcome.end_dates_dropped += 1
        claim_id = store.add_claim(
            item.content,
            subjects=item.subjects,
            source_note=note.name,
            asserted=note.date,
            read_at=read_at,
            valid_from=item.valid_from,
            valid_until=until,
            stated_until=item.valid_until,
        )
        new_claims.append(store.claim(claim_id))
        outcome.claims.append(claim_id)
    store.add_event(
        NOTE_INGESTED,
        {
            "note": note.name,
            "sha256": note.sha256,
            "read_at": read_at.isoformat(),
            "claims": outcome.claims,
            "dropped": outcome.dropped,
            "end_dates_dropped": outcome.end_dates_dropped,
        },
    )
    for new in new_claims:
        current = {c.id: c for c in store.claims()}
        for older in pair_partners(new, [current[c.id] for c in before], limits.max_pairs_per_claim):
            if not current[older.id].active:
                continue
            probe = PairProbe(llm, older.content, new.content, max_tokens=max_tokens, replica=replica)
            retire = retires(gate, older.content, probe)
            answers = probe.answers()
            store.add_event(
                PAIR_EXAMINED,
                {"older_id": older.id, "newer_id": new.id, "gate": gate, "answers": answers, "retired": retire},
            )
            if retire:
                store.retire(older.id, UPDATED, by=new.id)
                store.add_event(
                    UPDATE_SUPERSESSION,
                    {
                        "retired_id": older.id,
                        "winner_id": new.id,
                        "retired_content": older.content,
                        "winner_content": new.content,
                        "gate": gate,
                        "answers": answers,
                    },
                )
                outcome.retired.append(older.id)
                current = {c.id: c for c in store.claims()}
    return outcome
