"""The live path end to end, offline: the real anthropic SDK against a fake Messages API
(an httpx2 mock transport answering from the scripted table with token usage).

Covers metering and pricing, the replay cache, the spend ceiling, the model-leak rule,
the confirmation a live run needs, SDK retries inside a run, and that the API key is
never written anywhere.
"""


import pytest
from conftest import REPO
from fake_messages_api import FakeMessagesAPI

from urd.agentmem import trip_vs_move, update_gate
from urd.agentmem.runtime import NotConfirmed
from urd.core.errors import InputError
from urd.core.io import atomic_write_json
from urd.llm import fenced_blocks
from urd.stores import settings as settings_mod

KEY = "sk-ant-sentinel-key-0123456789-never-in-a-file"
MODEL = "claude-sonnet-5-5"
SMALL = {"move": 1, "trip-alone": 1}
QUIET = {"log": lambda line: None}


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def make_settings(tmp_path, **changes):
    base = settings_mod.load(REPO / "config/agentmem.yaml")
    return settings_mod.with_overrides(
        base, {"work_dir": str(tmp_path / "work"), "calibration_dir": str(REPO / "calibration/agentmem"), **changes}
    )


def run(tmp_path, api, yes=True, **changes):
    return trip_vs_move.run_suite(
        "reader", MODEL, make_settings(tmp_path, **changes), runs=SMALL, yes=yes, http_client=api.client(), **QUIET
    )


def test_a_live_run_is_metered_priced_and_replayed_for_nothing(tmp_path, key):
    api = FakeMessagesAPI()
    first = run(tmp_path, api)
    assert first["arm"] == "live" and all(r["passed"] for r in first["runs"])
    assert first["verdict"]["bar_met"] is None  # 1+1 runs is not the protocol: no bar stated
    rows = [row for r in first["runs"] for row in r["usage"]["by_purpose"]]
    assert {row["model"] for row in rows} == {MODEL}
    assert {row["purpose"] for row in rows} >= {"extract", "update", "update_confirm", "reanchor"}
    priced = sum(
        (row["input_tokens"] * 2.0 + row["output_tokens"] * 10.0 + row["cache_write_tokens"] * 2.5) / 1e6 for row in rows
    )
    assert first["spend"]["measured_usd"] == pytest.approx(priced, abs=1e-5) and priced > 0
    assert sum(r["usage"]["calls"] for r in first["runs"]) == len(api.requests)

    assert first["spend"]["ledger_usd"] == pytest.approx(priced, abs=1e-5)

    # The same target again: nothing is sent, the ledger does not grow, and the report is the
    # first one (the spend is the target's, paid once).
    ledgers = sorted((tmp_path / "work" / "ledgers").rglob("*.jsonl"))
    before = [p.read_bytes() for p in ledgers]
    api2 = FakeMessagesAPI()
    again = run(tmp_path, api2)
    assert api2.requests == [] and [p.read_bytes() for p in ledgers] == before
    assert again == first

    # Another target (its ledger gone) reads the same cache: replayed, for nothing.
    import shutil

    shutil.rmtree(tmp_path / "work" / "ledgers")
    other = run(tmp_path, FakeMessagesAPI())
    assert other["spend"]["measured_usd"] == 0 and other["spend"]["ledger_usd"] == 0
    assert other["spend"]["replayed_usd"] == pytest.approx(first["spend"]["measured_usd"])
    assert [r["checks"] for r in other["runs"]] == [r["checks"] for r in first["runs"]]


def test_sdk_retries_on_429_and_529_inside_a_run(tmp_path, key):
    api = FakeMessagesAPI(fail_first=[429, 529])
    report = run(tmp_path, api)
    assert all(r["passed"] for r in report["runs"])
    assert len(api.requests) == sum(r["usage"]["calls"] for r in report["runs"]) + 2


