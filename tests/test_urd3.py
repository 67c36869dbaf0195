"""urd rung 3: the checkers and their counterparts, the seeded episodes, the scripted reader, the
scores, and the systems on the rung-1 contract (in one process; tests/test_workflow_urd3.py runs
the jobs)."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from urd.core.errors import InputError
from urd.data import views
from urd.data.rung3 import BUILTIN, family
from urd.data.rung3 import code as C
from urd.data.rung3.episodes import generate_episode, payload, sides_of
from urd.data.rung3.kinds import validate
from urd.harness import fiches
from urd.rung3 import correctness, run, score
from urd.rung3.reader import ScriptedReader, known_sides

REPO = Path(__file__).resolve().parents[1]
SEED = 20260807
SPEC = {"triggers": 2, "non_triggers": 2, "work_turns": {"prefs": 10, "code": 4},
        "distractors": {"prefs": 14, "code": 12}}
PLUGINS = {"oracle": "urd.rung3.probes:Oracle", "everywhere": "urd.rung3.probes:Everywhere",
           "first_value": "urd.rung3.probes:FirstValue", "codebook": "urd.rung3.probes:Codebook"}
ALL_KINDS = [k for kinds in BUILTIN.values() for k in kinds]


def episodes(name: str, n: int = 12, fam=None):
    fam = fam or family(name)
    return fam, [generate_episode(SEED, fam, i, SPEC) for i in range(n)]


def cell(name: str, system: str, budget: int | None, n: int = 12, fam=None, eps=None):
    """One cell on the scripted reader, session A and B as the jobs run them (each on a system
    built afresh), and its judged records."""
    from urd.systems import registry

    if eps is None:
        fam, eps = episodes(name, n, fam)
    a = [views.session_a(e) for e in eps]
    b = [views.session_b(e) for e in eps]
    recs = run.consolidate(registry.build(system, run.no_model("scripted"), PLUGINS), name, a, "x", budget, 10)
    crossing = [(r, fiches.read_one(r)) for r in recs]
    raw = run.answer(lambda: registry.build(system, run.no_model("scripted"), PLUGINS), ScriptedReader(fam), b, crossing)
    return fam, eps, score.judge(fam, eps, raw)


def control(name: str, n: int = 12):
    fam, eps = episodes(name, n)
    raw = run.control(ScriptedReader(fam), [views.session_a(e) for e in eps], [views.session_b(e) for e in eps])
    return fam, score.judge(fam, eps, raw)


# --- checkers ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ALL_KINDS, ids=lambda k: k.name)
def test_each_checker_keeps_its_side_and_refuses_its_counterpart(kind):
    assert len(kind.fixtures[0]) >= 3 and len(kind.fixtures[1]) >= 3 and len(kind.failing) >= 3
    for side in (0, 1):
        for fx in kind.fixtures[side]:
            assert kind.check(side, fx), (kind.name, side, fx)
            assert not kind.check(1 - side, fx), (kind.name, "counterpart accepted", fx)
    for fx in kind.failing:
        assert not kind.check(0, fx) and not kind.check(1, fx), (kind.name, fx)


# Fixtures written here, apart from the types' own, for the checkers a mistake would hide in.
OWN = {
    "distance": (["The walk is 12 km.", "It is 12km.", "12 kilometres"], ["The walk is 7.5 miles.", "7.5mi"],
                 ["12 km or 7.5 miles", "far", "", "Tell Miles it is far."]),
    "dates": (["on 2026-03-14"], ["on 3/14/2026"], ["on 2026-03-14 or 03/14/2026", "March", "", "on 14/03/2026"]),
    "clock": (["at 18:30", "at 07:45"], ["at 6:30 pm", "at 6:30pm"], ["at 18:30 or 6:30 pm", "evening", "", "at 7:45"]),
    "layout": (["- a\n- b", "1. a\n2. b", "• a"], ["It is done, and the keys are with Tomas."],
               ["", "ok", "Yes, fine."]),
    "lead": (["**TL;DR:** yes.", "TL;DR: yes."], ["In short: yes.", "> In short: yes."], ["Yes.", "", "TL;DR: a\nIn short: b"]),
    "address": (["Dear Dr. Lindqvist,\nYes.", "Dr. Lindqvist,\nYes."], ["Hi Maria,\nYes.", "Maria,\nYes."],
                ["Hello,\nYes.", "", "Dear Dr. Maria,"]),
    "migration_header": (["# generated: do not edit by hand\nx = 1\n"], ["# migration: review before running\n"],
                         ["# generated: do not edit by hand\n# migration: review before running\n", "x = 1\n", ""]),
    "output": (["LOG.info('a')\n", "_log.info('a')\n"], ["print('a')\n"], ["LOG.info('a')\nprint('b')\n", "x = 1\n", ""]),
    "paths": (["p = PurePath('a')\n"], ["p = os.path.join('a', 'b')\n"], ["p = 'a'\n", "", "p = PurePath(os.path.join('a'))\n"]),
    "currency": (["costs €40"], ["costs $43"], ["€40 ($43)", "cheap", ""]),
    "tone": (["Done."], ["Done!"], ["", " \n "]),
    "naming": (["def read_file(p):\n    pass\n", "def _read_file(p): pass\ndef __init__(self): pass\ndef read_all(): pass\n"],
               ["def readFile(p):\n    pass\n", "def _readFile(p): pass\ndef readAll(): pass\n"],
               ["def read(p): pass\n", "x = 1\n", "def read_file(:\n"]),
    "quotes": (["x = f'{y}'\n"], ['x = f"{y}"\n', "x = f\"{t['a']}\"\n"], ['x = 1\n', "x = 'a'\ny = \"b\"\n", "x = '"]),
    "hints": (["def f(a: int, *b: str, **c: int) -> None: pass\n"], ["def f(a, *b, **c): pass\n"],
              ["def f(a: int, b) -> None: pass\n", "def f(a) -> int: pass\n", "x: int = 1\n"]),
    "formatting": (["s = f'{a}'\n"], ["s = '{}'.format(a)\n"], ["s = '%s' % a\n", "s = f'plain'\n", "(("]),
    "errors": (["class XError(Exception): pass\n"], ["class XException(ValueError): pass\n"],
               ["class X(Exception): pass\n", "class Plain: pass\n", ""]),
}


@pytest.mark.parametrize("name", sorted(OWN))
def test_checkers_on_fixtures_of_their_own(name):
    kind = next(k for k in ALL_KINDS if k.name == name)
    keep0, keep1, neither = OWN[name]
    for fx in keep0:
        assert kind.check(0, fx) and not kind.check(1, fx), fx
    for fx in keep1:
        assert kind.check(1, fx) and not kind.check(0, fx), fx
    for fx in neither:
        assert not kind.check(0, fx) and not kind.check(1, fx), fx


def test_a_type_whose_checker_accepts_its_counterparts_fixture_is_refused_naming_it():
    distance = family("prefs").kind("distance")
    lax = replace(distance, name="lax_units", check=lambda side, reply: "km" in reply or "miles" in reply)
    with pytest.raises(InputError) as err:
        validate(lax)
    msg = str(err.value)
    assert "\n" not in msg and "lax_units" in msg and "counterpart" in msg and "It is" in msg


def test_a_type_whose_templates_cannot_render_is_refused_naming_it():
    distance = family("prefs").kind("distance")
    broken = replace(distance, name="broken", requests=("How far is {nowhere}?",))
    with pytest.raises(InputError, match=r"broken: request template: .*How far is \{nowhere\}"):
        validate(broken)


def test_a_plug_in_type_whose_phrase_contains_another_types_is_refused():
    from urd.data.rung3 import _distinct

    distance = family("prefs").kind("distance")
    echo = replace(distance, name="echo", phrases=("give distances in km, not miles, always", "never mind"))
    with pytest.raises(InputError, match="echo"):
        _distinct([distance, echo], "config")


# --- episodes ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["prefs", "code"])
def test_episodes_regenerate_byte_for_byte_and_do_not_depend_on_the_count(name):
    fam = family(name)
    again = json.dumps(generate_episode(SEED, fam, 5, SPEC), sort_keys=True)
    assert json.dumps(generate_episode(SEED, fam, 5, SPEC), sort_keys=True) == again
    assert json.dumps(generate_episode(SEED + 1, fam, 5, SPEC), sort_keys=True) != again
    assert generate_episode(SEED, fam, 4, SPEC)["transcript"] != json.loads(again)["transcript"]


def test_the_pinned_data_is_what_the_seed_generates(tmp_path):
    import yaml

    from urd.core.config import load_config
    from urd.core.io import sha256_file
    from urd.core.manifest import read_manifest
    from urd.rung3.cli import main
    from urd.rung3.plan import data_spec

    config = load_config(REPO / "config/config.yaml")
    config["urd3"] = yaml.safe_load((REPO / "config/urd3.yaml").read_text())["urd3"]
    assert main(["calibrate", "--spec", json.dumps(data_spec(config)), "--out-dir", str(tmp_path)]) == 0
    pinned = read_manifest(REPO / "calibration/urd3/manifest.sha256")
    assert len(pinned) == 6
    for name, digest in pinned.items():
        assert sha256_file(tmp_path / Path(name).name) == digest, name


@pytest.mark.parametrize("n", [12, 7])
def test_each_side_is_taught_in_half_the_episodes_give_or_take_one(n):
    for name in ("prefs", "code"):
        fam = family(name)
        taught = [sides_of(SEED, fam, i) for i in range(n)]
        for kind in fam.kinds:
            ones = sum(t[kind.name] for t in taught)
            assert abs(ones - (n - ones)) <= 1, (name, kind.name, ones, n)


@pytest.mark.parametrize("name", ["prefs", "code"])
def test_every_way_of_teaching_occurs_and_the_session_is_rung_one_sized(name):
    from urd.backbone.tokenizer import count_tokens

    fam, eps = episodes(name, 4)
    for ep in eps:
        ways = {p["way"] for p in ep["preferences"]}
        assert ways == {"explicit", "correction", "update"}
        assert 1000 <= count_tokens(ep["transcript"]) <= 4000
        # the over budget cannot hold the latest preference set: about 4x over
        assert len(payload(ep).encode()) >= 3 * 120
        assert len(payload(ep).encode()) <= 960
        update = next(p for p in ep["preferences"] if p["way"] == "update")
        kind = fam.kind(update["type"])
        assert kind.phrases[1 - update["side"]].lower() in ep["transcript"].lower()  # the superseded value


@pytest.mark.parametrize("name", ["prefs", "code"])
def test_session_b_states_no_preference(name):
    fam, eps = episodes(name)
    for ep in eps:
        b = views.session_b(ep)
        text = "\n".join([b["header"], *(q["prompt"] for q in b["queries"])])
        assert known_sides(fam, text) == {}
        assert set(b) == {"task", "episode", "header", "queries"}
        assert all(set(q) == {"id", "prompt"} for q in b["queries"])  # no type, kind, side or stale side


# --- the scripted reader and the scores ----------------------------------------------------------
@pytest.mark.parametrize("name", ["prefs", "code"])
def test_the_control_reads_every_preference_and_vanilla_scores_exactly_zero(name):
    fam, ctl = control(name)
    assert score.cell(fam, ctl)["score"] == 1.0
    fam, _, van = cell(name, "vanilla", 120)
    figures = score.cell(fam, van)
    assert figures["score"] == 0.0 and all(v == 0.0 for v in figures["types"].values())


@pytest.mark.parametrize("name", ["prefs", "code"])
def test_the_oracle_is_the_ceiling_and_fits_the_sanity_budget(name):
    fam, eps, full = cell(name, "oracle", 960)
    assert score.cell(fam, full)["score"] == 1.0
    fam, eps, over = cell(name, "oracle", 120)
    over_score = score.cell(fam, over)["score"]
    assert 0 < over_score < 0.5
    for system in ("gzip_tail", "retrieval", "first_value"):
        assert score.cell(fam, cell(name, system, 120, fam=fam, eps=eps)[2])["score"] <= over_score + 1e-9


@pytest.mark.parametrize("name", ["prefs", "code"])
def test_applying_every_preference_everywhere_scores_zero_on_scoped_types(name):
    fam, _, recs = cell(name, "everywhere", 960)
    figures = score.cell(fam, recs)
    scoped = [k.name for k in fam.kinds if k.scoped]
    assert scoped and all(figures["types"][k] == 0.0 for k in scoped)
    assert figures["applied_on_non_trigger"] > 0.4  # it does apply them, outside their scope too
    assert all(figures["types"][k.name] == 1.0 for k in fam.kinds if not k.scoped)


@pytest.mark.parametrize("name", ["prefs", "code"])
def test_keeping_the_first_stated_value_shows_the_stale_rate(name):
    fam, _, first = cell(name, "first_value", 960)
    _, _, oracle = cell(name, "oracle", 960)
    assert score.cell(fam, first)["stale_rate"] == 1.0 and score.cell(fam, first)["stale_excess"] > 0.9
    assert score.cell(fam, oracle)["stale_rate"] == 0.0 and score.cell(fam, oracle)["stale_excess"] <= 0
    assert score.cell(fam, first)["score"] < score.cell(fam, oracle)["score"]


@pytest.mark.parametrize("name", ["prefs", "code"])
def test_gzip_tail_and_retrieval_differ_as_the_layout_predicts(name):
    """Stated before the first run (docs/rung3.md): updates land in the second half of session A
    and the statements are said once, so recency (gzip_tail) keeps the latest values and salience
    (retrieval: the most repeated lines, then the earliest) keeps acknowledgements and early,
    superseded ones. gzip_tail retains more and is staler less, at the sanity budget."""
    fam, eps, gz = cell(name, "gzip_tail", 960)
    _, _, rt = cell(name, "retrieval", 960, fam=fam, eps=eps)
    g, r = score.cell(fam, gz), score.cell(fam, rt)
    assert g["score"] > r["score"] + 0.3
    assert r["stale_rate"] > g["stale_rate"]


def test_a_habit_scores_zero_under_the_base_rate_correction_even_unbalanced():
    """A reader that always writes one side keeps it as often where it was not taught: 0, also
    on an odd number of episodes (sides taught 4 and 3 times)."""
    fam, eps = episodes("prefs", 7)
    habit = {k.name: 0 for k in fam.kinds if not k.scoped}
    raw = [{"episode": ep["episode"], "query_id": q["id"], "response": fam.write(q["request"], habit)}
           for ep in eps for q in ep["queries"]]
    figures = score.cell(fam, score.judge(fam, eps, raw))
    assert all(figures["types"][k.name] == 0.0 for k in fam.kinds if not k.scoped)


def test_an_enormous_reply_is_a_failure_even_if_it_keeps_the_side():
    fam, eps = episodes("prefs", 1)
    keeping = {q["id"]: fam.write(q["request"], {q["type"]: q["side"]}) for q in eps[0]["queries"]}
    for size, applied in ((1, True), (score.MAX_REPLY_CHARS // 10, False)):
        raw = [{"episode": 0, "query_id": i, "response": "\n".join([r] * size)} for i, r in keeping.items()]
        recs = [r for r in score.judge(fam, eps, raw) if r["kind"] == "trigger"]
        assert all(r["applied"] == applied and r["cut"] != applied for r in recs)


def test_judging_names_a_missing_or_extra_reply():
    fam, eps = episodes("prefs", 1)
    raw = [{"episode": 0, "query_id": q["id"], "response": "x"} for q in eps[0]["queries"]]
    with pytest.raises(InputError, match="1 missing"):
        score.judge(fam, eps, raw[1:])
    with pytest.raises(InputError, match="a duplicate"):
        score.judge(fam, eps, raw + raw[:1])
    with pytest.raises(InputError, match="only the evaluated"):
        score.judge(fam, eps, raw + [{"episode": 0, "query_id": "other", "response": ""}])


@pytest.mark.parametrize("reply", ["", "\n\n", "x" * 200_000, "def f(:\n" * 50, None, "```python\n", "(" * 5000])
@pytest.mark.parametrize("name", ["prefs", "code"])
def test_an_empty_truncated_or_enormous_reply_is_a_failure_not_a_crash(name, reply):
    fam, eps = episodes(name, 2)
    raw = [{"episode": ep["episode"], "query_id": q["id"], "response": reply} for ep in eps for q in ep["queries"]]
    recs = score.judge(fam, eps, raw)
    assert not any(r["applied"] for r in recs)
    if name == "code":
        from urd.rung3.summary import run_code

        run_code(fam, eps, recs)
        assert not any(r["correct"] for r in recs)


def test_code_replies_are_run_apart_and_a_bad_one_costs_only_itself():
    """Each reply in a process of its own, judged here on what its function returned: output,
    loops, a swallowed alarm, forks, exits, memory, forged results, reads of the next reply and
    patched modules cost the reply that does them, and only it."""
    vowels = next(t for t in C.TASKS if t.words == ("count", "vowels"))
    right = "def count_vowels(text):\n    return sum(1 for ch in text.lower() if ch in 'aeiou')\n"
    items = [
        ("def count_vowels(t):\n    print('[[\"ok\", 3], [\"ok\", 0]]', flush=True)\n"
         "    return sum(1 for ch in t.lower() if ch in 'aeiou')\n", True),
        ("def count_vowels(t):\n    while True:\n        pass\n", False),
        ("import signal\ndef count_vowels(t):\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
         "    while True:\n        try:\n            pass\n        except BaseException:\n            pass\n", False),
        ("import os\ndef count_vowels(t):\n    os.fork()\n    while True:\n        pass\n", False),
        ("import os\ndef count_vowels(t):\n    os._exit(0)\n", False),
        ("def count_vowels(t):\n    return [0] * 10 ** 10\n", False),
        ("import os\nos.write(3, b'[[\"ok\", 1], [\"ok\", 1]]')\ndef count_vowels(t):\n    return 1\n", False),
        ("import sys\nsys.stdin.readline()\nimport json\njson.dumps = lambda o: '[]'\n" + right, False),
        ("class A:\n    def __eq__(self, other):\n        return True\ndef count_vowels(t):\n    return A()\n", False),
        ("def helper(t):\n    return 0\n" + right, True),  # found by name, not by position
        ("def countVowels(text):\n    return sum(1 for ch in text.lower() if ch in 'aeiou')\n", True),
        (right, True),
        (right, True),  # after all of the above, the same reply passes again
    ]
    assert correctness.run([(src, vowels) for src, _ in items], per_reply_s=1) == [ok for _, ok in items]


def test_the_scripted_readers_code_passes_its_tasks_cases_on_every_side():
    fam = family("code")
    items = []
    for task in C.TASKS:
        for s in (0, 1):
            sides = {k.name: s for k in fam.kinds}
            items.append((fam.write("Write a function that " + task.request + ".", sides), task))
    assert all(correctness.run(items))


def test_systems_without_a_text_session_a_get_no_cell_on_the_scripted_reader():
    import yaml

    from urd.core.config import load_config
    from urd.rung3 import plan

    config = load_config(REPO / "config/config.yaml")
    config["urd3"] = yaml.safe_load((REPO / "config/urd3.yaml").read_text())["urd3"]
    ran, not_run = plan.systems(config, "scripted")
    assert {"vanilla", "gzip_tail", "retrieval", "oracle"} <= set(ran)
    assert {"summary", "state_carry"} <= set(not_run) and not set(ran) & set(not_run)
    assert "scripted reader" in not_run["summary"]


def test_every_system_gets_a_cell_on_a_backbone_and_the_state_systems_none_on_a_reader():
    import yaml

    from urd.core.config import load_config
    from urd.rung3 import plan

    config = load_config(REPO / "config/config.yaml")
    config["urd3"] = yaml.safe_load((REPO / "config/urd3.yaml").read_text())["urd3"]
    for backbone in ("tiny", "learned"):
        ran, not_run = plan.systems(config, backbone)
        assert not not_run and {"summary", "state_carry", "replay_tune"} <= set(ran), backbone
    assert {"state_carry", "replay_tune"} <= set(plan.systems(config, "scripted")[1])
    assert plan.replay_recipes(config) == {"replay_tune": "replay_tune"}


def test_rung3_transcripts_are_found_by_their_hash_for_the_tuning_rule():
    import yaml

    from urd.core.config import load_config
    from urd.rung3 import plan
    from urd.workflow import replay as replay_plan

    config = load_config(REPO / "config/config.yaml")
    config["urd3"] = {**yaml.safe_load((REPO / "config/urd3.yaml").read_text())["urd3"], "evaluate_episodes": 2}
    found = plan.transcripts(config)
    assert [(t.family, t.episode) for t in found] == [("prefs", 0), ("prefs", 1), ("code", 0), ("code", 1)]
    for t in found:
        view = views.VIEWS["session_a"](generate_episode(config["master_seed"], family(t.family), t.episode, SPEC))
        assert hashlib.sha256(view["transcript"].encode()).hexdigest() == t.sha256  # what the job re-checks
        got = replay_plan.by_sha(config, t.sha256)
        assert (got.task, got.episode, got.sha256) == tuple(t)
    assert len({t.sha256 for t in found}) == 4
    with pytest.raises(InputError, match="SHA-256 of an evaluated"):
        replay_plan.by_sha(config, "0" * 64)


# --- the plug-in ---------------------------------------------------------------------------------
def docs_plugin() -> str:
    block = re.search(r"```python\n(# my_types\.py\n.*?)```", (REPO / "docs/rung3.md").read_text(), re.S)
    assert block, "docs/rung3.md lost its example preference type"
    return block.group(1)


def test_the_documented_preference_type_runs_as_written(tmp_path, monkeypatch):
    text = docs_plugin()
    assert len(text.strip().splitlines()) <= 40
    (tmp_path / "my_types.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("my_types", None)
    fam = family("prefs", {"weekdays": "my_types:WEEKDAYS"})
    assert fam.kinds[-1].name == "weekdays"
    eps = [generate_episode(SEED, fam, i, SPEC) for i in range(4)]
    raw = run.control(ScriptedReader(fam), [views.session_a(e) for e in eps], [views.session_b(e) for e in eps])
    figures = score.cell(fam, score.judge(fam, eps, raw))
    assert figures["types"]["weekdays"] == 1.0
    _, _, van = cell("prefs", "vanilla", 120, fam=fam, eps=eps)
    assert score.cell(fam, van)["types"]["weekdays"] == 0.0


def test_rung3_jobs_are_priced_by_what_they_read_and_write():
    import yaml

    from urd.core.config import load_config
    from urd.rung3 import plan

    config = load_config(REPO / "config/config.yaml")
    config["urd3"] = yaml.safe_load((REPO / "config/urd3.yaml").read_text())["urd3"]
    price = lambda *a: plan.cpu_seconds(config, "0.1b", *a)  # measured speeds at the 0.1B shape
    assert price("prefs", "answer", "gzip_tail", "over") < price("prefs", "answer", "gzip_tail", "sanity")
    assert price("code", "answer", "vanilla", "over") > price("prefs", "answer", "vanilla", "over")  # longer replies
    assert price("prefs", "consolidate", "summary", "over") > price("prefs", "consolidate", "gzip_tail", "over")
    assert price("prefs", "control") > price("prefs", "answer", "vanilla", "over")
    assert plan.cpu_seconds(config, "scripted", "prefs", "answer", "gzip_tail", "over") < price(
        "prefs", "answer", "gzip_tail", "over")
    assert plan.queries(config, "prefs") == 24


@pytest.mark.parametrize("name", ["prefs", "code"])
def test_a_habit_that_reads_the_scope_off_the_request_scores_zero(name):
    """Always one side, applied only where the request names the scope (a shebang in scripts/
    only): no memory, so 0 on scoped types too."""
    fam, eps = episodes(name)
    raw = []
    for ep in eps:
        for q in ep["queries"]:
            sides = {k.name: 0 for k in fam.kinds if not k.scoped or k.in_scope(q["request"])}
            raw.append({"episode": ep["episode"], "query_id": q["id"], "response": fam.write(q["request"], sides)})
    figures = score.cell(fam, score.judge(fam, eps, raw))
    assert figures["score"] == 0.0 and all(v == 0.0 for v in figures["types"].values())
    assert figures["stale_excess"] == 0.0 and figures["stale_rate"] > 0.2  # the habit's raw stale rate


def test_no_episodes_context_is_built_knowing_another_episodes_fiche():
    """Relay (tests/cheats.py) keeps every fiche it reads on its class and puts them all in its
    context: pairs of episodes teach opposite sides, so one fiche would tell its pair's. Each
    episode's context is built in a process of its own, so each holds its own fiche alone."""
    from urd.systems import registry

    sys.path.insert(0, str(Path(__file__).parent))
    try:
        fam, eps = episodes("prefs", 4)
        plugins = {"relay": "cheats:Relay"}
        a, b = [views.session_a(e) for e in eps], [views.session_b(e) for e in eps]
        recs = run.consolidate(registry.build("relay", run.no_model("scripted"), plugins), "prefs", a, "over", 120, 10)
        seen = []

        class Capture(ScriptedReader):
            def replies(self, contexts, prompts):
                seen.extend(c.text for c in contexts)
                return super().replies(contexts, prompts)

        run.answer(lambda: registry.build("relay", run.no_model("scripted"), plugins), Capture(fam), b,
                   [(r, fiches.read_one(r)) for r in recs])
    finally:
        sys.path.remove(str(Path(__file__).parent))
    own = [fiches.read_one(r).decode() for r in recs]
    assert len(set(own)) == 4
    for text, mine in zip(seen, own):
        assert mine in text and not any(other in text for other in own if other != mine)



