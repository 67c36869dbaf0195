"""Every check clause of versions 1 and 2 on hand-made stores, and the registry's refusals."""

import hashlib
import json

import pytest
from conftest import REPO

from urd.agentmem.checks import NotRescorable, evaluate


def claim(cid, content, note, *, status="ACTIVE", restatement=False, valid_until=None):
    return {"id": cid, "content": content, "status": status, "sources": [note], "restatement": restatement, "valid_until": valid_until}


def supersession(retired, winner):
    return ("UPDATE_SUPERSESSION", {"retired_id": retired, "winner_id": winner})


def kept_back(original, retired, other, restatement):
    return (
        "DEPENDENT_CLAIM_EXAMINED",
        {"particle_id": original, "retired_id": retired, "outcome": "unrestated", "other_id": other,
         "why": f"the restatement contradicts {other}", "restatement": restatement},
    )


HOME, TRIP, MOVE = "session-04.md", "session-11.md", "session-12-moved.md"
MOVED = claim("c9", "The user moved to Mumbai, as stated in a session dated 2026-10-09.", MOVE)
WALK = "Kamla's Kitchen is a ten-minute walk from the user's flat in Lajpat Nagar, Delhi."
WALK_RESTATED = "Kamla's Kitchen was a ten-minute walk from the user's flat in Lajpat Nagar, Delhi, where the user lived, as of 2026-09-04."


def good_midtrip_move():
    rows = [
        claim("c1", "The user lives in Lajpat Nagar, Delhi.", HOME, status="RETIRED"),
        claim("c2", WALK, HOME, status="RETIRED"),
        claim("c5", "The user is in Mumbai for a week for work, as of 2026-10-08.", TRIP, status="RETIRED"),
        MOVED,
        claim("c10", WALK_RESTATED, HOME, restatement=True),
    ]
    return rows, [supersession("c1", "c9"), supersession("c5", "c9")]


def move(rows, events=(), case="mid-trip", version=2):
    return evaluate(rows, list(events), trip_alone=False, case=case, version=version)


def test_a_clean_move_passes_both_versions():
    rows, events = good_midtrip_move()
    assert move(rows, events)["pass"] and move(rows, events, version=1)["pass"]


def test_i_a_current_delhi_residence_or_flight_fails():
    rows, events = good_midtrip_move()
    for text in ("The user lives in Lajpat Nagar, Delhi.", "The user flies back to Delhi on 2026-10-15.", "The user's residence is in Delhi."):
        got = move([*rows, claim("c20", text, HOME)], events)
        assert not got["pass"] and got["i_delhi_residence_or_flight"] == [text]


def test_i_a_restatement_must_be_dated_and_in_the_past_tense():
    rows, events = good_midtrip_move()
    undated = claim("c21", "When the user lived in Delhi, the user flew back home to Delhi often.", TRIP, restatement=True)
    got = move([*rows, undated], events)
    assert not got["pass"] and got["i_undated_restatement"] == [undated["content"]]
    dated = claim("c22", "As of 2026-10-08, the user was due to fly back home to Delhi on 2026-10-15.", TRIP, restatement=True)
    assert move([*rows, dated], events)["pass"]


def test_the_seeds_failing_case_a_kept_back_restatement_leaves_the_old_flat_current():
    """The re-anchor check judged the restated walk to contradict another standing claim
    about the restaurant, so the original sentence stayed ACTIVE: the move fails on (i)."""
    rows, events = good_midtrip_move()
    rows = [r for r in rows if r["id"] not in ("c2", "c10")] + [claim("c2", WALK, HOME)]
    events = [*events, kept_back("c2", "c1", "c3", WALK_RESTATED)]  # c3: another claim, not the winner
    for version in (1, 2):
        got = move(rows, events, version=version)
        assert not got["pass"]
        assert got["i_delhi_residence_or_flight"] == [WALK]
        assert got["ii_kept_back_by_winner"] == []


def test_ii_a_restatement_kept_back_for_contradicting_the_winner_fails():
    rows, events = good_midtrip_move()
    got = move(rows, [*events, kept_back("c2", "c1", "c9", WALK_RESTATED)])
    assert not got["pass"] and got["ii_kept_back_by_winner"] == [WALK_RESTATED]


def test_ii_every_restatement_must_stay_active():
    rows, events = good_midtrip_move()
    rows[-1] = {**rows[-1], "status": "RETIRED"}
    got = move(rows, events)
    assert not got["pass"] and got["ii_restatement_not_active"] == [WALK_RESTATED]


def test_iii_the_week_read_as_current_fails_unless_dated_history():
    rows, events = good_midtrip_move()
    for text in ("The user is visiting Mumbai.", "The user is temporarily in Mumbai.", "The user is on a week-long stay in Mumbai."):
        got = move([*rows, claim("c30", text, TRIP)], events)
        assert not got["pass"] and got["iii_trip_current"] == [text]
    history = claim("c31", "As of 2026-10-08, the user was on a work trip to Mumbai.", TRIP, restatement=True)
    assert move([*rows, history], events)["pass"]


