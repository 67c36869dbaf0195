"""urd rung 3's live route (urd.rung3.live) against the loopback Messages API: the answer and
control steps as the jobs run them, the model replying as the scripted reader would."""

from __future__ import annotations

import json
import os

import pytest
from fake_messages_api import FakeMessagesAPI
from messages_server import MessagesServer
from test_agentmem_live import MODEL, make_settings
from test_urd3 import PLUGINS, episodes

from urd.agentmem.runtime import NotConfirmed
from urd.data import views
from urd.harness import fiches
from urd.llm import fenced_blocks
from urd.rung3 import run
from urd.rung3.live import Incomplete, LLMReader, job_settings, scripted_notes, scripted_responder
from urd.rung3.reader import ScriptedReader
from urd.systems import registry

KEY = "sk-ant-urd3-test-key"
QUIET = {"log": lambda line: None}
N = 2  # episodes: each asks 24 requests


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with MessagesServer(FakeMessagesAPI(lambda r: ANSWER(r)), lifetime_s=300) as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        yield srv


def ANSWER(request):  # the server's model: set per test to the cell's family's scripted replies
    return RESPONDER[0](request)


RESPONDER: list = [None]


def settings(tmp_path, cell, **changes):
    s = make_settings(tmp_path, **{"estimate.bytes_per_token": 4.0, "llm.max_retries": 1, **changes})
    return job_settings(s, MODEL, cell)


def reader(fam, s, cell, yes=True):
    RESPONDER[0] = scripted_responder(fam)
    return LLMReader(MODEL, fam, s, cell, yes=yes, **QUIET)


def control_step(name, tmp_path, yes=True, **changes):
    fam, eps = episodes(name, N)
    r = reader(fam, settings(tmp_path, f"control/{name}", **changes), f"control/{name}", yes)
    a, b = [views.session_a(e) for e in eps], [views.session_b(e) for e in eps]
    return r, run.control(r, a, b), run.control(ScriptedReader(fam), a, b)


def answer_step(name, system, budget, tmp_path):
    fam, eps = episodes(name, N)
    a, b = [views.session_a(e) for e in eps], [views.session_b(e) for e in eps]
    recs = run.consolidate(registry.build(system, run.no_model(MODEL), PLUGINS), name, a, "over", budget, 10)
    crossing = [(rec, fiches.read_one(rec)) for rec in recs]
    build = lambda: registry.build(system, run.no_model(MODEL), PLUGINS)
    r = reader(fam, settings(tmp_path, f"{system}/{name}/over"), f"{system}/{name}/over")
    return r, run.answer(build, r, b, crossing), run.answer(build, ScriptedReader(fam), b, crossing)


@pytest.mark.parametrize("name", ["prefs", "code"])
def test_the_control_live_replies_as_the_scripted_reader_and_its_estimate_is_the_bill(server, tmp_path, name):
    r, live, scripted = control_step(name, tmp_path)
    assert [x["response"] for x in live] == [x["response"] for x in scripted] and len(live) == 24 * N
    prices = r.settings.prices
    billed = server.billed_usd(prices)
    est = r.report["spend"]["estimate"]
    assert est["calls"] == len(live) == len(server.billed)
    assert 0.75 <= est["usd"] / billed <= 1.25, (est["usd"], billed)
    assert r.report["spend"]["ledger"]["billed_usd"] == pytest.approx(billed, abs=1e-6)


def test_an_answer_step_live_replies_as_the_scripted_reader_and_a_rerun_pays_nothing(server, tmp_path):
    r, live, scripted = answer_step("prefs", "gzip_tail", 960, tmp_path)
    assert [x["response"] for x in live] == [x["response"] for x in scripted]
    billed = server.billed_usd(r.settings.prices)
    assert 0.75 <= r.report["spend"]["estimate"]["usd"] / billed <= 1.25
    sent = len(server.billed)
    r2, again, _ = answer_step("prefs", "gzip_tail", 960, tmp_path)
    assert again == live and len(server.billed) == sent  # replayed from the cache
    # the target's spend, paid once: the rerun's ledger says what the first run paid, no more
    assert r2.report["spend"]["ledger"] == r.report["spend"]["ledger"]
    assert r2.report["spend"]["measured_usd"] == pytest.approx(billed, abs=1e-6)


