"""The suite runner's own duties: the documented example runs as written, the ceiling stops a
unit before a sample and says where, a stop the suite declares makes an incomplete unit (scored,
closed), any other exception propagates once the unit is closed, and the estimate is priced from
the scripted twin's call graph."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from conftest import REPO

from urd.agentmem import suite as S
from urd.agentmem.runtime import routes_for
from urd.llm import RequestRefused
from urd.stores import settings as settings_mod

LIVE = "claude-sonnet-5-5"


def make_settings(tmp_path):
    base = settings_mod.load(REPO / "config/agentmem.yaml")
    return settings_mod.with_overrides(base, {"work_dir": str(tmp_path / "work"),
                                              "calibration_dir": str(REPO / "calibration/agentmem")})


def example(settings) -> dict:
    """The module docstring's example, run as it stands (``settings`` in scope)."""
    code = re.search(r"::\n\n(.*?)\n\n\(tests/", S.__doc__, re.S).group(1)
    scope = {"settings": settings}
    exec(compile("\n".join(line[4:] for line in code.splitlines()), "suite-docstring", "exec"), scope)
    return scope


def test_the_documented_example_runs_and_reports(tmp_path):
    scope = example(make_settings(tmp_path))
    report = scope["report"]
    assert report["answers"] == ["a", "b"] and report["incomplete"] is None
    assert report["arm"] == "scripted" and report["remarks"] == ["Scripted arm."]
    assert report["spend"]["estimate"]["source"] == "free" and report["spend"]["ceiling_usd"] is None


def test_the_estimate_prices_the_scripted_twins_call_graph(tmp_path):
    settings = make_settings(tmp_path)
    echo = example(settings)["Echo"](settings, ["x", "y", "z"])
    est = S.estimate(echo, settings, routes_for(LIVE, settings))
    assert est.source == "call graph" and est.calls == 3 and est.usd > 0


class Counted(S.Suite):
    """Three samples on a fake client whose committed spend grows by ``step`` a call."""

    name, opening, finishing = "counted", "opening", "finishing"

    def __init__(self, step=0.0, fail=None):
        self.step, self.fail, self.closed, self.scored = step, fail, [], None

    def start(self, unit, run):
        return run.llm

    def samples(self, unit, llm):
        return ((w, w) for w in "abc")

    def ask(self, llm, word):
        if self.fail and word == "b":
            raise self.fail
        llm.committed_usd += self.step
        return word

    def score(self, unit, run, llm, answers, stop):
        self.scored = (answers, stop)
        return answers

    def close(self, state):
        self.closed.append(state)


def fake_ctx(ceiling):
    def open_(ledger, run_dir=None, *, responder=None):
        return SimpleNamespace(llm=SimpleNamespace(committed_usd=0.0), meter=None, dir=run_dir, ledger=ledger)
    return SimpleNamespace(ceiling_usd=ceiling, open=open_)


def test_the_ceiling_stops_a_unit_before_a_sample_and_says_where():
    suite = Counted(step=0.6)
    done = S.run_unit(suite, fake_ctx(1.0), S.Unit("u"))
    assert done.body == ["a", "b"] and done.stop.where == "c" and isinstance(done.stop.exc, S.CeilingStop)
    assert str(done.stop.exc) == "stopped before c: committed spend US$1.2000 reached the ceiling US$1"
    assert len(suite.closed) == 1
    # no ceiling (the scripted arm): every sample is asked
    assert S.run_unit(Counted(step=0.6), fake_ctx(None), S.Unit("u")).stop is None


def test_a_declared_stop_makes_an_incomplete_unit_scored_and_closed():
    suite = Counted(fail=RequestRefused("echo", "no entry"))
    done = S.run_unit(suite, fake_ctx(None), S.Unit("u"))
    assert done.body == ["a"] and done.stop.where == "b" and isinstance(done.stop.exc, RequestRefused)
    assert suite.why(done.stop) == "scripted arm refused a echo request: no entry"
    assert len(suite.closed) == 1


def test_any_other_exception_propagates_after_the_unit_is_closed():
    suite = Counted(fail=ValueError("a bug"))
    with pytest.raises(ValueError, match="a bug"):
        S.run_unit(suite, fake_ctx(None), S.Unit("u"))
    assert len(suite.closed) == 1 and suite.closed[0] is not None and suite.scored is None

    class Unopened(Counted):
        def start(self, unit, run):
            raise KeyError("no store")

    unopened = Unopened()
    with pytest.raises(KeyError):
        S.run_unit(unopened, fake_ctx(None), S.Unit("u"))
    assert unopened.closed == [None]  # close is told that start never returned
