"""The live path over a real socket: the anthropic SDK against the loopback Messages API
(tests/messages_server.py), with the faults a live run meets. What the server billed is the
truth each test holds the spend ledger to."""

import json
import socket
import time

import pytest
from fake_messages_api import FakeMessagesAPI
from messages_server import BATCHES, MESSAGES, MessagesServer
from test_agentmem_live import MODEL, QUIET, SMALL
from test_agentmem_live import make_settings as live_settings

from urd.agentmem import cli as agentmem_cli
from urd.agentmem import trip_vs_move, update_gate
from urd.llm.batches import BatchJournal
from urd.llm.ledger import SpendLedger
from urd.stores import settings as settings_mod

KEY = "sk-ant-wire-test-key"


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with MessagesServer(lifetime_s=300) as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        yield srv


def make_settings(tmp_path, **changes):
    return live_settings(tmp_path, **{"llm.max_retries": 2, "llm.timeout_s": 5, **changes})


def trip(tmp_path, **changes):
    return trip_vs_move.run_suite("reader", MODEL, make_settings(tmp_path, **changes), runs=SMALL, yes=True, **QUIET)


BATCHED = {"llm.batches": True, "llm.batch_poll_s": 0.01}


def gate(tmp_path, log=QUIET["log"], **changes):
    return update_gate.run_suite(MODEL, make_settings(tmp_path, **BATCHED, **changes), samples=1, yes=True, log=log)


def ledgers(tmp_path) -> list[SpendLedger]:
    return [SpendLedger(p) for p in sorted((tmp_path / "work" / "ledgers").rglob("*.jsonl"))]


def ledger_total(tmp_path) -> float:
    return sum(ledger.billed_usd for ledger in ledgers(tmp_path))


def prices(tmp_path):
    return make_settings(tmp_path).prices


# --- single calls: the SDK's retries, counted; what it gives up on, incomplete ----------------------
def test_429_with_retry_after_529_500_and_a_hang_up_are_retried_counted_and_billed_once(server, tmp_path):
    server.fault("429", retry_after="1").fault("529").fault("500").fault("refuse")
    report = trip(tmp_path, **{"llm.max_retries": 4})
    assert all(r["passed"] for r in report["runs"])
    retried = sum(sum(r["usage"].get("retried", {}).values()) for r in report["runs"])
    assert retried == 4
    first = server.requests_to(MESSAGES)
    assert [e["outcome"] for e in first[:5]] == ["429", "529", "500", "refused", "answered"]
    assert [e["retry"] for e in first[:5]] == [0, 1, 2, 3, 4]  # one call, retried by the SDK
    assert first[1]["at"] - first[0]["at"] >= 0.9  # the SDK waited as retry-after asked
    # the hang-up came after the whole request went out: the client cannot know it was not billed,
    # so the ledger holds it at its worst case (the 429, 529 and 500 were answered: not billed)
    lost = [lg for lg in ledgers(tmp_path) if lg.summary()["lost_replies"]]
    assert len(lost) == 1 and lost[0].summary()["lost_replies"] == 1
    assert report["spend"]["ledger_usd"] > server.billed_usd(prices(tmp_path))
    assert sum(server.billed_requests().values()) == sum(r["usage"]["calls"] for r in report["runs"])


def test_a_reply_paid_twice_on_the_wire_is_in_the_reports_measured_spend(server, tmp_path):
    """A reply cut mid-body was billed and is asked again: the report's measured_usd is what the
    run was billed (the lost reply at its worst case, and the answer), not only the replies used."""
    clean = trip(tmp_path / "clean")
    server.billed.clear()
    server.fault("reset")
    report = trip(tmp_path)
    spend = report["spend"]
    assert spend["used_usd"] == pytest.approx(clean["spend"]["measured_usd"], abs=1e-6)
    assert spend["measured_usd"] == pytest.approx(spend["ledger_usd"], abs=1e-6)
    assert spend["measured_usd"] >= server.billed_usd(prices(tmp_path)) > spend["used_usd"]