def test_the_ceiling_stops_a_run_before_a_call_that_could_pass_it(tmp_path, key):
    api = FakeMessagesAPI()
    report = run(tmp_path, api, **{"spend.max_usd_per_run": 0.000001})
    assert api.requests == []  # not even the first call could fit under it
    for r in report["runs"]:
        assert r["passed"] is None and "stopped before the next extract call" in r["incomplete"]
        assert "past the ceiling US$1e-06" in r["incomplete"] and r["usage"]["spent_usd"] == 0
    assert report["verdict"]["incomplete"] == 2 and report["spend"]["ceiling_usd_per_run"] == 0.000001
    # a ceiling some calls fit under: the move run (US$0.0139 uncapped) stops inside consolidation,
    # before a call whose worst case would not fit, with its spend under the ceiling
    capped = run(tmp_path / "capped", FakeMessagesAPI(), **{"spend.max_usd_per_run": 0.05})
    move = capped["runs"][0]
    assert move["incomplete"].startswith("consolidate: stopped before the next reanchor call")
    assert 0 < move["usage"]["spent_usd"] <= 0.05


def test_a_call_answered_by_another_model_marks_the_run_invalid(tmp_path, key):
    leak = FakeMessagesAPI(answered_model=lambda user: "claude-sonnet-4-6" if any(l == "note" for l, _ in fenced_blocks(user)) else MODEL)
    report = run(tmp_path, leak)
    for r in report["runs"]:
        assert r["passed"] is None and r["invalid"] == [f"extract was pinned to {MODEL} and answered by claude-sonnet-4-6"]
    assert report["verdict"]["invalid"] == 2 and report["verdict"]["bar_met"] is None


def test_a_live_run_needs_confirmation_before_any_call(tmp_path, key):
    api = FakeMessagesAPI()
    with pytest.raises(NotConfirmed, match="confirm_live"):
        run(tmp_path, api, yes=False)
    assert api.requests == []
    confirmed = run(tmp_path, api, yes=False, **{"spend.confirm_live": "true"})
    assert all(r["passed"] for r in confirmed["runs"])


def test_update_gate_live_path_and_its_ceiling(tmp_path, key):
    api = FakeMessagesAPI()
    s = make_settings(tmp_path, **{"llm.replay_cache": False})
    report = update_gate.run_suite(MODEL, s, yes=True, http_client=api.client(), **QUIET)
    assert len(api.requests) == report["usage"]["calls"]
    assert report["verdict"]["bars_met"] is True and report["spend"]["measured_usd"] > 0
    capped = update_gate.run_suite(
        MODEL,
        make_settings(tmp_path / "b", **{"spend.max_usd_update_gate": 0.0001, "llm.replay_cache": False}),
        yes=True, http_client=FakeMessagesAPI().client(), **QUIET,
    )
    assert capped["incomplete"].startswith("stopped before") and capped["verdict"]["bars_met"] is None
    assert any(not s["complete"] and s["scores"] is None for s in capped["sets"].values())


def test_update_gate_in_message_batches_asks_the_same_calls_at_half_the_price(tmp_path, key):
    plain_api, batch_api = FakeMessagesAPI(), FakeMessagesAPI()
    plain = update_gate.run_suite(MODEL, make_settings(tmp_path / "a", **{"llm.replay_cache": False}), samples=1, yes=True,
                                  http_client=plain_api.client(), **QUIET)
    batched = update_gate.run_suite(
        MODEL, make_settings(tmp_path / "b", **{"llm.batches": True, "llm.batch_poll_s": 0}), samples=1, yes=True,
        http_client=batch_api.client(), **QUIET,
    )
    singles = [r for r in batch_api.requests if r.url.path == "/v1/messages"]
    creates = [r for r in batch_api.requests if r.method == "POST" and r.url.path == "/v1/messages/batches"]
    assert singles == [] and len(creates) == 2  # readings first, then the confirmations they call for
    assert batched["verdict"] == plain["verdict"] and batched["usage"]["calls"] == plain["usage"]["calls"]
    assert batched["spend"]["measured_usd"] == pytest.approx(plain["spend"]["measured_usd"] / 2, abs=2e-6)  # rounded to 6 places
    assert all(row["batched"] for row in batched["usage"]["by_purpose"])
    # a rerun replays every call from the cache: no batch, no call
    again_api = FakeMessagesAPI()
    update_gate.run_suite(MODEL, make_settings(tmp_path / "b", **{"llm.batches": True, "llm.batch_poll_s": 0}), samples=1,
                          yes=True, http_client=again_api.client(), **QUIET)
    assert again_api.requests == []


