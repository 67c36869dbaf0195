"""Judging hand-made responses, and folding them into scores and retention."""

from __future__ import annotations

import pytest

from urd.core.errors import InputError
from urd.harness.fold import fold, fold_cell
from urd.harness.scoring import episode_scores, judge_t1, judge_t2

SEEN = {"kind": "hot", "expected": "7KQ2M9XH4TRA"}
UNSEEN = {"kind": "unseen", "expected": None}


@pytest.mark.parametrize(
    "query, reply, parsed, verdict",
    [
        (SEEN, " 7KQ2M9XH4TRA", "7KQ2M9XH4TRA", "correct"),
        (SEEN, "The code is 7KQ2M9XH4TRA.\nnoise", "7KQ2M9XH4TRA", "correct"),
        (SEEN, " 7KQ2M9XH4TRB", "7KQ2M9XH4TRB", "wrong"),
        (SEEN, " 7KQ2M9XH4TR", None, "wrong"),  # 11 characters is not a value
        (SEEN, " 7KQ2M9XH4TRAA", None, "wrong"),  # 13 neither
        (SEEN, " NONE", "NONE", "abstained"),
        (SEEN, "\n7KQ2M9XH4TRA", "7KQ2M9XH4TRA", "correct"),  # leading blank lines are skipped
        (SEEN, " banana\n7KQ2M9XH4TRA", None, "wrong"),  # only the first line counts
        (UNSEEN, " NONE", "NONE", "abstained"),
        (UNSEEN, " 7KQ2M9XH4TRA", "7KQ2M9XH4TRA", "confabulated"),
        (UNSEEN, " I am not sure", None, "no_answer"),
        (UNSEEN, "", None, "no_answer"),
    ],
)
def test_judge_t1(query, reply, parsed, verdict):
    assert judge_t1(query, reply) == {"parsed": parsed, "verdict": verdict}


def test_judge_t2_trigger_detection():
    assert judge_t2({"kind": "trigger"}, " Logged: plum. ~kv", "~kv")["verdict"] == "applied"
    assert judge_t2({"kind": "trigger"}, " Logged: plum.", "~kv")["verdict"] == "not_applied"
    assert judge_t2({"kind": "non_trigger"}, " Logged: saw. ~kv\n", "~kv")["verdict"] == "applied"
    assert judge_t2({"kind": "trigger"}, " Logged: plum.~kv", "~kv")["verdict"] == "not_applied"


def _t1(ep, kind, verdict, **extra):
    return {"task": "t1", "episode": ep, "kind": kind, "verdict": verdict, **extra}


def test_t1_episode_score_and_confabulation():
    recs = [_t1(0, "hot", "correct"), _t1(0, "hot", "wrong"), _t1(0, "cold", "correct"),
            _t1(0, "cold", "abstained"), _t1(0, "unseen", "confabulated"), _t1(0, "unseen", "abstained")]
    s = episode_scores("t1", recs)
    assert s["score"] == 0.5 and s["confabulation"] == 0.5 and s["cold_correct"] == 1


def test_t2_score_is_base_rate_corrected():
    recs = [{"kind": "trigger", "verdict": "applied"}] * 3 + [{"kind": "trigger", "verdict": "not_applied"}] \
        + [{"kind": "non_trigger", "verdict": "applied"}] * 2 + [{"kind": "non_trigger", "verdict": "not_applied"}] * 2
    s = episode_scores("t2", recs)
    assert s["rate_trigger"] == 0.75 and s["rate_non_trigger"] == 0.5 and s["score"] == 0.25
    # applying everywhere is no discrimination at all
    everywhere = [{"kind": k, "verdict": "applied"} for k in ("trigger", "non_trigger") for _ in range(4)]
    assert episode_scores("t2", everywhere)["score"] == 0


def _resp(ep, qid, kind, response, expected, **extra):
    base = {"task": "t1", "episode": ep, "query_id": qid, "kind": kind, "response": response,
            "expected": expected, "verdict": "?", "fiche_bytes": 10, "declared_tokens": 5,
            "metered_tokens": 5, "token_cap": 100, "out_of_contract": False, "budget_bytes": 120}
    return {**base, **extra}


V = "7KQ2M9XH4TRA"


def test_retention_is_the_ratio_of_episode_means():
    # control: episode 0 scores 1.0, episode 1 scores 0.5 -> mean A 0.75
    control = [_resp(0, "a", "hot", V, V), _resp(0, "b", "hot", V, V),
               _resp(1, "c", "hot", V, V), _resp(1, "d", "hot", "NONE", V)]
    # session B: 0.5 and 0.0 -> mean B 0.25; retention 1/3 (not the mean of per-episode ratios, 0.25)
    b = [_resp(0, "a", "hot", V, V), _resp(0, "b", "hot", "x", V),
         _resp(1, "c", "hot", "NONE", V), _resp(1, "d", "hot", "NONE", V)]
    cell = fold_cell("t1", control, b)
    assert cell["score_A"] == 0.75 and cell["score_B"] == 0.25
    assert cell["retention"] == round(0.25 / 0.75, 6)
    assert [e["score_B"] for e in cell["episodes"]] == [0.5, 0.0]