def test_after_the_sdk_gives_up_the_run_is_incomplete_with_one_line_and_nothing_billed(server, tmp_path):
    server.fault("529", times=50)
    report = trip(tmp_path)
    run = report["runs"][0]
    assert run["passed"] is None and "\n" not in run["incomplete"] and "HTTP 529" in run["incomplete"]
    assert report["verdict"]["bar_met"] is None
    assert len(server.requests_to(MESSAGES)) >= 3  # the first try and the SDK's two retries, per run
    assert server.billed == [] and ledger_total(tmp_path) == 0
    assert all(ledger.in_flight() == [] for ledger in ledgers(tmp_path))


def test_a_reply_cut_mid_body_is_billed_by_the_server_counted_at_its_worst_case_and_retried(server, tmp_path):
    clean = trip(tmp_path / "clean")
    server.billed.clear()
    server.fault("reset", after=2)
    report = trip(tmp_path / "cut")
    assert [r["checks"] for r in report["runs"]] == [r["checks"] for r in clean["runs"]]
    assert sum(sum(r["usage"].get("lost", {}).values()) for r in report["runs"]) == 1
    lost = [b for b in server.billed if b["lost"]]
    assert len(lost) == 1
    ledger = next(lg for lg in ledgers(tmp_path / "cut") if lg.summary()["lost_replies"])
    assert ledger.summary()["lost_replies"] == 1
    # the lost reply's usage never arrived: the ledger holds it at its worst case, never less
    assert ledger_total(tmp_path / "cut") >= server.billed_usd(prices(tmp_path)) > clean["spend"]["ledger_usd"]


def test_a_stall_past_the_timeout_is_bounded_and_never_a_pass(server, tmp_path):
    server.fault("stall", seconds=3, times=10)
    start = time.monotonic()
    report = trip_vs_move.run_suite("reader", MODEL, make_settings(tmp_path, **{"llm.timeout_s": 0.3, "llm.max_retries": 1}),
                                    runs={"move": 1}, yes=True, **QUIET)
    assert time.monotonic() - start < 15
    run = report["runs"][0]
    assert run["passed"] is None and "APITimeoutError" in run["incomplete"]
    # the server billed nothing, but the client cannot know that: each timed-out attempt (the
    # first and the SDK's retry) stays committed at its worst case
    assert server.billed == [] and ledger_total(tmp_path) > 0
    assert sum(lg.summary()["lost_replies"] for lg in ledgers(tmp_path)) == 2


def test_timed_out_attempts_stay_committed_so_reruns_keep_the_ceiling(server, tmp_path):
    """The API bills a request it processed even when the client timed out before the answer: a
    rerun must start from what the earlier ones may have spent, not from US$0."""
    server.fault("late", seconds=1.0, times=1)
    quick = {"llm.timeout_s": 0.3, "llm.max_retries": 0}
    trip_vs_move.run_suite("reader", MODEL, make_settings(tmp_path / "one", **quick), runs={"move": 1}, yes=True, **QUIET)
    worst = ledger_total(tmp_path / "one")  # one timed-out call, at its worst case
    assert worst > 0 and len(server.billed) == 1
    server.billed.clear()
    server.fault("late", seconds=1.0, times=100)
    ceiling = {**quick, "spend.max_usd_per_run": 2.5 * worst}
    for _ in range(4):
        report = trip_vs_move.run_suite("reader", MODEL, make_settings(tmp_path / "runs", **ceiling), runs={"move": 1},
                                        yes=True, **QUIET)
        assert report["runs"][0]["passed"] is None
    # two calls fit under the ceiling at their worst case; the reruns after them send nothing
    assert len(server.billed) == 2 and ledger_total(tmp_path / "runs") <= 2.5 * worst
    assert ledger_total(tmp_path / "runs") >= server.billed_usd(prices(tmp_path))


