"""The update-gate suite: every registered pair asked N times, the contradiction and
update probes on each sample, and three gates scored from the same answers."""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable, Mapping

from .. import __version__
from ..core.errors import InputError
from ..cost import agentmem as estimate_mod
from ..data.agentmem.pair_sets import load_set_rows, set_info
from ..llm import SCRIPTED_MODEL, CallFailed, CeilingReached, RequestRefused, Routes
from ..llm import purposes as P
from ..stores import registry
from ..stores.base import StoreFailed, StoreRun
from ..stores.reference import prompts, replies
from ..stores.reference.gates import CHANGES, GATES
from ..stores.reference.probes import PairProbe
from ..stores.registry import REFERENCE
from ..stores.settings import Settings
from .runtime import FREE_REMARK, label_store, open_run, routes_for, scripted_calls, store_estimate
from .scoring import STORE_GATE, score_set, score_store_set
from .scripted import ScriptedTable

SUITE = "update-gate"
REPORT_VERSION = 1


def ask_sample(llm, row: Mapping, *, max_tokens, replica: str) -> dict:
    """Both probes on one sample, whatever the other answered, so every gate can be scored."""
    probe = PairProbe(llm, row["older"], row["newer"], max_tokens=max_tokens, replica=replica)
    probe.contradiction()
    probe.update()
    return probe.answers()


def prefetch_in_batches(llm, rows_by_set: Mapping[str, list[dict]], samples: int, settings: Settings,
                        log: Callable[[str], None]) -> int:
    """The calls of every sample in two Message Batches: the contradiction and first update
    readings (independent of each other), then the confirmations their CHANGES readings call
    for. The requests are the ones PairProbe builds, so the replay below asks nothing twice."""
    mt = settings.max_tokens
    poll = settings.raw["llm"]["batch_poll_s"]
    samples_of = [(row, f"{name}/{row['id']}/sample-{s}") for name, rows in rows_by_set.items() for row in rows
                  for s in range(1, samples + 1)]
    first = {}
    for row, replica in samples_of:
        first[replica] = prompts.update(row["older"], row["newer"], confirm=False, max_tokens=mt[P.UPDATE], replica=replica)
    contradictions = [prompts.contradiction(row["newer"], row["older"], max_tokens=mt[P.CONTRADICTION], replica=replica)
                      for row, replica in samples_of]
    sent = llm.prefetch([*contradictions, *first.values()], poll_s=poll)
    log(f"batch 1: {sent} contradiction and first update readings")
    confirm = [prompts.update(row["older"], row["newer"], confirm=True, max_tokens=mt[P.UPDATE_CONFIRM], replica=replica)
               for row, replica in samples_of
               if replies.update_verdict(llm.peek(first[replica]) or "") == CHANGES]
    second = llm.prefetch(confirm, poll_s=poll)
    log(f"batch 2: {second} confirmations")
    return sent + second