def test_a_reference_system_refuses_a_transcript_of_no_rung3_family():
    from urd.core.config import load_config
    from urd.data import calibrate
    from urd.systems import registry

    rung1 = calibrate.t1_episode(load_config(REPO / "config/config.yaml"), 0)["transcript"]
    oracle = registry.build("oracle", run.no_model("scripted"), PLUGINS)
    with pytest.raises(InputError, match="header line"):
        oracle.consolidate(rung1, 960)

@pytest.mark.parametrize("name", ["prefs", "code"])
def test_a_codebook_carries_the_whole_set_in_a_few_bytes(name):
    """The byte budget binds statements carried as text (the oracle's ceiling), not the bits a
    preference set holds: a system that ships the phrases keeps every episode's set in 4 bytes."""
    from urd.systems import registry

    fam, eps, recs = cell(name, "codebook", 8)
    assert score.cell(fam, recs)["score"] == 1.0
    a = [views.session_a(e) for e in eps]
    weighed = run.consolidate(registry.build("codebook", run.no_model("scripted"), PLUGINS), name, a, "x", 8, 10)
    assert all(r["fiche_bytes"] <= 4 for r in weighed)


def test_a_statement_on_an_assistants_line_is_not_read():
    fam = family("prefs")
    kind = fam.kind("distance")
    context = f"User: {kind.statement(0)}\nAssistant: Sure, I will {kind.phrases[1]} from now on."
    assert known_sides(fam, context) == {"distance": (0, False)}


def test_a_function_returning_a_wrong_value_or_type_fails_its_cases():
    vowels = next(t for t in C.TASKS if t.words == ("count", "vowels"))
    wrong = "def count_vowels(text):\n    return -1\n"
    as_float = "def count_vowels(text):\n    return float(sum(1 for ch in text.lower() if ch in 'aeiou'))\n"
    assert correctness.run([(wrong, vowels), (as_float, vowels)], per_reply_s=1) == [False, False]