def test_the_key_is_never_written_to_any_output_log_cache_or_record(tmp_path, key, capfd):
    report = run(tmp_path, FakeMessagesAPI(fail_first=[529]))
    atomic_write_json(tmp_path / "report.json", report)
    update_gate.run_suite(MODEL, make_settings(tmp_path), samples=1, yes=True, http_client=FakeMessagesAPI().client())
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any("llm-cache" in str(p) for p in written) and any(p.name == "store.sqlite" for p in written)
    for path in written:
        assert KEY.encode() not in path.read_bytes(), path
    out, err = capfd.readouterr()
    assert KEY not in out and KEY not in err


def test_a_live_report_becomes_the_usage_profile_the_next_estimate_uses(tmp_path, key):
    from urd.agentmem import profile
    from urd.agentmem.runtime import routes_for


    report = run(tmp_path, FakeMessagesAPI())
    measured = profile.merge({}, report, "report.json")
    s = make_settings(tmp_path)
    est = trip_vs_move.estimate(s, routes_for(MODEL, s), "reader", gate="production", runs={"move": 3, "trip-alone": 2}, profile=measured)
    per_run = {r["variant"]: sum(row["list_cost_usd"] for row in r["usage"]["by_purpose"]) for r in report["runs"]}
    assert est.source == "profile"
    assert est.usd == pytest.approx(3 * per_run["move"] + 2 * per_run["trip-alone"], rel=1e-6)
    bound = trip_vs_move.estimate(s, routes_for(MODEL, s), "reader", gate="production", runs={"move": 3, "trip-alone": 2})
    assert est.usd < bound.usd
    with pytest.raises(Exception, match="every run complete"):
        profile.merge({}, run(tmp_path / "c", FakeMessagesAPI(), **{"spend.max_usd_per_run": 0.000001}), "capped.json")


def test_a_purpose_pinned_to_another_model_is_named_and_states_no_bar(tmp_path, key):
    report = trip_vs_move.run_suite(
        "reader", MODEL, make_settings(tmp_path), pins={"reanchor": "claude-sonnet-4-6"}, yes=True,
        http_client=FakeMessagesAPI().client(), **QUIET,
    )
    assert report["mixed"] and report["purposes"]["reanchor"] == "claude-sonnet-4-6" and report["purposes"]["extract"] == MODEL
    assert all(r["passed"] and r["invalid"] is None for r in report["runs"])
    assert report["verdict"]["bar_met"] is None and "more than one model" in report["verdict"]["bar_note"]


def test_a_store_that_uses_no_model_runs_live_without_confirmation_and_under_a_zero_ceiling(tmp_path, key):
    from urd.agentmem.runtime import FREE_REMARK

    api = FakeMessagesAPI()
    s = make_settings(tmp_path)
    report = trip_vs_move.run_suite("reader", MODEL, s, runs=SMALL, store="keep_all", yes=False,
                                    http_client=api.client(), **QUIET)
    assert api.requests == [] and report["arm"] == "live"
    assert report["spend"]["estimate"]["usd"] == 0 and report["spend"]["ceiling_usd_per_run"] == 0.0
    assert FREE_REMARK in report["remarks"] and not any(r["incomplete"] for r in report["runs"])
    gate = update_gate.run_suite(MODEL, s, store="keep_all", yes=False, http_client=api.client(), **QUIET)
    assert api.requests == [] and FREE_REMARK in gate["remarks"] and not gate["incomplete"]
    with pytest.raises(NotConfirmed):  # the reference store calls the model: it still must be confirmed
        update_gate.run_suite(MODEL, s, yes=False, http_client=api.client(), **QUIET)


