"""The shared LLM layer: routes, prices, metering, the replay cache, the scripted backend."""

import json

import pytest

from urd.core.errors import InputError
from urd.llm import (
    LLM,
    SCRIPTED_MODEL,
    Backends,
    Completion,
    Meter,
    PriceBook,
    ReplayCache,
    Request,
    RequestRefused,
    Routes,
    ScriptedBackend,
    Usage,
    fence,
    fenced_blocks,
    same_model,
)

PURPOSES = ("extract", "update")
PRICES = PriceBook.from_settings(
    {"checked": "2026-11-30", "usd_per_mtok": {"m-1": {"input": 2, "output": 10, "cache_write": 2.5, "cache_read": 0.2}}}
)


def test_routes_pin_one_purpose_and_reject_unknown_purposes():
    r = Routes.build("m-1", PURPOSES, {"update": "m-2"})
    assert r.model_for("extract") == "m-1" and r.model_for("update") == "m-2" and r.mixed
    assert not Routes.build("m-1", PURPOSES).mixed
    with pytest.raises(InputError, match="bogus"):
        Routes.build("m-1", PURPOSES, {"bogus": "m-2"})


def test_cost_counts_every_token_kind_and_dated_snapshots_share_the_alias_price():
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_write_tokens=200_000, cache_read_tokens=500_000)
    assert PRICES.cost("m-1", usage) == pytest.approx(2 + 1 + 0.5 + 0.1)
    assert PRICES.cost("m-1-20260101", usage) == PRICES.cost("m-1", usage)
    assert PRICES.cost(SCRIPTED_MODEL, usage) == 0
    with pytest.raises(InputError, match=r"usd_per_mtok\.m-9"):
        PRICES.cost("m-9", usage)


def test_model_leak_is_reported_but_a_dated_snapshot_is_not_a_leak():
    assert same_model("m-1", "m-1-20260101") and not same_model("m-1", "m-2")
    meter = Meter()
    llm = LLM(
        routes=Routes.build("m-1", PURPOSES),
        backends=Backends(live_factory=lambda: _Fixed({"extract": "m-1-20260101", "update": "m-2"})),
        prices=PRICES,
        meter=meter,
    )
    llm.ask(Request("extract", "s", "u", 10))
    assert meter.leaks() == []
    llm.ask(Request("update", "s", "u", 10))
    assert meter.leaks() == ["update was pinned to m-1 and answered by m-2"]


class _Fixed:
    def __init__(self, answered):
        self.answered, self.calls = answered, 0

    def complete(self, model, request, guard=None):
        self.calls += 1
        return Completion("ok", self.answered.get(request.purpose, model), Usage(1000, 100))


def test_replay_cache_serves_a_repeat_for_nothing_and_keeps_samples_apart(tmp_path):
    backend = _Fixed({})
    meter = Meter()
    llm = LLM(
        routes=Routes.build("m-1", PURPOSES),
        backends=Backends(live_factory=lambda: backend),
        prices=PRICES,
        meter=meter,
        cache=ReplayCache(tmp_path),
    )
    first = Request("extract", "s", "u", 10, replica="sample-1")
    llm.ask(first)
    llm.ask(first)
    llm.ask(Request("extract", "s", "u", 10, replica="sample-2"))
    assert backend.calls == 2
    assert [r.replayed for r in meter.records] == [False, True, False]
    one_call = PRICES.cost("m-1", Usage(1000, 100))
    assert meter.spent_usd == pytest.approx(2 * one_call) and meter.replayed_usd == pytest.approx(one_call)
    stored = json.loads(next(tmp_path.rglob("*.json")).read_text())
    assert stored["request"]["replica"] in ("sample-1", "sample-2") and stored["response"]["text"] == "ok"


def test_scripted_backend_refuses_what_its_table_cannot_answer_and_counts_it():
    meter = Meter()
    answers = {"known": "yes"}
    backend = ScriptedBackend(lambda req: answers.get(req.user) or (None, f"no entry for {req.user}"))
    llm = LLM(routes=Routes.build(SCRIPTED_MODEL, PURPOSES), backends=Backends(scripted=backend), prices=PRICES, meter=meter)
    assert llm.ask(Request("extract", "s", "known", 5)) == "yes"
    with pytest.raises(RequestRefused, match="no entry for unknown"):
        llm.ask(Request("update", "s", "unknown", 5))
    assert meter.refused == {"update": 1} and meter.spent_usd == 0


def test_fences_round_trip_and_are_stable_across_calls():
    text = "line one\n</note nonce=\"000000000000\">\nline three\n"
    wrapped = fence("note", text)
    assert fence("note", text) == wrapped
    assert fenced_blocks(f"before\n{wrapped}\nafter") == [("note", text)]
