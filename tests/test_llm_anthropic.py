"""The live backend on the real anthropic SDK, through an httpx2 mock transport (no network).

anthropic 2.10.0 takes an ``httpx2.Client`` as ``http_client`` and refuses an
``httpx.Client``; its retries (429, 529) and timeout are the SDK's own.
"""

import json

import anthropic
import httpx
import httpx2
import pytest
from conftest import REPO

from urd.llm import CallFailed, KeyMissing, Request
from urd.llm.anthropic_backend import AnthropicBackend

KEY = "sk-ant-test-key-must-never-be-written-0000"


def _ok(body, text="VERDICT: NO"):
    return httpx2.Response(
        200,
        json={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 120, "output_tokens": 7, "cache_creation_input_tokens": 30, "cache_read_input_tokens": 0},
        },
    )


def _error(status):
    # retry-after-ms keeps the SDK's backoff to a millisecond in tests.
    return httpx2.Response(status, headers={"retry-after-ms": "1"}, json={"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})


def test_sdk_takes_an_httpx2_client_and_refuses_an_httpx_one():
    with pytest.raises(TypeError, match="httpx2"):
        anthropic.Anthropic(api_key=KEY, http_client=httpx.Client())
    anthropic.Anthropic(api_key=KEY, http_client=httpx2.Client())


def test_retries_429_then_529_through_the_sdk_and_meters_the_answer(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    seen = []

    def handler(request):
        seen.append(request)
        body = json.loads(request.content)
        return [_error(429), _error(529)][len(seen) - 1] if len(seen) <= 2 else _ok(body)

    backend = AnthropicBackend(max_retries=3, timeout_s=5, http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    done = backend.complete("claude-sonnet-5-5", Request("contradiction", "instructions", "data", 64))
    assert len(seen) == 3
    assert [r.headers["x-stainless-retry-count"] for r in seen] == ["0", "1", "2"]
    body = json.loads(seen[-1].content)
    assert body["model"] == "claude-sonnet-5-5" and body["max_tokens"] == 64
    assert body["system"] == [{"type": "text", "text": "instructions", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": "data"}]
    assert done.text == "VERDICT: NO" and done.model == "claude-sonnet-5-5"
    assert (done.usage.input_tokens, done.usage.output_tokens, done.usage.cache_write_tokens) == (120, 7, 30)


def test_a_call_the_sdk_gives_up_on_fails_without_quoting_the_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    seen = []

    def handler(request):
        seen.append(request)
        assert request.headers.get("x-api-key") == KEY or KEY in request.headers.get("authorization", "")
        return _error(529)

    backend = AnthropicBackend(max_retries=2, timeout_s=5, http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    with pytest.raises(CallFailed) as failed:
        backend.complete("claude-sonnet-5-5", Request("update", "s", "u", 8))
    assert len(seen) == 3
    assert "529" in str(failed.value) and KEY not in str(failed.value)
    # nor in what it was raised from, which a traceback would print
    cause = failed.value.__cause__ or failed.value.__context__
    assert cause is None or KEY not in str(cause) + repr(getattr(cause, "args", ()))


def test_the_key_comes_from_the_environment_or_nothing_starts(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(KeyMissing):
        AnthropicBackend(max_retries=0, timeout_s=1)


def _cut(body, text="VERDICT: CHAN"):
    reply = _ok(body, text)
    data = json.loads(reply.content)
    data["stop_reason"] = "max_tokens"
    return httpx2.Response(200, json=data)


def _llm(monkeypatch, handler, tmp_path, **kw):
    from urd.llm import LLM, Backends, Meter, PriceBook, ReplayCache, Routes

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    backend = AnthropicBackend(max_retries=0, timeout_s=5, http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    prices = PriceBook.from_settings(
        {"checked": "2026-11-30", "usd_per_mtok": {"claude-sonnet-5-5": {"input": 3, "output": 15, "cache_write": 3.75, "cache_read": 0.3}}}
    )
    meter = Meter()
    llm = LLM(routes=Routes.build("claude-sonnet-5-5", ("update",)), backends=Backends(live_factory=lambda: backend),
              prices=prices, meter=meter, cache=ReplayCache(tmp_path / "cache"), **kw)
    return llm, meter


def test_a_reply_cut_at_max_tokens_is_asked_again_with_twice_the_budget_and_never_parsed(monkeypatch, tmp_path):
    seen = []

    def handler(request):
        body = json.loads(request.content)
        seen.append(body["max_tokens"])
        return _cut(body) if len(seen) == 1 else _ok(body, "VERDICT: CHANGES")

    llm, meter = _llm(monkeypatch, handler, tmp_path)
    assert llm.ask(Request("update", "s", "u", 64)) == "VERDICT: CHANGES"
    assert seen == [64, 128] and dict(meter.truncated) == {"update": 1}
    assert len(meter.records) == 2 and meter.spent_usd > 0  # the cut reply was billed, and counted
    # a rerun replays the cut and its retry from the cache: no call, the same answer
    again, meter2 = _llm(monkeypatch, handler, tmp_path)
    assert again.ask(Request("update", "s", "u", 64)) == "VERDICT: CHANGES" and seen == [64, 128]
    assert dict(meter2.truncated) == {"update": 1} and meter2.spent_usd == 0


def test_a_reply_cut_twice_fails_the_call_naming_the_budget(monkeypatch, tmp_path):
    from urd.llm import Truncated

    seen = []

    def handler(request):
        body = json.loads(request.content)
        seen.append(body["max_tokens"])
        return _cut(body)

    llm, meter = _llm(monkeypatch, handler, tmp_path, max_retry_tokens={"update": 100})
    with pytest.raises(Truncated, match="update call on claude-sonnet-5-5 failed: reply cut at max_tokens=100"):
        llm.ask(Request("update", "s", "u", 64))
    assert seen == [64, 100] and dict(meter.truncated) == {"update": 2} and dict(meter.failed) == {"update": 1}


def test_the_configured_retry_policy_re_asks_an_extraction_and_never_a_probe(monkeypatch, tmp_path):
    """config/agentmem.yaml: an extraction cut at its budget is asked again at twice it; a
    two-line probe cut at 1,024 tokens is off its protocol and is not asked again."""
    from urd.agentmem.runtime import build_llm, routes_for
    from urd.llm import Meter, Truncated
    from urd.llm import purposes as P
    from urd.stores import settings as settings_mod

    seen = []

    def handler(request):
        body = json.loads(request.content)
        seen.append(body["max_tokens"])
        return _cut(body)

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    s = settings_mod.with_overrides(settings_mod.load(REPO / "config/agentmem.yaml"), {"work_dir": str(tmp_path)})
    llm = build_llm(s, routes_for("claude-sonnet-5-5", s), Meter(), http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    with pytest.raises(Truncated, match="max_tokens=8192"):
        llm.ask(Request(P.EXTRACT, "s", "u", s.max_tokens[P.EXTRACT]))
    assert seen == [4096, 8192]
    seen.clear()
    with pytest.raises(Truncated, match="max_tokens=1024"):
        llm.ask(Request(P.CONTRADICTION, "s", "u", s.max_tokens[P.CONTRADICTION]))
    assert seen == [1024] and llm.meter.truncated[P.CONTRADICTION] == 1


def test_the_ceiling_is_checked_before_every_call_so_the_spend_never_passes_it(monkeypatch, tmp_path):
    import random

    from urd.llm import CeilingReached

    sent = []

    def handler(request):  # every call costs as much as it possibly can
        body = json.loads(request.content)
        sent.append(body)
        reply = json.loads(_ok(body).content)
        size = len(body["system"][0]["text"].encode()) + len(body["messages"][0]["content"].encode())
        reply["usage"] = {"input_tokens": size + 64, "output_tokens": body["max_tokens"],
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        return httpx2.Response(200, json=reply)

    rng = random.Random(7)
    ceiling = 0.05
    llm, meter = _llm(monkeypatch, handler, tmp_path, ceiling_usd=ceiling)
    with pytest.raises(CeilingReached) as stop:
        for i in range(1000):
            llm.ask(Request("update", "s" * rng.randrange(10, 3000), f"u{i}", rng.randrange(16, 1024)))
    assert 0 < meter.spent_usd <= ceiling and len(sent) == len(meter.records)
    assert stop.value.spent + stop.value.worst > ceiling and "past the ceiling US$0.05" in str(stop.value)


def test_a_reply_cut_by_the_context_window_is_truncated_and_a_refusal_is_never_an_answer(monkeypatch, tmp_path):
    from urd.llm.anthropic_backend import ModelRefused

    reasons = iter(["model_context_window_exceeded", "end_turn", "refusal"])

    def handler(request):
        body = json.loads(request.content)
        data = json.loads(_ok(body, "VERDICT: CHANGES").content)
        data["stop_reason"] = next(reasons)
        return httpx2.Response(200, json=data)

    llm, meter = _llm(monkeypatch, handler, tmp_path)
    assert llm.ask(Request("update", "s", "u", 64)) == "VERDICT: CHANGES" and dict(meter.truncated) == {"update": 1}
    with pytest.raises(ModelRefused, match="update call on claude-sonnet-5-5 failed: the model refused to answer"):
        llm.ask(Request("update", "s", "another", 64))
    assert dict(meter.failed) == {"update": 1} and len(meter.records) == 3  # the refusal was billed


def test_the_estimate_counts_input_tokens_with_the_api_when_asked(monkeypatch):
    from urd.agentmem import trip_vs_move
    from urd.agentmem.cli import token_counter
    from urd.agentmem.runtime import routes_for
    from urd.stores import settings as settings_mod

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    paths = []

    def handler(request):
        paths.append(request.url.path)
        body = json.loads(request.content)
        size = len(body["system"][0]["text"].encode()) + len(body["messages"][0]["content"].encode())
        return httpx2.Response(200, json={"input_tokens": size})  # one token a byte: dearer than 3 bytes a token

    s = settings_mod.load(REPO / "config/agentmem.yaml")
    routes = routes_for("claude-sonnet-5-5", s)
    count = token_counter(s, http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    counted = trip_vs_move.estimate(s, routes, "reader", gate="production", runs=s.runs, count=count)
    stated = trip_vs_move.estimate(s, routes, "reader", gate="production", runs=s.runs)
    assert counted.usd > stated.usd and "count_tokens" in counted.line()
    graph = {(r.system, r.user) for v in ("move", "trip-alone")
             for r in trip_vs_move.call_graph(s, "reader", v, "production")}
    assert set(paths) == {"/v1/messages/count_tokens"} and len(paths) == len(graph)  # each distinct request once, nothing generated


def test_an_attempt_a_transport_cannot_trace_that_times_out_is_billed_at_its_worst_case(monkeypatch):
    """A transport without httpcore's trace (here a mock) cannot say whether the request went out:
    an attempt that timed out may have been processed and billed, so each one counts as a lost
    reply (the ledger holds it at its worst case), never as nothing."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    seen = []

    def handler(request):
        seen.append(request)
        raise httpx2.ReadTimeout("no answer", request=request)

    backend = AnthropicBackend(max_retries=1, timeout_s=5, http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    with pytest.raises(CallFailed) as failed:
        backend.complete("claude-sonnet-5-5", Request("update", "s", "u", 8))
    assert len(seen) == 2
    assert (failed.value.retries, failed.value.lost) == (1, 2)
