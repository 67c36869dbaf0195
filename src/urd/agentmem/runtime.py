"""A suite's run set-up in one step (`open_run`: the routes, the estimate, the confirmation a live
run needs, its ceiling, and each run's client, ledger, batch journal and folder), and what the
suites share about the store under test and the scripted run behind an estimate."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from ..core.errors import InputError, UrdError
from ..core.io import canonical_json, sha256_bytes
from ..cost.agentmem import Estimate, NotPriced, not_priced
from ..llm import LLM, SCRIPTED_MODEL, Backends, Meter, ReplayCache, Routes, ScriptedBackend
from ..llm.batches import BatchJournal
from ..llm.ledger import SpendLedger
from ..llm.purposes import PURPOSES
from ..stores import registry
from ..stores.settings import Settings, with_overrides
from .scripted import ScriptedResponder, ScriptedTable

RUN_MARKER = ".urd-agentmem-run"


class NotConfirmed(UrdError):
    """A live run was asked for without confirmation; nothing was called."""


def routes_for(model: str, settings: Settings, pins: dict[str, str] | None = None) -> Routes:
    merged = {**settings.pins, **(pins or {})}
    return Routes.build(model, PURPOSES, merged, source=f"{settings.origin}: agentmem.llm.pins")


def is_live(routes: Routes) -> bool:
    return any(m != SCRIPTED_MODEL for m in routes.by_purpose.values())


def confirm_live(routes: Routes, settings: Settings, yes: bool) -> None:
    if is_live(routes) and not (yes or settings.confirm_live):
        raise NotConfirmed(
            "this run calls a live model and spends money; confirm it with "
            "agentmem.spend.confirm_live: true in config or --yes on the command line. Nothing was called."
        )


FREE_REMARK = ("No model call was priced for this store: the live run asked no confirmation and ran under a US$0 "
               "ceiling, so any call would have been refused, not paid.")


def live_ceiling(routes: Routes, settings: Settings, yes: bool, estimate, ceiling_usd: float) -> float | None:
    """A run's spend ceiling once it may start. Scripted: none. Live and priced at no call (a
    store that uses no model): nothing can be spent, so nothing is confirmed, and the ceiling is
    US$0, so a call it makes after all is refused, not paid. Otherwise the run must be confirmed."""
    if not is_live(routes):
        return None
    if estimate.calls == 0 and estimate.usd == 0:
        return 0.0
    confirm_live(routes, settings, yes)
    return ceiling_usd


def build_llm(
    settings: Settings,
    routes: Routes,
    meter: Meter,
    *,
    table: ScriptedTable | None = None,
    http_client=None,
    ceiling_usd: float | None = None,
    record: list | None = None,
    responder=None,
    ledger: tuple[str, ...] = (),
    log: Callable[[str], None] = lambda line: None,
) -> LLM:
    """The run's client; the scripted arm answers with `responder` (default: the agent-memory
    suites' table). ``ledger`` names the run target whose spend ledger the calls go through
    (:func:`ledger_path`); its Message Batches are journalled beside the replay cache."""
    llm_cfg = settings.raw["llm"]
    scripted = None
    if SCRIPTED_MODEL in routes.by_purpose.values():
        scripted = ScriptedBackend(responder or ScriptedResponder(table or ScriptedTable.load()), record=record)
    backends = Backends(
        scripted=scripted,
        live_factory=lambda: _anthropic_backend()(
            max_retries=llm_cfg["max_retries"],
            timeout_s=llm_cfg["timeout_s"],
            prompt_cache=llm_cfg["prompt_cache"],
            http_client=http_client,
        ),
    )
    cache = ReplayCache(settings.work_dir / "llm-cache") if llm_cfg["replay_cache"] else None
    return LLM(routes=routes, backends=backends, prices=settings.prices, meter=meter, cache=cache, ceiling_usd=ceiling_usd,
               max_retry_tokens=llm_cfg.get("max_retry_tokens"),
               ledger=SpendLedger(ledger_path(settings, *ledger)) if ledger and is_live(routes) else None,
               run=run_fingerprint(settings, routes, ledger),
               batches=BatchJournal(settings.work_dir / BATCH_DIR), replay=bool(llm_cfg["replay_cache"]),
               poll_s=float(llm_cfg["batch_poll_s"]), log=log)


@dataclasses.dataclass(frozen=True)
class Run:
    """One run's client and folder: the LLM (its meter, the target's spend ledger, the Message
    Batch journal and the replay cache behind it), and an empty directory for its store."""

    llm: LLM
    meter: Meter
    dir: Path | None
    ledger: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class RunContext:
    """A suite's live-run set-up, made in one step (:func:`open_run`): the routes, the estimate
    (logged before anything is called), the spend ceiling once the run may start, and how each of
    its runs gets its client and folder (:meth:`open`)."""

    settings: Settings
    routes: Routes
    estimate: Estimate | None
    ceiling_usd: float | None
    client: Mapping  # build_llm's arguments every run shares: the scripted table, the HTTP client, the record, the log

    @property
    def live(self) -> bool:
        return is_live(self.routes)

    def open(self, ledger: tuple[str, ...], run_dir: Path | None = None, *, responder=None) -> Run:
        """A run's client, its calls going through the spend ledger of ``ledger`` (a run target),
        and, given ``run_dir``, that directory emptied for it (:func:`fresh_run_dir`).
        ``responder``: the scripted arm's answers, where not the suites' table (planting's)."""
        meter = Meter()
        llm = build_llm(self.settings, self.routes, meter, ceiling_usd=self.ceiling_usd, ledger=ledger,
                        responder=responder, **self.client)
        return Run(llm, meter, fresh_run_dir(run_dir) if run_dir is not None else None, ledger)


def open_run(
    settings: Settings,
    routes: Routes,
    *,
    ceiling_usd: float | None,
    yes: bool = False,
    estimate: Estimate | None = None,
    table: ScriptedTable | None = None,
    http_client=None,
    record: list | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> RunContext:
    """The one step a suite takes before it calls anything. With an ``estimate``: it is logged, and
    a live run priced at no call runs unconfirmed under a US$0 ceiling (:func:`live_ceiling`).
    Without one: a live run must be confirmed. A scripted run has no ceiling; a live one has
    ``ceiling_usd``. Raises :class:`NotConfirmed` before anything is called or cleared."""
    if estimate is not None:
        log(estimate.line())
        ceiling = live_ceiling(routes, settings, yes, estimate, ceiling_usd)
    else:
        confirm_live(routes, settings, yes)
        ceiling = ceiling_usd if is_live(routes) else None
    client = {"table": table, "http_client": http_client, "record": record, "log": log}
    return RunContext(settings, routes, estimate, ceiling, client)


def still_to_spend(settings: Settings, routes: Routes, targets: list[tuple[str, ...]], estimate: Estimate,
                   ceiling_usd: float | None) -> Estimate:
    """What a (re)run of ``targets`` would still spend: the estimate less what their ledgers were
    billed for the same run (those replies are paid for and replay for nothing), and never more
    than the ceilings leave (``ceiling_usd`` a target, less what each has committed)."""
    if estimate.usd is None or not is_live(routes):
        return estimate
    paid = committed = 0.0
    for target in targets:
        path = ledger_path(settings, *target)
        if path.exists():
            ledger = SpendLedger(path)
            paid += ledger.answered_usd_for(run_fingerprint(settings, routes, target))
            committed += ledger.committed_usd
    if not paid and not committed:
        return estimate
    left = max(0.0, estimate.usd - paid)
    if ceiling_usd is not None:
        left = min(left, max(0.0, ceiling_usd * len(targets) - committed))
    note = f"{estimate.note}; US${paid:.2f} of it already paid for (the ledger), so a rerun spends at most US${left:.2f}"
    return dataclasses.replace(estimate, usd=left, note=note)


def batch_llm(settings: Settings, record: Mapping, http_client=None) -> LLM:
    """A client for a journalled batch alone (to cancel it): its models' live backend, the
    target's ledger and the replay cache."""
    llm_cfg = settings.raw["llm"]
    models = sorted({item["request"]["model"] for item in record["items"].values()})
    backends = Backends(live_factory=lambda: _anthropic_backend()(
        max_retries=llm_cfg["max_retries"], timeout_s=llm_cfg["timeout_s"], prompt_cache=llm_cfg["prompt_cache"],
        http_client=http_client))
    return LLM(routes=Routes.build(models[0], PURPOSES, {}), backends=backends, prices=settings.prices, meter=Meter(),
               cache=ReplayCache(settings.work_dir / "llm-cache"), ledger=SpendLedger(record["ledger"]),
               batches=BatchJournal(settings.work_dir / BATCH_DIR))


# How calls travel, not what they ask: a rerun that changes these is the same run (a kill, then a
# rerun with a longer timeout or with batches off, still owns what the first process paid for).
TRANSPORT = ("timeout_s", "max_retries", "batch_poll_s", "batches")


def run_fingerprint(settings: Settings, routes: Routes, target: tuple[str, ...]) -> str:
    """What makes two runs of a target the same run: the settings (its ceilings and how calls
    travel aside) and routes."""
    same = {k: v for k, v in settings.raw.items() if k != "spend"}
    if isinstance(same.get("llm"), dict):
        same["llm"] = {k: v for k, v in same["llm"].items() if k not in TRANSPORT}
    return sha256_bytes(canonical_json([same, routes.as_dict(), list(target)]).encode())[:16]


BATCH_DIR = "llm-batches"  # beside the replay cache (llm-cache)


def ledger_path(settings: Settings, *target: str) -> Path:
    """The spend ledger of one run target (a suite's report, or one run of it where the ceiling
    is per run): kept across reruns, so that together they never pass the ceiling."""
    *folders, name = target
    return settings.work_dir.joinpath("ledgers", *folders, f"{name}.jsonl")


def fresh_run_dir(path: Path) -> Path:
    """An empty directory for one run. Only a directory an earlier run made is cleared."""
    if path.exists():
        if not (path / RUN_MARKER).exists() and any(path.iterdir()):
            raise InputError(path, "directory", "an empty directory or one an earlier run of this suite made")
        shutil.rmtree(path)
    path.mkdir(parents=True)
    (path / RUN_MARKER).write_text("one suite run's store; cleared when the run is repeated\n")
    return path


def _anthropic_backend():
    # Imported when a live arm is built: the SDK takes a second to import, and the workflow
    # reads this module while it builds the DAG.
    from ..llm.anthropic_backend import AnthropicBackend

    return AnthropicBackend


_GRAPHS: dict[tuple, list] = {}


def scripted_calls(settings: Settings, key: tuple, run: Callable[[Settings, Path, list], str | None], *, stopped: str) -> list:
    """Every request ``run(scratch, tmp, record)`` makes on the scripted arm, in a scratch work
    directory without the replay cache; computed once per settings and ``key``. ``run`` returns
    why it stopped short, or None: a partial graph would price a partial run, so that raises
    :class:`NotPriced` (``stopped``, then the reason)."""
    # the graph does not depend on where the work folder is (it is built in a scratch one), so
    # every job's narrowed settings share one graph
    full = (canonical_json({k: v for k, v in settings.raw.items() if k != "work_dir"}), *key)
    if full not in _GRAPHS:
        recorded: list = []
        with tempfile.TemporaryDirectory() as tmp:
            why = run(with_overrides(settings, {"work_dir": tmp, "llm.replay_cache": False}), Path(tmp), recorded)
        if why is not None:
            raise NotPriced(f"{stopped} ({why})")
        _GRAPHS[full] = recorded
    return _GRAPHS[full]


def store_estimate(settings: Settings, routes: Routes, store: str, suite: str, price: Callable[[], Estimate]) -> Estimate:
    """``price()``, or "not priced" for a store that calls a model by its own means or cannot run offline."""
    if registry.resolve(store, settings.store_plugins).own_model:
        return not_priced(suite, routes.model, f"store {store} calls a model by its own means")
    try:
        return price()
    except NotPriced as exc:
        return not_priced(suite, routes.model, str(exc))


def label_store(report: dict, store: str, about: Mapping) -> dict:
    """A report of a store other than the reference names it (reports without the key are the
    reference store's, report_version 1) and says whether its spend is metered."""
    if store != registry.REFERENCE:
        report["store"] = dict(about)
        report["spend"]["metered"] = about["spend"] == "metered"
        if about["spend"] == "not metered":
            report["remarks"].append(f"Spend not metered: store {store} calls a model by its own means, so the "
                                     "spend in this report is only urd's.")
    return report