def test_iii_an_end_date_on_or_before_the_move_counts_in_the_readers_case_only():
    week = "The user is in Mumbai for a week, as of 2026-09-01."
    reader = [
        claim("c1", "The user lives in Delhi.", "reader-01.md", status="RETIRED"),
        claim("c2", week, "reader-01.md", valid_until="2026-09-08"),
        claim("c3", "The user moved to Mumbai, as stated in a session dated 2026-10-01.", "reader-02-moved.md"),
    ]
    assert move(reader, [supersession("c1", "c3")], case="reader")["pass"]
    open_ended = [*reader[:1], {**reader[1], "valid_until": None}, reader[2]]
    got = move(open_ended, [supersession("c1", "c3")], case="reader")
    assert not got["pass"] and got["iii_trip_current"] == [week]
    rows, events = good_midtrip_move()
    trip = claim("c40", "The user is in Mumbai for a week for work.", TRIP, valid_until="2026-10-09")
    assert not move([*rows, trip], events)["pass"]  # mid-trip: an end date does not count


def test_iv_the_move_must_be_kept():
    rows, events = good_midtrip_move()
    got = move([r for r in rows if r["id"] != "c9"], events)
    assert not got["pass"] and got["missing"] == ["iv_move_kept"]


def test_trip_alone_needs_the_home_and_the_trip_current():
    home = claim("c1", "The user lives in Lajpat Nagar, Delhi.", HOME)
    trip = claim("c2", "The user is in Mumbai for a week for work, as of 2026-10-08.", TRIP)
    alone = lambda rows, v=2: evaluate(rows, [], trip_alone=True, case="mid-trip", version=v)
    assert alone([home, trip])["pass"]
    assert alone([trip])["missing"] == ["a_home_in_delhi"]
    assert alone([home])["missing"] == ["b_trip_current"]
    restated_trip = {**trip, "restatement": True}
    assert alone([home, restated_trip])["missing"] == ["b_trip_current"]
    flat_only = claim("c3", "The user's flat is in Lajpat Nagar, Delhi.", HOME)
    assert alone([flat_only, trip])["pass"] and not alone([flat_only, trip], v=1)["pass"]


def test_one_claim_may_satisfy_both_halves_in_the_readers_case():
    both = claim("c1", "The user lives in Delhi but is in Mumbai for a week.", "reader-01.md")
    assert evaluate([both], [], trip_alone=True, case="reader")["pass"]


def test_version_1_reads_only_its_own_words():
    rows, events = good_midtrip_move()
    resides = claim("c50", "The user resides in Delhi.", HOME)  # a v2 residence word only
    assert move([*rows, resides], events, version=1)["pass"] and not move([*rows, resides], events)["pass"]
    work_trip = claim("c51", "The user is on a work trip in Mumbai.", TRIP)
    assert not move([*rows, work_trip], events, version=1)["pass"]


def test_a_version_refuses_what_it_does_not_define():
    with pytest.raises(NotRescorable, match="does not define the reader case"):
        evaluate([], [], trip_alone=False, case="reader", version=1)
    with pytest.raises(NotRescorable, match="valid_until"):
        evaluate([{"content": "x", "status": "ACTIVE", "sources": [], "restatement": False}], [], trip_alone=True, case="reader")
    with pytest.raises(NotRescorable, match="does not exist"):
        evaluate([], [], trip_alone=True, case="reader", version=4)


def test_shipped_versions_are_never_edited():
    pinned = json.loads((REPO / "calibration/agentmem/checks.json").read_text())
    assert pinned["current"] == 3
    for version, entry in [*pinned["versions"].items(), *(("urd " + v, e) for v, e in pinned["urd"]["versions"].items())]:
        digest = hashlib.sha256((REPO / entry["file"]).read_bytes()).hexdigest()
        assert digest == entry["sha256"], f"checks version {version} was edited: add a new version instead"


def test_version_3_scores_a_mid_trip_store_saved_without_end_dates_as_version_2_would():
    """The mid-trip case never counts an end date: version 2 refuses a store without the field,
    version 3 scores it, and on every store both can read the two agree."""
    rows, events = good_midtrip_move()
    week = claim("c30", "The user is in Mumbai for a week for work.", TRIP)
    for extra, passes in (([], True), ([week], False)):
        bare = [{k: v for k, v in r.items() if k != "valid_until"} for r in [*rows, *extra]]
        with pytest.raises(NotRescorable, match="valid_until"):
            move(bare, events, version=2)
        assert move(bare, events, version=3)["pass"] is passes
        assert move([*rows, *extra], events, version=3) == move([*rows, *extra], events, version=2)
    # the reader's case counts an end date, so version 3 still needs the field there
    with pytest.raises(NotRescorable, match="valid_until"):
        evaluate([{"content": "x", "status": "ACTIVE", "sources": [], "restatement": False}], [], trip_alone=True,
                 case="reader", version=3)
    lapsed = claim("c31", "The user is in Mumbai for a week.", "reader-01.md", valid_until="2026-09-08")
    reader_rows = [claim("c1", "The user lives in Mumbai.", "reader-02-moved.md"), lapsed]
    assert move(reader_rows, case="reader", version=3) == move(reader_rows, case="reader", version=2)