def run_suite(
    model: str,
    settings: Settings,
    *,
    store: str = REFERENCE,
    pins: Mapping[str, str] | None = None,
    samples: int | None = None,
    yes: bool = False,
    table: ScriptedTable | None = None,
    http_client=None,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
    record: list | None = None,
) -> dict:
    about = registry.describe(store, settings.store_plugins)
    if not about["update_decision"]:
        raise InputError(f"store {store}", registry.UPDATE_DECISION,
                         "a store with an update decision: the update-gate suite does not measure one without it")
    routes = routes_for(model, settings, dict(pins or {}))
    samples = samples or settings.raw["update_gate"]["samples"]
    rows_by_set = load_set_rows(settings.calibration_dir)
    info = set_info(settings.calibration_dir)
    est = estimate(settings, routes, samples=samples, store=store, profile=estimate_mod.load_profile(settings))
    ctx = open_run(settings, routes, estimate=est, ceiling_usd=settings.raw["spend"]["max_usd_update_gate"], yes=yes,
                   table=table, http_client=http_client, record=record, log=log)
    ceiling, live = ctx.ceiling_usd, ctx.live
    # a plug-in store gets an empty folder; the reference store's decision is a call, with none
    opened = ctx.open(ledger_target(model, store),
                      None if store == REFERENCE else settings.work_dir / "stores" / SUITE / model / f"store-{store}")
    llm, meter = opened.llm, opened.meter
    incomplete = None
    asked: dict[str, list[dict]] = {name: [] for name in rows_by_set}
    memory = None
    if store == REFERENCE:
        def sample(row, replica):
            return ask_sample(llm, row, max_tokens=settings.max_tokens, replica=replica)
    else:
        run = StoreRun(opened.dir, llm, "update-gate", settings)

        def sample(row, replica):
            # a store sees what a memory would: the two claims, and which repeat of the pair this
            # is ("sample-2"); never the set or the pair's name, which tell the expected outcome
            decided = memory.decides_update(row["older"], row["newer"], replica.rsplit("/", 1)[-1])
            if not isinstance(decided, bool):
                raise StoreFailed(f"store {store}: decides_update returned {decided!r}, expected true or false")
            return {"retires": decided}
    try:
        if store != REFERENCE:
            memory = registry.resolve(store, settings.store_plugins)(run)
        if store == REFERENCE and settings.raw["llm"]["batches"] and live:
            sent = prefetch_in_batches(llm, rows_by_set, samples, settings, log)
            log(f"{sent} calls sent in Message Batches (half the list price)")
        for name, rows in rows_by_set.items():
            for row in rows:
                if ceiling is not None and llm.committed_usd >= ceiling and llm.committed_usd > 0:
                    raise _Stop(f"stopped before {name}/{row['id']}: committed spend US${llm.committed_usd:.4f} reached "
                                f"the ceiling US${ceiling:g}")
                got = [sample(row, f"{name}/{row['id']}/sample-{s}") for s in range(1, samples + 1)]
                asked[name].append({**row, "samples": got})
            log(f"{name}: {len(rows)} pairs asked")
    except _Stop as stop:
        incomplete = str(stop)
    except (CallFailed, CeilingReached, RequestRefused, StoreFailed) as exc:
        incomplete = str(exc)
    except Exception as exc:  # a plug-in's own failure: incomplete, never a pass
        if store == REFERENCE:
            raise
        incomplete = f"store {store} raised {type(exc).__name__}: {exc}"
    finally:
        if memory is not None:
            memory.close()
    leaks = meter.leaks()
    score = score_set if store == REFERENCE else score_store_set
    sets = {}
    for name, rows in asked.items():
        complete = len(rows) == len(rows_by_set[name])
        sets[name] = {
            "file": info[name]["file"],
            "sha256": info[name]["sha256"],
            "registered": info[name]["registered"],
            "heldout": info[name]["heldout"],
            "complete": complete,
            "rows": rows,
            "scores": score(rows, heldout=info[name]["heldout"]) if complete else None,
        }
    report = {
        "suite": SUITE,
        "report_version": REPORT_VERSION,
        "urd_version": __version__,
        "model": model,
        "arm": "live" if live else "scripted",
        "purposes": routes.as_dict(),
        "mixed": routes.mixed,
        "samples_per_pair": samples,
        "gates": list(GATES) if store == REFERENCE else [STORE_GATE],
        "sets": sets,
        "incomplete": incomplete,
        "invalid": leaks or None,
        "usage": meter.summary(),
        "spend": {
            "estimate": est.as_dict(),
            # what the run was billed, repeats and batch items never used included (live); the
            # replies the numbers rest on are used_usd
            "measured_usd": round(llm.ledger.billed_usd_for(llm.run) if live else meter.spent_usd, 6),
            "used_usd": round(meter.spent_usd, 6),
            "replayed_usd": round(meter.replayed_usd, 6),
            "ceiling_usd": ceiling,
            **({"ledger": llm.ledger.summary()} if live else {}),
            **({"batches": llm.batch_events} if llm.batch_events else {}),
        },
        "prices": settings.prices.as_dict(),
        "remarks": []
        if live
        else ["Scripted arm: every answer came from the package's table. It tests the harness and the scoring, and says nothing about any model."],
    }
    if ceiling == 0.0:
        report["remarks"].append(FREE_REMARK)
    label_store(report, store, about)
    report["verdict"] = verdict(report)
    return report


def ledger_target(model: str, store: str) -> tuple[str, ...]:
    """The suite's spend ledger (the ceiling is the whole replay's)."""
    return (SUITE, model, "reference" if store == REFERENCE else f"store-{store}")


def call_graph(settings: Settings, samples: int, store: str = REFERENCE) -> list:
    """Every request the suite makes for ``store`` on the scripted arm (offline, free; computed once)."""
    def run(scratch, tmp, record):
        return run_suite(SCRIPTED_MODEL, scratch, store=store, samples=samples, log=lambda line: None,
                         record=record)["incomplete"]

    return scripted_calls(settings, (SUITE, samples, store), run,
                          stopped=f"store {store} cannot run offline on the scripted arm")


def estimate(settings: Settings, routes: Routes, *, samples: int, store: str = REFERENCE, profile: Mapping | None = None,
             count=None) -> estimate_mod.Estimate:
    """What the suite will cost for ``store``: see :mod:`urd.cost.agentmem`."""
    suite = SUITE if store == REFERENCE else f"{SUITE} ({store})"
    return store_estimate(settings, routes, store, suite, lambda: estimate_mod.update_gate(
        settings, routes, samples=samples, profile=profile if store == REFERENCE else None, count=count,
        graph=lambda: call_graph(settings, samples, store), suite=suite))


class _Stop(Exception):
    pass


def verdict(report: Mapping) -> dict:
    """Per set: the bar and the regression reading; overall: every set meeting its bar."""
    per = {
        name: None if s["scores"] is None else {"bar": s["scores"]["bar"], "regression": s["scores"]["regression"]}
        for name, s in report["sets"].items()
    }
    if report["incomplete"] or report["invalid"] or report["mixed"] or any(v is None for v in per.values()):
        met = None
    else:
        met = all(v["bar"] for v in per.values())
    return {"sets": per, "bars_met": met}


def rescore(report: Mapping) -> dict:
    """Re-score saved samples under the current gates and bars; no call."""
    out = copy.deepcopy(dict(report))
    score = score_store_set if "store" in out else score_set
    for s in out["sets"].values():
        s["scores"] = score(s["rows"], heldout=s["heldout"]) if s["complete"] else None
    out["verdict"] = verdict(out)
    out["rescored"] = {"calls": 0}
    return out


def exit_status(report: Mapping) -> int:
    return 0 if report["verdict"]["bars_met"] is True else 1