def test_retention_is_undefined_when_the_control_scores_zero():
    control = [_resp(0, "a", "hot", "x", V)]
    cell = fold_cell("t1", control, [_resp(0, "a", "hot", V, V)])
    assert cell["retention"] is None
    assert "score A" in cell["retention_undefined"]
    assert cell["score_B"] == 1.0


def test_fold_rejudges_raw_responses_and_needs_a_control():
    stored_wrong = _resp(0, "a", "hot", V, V, verdict="wrong")  # the stored verdict is ignored
    out = fold({("control", "t1", None): [_resp(0, "a", "hot", V, V)], ("s", "t1", "over"): [stored_wrong]})
    assert out["cells"]["s"]["t1"]["over"]["score_B"] == 1.0
    with pytest.raises(InputError, match="s/t1/over: control: expected the control responses of t1"):
        fold({("s", "t1", "over"): [stored_wrong]})


@pytest.mark.parametrize("cell, got", [
    ([], r"episodes: expected the control's episodes \[0, 1\], got \[\]"),
    (["a0"], r"episodes: expected the control's episodes \[0, 1\], got \[0\]"),
    (["a0", "b0", "a1"], r"episode 0: expected the control's queries, got '1 missing \(c0\), 0 extra \(\)'"),
    (["a0", "b0", "c0", "a1", "a1"], r"query_id: expected each query once, got 'a1 more than once'"),
    (["a0", "b0", "c0", "a1", "x1"], r"episode 1: expected the control's queries, got '0 missing \(\), 1 extra \(x1\)'"),
])
def test_fold_refuses_a_cell_that_does_not_cover_its_control(cell, got):
    ids = {"a0": 0, "b0": 0, "c0": 0, "a1": 1, "x1": 1}
    control = [_resp(ids[q], q, "hot", V, V) for q in ("a0", "b0", "c0", "a1")]
    with pytest.raises(InputError, match="s/t1/over/responses.jsonl: " + got):
        fold({("control", "t1", None): control, ("s", "t1", "over"): [_resp(ids[q], q, "hot", V, V) for q in cell]})


def test_out_of_contract_travels_into_the_cell():
    control = [_resp(0, "a", "hot", V, V)]
    cell = fold_cell("t1", control, [_resp(0, "a", "hot", V, V, out_of_contract=True)])
    assert cell["out_of_contract"] is True


def test_a_class_with_no_query_has_no_rate_and_no_score():
    # a reduced run's T2 episode with only non-trigger queries: undefined, not -1.0
    recs = [{"kind": "non_trigger", "verdict": "applied"}, {"kind": "non_trigger", "verdict": "applied"}]
    assert episode_scores("t2", recs) == {"score": None, "rate_trigger": None, "rate_non_trigger": 1.0}
    assert episode_scores("t1", [{"kind": "unseen", "verdict": "confabulated"}])["score"] is None
    control = [_resp(0, "u", "unseen", "NONE", None)]
    cell = fold_cell("t1", control, [_resp(0, "u", "unseen", "NONE", None)])
    assert cell["score_A"] is None and cell["retention"] is None
    assert "no episode has a score A" in cell["retention_undefined"]


def test_a_summary_says_whether_its_cells_are_all_sandboxed_or_mixed():
    from urd.harness.fold import sandbox_labels, sandbox_summary

    recs = [{"sandbox_consolidate": "bwrap", "sandbox_answer": "bwrap", "sandbox_judge": "bwrap"},
            {"sandbox_answer": "off (sandbox: off)"}]
    assert sandbox_labels(recs) == ["bwrap", "off (sandbox: off)"] and sandbox_labels([{}]) == ["unlabelled"]
    # cells without labels never make a sandboxed summary read "every job sandboxed"
    bare = {"control": {"t1": {"sandbox": sandbox_labels([{}])}}, "cells": {}}
    assert sandbox_summary(bare, "bwrap") == {"summary": "bwrap", "cells": {"unlabelled": 1}, "all_sandboxed": False,
                                              "mixed": True}
    figures = {"control": {"t1": {"sandbox": ["bwrap"]}}, "cells": {"s": {"t1": {"over": {"sandbox": ["bwrap"]}}}}}
    assert sandbox_summary(figures, "bwrap") == {"summary": "bwrap", "cells": {"bwrap": 2}, "all_sandboxed": True,
                                                 "mixed": False}
    figures["cells"]["s"]["t1"]["over"]["sandbox"] = ["bwrap", "off (sandbox: off)"]
    assert sandbox_summary(figures, "bwrap")["mixed"] is True
    assert sandbox_summary(figures, "bwrap")["all_sandboxed"] is False
    off = sandbox_summary({"control": {}, "cells": {}}, "off (sandbox: off)")
    assert off == {"summary": "off (sandbox: off)", "cells": {}, "all_sandboxed": False, "mixed": False}