def test_in_a_message_batch_the_replies_are_the_same_at_half_the_price(server, tmp_path):
    r, live, scripted = control_step("prefs", tmp_path, **{"llm.batches": True, "llm.batch_poll_s": 0.01})
    assert [x["response"] for x in live] == [x["response"] for x in scripted]
    assert len(server.billed) == 24 * N and all(b["batched"] for b in server.billed)
    billed = server.billed_usd(r.settings.prices)
    assert 0.75 <= r.report["spend"]["estimate"]["usd"] / billed <= 1.25
    assert r.report["spend"]["ledger"]["billed_usd"] == pytest.approx(billed, abs=1e-6)


def test_a_live_step_without_confirmation_calls_nothing(server, tmp_path):
    with pytest.raises(NotConfirmed, match="confirm_live"):
        control_step("prefs", tmp_path, yes=False)
    assert server.billed == [] and server.log == []
    _, live, scripted = control_step("prefs", tmp_path, yes=False, **{"spend.confirm_live": "true"})
    assert [x["response"] for x in live] == [x["response"] for x in scripted]


def test_a_live_step_past_its_ceiling_stops_and_says_so(server, tmp_path):
    with pytest.raises(Incomplete, match=r"control/code on .*incomplete, request \d+ of 48: .*ceiling") as err:
        control_step("code", tmp_path, **{"spend.max_usd_urd3": 0.05})
    assert "billed US$" in str(err.value)
    assert 0 < len(server.billed) < 24 * N and server.billed_usd(make_settings(tmp_path).prices) <= 0.05


def full_config(**agentmem):
    import yaml
    from conftest import REPO

    config = {**yaml.safe_load((REPO / "config/config.yaml").read_text()),
              **yaml.safe_load((REPO / "config/urd3.yaml").read_text()),
              **yaml.safe_load((REPO / "config/agentmem.yaml").read_text())}
    config["urd3"]["models"] = [*config["urd3"]["models"], MODEL]
    config["agentmem"].update(agentmem)
    return config


def test_the_control_command_asks_only_with_yes_or_the_configs_confirmation(server, tmp_path, capsys):
    from urd.core.io import atomic_write_jsonl, read_jsonl
    from urd.rung3 import cli, plan

    fam, eps = episodes("prefs", N)
    RESPONDER[0] = scripted_responder(fam)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    atomic_write_jsonl(a, [views.session_a(e) for e in eps])
    atomic_write_jsonl(b, [views.session_b(e) for e in eps])
    spec = plan.spec(full_config(work_dir=str(tmp_path / "work")), MODEL)
    argv = ["control", "--family", "prefs", "--model", MODEL, "--sessions", str(a), "--prompts", str(b),
            "--spec", json.dumps(spec), "--out", str(tmp_path / "raw.jsonl")]
    assert cli.main(argv) == 1 and server.log == []
    assert "confirm_live" in capsys.readouterr().err
    assert cli.main([*argv, "--yes"]) == 0 and len(server.billed) == 24 * N
    scripted = run.control(ScriptedReader(fam), [views.session_a(e) for e in eps], [views.session_b(e) for e in eps])
    assert [r["response"] for r in read_jsonl(tmp_path / "raw.jsonl")] == [r["response"] for r in scripted]
    assert (tmp_path / "work/urd3-control" / MODEL / "prefs/ledgers").is_dir()  # the job's own folder


