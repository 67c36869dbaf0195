"""The claim store and note ingestion: one store per run, the reading clock, the pairing."""

from datetime import date

import pytest
from conftest import REPO

from urd.core.errors import DigestMismatch, InputError
from urd.data.agentmem.cases import CASES, load_note, verify_notes
from urd.stores.reference.claims import ClaimStore
from urd.stores.reference.ingest import keep_end_date, pair_partners


def test_one_store_per_path_and_only_active_claims_retire(tmp_path):
    store = ClaimStore.create(tmp_path / "run" / "store.sqlite")
    store.add_note("n.md", date(2026, 1, 1), "0" * 64, "# 2026-01-01\n")
    a = store.add_claim("The user lives in Porto.", subjects=["user"], source_note="n.md", asserted=date(2026, 1, 1), read_at=date(2026, 1, 1))
    b = store.add_claim("The user moved to Lisbon.", subjects=["user"], source_note="n.md", asserted=date(2026, 1, 1), read_at=date(2026, 1, 1))
    store.retire(a, "updated", by=b)
    with pytest.raises(InputError, match="an ACTIVE claim"):
        store.retire(a, "updated", by=b)
    rows = store.rows()
    assert [(r["id"], r["status"], r["reason"], r["retired_by"]) for r in rows] == [
        ("c1", "RETIRED", "updated", "c2"),
        ("c2", "ACTIVE", None, None),
    ]
    store.close()
    with pytest.raises(InputError, match="one store per run"):
        ClaimStore.create(tmp_path / "run" / "store.sqlite")
    with ClaimStore.open_read_only(tmp_path / "run" / "store.sqlite") as again:
        assert [c.content for c in again.active()] == ["The user moved to Lisbon."]


def test_an_end_date_is_kept_only_while_it_is_in_the_future_at_reading_time():
    week_end = date(2026, 9, 8)
    assert keep_end_date(week_end, date(2026, 9, 1)) == week_end
    assert keep_end_date(week_end, date(2026, 9, 8)) is None
    assert keep_end_date(week_end, date(2026, 10, 20)) is None
    assert keep_end_date(None, date(2026, 9, 1)) is None


def test_a_new_claim_is_probed_against_earlier_notes_claims_sharing_a_subject(tmp_path):
    store = ClaimStore.create(tmp_path / "s.sqlite")
    for name in ("a.md", "b.md"):
        store.add_note(name, date(2026, 1, 1), "0" * 64, "x")
    add = lambda text, subjects, note: store.claim(
        store.add_claim(text, subjects=subjects, source_note=note, asserted=date(2026, 1, 1), read_at=date(2026, 1, 1))
    )
    home = add("The user lives in Porto.", ["user", "porto"], "a.md")
    diet = add("The user is vegetarian.", ["user"], "a.md")
    cafe = add("The cafe opens at eight.", ["cafe"], "a.md")
    sibling = add("The user is in Lisbon for a week.", ["user", "lisbon"], "b.md")
    new = add("The user moved to Lisbon.", ["user", "lisbon"], "b.md")
    existing = [home, diet, cafe, sibling]
    assert [c.id for c in pair_partners(new, existing, 8)] == [home.id, diet.id]
    assert [c.id for c in pair_partners(new, existing, 1)] == [home.id]


def test_notes_carry_their_heading_date_and_match_the_registry():
    for case in CASES.values():
        for name in case.notes:
            note = load_note(name)
            assert note.text.splitlines()[0].startswith("# ")
    notes = verify_notes(REPO / "calibration/agentmem", CASES["mid-trip"].notes)
    assert [n.date for n in notes] == [date(2026, 9, 4), date(2026, 10, 8), date(2026, 10, 9)]
    assert CASES["reader"].move_date == load_note("reader-02-moved.md").date


def test_a_note_whose_bytes_differ_from_the_registry_is_refused(tmp_path):
    registry = (REPO / "calibration/agentmem/notes.json").read_text().replace(
        load_note("reader-01.md").sha256, "f" * 64
    )
    (tmp_path / "notes.json").write_text(registry)
    with pytest.raises(DigestMismatch, match="reader-01.md"):
        verify_notes(tmp_path, ("reader-01.md",))
