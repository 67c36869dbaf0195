"""The pair probes, asked lazily and at most once each, with every answer recorded."""

from __future__ import annotations

from collections.abc import Mapping

from ...llm import LLM
from ...llm import purposes as P
from . import prompts, replies
from .gates import CHANGES, settle


class PairProbe:
    """The contradiction and update answers for one (older, newer) pair.

    The contradiction probe sees the newer claim first; the update probe reads the
    older claim as claim A. A first CHANGES is confirmed by a second reading on its
    own purpose, and the second reading's verdict settles it.
    """

    def __init__(self, llm: LLM, older: str, newer: str, *, max_tokens: Mapping[str, int], replica: str) -> None:
        self._llm, self.older, self.newer = llm, older, newer
        self._max_tokens, self._replica = max_tokens, replica
        self._answers: dict[str, object] = {}

    def contradiction(self) -> bool | None:
        if "contradiction" not in self._answers:
            reply = self._llm.ask(
                prompts.contradiction(
                    self.newer, self.older, max_tokens=self._max_tokens[P.CONTRADICTION], replica=self._replica
                )
            )
            self._answers["contradiction"] = replies.verdict(reply)
        return self._answers["contradiction"]  # type: ignore[return-value]

    def update(self) -> str | None:
        if "slot" not in self._answers:
            first = self._reading(confirm=False)
            second = self._reading(confirm=True) if first == CHANGES else None
            self._answers["update_first"] = first
            if first == CHANGES:
                self._answers["update_second"] = second
            self._answers["slot"] = settle(first, second)
        return self._answers["slot"]  # type: ignore[return-value]

    def _reading(self, *, confirm: bool) -> str | None:
        purpose = P.UPDATE_CONFIRM if confirm else P.UPDATE
        reply = self._llm.ask(
            prompts.update(
                self.older, self.newer, confirm=confirm, max_tokens=self._max_tokens[purpose], replica=self._replica
            )
        )
        return replies.update_verdict(reply)

    def answers(self) -> dict[str, object]:
        """What was asked and answered; a probe never asked is absent."""
        return dict(self._answers)
