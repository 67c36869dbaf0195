"""The three gates, the order they ask in, and the past-value marker."""

import json

import pytest
from conftest import REPO

from urd.stores.reference.gates import BEFORE_1_187, CHANGES_ONLY, PRODUCTION, RecordedAnswers, retires, settle
from urd.stores.reference.markers import has_past_value_marker

PAIRS = REPO / "src/urd/data/agentmem/pairs"


class Asked:
    """Answers that record which probes a gate asked for."""

    def __init__(self, contradiction, slot):
        self._c, self._s, self.asked = contradiction, slot, []

    def contradiction(self):
        self.asked.append("contradiction")
        return self._c

    def update(self):
        self.asked.append("update")
        return self._s


@pytest.mark.parametrize(
    "gate, older, contradiction, slot, retired, asked",
    [
        (PRODUCTION, "The user lives in Porto.", False, "CHANGES", True, ["update"]),
        (PRODUCTION, "The user lives in Porto.", True, "DIFFERENT", False, ["update"]),
        (PRODUCTION, "The user lived in Porto until 2024.", False, "CHANGES", False, ["update", "contradiction"]),
        (PRODUCTION, "The user lived in Porto until 2024.", True, "CHANGES", True, ["update", "contradiction"]),
        (CHANGES_ONLY, "The user lived in Porto until 2024.", False, "CHANGES", True, ["update"]),
        (CHANGES_ONLY, "The user lives in Porto.", True, "FIXED", False, ["update"]),
        (BEFORE_1_187, "The user lives in Porto.", False, "CHANGES", False, ["contradiction"]),
        (BEFORE_1_187, "The user lives in Porto.", True, "CHANGES", True, ["contradiction", "update"]),
        (BEFORE_1_187, "The user lives in Porto.", None, "CHANGES", False, ["contradiction"]),
        (PRODUCTION, "The user lives in Porto.", None, None, False, ["update"]),
    ],
)
def test_gate_decisions_and_the_probes_they_ask(gate, older, contradiction, slot, retired, asked):
    answers = Asked(contradiction, slot)
    assert retires(gate, older, answers) is retired
    assert answers.asked == asked


def test_recorded_samples_score_through_the_same_rule():
    sample = {"contradiction": False, "slot": "CHANGES"}
    assert retires(PRODUCTION, "x", RecordedAnswers(sample)) and not retires(BEFORE_1_187, "x", RecordedAnswers(sample))
    with pytest.raises(ValueError, match="unknown gate"):
        retires("nightly", "x", RecordedAnswers(sample))


def test_a_first_changes_stands_only_when_the_second_reading_agrees():
    assert settle("CHANGES", "CHANGES") == "CHANGES"
    assert settle("CHANGES", "FIXED") == "FIXED"
    assert settle("CHANGES", None) is None
    assert settle("DIFFERENT", None) == "DIFFERENT"


def _rows(name):
    return json.loads((PAIRS / name).read_text())["rows"]


@pytest.mark.parametrize(
    "text, marked",
    [
        ("The user lived in Rotterdam until 2024.", True),
        ("The user worked at Dunmore Print until June 2025.", True),
        ("Until 2023 the user commuted by train.", True),
        ("Back in 2021 the app ran on a single VPS.", True),
        ("As of 2026-02-10, when the user lived in Porto, the user took the tram to work.", True),
        ("The user is renting a room in Lyon until the end of May (noted 2026-02-10).", False),
        ("The user lives in Porto, as of 2026-01-08.", False),
        ("In 2024 the user's rent was 610 euros a month.", False),
    ],
)
def test_the_marker_catches_stated_ends_and_only_those(text, marked):
    assert has_past_value_marker(text) is marked


def test_the_registered_sets_agree_with_the_marker_where_their_classes_say_so():
    marked = [r for r in _rows("past_marker_heldout.json") if r["class"] == "past-marked"]
    unmarked = [r for r in _rows("past_marker_heldout.json") if r["class"] == "past-unmarked"]
    assert len(marked) == 9 and all(has_past_value_marker(r["older"]) for r in marked)
    assert len(unmarked) == 3 and not any(has_past_value_marker(r["older"]) for r in unmarked)
    for name in ("development.json", "heldout.json", "past_values.json", "past_marker_heldout.json"):
        for r in _rows(name):
            if r["expected"] == "changes":
                assert not has_past_value_marker(r["older"]), r["id"]