def test_state_systems_get_no_cell_on_an_llm_model_and_a_note_writer_is_priced():
    from urd.rung3 import plan

    config = full_config()
    ran, not_run = plan.systems(config, MODEL)
    assert {"state_carry", "replay_tune"} <= set(not_run) and {"gzip_tail", "summary"} <= set(ran)
    assert "an LLM model" in not_run["state_carry"]
    assert plan.cpu_seconds(config, MODEL, "prefs", "answer", "gzip_tail", "over") < 10
    cents = plan.usd_cents(config, MODEL, "prefs", "control")
    assert isinstance(cents, int) and cents > 0 and plan.usd_cents(config, "scripted", "prefs", "control") == 0
    assert plan.usd_cents(config, MODEL, "prefs", "answer", "gzip_tail", "over") < cents
    assert plan.usd_cents(config, MODEL, "prefs", "consolidate", "gzip_tail", "over") == 0  # no model work
    # summary's notes: its 12 prompts (a 1.3 K-token transcript each) and its notes, priced
    notes = plan.usd_cents(config, MODEL, "prefs", "consolidate", "summary", "sanity")
    assert 0 < notes < cents
    assert plan.usd_cents(config, "tiny", "prefs", "consolidate", "summary", "sanity") == 0
    config["urd3"]["models"].append("claude-unpriced-1")
    with pytest.raises(Exception, match="urd3.models"):
        plan.systems(config, "claude-unpriced-1")


def notes_step(name, split, budget, tmp_path, **changes):
    """Session A of summary on the live route, as its consolidate job runs it."""
    from urd.rung3.live import LLMWriter
    from urd.session.handle import ModelHandle

    _, eps = episodes(name, N)
    RESPONDER[0] = scripted_notes()  # the server's model writes the latest preference set
    cell = f"summary/{name}/{split}"
    s = job_settings(make_settings(tmp_path, **{"estimate.bytes_per_token": 4.0, "llm.max_retries": 1, **changes}),
                     MODEL, cell, "consolidate")
    writer = LLMWriter(MODEL, s, cell, yes=True, **QUIET)
    recs = run.consolidate(registry.build("summary", ModelHandle(writer), PLUGINS), name,
                           [views.session_a(e) for e in eps], split, budget, 10)
    oracle = run.consolidate(registry.build("oracle", run.no_model(MODEL), PLUGINS), name,
                             [views.session_a(e) for e in eps], split, budget, 10)
    return writer, recs, oracle


@pytest.mark.parametrize("name", ["prefs", "code"])
def test_summary_writes_its_notes_with_the_llm_under_the_contract_and_its_estimate_is_the_bill(server, tmp_path, name):
    writer, recs, oracle = notes_step(name, "sanity", 960, tmp_path)
    # the notes are what the model wrote: here the oracle's lines, which fit the sanity budget
    assert [fiches.read_one(r) for r in recs] == [fiches.read_one(r) for r in oracle]
    for r in recs:  # metered as the prompt read and the notes written, within the cap
        assert r["declared_tokens"] == r["metered_tokens"] <= r["token_cap"] and r["metered_tokens"] > r["transcript_tokens"]
    assert len(server.billed) == N  # one request an episode
    billed = server.billed_usd(writer.settings.prices)
    assert 0.75 <= writer.report["spend"]["estimate"]["usd"] / billed <= 1.25
    sent = len(server.billed)
    _, recs2, _ = notes_step(name, "sanity", 960, tmp_path)
    assert recs2 == recs and len(server.billed) == sent  # replayed from the cache, paid once


def test_notes_cut_at_their_budget_are_kept_once_not_asked_again(server, tmp_path):
    writer, recs, oracle = notes_step("prefs", "over", 120, tmp_path)
    assert len(server.billed) == N  # a reply cut at max_tokens: no retry at a larger budget
    assert writer.report["usage"]["truncated"].get("notes", 0) == N
    for r, o in zip(recs, oracle):
        notes = fiches.read_one(r).decode()
        assert 0 < r["fiche_bytes"] <= 120 and notes.split("\n")[0] == fiches.read_one(o).decode().split("\n")[0]


