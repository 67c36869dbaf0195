"""The five baselines, their packing, and the registry's errors."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from urd.core.errors import InputError
from urd.data import calibrate
from urd.harness.runner import run_control, run_system
from urd.session.context import Decode
from urd.systems import registry
from urd.systems.gzip_tail import longest_fitting_tail, squeeze
from urd.systems.packing import ENTRY_BYTES, pack_topk, unpack_topk
from urd.systems.retrieval import pack_lines, ranked_lines


@pytest.fixture(scope="module")
def t1_episode(urd_config):
    return calibrate.t1_episode(urd_config, 0)


def test_gzip_tail_is_the_longest_fitting_tail(t1_episode):
    text = t1_episode["transcript"]
    fiche = longest_fitting_tail(text, 120)
    assert len(fiche) <= 120
    tail = gzip.decompress(fiche).decode()
    assert text.endswith(tail) and len(tail) > 40
    # one more character no longer fits
    longer = text[len(text) - len(tail) - 1:]
    assert len(squeeze(longer)) > 120
    assert longest_fitting_tail(text, 5) == b""  # not even an empty gzip fits
    assert gzip.decompress(longest_fitting_tail(text, None)).decode() == text


def test_retrieval_ranks_hot_lines_first_and_never_cuts_a_line(t1_episode):
    ranked = ranked_lines(t1_episode["transcript"])
    hot_keys = {p["key"] for p in t1_episode["pairs"] if p["hot"]}
    assert len(ranked) == 64  # 96 lines, deduplicated
    assert all(any(f" {k} " in line for k in hot_keys) for line in ranked[:8])
    fiche = pack_lines(ranked, 120)
    assert len(fiche) <= 120
    assert fiche.decode().split("\n") == ranked[: len(fiche.decode().split("\n"))]


def test_topk_packing_roundtrip_and_determinism():
    flat = np.array([0.5, -3.0, 0.0, 2.0, -2.0, 1.0], dtype=np.float32)
    fiche = pack_topk(flat, 3 * ENTRY_BYTES + 7)  # room for 3 entries
    assert len(fiche) == 24
    back = unpack_topk(fiche, flat.size)
    # |v| ties (2.0 and -2.0) go to the lower index
    assert back.tolist() == [0.0, -3.0, 0.0, 2.0, -2.0, 0.0]
    assert pack_topk(flat, 24) == fiche
    assert unpack_topk(pack_topk(flat, None), flat.size).tolist() == flat.tolist()
    with pytest.raises(ValueError, match="multiple of 8"):
        unpack_topk(b"123", 6)


def test_state_carry_fiche_fills_its_budget_with_state_entries(tiny_backbone, urd_config):
    ep = calibrate.t2_episode(urd_config, 0)
    ep = {**ep, "queries": ep["queries"][:1]}
    system = registry.build("state_carry", tiny_backbone)
    recs = run_system(tiny_backbone, system, "t2", [ep], "over", 120, 10, Decode(2))
    assert recs[0]["fiche_bytes"] == 120 - 120 % 8
    # declared = metered = one pass over the transcript
    assert recs[0]["declared_tokens"] == recs[0]["metered_tokens"] == recs[0]["transcript_tokens"]


def test_every_baseline_declares_exactly_what_it_reads(tiny_backbone, urd_config):
    from urd.backbone.tokenizer import count_tokens
    from urd.systems.summary import INSTRUCTION

    ep = calibrate.t1_episode(urd_config, 1)
    ep = {**ep, "queries": ep["queries"][:2]}
    transcript = count_tokens(ep["transcript"])
    for name in registry.BUILTIN:
        if getattr(registry.resolve(name), "needs_artifacts", False):
            continue  # replay systems read a tuning job's artifact: tests/test_replay.py
        system = registry.build(name, tiny_backbone, settings={"max_new_tokens": 4})
        (rec, _) = run_system(tiny_backbone, system, "t1", [ep], "over", 120, 10, Decode(3))
        declared, metered = rec["declared_tokens"], rec["metered_tokens"]
        if name in ("vanilla", "gzip_tail", "retrieval", "symbolic"):  # text only: the model never runs
            assert declared == metered == 0, name
        elif name == "state_carry":  # one pass over the transcript
            assert declared == metered == transcript, name
        else:  # summary: the transcript, the instruction, and the notes it wrote (the last not forwarded)
            prompt = transcript + count_tokens(INSTRUCTION.format(budget=120))
            assert prompt < declared <= prompt + 4 and metered == declared - 1, (declared, metered)


def test_each_builtins_pricing_flags_say_what_its_jobs_run(tiny_backbone, urd_config):
    """What the dry run prices a class by (urd.cost.estimate.system_class) is what its jobs do:
    a text consolidation forwards nothing, an answer from the fiche alone forwards nothing, and
    notes never run past notes_tokens."""
    from urd.backbone.tokenizer import count_tokens
    from urd.session.handle import ModelHandle
    from urd.systems.summary import INSTRUCTION

    ep = calibrate.t1_episode(urd_config, 1)
    transcript = count_tokens(ep["transcript"])
    query = ep["queries"][0]["prompt"]
    for name in registry.BUILTIN:
        cls = registry.resolve(name)
        if getattr(cls, "needs_artifacts", False):
            continue  # replay systems read a tuning job's artifact: tests/test_replay.py
        settings = urd_config["system_settings"].get(name, {})
        system = registry.build(name, ModelHandle(tiny_backbone), settings=settings)
        system.consolidation_factor = 10
        fiche = system.consolidate(ep["transcript"], 120)
        assert (system.backbone.tokens_processed == 0) is cls.consolidates_from_text, name
        limit = cls.notes_tokens(120, settings)
        if limit:  # the transcript, the instruction, then at most `limit` notes
            prompt = transcript + count_tokens(INSTRUCTION.format(budget=120))
            assert 0 < system.declared_tokens - prompt <= limit, name
        else:  # at most one pass over the transcript, nothing decoded
            assert system.declared_tokens <= transcript, name
        answering = ModelHandle(tiny_backbone)
        registry.build(name, answering, settings=settings).answer_all(fiche, [query], "Task header")
        assert (answering.tokens_processed > 0) is cls.answers_with_model, name
        # a sweep decodes one answer an episode for a fiche that is the same at every budget
        other = registry.build(name, ModelHandle(tiny_backbone), settings=settings)
        other.consolidation_factor = 3
        assert (other.consolidate(ep["transcript"], 960) != fiche) is cls.fiche_depends_on_budget, name
        if not cls.fiche_depends_on_cap:  # declared the same at every cap that admits it
            capped = registry.build(name, ModelHandle(tiny_backbone), settings=settings)
            capped.consolidation_factor = 2
            assert capped.consolidate(ep["transcript"], 120) == fiche, name


def test_control_prefills_the_shared_transcript_once(tiny_backbone, urd_config):
    ep = calibrate.t1_episode(urd_config, 2)
    ep = {**ep, "queries": ep["queries"][:3]}
    from urd.backbone.tokenizer import count_tokens

    with tiny_backbone.metered() as m:
        run_control(tiny_backbone, "t1", [ep], Decode(max_new_tokens=2))
    query_tokens = sum(count_tokens(q["prompt"]) for q in ep["queries"])
    # transcript once + each query + at most 1 decode forward per query (2 new tokens, no state kept)
    assert m.tokens <= count_tokens(ep["transcript"]) + query_tokens + 3


@pytest.mark.parametrize(
    "name, plugins, match",
    [
        ("nosuch", {}, r"systems: expected a known system"),
        ("control", {}, r"reserved 'control'"),
        ("broken", {"broken": "urd.nosuchmodule:X"}, r"plugins.broken: expected 'module:Class' naming a class Python can import \(its module on PYTHONPATH"),
        ("noiface", {"noiface": "urd.systems.base:MemorySystem"}, r"a MemorySystem subclass implementing consolidate"),
        # a plug-in under a built-in's name would publish its results as urd's
        ("vanilla", {"vanilla": "urd.systems.gzip_tail:GzipTail"}, r"plugins.vanilla: expected a name no built-in system has"),
        ("other", {"gzip_tail": "urd.systems.gzip_tail:GzipTail", "other": "urd.systems.vanilla:Vanilla"},
         r"plugins.gzip_tail: expected a name no built-in system has"),
    ],
)
def test_registry_errors_are_clear(name, plugins, match):
    with pytest.raises(InputError, match=match):
        registry.resolve(name, plugins)


def test_a_pricing_flag_that_is_not_a_bool_is_refused_naming_the_class(tmp_path, monkeypatch):
    # the dry run prices a class by its flags: a string would read as True
    (tmp_path / "my_flags.py").write_text(
        "from urd.systems.vanilla import Vanilla\n\nclass Textish(Vanilla):\n    consolidates_from_text = 'yes'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(InputError, match=r"plugins.textish: expected my_flags:Textish.consolidates_from_text "
                                         r"set to True or False, got 'yes'"):
        registry.resolve("textish", {"textish": "my_flags:Textish"})


def test_a_system_carries_the_name_it_is_registered_under(tiny_backbone, t1_episode):
    """Two entries of one class (or a class that never set `name`) keep their own names in the
    fiche records that rung 2's tables label points by, and a plug-in's contract breach names its
    module:Class."""
    from urd.harness.runner import consolidate_cell
    from urd.session.contract import BudgetViolation

    plugins = {"tail_a": "urd.systems.gzip_tail:GzipTail", "tail_b": "urd.systems.gzip_tail:GzipTail"}
    names = {}
    for name in plugins:
        system = registry.build(name, tiny_backbone, plugins)
        names[name] = [r["system"] for r in consolidate_cell(system, "t1", [t1_episode], "over", 120, 10)]
    assert names == {"tail_a": ["tail_a"], "tail_b": ["tail_b"]}
    assert registry.build("gzip_tail", tiny_backbone, plugins).plugin is None  # the built-in is no plug-in
    assert registry.build("tail_b", tiny_backbone, plugins).plugin == "urd.systems.gzip_tail:GzipTail"
    greedy = registry.build("tail_a", tiny_backbone, plugins)
    greedy.consolidate = lambda transcript, budget: transcript.encode()  # ignores its budget
    with pytest.raises(BudgetViolation, match=r"^system 'tail_a' \(urd\.systems\.gzip_tail:GzipTail\), episode 0: "
                                              r"fiche is \d+ bytes, over the 120-byte budget$"):
        consolidate_cell(greedy, "t1", [t1_episode], "over", 120, 10)


def test_summary_notes_may_run_as_long_as_the_budget_allows_and_the_estimate_bills_it(urd_config):
    from urd.cost.estimate import cell_cpu_seconds
    from urd.systems.summary import note_tokens

    settings = urd_config["system_settings"]["summary"]
    assert note_tokens(120, settings) == 40 and note_tokens(960, settings) == 320  # 3 bytes a token
    assert note_tokens(None, settings) == 1366  # the bits curve's full-state budget: 4,096 B
    assert note_tokens(960, {"max_new_tokens": 7}) == 7
    over = cell_cpu_seconds(urd_config, "0.1b", "t1", "consolidate", "summary", "over")
    sanity = cell_cpu_seconds(urd_config, "0.1b", "t1", "consolidate", "summary", "sanity")
    assert sanity > over > cell_cpu_seconds(urd_config, "0.1b", "t1", "consolidate", "vanilla", "sanity")


def test_summary_stops_writing_once_its_notes_fill_the_budget(tiny_backbone, urd_config):
    """Allowed 4 tokens a byte, the notes still stop at the token that reaches the budget: every
    token is at least one byte, so no more tokens than budget bytes are ever written."""
    from urd.backbone.tokenizer import count_tokens
    from urd.systems.summary import INSTRUCTION

    ep = calibrate.t1_episode(urd_config, 1)
    system = registry.build("summary", tiny_backbone, settings={"bytes_per_token": 0.25})
    for budget in (12, 30):
        ((fiche, declared),) = system.consolidate_batch([ep["transcript"]], budget)
        written = declared - count_tokens(ep["transcript"]) - count_tokens(INSTRUCTION.format(budget=budget))
        assert len(fiche) <= budget and 0 < written <= budget, (budget, written)
