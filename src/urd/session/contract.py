"""The consolidation contract.

Only two things cross the boundary: a fiche of at most `budget` bytes (weighed, never read) and a
consolidation that processed at most `factor` x the transcript's tokens. Breaking either raises
BudgetViolation: loud, never a silent truncation. A system that declared itself out of contract
is exempt from the token cap only, and is labelled out_of_contract everywhere.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..core.errors import UrdError


class BudgetViolation(UrdError):
    """A system broke the contract; the job fails."""


@dataclass(frozen=True)
class Consolidation:
    fiche_bytes: int
    budget_bytes: int | None
    declared_tokens: int
    metered_tokens: int
    transcript_tokens: int
    token_cap: int
    out_of_contract: bool

    def as_record(self) -> dict:
        return asdict(self)


def exact_bytes(where: str, fiche) -> bytes:
    """The bytes that will cross, read from the object's buffer: a bytes subclass cannot make
    itself lighter (len()) or other (__bytes__) than what it holds."""
    if not isinstance(fiche, (bytes, bytearray)):
        raise BudgetViolation(f"{where}: consolidate() must return bytes, got {type(fiche).__name__}")
    return bytes(memoryview(fiche))


def naming(system: str, episode: int, plugin: str | None = None) -> str:
    """How an error names the case: the system (with a plug-in's 'module:Class') and episode."""
    return f"system {system!r}{f' ({plugin})' if plugin else ''}, episode {episode}"


def check(system: str, episode: int, fiche, budget: int | None, declared: int, metered: int,
          transcript_tokens: int, factor: int, out_of_contract: bool, plugin: str | None = None) -> Consolidation:
    where = naming(system, episode, plugin)
    fiche = exact_bytes(where, fiche)
    if not isinstance(declared, int) or declared < 0:
        raise BudgetViolation(f"{where}: declared consolidation tokens must be a non-negative int, got {declared!r}")
    if budget is not None and len(fiche) > budget:
        raise BudgetViolation(f"{where}: fiche is {len(fiche)} bytes, over the {budget}-byte budget")
    if metered > declared:
        raise BudgetViolation(
            f"{where}: declared {declared} consolidation tokens but the backbone processed {metered}"
        )
    cap = factor * transcript_tokens
    if declared > cap and not out_of_contract:
        raise BudgetViolation(
            f"{where}: declared {declared} consolidation tokens, over the cap of {cap} "
            f"({factor} x {transcript_tokens} transcript tokens)"
        )
    return Consolidation(len(fiche), budget, declared, metered, transcript_tokens, cap, out_of_contract)