def test_a_server_that_is_not_there_is_an_incomplete_run(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    report = trip_vs_move.run_suite("reader", MODEL, make_settings(tmp_path, **{"llm.max_retries": 0}), runs={"move": 1},
                                    yes=True, **QUIET)
    assert report["runs"][0]["passed"] is None and "APIConnectionError" in report["runs"][0]["incomplete"]


# --- Message Batches --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def clean_gate(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("clean-gate")
    mp = pytest.MonkeyPatch()
    mp.setenv("ANTHROPIC_API_KEY", KEY)
    with MessagesServer(lifetime_s=300) as srv:
        mp.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        report = gate(tmp)
    mp.undo()
    return report, srv


def test_a_batch_in_progress_is_polled_to_its_end_and_read_once(server, tmp_path, clean_gate):
    server.api.batch_polls = 3
    report = gate(tmp_path)
    assert report["sets"] == clean_gate[0]["sets"] and report["usage"] == clean_gate[0]["usage"]
    assert server.creates == 2 and len(server.requests_to(BATCHES)) == 2
    assert all(n >= 4 for n in server.api.polls.values())
    assert report["spend"]["ledger"]["billed_usd"] == pytest.approx(server.billed_usd(prices(tmp_path)), abs=1e-6)


def test_a_results_stream_cut_short_is_read_again_and_each_result_settled_once(server, tmp_path, clean_gate):
    server.fault("cut", BATCHES + "/", method="GET", suffix="/results")
    report = gate(tmp_path)
    assert report["sets"] == clean_gate[0]["sets"] and report["usage"] == clean_gate[0]["usage"]
    assert server.creates == 2
    results = [e for e in server.log if e["path"].endswith("/results")]
    assert results[0]["outcome"] == "cut mid-body" and len(results) == 3
    assert report["spend"]["ledger"]["billed_usd"] == pytest.approx(server.billed_usd(prices(tmp_path)), abs=1e-6)
    assert report["spend"]["ledger"]["billed_replies"] == clean_gate[0]["spend"]["ledger"]["billed_replies"]


def test_a_poll_that_keeps_failing_leaves_the_batch_named_and_a_rerun_resumes_it(server, tmp_path, clean_gate):
    server.fault("500", BATCHES + "/", method="GET", times=6 * 3)  # each poll: the try and the SDK's 2 retries
    lines = []
    left = gate(tmp_path, log=lines.append)
    assert left["incomplete"] and "msgbatch_1 left in progress" in left["incomplete"]
    assert "python -m urd.agentmem batches cancel msgbatch_1" in left["incomplete"]
    journal = BatchJournal(tmp_path / "work" / "llm-batches")
    assert [r["id"] for r in journal.open_records()] == ["msgbatch_1"]
    # the batch's worst case stays committed while nobody has read it
    assert ledgers(tmp_path)[0].summary()["in_flight"] == 178
    lines.clear()
    again = gate(tmp_path, log=lines.append)
    assert any("resuming message batch msgbatch_1" in line for line in lines)
    assert server.creates == 2  # the left batch was resumed, not sent again
    assert again["sets"] == clean_gate[0]["sets"] and again["usage"] == clean_gate[0]["usage"]
    assert again["spend"]["ledger"]["billed_usd"] == pytest.approx(server.billed_usd(prices(tmp_path)), abs=1e-6)
    assert journal.open_records() == [] and server.billed_requests() == clean_gate[1].billed_requests()


def test_a_left_batch_is_cancelled_by_command_and_what_it_did_is_kept(server, tmp_path):
    server.api.batch_polls = 10**6
    server.fault("500", BATCHES + "/", method="GET", times=6 * 3)
    gate(tmp_path)
    server.faults.clear()
    s = make_settings(tmp_path, **BATCHED)
    settings_json = json.dumps(s.raw, default=str)
    assert agentmem_cli.main(["batches", "list", "--settings", settings_json]) == 0
    assert agentmem_cli.main(["batches", "cancel", "msgbatch_1", "--settings", settings_json]) == 0
    assert [e for e in server.log if e["path"].endswith("/cancel")]
    record = BatchJournal(tmp_path / "work" / "llm-batches").find("msgbatch_1")
    assert record["state"] == "canceled"
    assert ledger_total(tmp_path) == pytest.approx(server.billed_usd(prices(tmp_path)), abs=1e-6)
    assert ledgers(tmp_path)[0].in_flight() == []


# --- a batch whose id never came back, a left batch under other settings, a batch the API forgot ----
def test_a_create_whose_answer_is_lost_is_not_retried_and_a_rerun_adopts_the_batch_it_made(server, tmp_path, clean_gate):
    """The create was processed (the batch exists, billed) but its answer came after the client's
    timeout: no automatic retry buys a second batch, the pending journal stays, and the rerun
    finds the batch by its size, time and custom ids, reads it, and pays for nothing twice."""
    server.fault("late", BATCHES, seconds=3)
    lines = []
    first = gate(tmp_path, log=lines.append, **{"llm.timeout_s": 1})
    assert first["incomplete"] and "message batch not created" in first["incomplete"]
    assert len(server.requests_to(BATCHES)) == 1 and server.creates == 1  # one create, never retried
    (pending,) = (tmp_path / "work" / "llm-batches").glob("pending-*.json")
    assert json.loads(pending.read_text())["marker"]
    ids = {json.loads(b)["requests"][0]["custom_id"].split("-")[0] for b in server.bodies[BATCHES]}
    assert len(ids) == 1  # every custom id carries the run's marker
    time.sleep(3)  # the late answer has gone to a closed socket
    lines.clear()
    again = gate(tmp_path, log=lines.append)
    assert any("adopting message batch msgbatch_1" in line for line in lines), lines
    assert again["sets"] == clean_gate[0]["sets"] and again["usage"] == clean_gate[0]["usage"]
    assert server.creates == clean_gate[1].creates == 2  # the adopted one, and the confirmations' batch
    assert server.billed_requests() == clean_gate[1].billed_requests()
    assert ledger_total(tmp_path) == pytest.approx(server.billed_usd(prices(tmp_path)), abs=1e-6)
    assert ledgers(tmp_path)[0].in_flight() == [] and not list((tmp_path / "work" / "llm-batches").glob("pending-*"))


def test_a_batch_of_the_same_size_with_other_custom_ids_is_not_adopted(server, tmp_path, clean_gate):
    """The create's answer was lost, and the batch the workspace shows since then, of the same
    size, carries other custom ids (another run's): it is not ours, so it is not read; the
    requests go back to the queue and are sent again."""
    server.fault("late", BATCHES, seconds=3)
    gate(tmp_path, **{"llm.timeout_s": 1})
    (made,) = server.api.batches
    server.api.batches[made] = [(f"other-run-{i}", reply) for i, (_, reply) in enumerate(server.api.batches[made])]
    time.sleep(3)  # the late answer has gone to a closed socket
    lines = []
    again = gate(tmp_path, log=lines.append)
    assert not any("adopting" in line for line in lines), lines
    assert any("no message batch carries the requests" in line for line in lines), lines
    assert again["sets"] == clean_gate[0]["sets"] and again["usage"] == clean_gate[0]["usage"]
    assert server.creates == clean_gate[1].creates + 1  # the decoy, then ours sent again


def test_a_create_that_never_reached_the_api_releases_its_requests_on_the_rerun(server, tmp_path, clean_gate):
    server.fault("refuse", BATCHES)
    first = gate(tmp_path, **{"llm.max_retries": 0})
    assert first["incomplete"] and server.creates == 0
    assert len(list((tmp_path / "work" / "llm-batches").glob("pending-*.json"))) == 1  # kept through the error
    lines = []
    again = gate(tmp_path, log=lines.append)
    assert any("none was made" in line for line in lines), lines
    assert again["sets"] == clean_gate[0]["sets"] and server.billed_requests() == clean_gate[1].billed_requests()
    assert ledgers(tmp_path)[0].in_flight() == []  # nothing left committed at its worst case
    assert ledger_total(tmp_path) == pytest.approx(server.billed_usd(prices(tmp_path)), abs=1e-6)


def test_a_left_batch_is_collected_by_a_rerun_with_batches_off_and_nothing_is_bought_twice(server, tmp_path, clean_gate):
    server.fault("500", BATCHES + "/", method="GET", times=6 * 3)  # the first batch is left, billed, unread
    left = gate(tmp_path)
    assert left["incomplete"] and "msgbatch_1 left in progress" in left["incomplete"]
    lines = []
    plain = update_gate.run_suite(MODEL, make_settings(tmp_path, **{"llm.batches": False, "llm.batch_poll_s": 0.01}),
                                  samples=1, yes=True, log=lines.append)
    assert any("resuming message batch msgbatch_1" in line for line in lines)
    assert plain["sets"] == clean_gate[0]["sets"]
    # every request the left batch answered was read from it; only what it did not hold (the
    # confirmations) went out alone: as many bills as the clean run's, not the batch's again
    batched = [b for b in server.billed if b["batched"]]
    assert len(batched) == 178 and len(server.billed) == len(clean_gate[1].billed) == 221
    assert BatchJournal(tmp_path / "work" / "llm-batches").open_records() == []
    assert ledger_total(tmp_path) == pytest.approx(server.billed_usd(prices(tmp_path)), abs=1e-6)


def test_a_batch_the_api_no_longer_knows_goes_back_to_the_queue_and_the_report_names_it(server, tmp_path, clean_gate):
    server.fault("500", BATCHES + "/", method="GET", times=6 * 3)
    gate(tmp_path)
    server.faults.clear()
    server.api.gone.add("msgbatch_1")
    started = time.monotonic()
    again = gate(tmp_path)
    assert time.monotonic() - started < 30
    assert not again["incomplete"] and again["sets"] == clean_gate[0]["sets"]
    (gone,) = again["spend"]["batches"]
    assert gone["batch"] == "msgbatch_1" and "404" in gone["why"] and gone["requests_requeued"] == 178
    assert BatchJournal(tmp_path / "work" / "llm-batches").find("msgbatch_1")["state"] == "gone"
    # its requests were sent again; what the forgotten batch may have cost stays counted at its worst case
    assert server.creates == 3 and again["spend"]["ledger"]["lost_replies"] == 178
    assert ledgers(tmp_path)[0].in_flight() == []


# --- the batch path under the ceiling ----------------------------------------------------------------
def test_a_batch_whose_summed_worst_case_would_pass_the_ceiling_is_cut_before_it_is_sent(server, tmp_path):
    ceiling = 0.5
    report = gate(tmp_path, **{"spend.max_usd_update_gate": ceiling})
    sent = [json.loads(b) for b in server.bodies[BATCHES]]
    assert 0 < len(sent[0]["requests"]) < 178  # cut at the ceiling, not sent whole
    worst = sum(s["worst_usd"] for lg in ledgers(tmp_path) for s in lg._sends.values() if s["batch"])
    assert worst <= ceiling
    assert ledger_total(tmp_path) == pytest.approx(server.billed_usd(prices(tmp_path)), abs=1e-9)
    assert server.billed_usd(prices(tmp_path)) <= ceiling and report["spend"]["ceiling_usd"] == ceiling


class _EmptyFor:
    """Answers as the table does, but with an empty reply (billed, unusable) for one pair's reading."""

    def __init__(self, marker):
        self.inner = FakeMessagesAPI().responder
        self.marker = marker

    def __call__(self, request):
        answer = self.inner(request)
        return "" if self.marker in request.user and isinstance(answer, str) else answer


def test_failed_batch_items_are_billed_as_the_server_billed_them(server, tmp_path):
    server.api.responder = _EmptyFor("Porto")
    report = gate(tmp_path)
    assert sum(report["usage"]["failed"].values()) > 0
    # asked again alone, the failed ones are billed again, by the server and the ledger alike
    assert report["spend"]["ledger"]["billed_usd"] == pytest.approx(server.billed_usd(prices(tmp_path)), abs=1e-6)


def test_the_dry_runs_estimate_is_what_a_rerun_would_still_spend(server, tmp_path):
    from urd.workflow import agentmem as smk

    raw = make_settings(tmp_path, **BATCHED).raw
    # the job's run, as the rule's command makes it: in the target's own work folder
    job = settings_mod.for_job(make_settings(tmp_path, **BATCHED), "update-gate", store="reference", model=MODEL)

    def run_job():
        update_gate.run_suite(MODEL, job, samples=1, yes=True, log=QUIET["log"])
        return [SpendLedger(p) for p in sorted((job.work_dir / "ledgers").rglob("*.jsonl"))]

    before = smk.update_gate_estimate(raw, MODEL)
    server.fault("500", BATCHES + "/", method="GET", times=6 * 3)  # the first batch is left, billed, unread
    paid = run_job()[0].billed_usd
    assert paid == 0  # nothing read yet: the left batch is in flight, its worst case committed
    server.faults.clear()
    paid = run_job()[0].billed_usd
    after = smk.update_gate_estimate(raw, MODEL)
    assert after.usd == pytest.approx(max(0.0, before.usd - paid), abs=1e-9) and after.usd < before.usd
    assert "already paid for" in after.note
    assert smk.update_gate_estimate(raw, "claude-sonnet-4-6").usd == smk.update_gate_estimate(
        make_settings(tmp_path / "fresh", **BATCHED).raw, "claude-sonnet-4-6").usd  # another target: untouched


def test_no_retry_after_a_lost_reply_is_sent_if_it_could_pass_the_ceiling(server, tmp_path):
    trip_vs_move.run_suite("reader", MODEL, make_settings(tmp_path / "probe"), runs={"move": 1}, yes=True, **QUIET)
    first = next(iter(ledgers(tmp_path / "probe")[0]._sends.values()))["worst_usd"]
    server.log.clear()
    server.fault("reset")
    ceiling = 1.5 * first  # room for the call, not for the call and its retry after the lost reply
    report = trip_vs_move.run_suite("reader", MODEL, make_settings(tmp_path, **{"spend.max_usd_per_run": ceiling}),
                                    runs={"move": 1}, yes=True, **QUIET)
    run = report["runs"][0]
    assert run["passed"] is None and "past the ceiling" in run["incomplete"]
    assert [e["outcome"] for e in server.requests_to(MESSAGES)] == ["cut mid-body"]  # the retry was never sent
    ledger = ledgers(tmp_path)[0]
    assert ledger.summary()["lost_replies"] == 1 and ledger.committed_usd <= ceiling


def test_a_missing_key_fails_before_anything_is_written_down_as_sent(server, tmp_path, monkeypatch):
    from urd.llm import KeyMissing

    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(KeyMissing):
        trip(tmp_path)
    assert all(lg.in_flight() == [] for lg in ledgers(tmp_path)) and server.log == []


def test_attempts_are_counted_under_a_gateways_path_prefix_too():
    import httpx2

    from urd.llm.anthropic_backend import _is_message

    for url in ("https://api.anthropic.com/v1/messages", "https://gw.example/anthropic/v1/messages/"):
        assert _is_message(httpx2.Request("POST", url))
    assert not _is_message(httpx2.Request("POST", "https://api.anthropic.com/v1/messages/batches"))
    assert not _is_message(httpx2.Request("GET", "https://api.anthropic.com/v1/messages"))
