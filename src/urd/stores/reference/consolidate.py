"""Consolidation: restate, as dated history, the claims that relied on a retired state.

For every claim an update retired (the anchor R), the ACTIVE claims written from R's
note that share a subject with it are asked whether they hold regardless or depended on
R being current. A dependent claim's restatement ("As of YYYY-MM-DD, ... was ...")
passes the re-anchor check (a second reading of the dependency and the restatement's
faithfulness), must not duplicate a standing claim, and must not contradict one; only
then is it written ACTIVE and the original retired in its favour. A restatement that
contradicts a standing claim is kept back and the original stays ACTIVE.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...llm import LLM
from ...llm import purposes as P
from ..settings import StoreLimits
from . import prompts, replies
from .claims import DEPENDENT_CLAIM_EXAMINED, MATCHED_EXISTING, RESTATED, UPDATE_SUPERSESSION, Claim, ClaimStore
from .ingest import words
from .probes import PairProbe

RESTATED_OUTCOME = "restated"
MATCHED_OUTCOME = "matched_existing"
UNRESTATED = "unrestated"
HOLDS = "holds"
REJECTED = "dependency_rejected"
UNANSWERED = "unanswered"


@dataclass
class ConsolidationOutcome:
    examined: int = 0
    restated: list[str] = field(default_factory=list)
    kept_back: list[str] = field(default_factory=list)


def _key(text: str) -> str:
    return re.sub(r"\W+", " ", text.casefold()).strip()


def reanchor_candidates(anchor: Claim, claims: list[Claim], examined: set[tuple[str, str]], limit: int) -> list[Claim]:
    """ACTIVE original claims from the anchor's note sharing a subject with it."""
    pool = [
        c
        for c in claims
        if c.active
        and not c.restatement
        and c.id != anchor.id
        and c.source_note == anchor.source_note
        and set(c.subjects) & set(anchor.subjects)
        and (c.id, anchor.id) not in examined
    ]
    pool.sort(key=lambda c: c.seq)
    return pool[:limit]


def conflict_pool(restatement: str, original: Claim, anchor: Claim, claims: list[Claim], exempt: str | None, limit: int) -> list[Claim]:
    """Standing claims a restatement could contradict: ACTIVE, sharing a subject with the
    original or the anchor, nearest in wording first."""
    subjects = set(original.subjects) | set(anchor.subjects)
    skip = {original.id, anchor.id, exempt}
    wanted = words(restatement)
    pool = [c for c in claims if c.active and c.id not in skip and set(c.subjects) & subjects]
    pool.sort(key=lambda c: (-len(words(c.content) & wanted), c.seq))
    return pool[:limit]


def consolidate(
    store: ClaimStore, llm: LLM, *, limits: StoreLimits, max_tokens: dict[str, int], replica: str
) -> ConsolidationOutcome:
    outcome = ConsolidationOutcome()
    examined: set[tuple[str, str]] = set()
    for _, event in store.events([UPDATE_SUPERSESSION]):
        anchor = store.claim(event["retired_id"])
        winner = store.claim(event["winner_id"])
        candidates = reanchor_candidates(anchor, store.claims(), examined, limits.max_reanchor_candidates)
        if not candidates:
            continue
        passage, passage_date = store.note_text(anchor.source_note)
        date_text = passage_date.isoformat()
        labels = [f"c{i}" for i in range(1, len(candidates) + 1)]
        reply = llm.ask(
            prompts.reanchor(
                anchor.content,
                passage,
                date_text,
                [c.content for c in candidates],
                max_tokens=max_tokens[P.REANCHOR],
                replica=replica,
            )
        )
        verdicts = {v.label: v for v in replies.reanchor(reply, labels) or []}
        for label, original in zip(labels, candidates):
            examined.add((original.id, anchor.id))
            outcome.examined += 1
            base = {"particle_id": original.id, "retired_id": anchor.id, "winner_id": winner.id}
            verdict = verdicts.get(label)
            if verdict is None:
                store.add_event(DEPENDENT_CLAIM_EXAMINED, {**base, "outcome": UNANSWERED, "why": "the probe gave no verdict for it"})
                continue
            if not verdict.depends:
                store.add_event(DEPENDENT_CLAIM_EXAMINED, {**base, "outcome": HOLDS, "why": verdict.reason})
                continue
            _settle(store, llm, original, anchor, winner, verdict, passage, date_text, base, limits, max_tokens, replica, outcome)
    return outcome