def test_the_network_and_work_folder_are_a_live_jobs_only():
    from urd.workflow.sandbox import NETWORK

    config = full_config()
    for rule in ("urd3_answer", "urd3_control"):
        assert NETWORK[rule]({"model": MODEL}, config) is True
        assert not NETWORK[rule]({"model": "scripted"}, config) and not NETWORK[rule]({"model": "tiny"}, config)
    writes = NETWORK["urd3_consolidate"]
    assert writes({"model": MODEL, "system": "summary"}, config) is True
    assert not writes({"model": MODEL, "system": "gzip_tail"}, config)
    assert not writes({"model": "tiny", "system": "summary"}, config)


def by_family_responder(n: int):
    """The server's model for a whole workflow: each request answered by its family's scripted reader."""
    asked = {}
    for name in ("prefs", "code"):
        fam, eps = episodes(name, n)
        asked.update({q["prompt"]: scripted_responder(fam) for e in eps for q in views.session_b(e)["queries"]})

    notes = scripted_notes()

    def respond(request):
        blocks = dict(fenced_blocks(request.user))
        return notes(request) if "text" in blocks else asked[blocks["request"]](request)

    return respond


@pytest.mark.slow
def test_the_workflow_runs_a_live_model_only_when_confirmed_and_prices_it_in_the_dry_run(tmp_path, monkeypatch):
    from conftest import copy_workflow, snakemake

    wf = copy_workflow(tmp_path / "wf")
    target = f"results/urd3/{MODEL}/summary.json"
    urd3 = {"models": ["scripted", "tiny", "learned", MODEL], "evaluate_episodes": 2,
            "systems": ["vanilla", "oracle", "summary"], "curve": {"systems": ["vanilla"]}}
    agentmem = {"work_dir": str(tmp_path / "work")}

    def overlay(**spend):
        path = tmp_path / f"overlay-{len(spend)}.json"  # JSON is YAML: keeps the types
        path.write_text(json.dumps({"urd3": urd3, "agentmem": {**agentmem, **({"spend": spend} if spend else {})}}))
        return ["--configfile", str(path)]

    RESPONDER[0] = by_family_responder(2)
    with MessagesServer(FakeMessagesAPI(lambda r: ANSWER(r)), lifetime_s=600) as srv:
        env = {**os.environ, "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": srv.base_url}
        dry = snakemake(wf, target, "-n", *overlay(), env=env, check=True)
        assert "API US$" in dry.stdout + dry.stderr and "usd_cents=" in dry.stdout
        refused = snakemake(wf, target, *overlay(), env=env)
        assert refused.returncode != 0 and srv.billed == []
        logs = "".join(p.read_text() for p in (wf / "logs/urd3").rglob("*.log"))
        assert "confirm_live" in logs + refused.stdout + refused.stderr, refused.stderr[-3000:]
        snakemake(wf, target, *overlay(confirm_live=True), env=env, check=True)
        # families x (cells + control) x episodes x requests, and summary's notes: families x splits x episodes
        assert len(srv.billed) == 2 * (3 * 2 + 1) * 2 * 24 + 2 * 2 * 2
    summary = json.loads((wf / target).read_text())
    for fam in summary["families"].values():
        assert fam["control"]["score"] == 1.0 and fam["cells"]["oracle"]["sanity"]["retention"] == 1.0
        assert fam["cells"]["vanilla"]["sanity"]["retention"] == 0.0
        assert fam["cells"]["summary"]["sanity"]["retention"] == 1.0  # the model's notes carried the set
    assert "summary" not in summary["not_run"]
    assert list((tmp_path / "work/urd3-consolidate").rglob("ledgers"))  # the writer's job folder


def test_a_note_past_its_token_limit_is_cut_there():
    from urd.backbone.adapter import MAX_NEW_TOKENS
    from urd.rung3.live import LLMWriter

    long = "The keys are with the neighbour. " * 40
    gen = LLMWriter("m", None, "c")._held(long, 16, (), None)
    assert len(gen.tokens) == 16 and gen.stop_reason == MAX_NEW_TOKENS
    assert long.startswith(gen.text) and len(gen.text) < len(long)
