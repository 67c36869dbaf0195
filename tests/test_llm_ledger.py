"""The spend ledger on its own: what it commits, what a torn or foreign line does, and whose
calls count as a run's spend."""

import pytest

from urd.core.errors import InputError
from urd.llm import Completion, Usage
from urd.llm.ledger import Bill, SpendLedger


def test_a_call_in_flight_counts_at_its_worst_case_until_settled_across_processes(tmp_path):
    path = tmp_path / "t.jsonl"
    a = SpendLedger(path)
    sent = a.send("run-1", "k1", "extract", "m", 0.30)
    assert a.committed_usd == pytest.approx(0.30) and a.billed_usd == 0
    # another process reading the same target sees the same commitment
    assert SpendLedger(path).committed_usd == pytest.approx(0.30)
    reply = Completion("ok", "m", Usage(10, 5))
    a.settle(sent, [Bill("lost", 0.30, "m"), Bill("answered", 0.01, "m", Usage(10, 5), reply=reply)])
    b = SpendLedger(path)
    assert b.billed_usd == pytest.approx(0.31) and b.committed_usd == pytest.approx(0.31) and b.in_flight() == []
    assert b.summary()["lost_replies"] == 1 and b.summary()["billed_replies"] == 2
    assert b.reply("k1") == reply and b.reply("k2") is None


def test_a_call_paid_by_a_run_counts_as_that_runs_and_no_other(tmp_path):
    ledger = SpendLedger(tmp_path / "t.jsonl")
    ledger.settle(ledger.send("run-1", "k", "judge", "m", 1.0),
                  [Bill("lost", 1.0, "m"), Bill("answered", 0.02, "m", Usage(1, 1))])
    assert ledger.paid("run-1", "k")["cost_usd"] == pytest.approx(0.02)
    assert ledger.paid("run-2", "k") is None
    # what a rerun replays for nothing: the answered reply, not the lost one (asked again)
    assert ledger.answered_usd_for("run-1") == pytest.approx(0.02) and ledger.answered_usd_for("run-2") == 0
    assert ledger.billed_usd == pytest.approx(1.02)


def test_a_torn_last_line_is_a_kill_while_appending_and_any_other_bad_line_is_named(tmp_path):
    path = tmp_path / "t.jsonl"
    ledger = SpendLedger(path)
    ledger.send("r", "k", "p", "m", 0.5)
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"op":"settle","id":')  # the settlement torn: the call stays in flight
    assert SpendLedger(path).committed_usd == pytest.approx(0.5)
    again = SpendLedger(path)  # the next process appends after cutting the torn line off
    again.settle(again.send("r", "k2", "p", "m", 0.25), [])
    assert SpendLedger(path).committed_usd == pytest.approx(0.5) and len(SpendLedger(path)._sends) == 2
    path.write_bytes(whole + b"not json\n" + whole)
    with pytest.raises(InputError, match=r"t\.jsonl:2"):
        SpendLedger(path)
    path.write_bytes(b'{"op":"refund","id":"x"}\n')
    with pytest.raises(InputError, match=r"t\.jsonl:1: entry.*refund"):
        SpendLedger(path)


def test_a_ledger_in_memory_writes_nothing(tmp_path):
    ledger = SpendLedger(None)
    ledger.settle(ledger.send("r", "k", "p", "m", 0.5), [])
    assert ledger.committed_usd == 0 and ledger.summary()["file"] is None and list(tmp_path.iterdir()) == []


def _spender(path, barrier, n, worst, ceiling, out):
    from urd.llm.ledger import OverCeiling

    ledger = SpendLedger(path)  # each process reads the ledger once here, as a run does at start
    barrier.wait()
    made = 0
    for i in range(n):
        try:
            sent = ledger.send("run", f"k{i}", "extract", "m", worst, ceiling_usd=ceiling)
        except OverCeiling:
            break
        ledger.settle(sent, [Bill("answered", worst, "m")])
        made += 1
    out.put(made)


def test_two_processes_on_one_target_never_pass_the_ceiling_together(tmp_path):
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    path, barrier, out = tmp_path / "ledger.jsonl", ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_spender, args=(path, barrier, 20, 0.01, 0.05, out)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    made = [out.get(timeout=5), out.get(timeout=5)]
    assert sum(made) == 5  # 5 x US$0.01 in all under a US$0.05 ceiling, whichever process made them
    assert SpendLedger(path).committed_usd == pytest.approx(0.05)