def _settle(store, llm, original, anchor, winner, verdict, passage, date_text, base, limits, max_tokens, replica, outcome) -> None:
    restatement = verdict.restatement
    record = {**base, "probe_reason": verdict.reason, "restatement": restatement}
    if restatement is None:
        store.add_event(
            DEPENDENT_CLAIM_EXAMINED,
            {**record, "outcome": UNRESTATED, "other_id": None, "why": "the probe judged it dependent but wrote no restatement"},
        )
        return
    if len(restatement) > 2 * limits.max_claim_chars:
        # Outside the stated bound the estimate relies on; kept back, never written.
        store.add_event(
            DEPENDENT_CLAIM_EXAMINED,
            {**record, "outcome": UNRESTATED, "other_id": None, "why": "the restatement is longer than twice max_claim_chars"},
        )
        return
    reading = replies.reanchor_check(
        llm.ask(
            prompts.reanchor_check(
                anchor.content, original.content, restatement, passage, date_text,
                max_tokens=max_tokens[P.REANCHOR_CHECK], replica=replica,
            )
        )
    )
    if reading is not None and not reading.depended:
        store.add_event(DEPENDENT_CLAIM_EXAMINED, {**record, "outcome": REJECTED, "other_id": None, "why": reading.reason})
        return
    if reading is None or not reading.faithful:
        why = (
            "the re-anchor check could not be completed"
            if reading is None
            else f"the re-anchor check found the restatement unfaithful: {reading.reason}"
        )
        store.add_event(DEPENDENT_CLAIM_EXAMINED, {**record, "outcome": UNRESTATED, "other_id": None, "why": why})
        return
    claims = store.claims()
    duplicate = next(
        (c for c in claims if c.active and c.id not in (original.id, anchor.id) and _key(c.content) == _key(restatement)),
        None,
    )
    if duplicate is not None:
        store.retire(original.id, MATCHED_EXISTING, by=duplicate.id)
        store.add_event(
            DEPENDENT_CLAIM_EXAMINED,
            {**record, "outcome": MATCHED_OUTCOME, "other_id": duplicate.id, "why": "an ACTIVE claim already states the restatement"},
        )
        return
    # A restatement dated before the claim that retired its anchor describes what held
    # until that change, so it cannot contradict it: the winner is not asked.
    exempt = winner.id if date_text < winner.asserted.isoformat() else None
    for other in conflict_pool(restatement, original, anchor, claims, exempt, limits.max_conflict_checks):
        found = PairProbe(llm, other.content, restatement, max_tokens=max_tokens, replica=replica).contradiction()
        if found is None or found:
            why = (
                f"the restatement contradicts {other.id}"
                if found
                else "the contradiction check could not be completed"
            )
            store.add_event(
                DEPENDENT_CLAIM_EXAMINED,
                {**record, "outcome": UNRESTATED, "other_id": other.id if found else None, "why": why},
            )
            outcome.kept_back.append(original.id)
            return
    written = store.add_claim(
        restatement,
        subjects=list(dict.fromkeys([*original.subjects, *anchor.subjects])),
        source_note=original.source_note,
        asserted=original.asserted,
        read_at=original.read_at,
        restates=original.id,
        anchor=anchor.id,
    )
    store.retire(original.id, RESTATED, by=written)
    store.add_event(
        DEPENDENT_CLAIM_EXAMINED,
        {**record, "outcome": RESTATED_OUTCOME, "other_id": None, "restatement_id": written, "why": "restated as dated history"},
    )
    outcome.restated.append(written)
