"""The consolidation contract, enforced by the harness on a real (tiny) backbone."""

from __future__ import annotations

import pytest

from urd.data import calibrate
from urd.harness.runner import run_system
from urd.session.context import Decode
from urd.session.contract import BudgetViolation, check
from urd.systems.base import MemorySystem

DECODE = Decode(max_new_tokens=2)


@pytest.fixture(scope="module")
def episode(urd_config):
    ep = calibrate.t2_episode(urd_config, 0)
    return {**ep, "queries": ep["queries"][:2]}


class Oversized(MemorySystem):
    name = "oversized"

    def consolidate(self, transcript, budget_bytes):
        return b"x" * (budget_bytes + 1)

    def answer(self, fiche, query, header):
        return ""


class Greedy(MemorySystem):
    """Declares more consolidation than the cap allows."""

    name = "greedy"

    def consolidate(self, transcript, budget_bytes):
        self.declare_tokens(10**6)
        return b""

    def answer(self, fiche, query, header):
        return ""


class Sneaky(MemorySystem):
    """Reads the transcript through the backbone but declares nothing."""

    name = "sneaky"

    def consolidate(self, transcript, budget_bytes):
        self.backbone.prefill(self.backbone.tokenizer.encode(transcript))
        return b""

    def answer(self, fiche, query, header):
        return ""


class Diagnostic(Greedy):
    name = "diagnostic"
    out_of_contract = True


def _run(backbone, system_cls, episode, budget=120):
    return run_system(backbone, system_cls(backbone), "t2", [episode], "over", budget, 10, DECODE)


def test_over_budget_fiche_is_a_violation(tiny_backbone, episode):
    with pytest.raises(BudgetViolation, match=r"fiche is 121 bytes, over the 120-byte budget"):
        _run(tiny_backbone, Oversized, episode)


def test_over_token_cap_is_a_violation(tiny_backbone, episode):
    with pytest.raises(BudgetViolation, match=r"declared 1000000 consolidation tokens, over the cap of \d+ \(10 x \d+"):
        _run(tiny_backbone, Greedy, episode)


def test_under_declared_tokens_are_a_violation(tiny_backbone, episode):
    with pytest.raises(BudgetViolation, match=r"declared 0 consolidation tokens but the backbone processed \d+"):
        _run(tiny_backbone, Sneaky, episode)


def test_out_of_contract_runs_and_is_labelled(tiny_backbone, episode):
    records = _run(tiny_backbone, Diagnostic, episode)
    assert len(records) == 2
    assert all(r["out_of_contract"] is True and r["declared_tokens"] == 10**6 for r in records)


def test_check_rejects_non_bytes_and_accepts_exact_budget():
    with pytest.raises(BudgetViolation, match="must return bytes"):
        check("s", 0, "text", 120, 0, 0, 100, 10, False)
    c = check("s", 0, b"x" * 120, 120, 1000, 1000, 100, 10, False)
    assert c.fiche_bytes == 120 and c.token_cap == 1000
    with pytest.raises(BudgetViolation):
        check("s", 0, b"", 120, 1001, 0, 100, 10, False)