def test_with_the_replay_cache_off_a_rerun_asks_the_api_again(tmp_path, key):
    api = FakeMessagesAPI()
    first = run(tmp_path, api, **{"llm.replay_cache": False})
    sent = len(api.requests)
    assert sent > 0 and first["spend"]["replayed_usd"] == 0
    again = run(tmp_path, api, **{"llm.replay_cache": False})
    assert len(api.requests) == 2 * sent  # the ledger's paid replies are not replayed: every request sent
    assert again["spend"]["replayed_usd"] == 0 and again["spend"]["used_usd"] == pytest.approx(
        first["spend"]["measured_usd"])
    # the same run, billed twice: what it was billed says so
    assert again["spend"]["measured_usd"] == pytest.approx(2 * first["spend"]["measured_usd"])
    on = run(tmp_path, api)  # with it on, the ledger's replies answer (the cache was never written)
    assert len(api.requests) == 2 * sent and on["spend"]["measured_usd"] == 0


def test_the_set_up_step_confirms_prices_the_ceiling_and_opens_each_run_apart(tmp_path, key):
    """open_run is the one step every suite (trip-vs-move, update-gate, planting) takes before it
    calls anything: what it decides, and what each run it opens gets."""
    from urd.agentmem.runtime import RUN_MARKER, ledger_path, open_run, routes_for
    from urd.cost.agentmem import Estimate

    s = make_settings(tmp_path)
    live, scripted = routes_for(MODEL, s), routes_for("scripted", s)
    priced = Estimate(suite="x", model=MODEL, source="call graph", usd=0.5, calls=4)
    with pytest.raises(NotConfirmed):  # live, with or without a price: refused unless confirmed
        open_run(s, live, ceiling_usd=3.0, estimate=priced)
    with pytest.raises(NotConfirmed):
        open_run(s, live, ceiling_usd=3.0)
    lines = []
    ctx = open_run(s, live, ceiling_usd=3.0, yes=True, estimate=priced, log=lines.append)
    assert ctx.live and ctx.ceiling_usd == 3.0 and lines == [priced.line()]
    free = Estimate(suite="x", model=MODEL, source="free", usd=0.0, calls=0)
    assert open_run(s, live, ceiling_usd=3.0, estimate=free).ceiling_usd == 0.0  # nothing to confirm, US$0 ceiling
    assert open_run(s, scripted, ceiling_usd=3.0).ceiling_usd is None  # a scripted run spends nothing

    earlier = tmp_path / "earlier-run"
    earlier.mkdir()
    (earlier / RUN_MARKER).write_text("")
    (earlier / "store.sqlite").write_text("an earlier run's store")
    one, two = ctx.open(("suite", "run-1"), earlier), ctx.open(("suite", "run-2"))
    assert sorted(p.name for p in one.dir.iterdir()) == [RUN_MARKER] and two.dir is None  # emptied for the run
    assert one.meter is not two.meter and one.llm.ceiling_usd == 3.0
    assert one.llm.ledger.path == ledger_path(s, "suite", "run-1") != two.llm.ledger.path
    mine = tmp_path / "not-a-run"  # a folder no run made is never cleared
    mine.mkdir()
    (mine / "notes.txt").write_text("someone's own")
    with pytest.raises(InputError, match="not-a-run"):
        ctx.open(("suite", "run-3"), mine)
    assert (mine / "notes.txt").read_text() == "someone's own"


def test_an_unconfirmed_live_run_leaves_the_earlier_runs_store_as_it_was(tmp_path, key):
    from urd.agentmem.runtime import RUN_MARKER

    s = make_settings(tmp_path)
    gate = s.raw["trip_vs_move"]["gate"]
    first = s.work_dir / "stores" / "trip-vs-move" / "reader" / MODEL / gate / trip_vs_move.blind_run("reader", "move", 1)
    first.mkdir(parents=True)
    (first / RUN_MARKER).write_text("")
    (first / "store.sqlite").write_text("an earlier run's store")
    api = FakeMessagesAPI()
    with pytest.raises(NotConfirmed):
        run(tmp_path, api, yes=False)
    assert (first / "store.sqlite").read_text() == "an earlier run's store" and api.requests == []
