"""The one client every suite calls: route by purpose, replay, meter, price."""

from __future__ import annotations

import dataclasses
import datetime
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..core.failpoints import failpoint
from .batches import BatchJournal
from .cache import ReplayCache
from .errors import CallFailed, CeilingReached, RequestRefused, Truncated
from .ledger import Bill, OverCeiling, SpendLedger
from .prices import PriceBook
from .request import Request
from .routes import Routes
from .scripted import SCRIPTED_MODEL, ScriptedBackend
from .usage import CallRecord, Meter

BATCH_PRICE = 0.5  # Message Batches bill half the list price


@dataclass
class Backends:
    """The scripted backend, and a factory for the live one (built on first live call)."""

    scripted: ScriptedBackend | None = None
    live_factory: Callable[[], object] | None = None
    _live: object | None = None

    def for_model(self, model: str, purpose: str):
        if model == SCRIPTED_MODEL:
            if self.scripted is None:
                raise CallFailed(purpose, model, "no scripted table was loaded")
            return self.scripted
        if self._live is None:
            if self.live_factory is None:
                raise CallFailed(purpose, model, "no live backend is configured")
            self._live = self.live_factory()
        return self._live


class BatchLeft(CallFailed):
    """A Message Batch could not be read to its end; it is left, billed, for a rerun to resume."""

    def __init__(self, purpose: str, model: str, batch_id: str, journal: str, why: str) -> None:
        super().__init__(purpose, model, f"message batch {batch_id} left in progress ({why}); a rerun of this target "
                                         f"resumes it (journal {journal}); to cancel it instead: "
                                         f"python -m urd.agentmem batches cancel {batch_id}")
        self.batch_id = batch_id


class LLM:
    """Ask a request on its purpose's model; every answered call lands in ``meter``.

    A reply cut at ``max_tokens`` is counted (``meter.truncated``), billed, and asked once more
    with ``retry_factor`` times the budget, up to the purpose's ``max_retry_tokens`` where one is
    set; cut again, the call fails with :class:`Truncated`. A cut reply is never returned, but to
    a caller that keeps only a prefix of it anyway (``ask(request, cut_ok=True)``: notes that stop
    at their budget), once, counted as truncated, without the retry.

    Every live call goes through ``ledger`` (:mod:`urd.llm.ledger`), the target's spend across
    processes: written down at its worst case before it is sent, settled with what the API billed
    before its reply is used. With ``ceiling_usd``, no call (and no retry after a lost reply) is
    made whose worst case could take what the ledger has committed past the ceiling:
    :class:`CeilingReached` is raised instead, whatever one call, step or rerun asks.

    A reply the cache holds that this target's ledger paid for in a run with the same fingerprint
    ``run`` (settings and routes) is counted as that run's spend (once a process), so a rerun after
    a kill, or of a finished run, reports what the uninterrupted run did; one paid for by another
    run or target is counted as replayed, for nothing.
    """

    def __init__(
        self,
        *,
        routes: Routes,
        backends: Backends,
        prices: PriceBook,
        meter: Meter,
        cache: ReplayCache | None = None,
        retry_factor: int = 2,
        max_retry_tokens: dict[str, int] | None = None,
        ceiling_usd: float | None = None,
        ledger: SpendLedger | None = None,
        run: str = "",
        batches: BatchJournal | None = None,
        poll_retries: int = 5,
        replay: bool = True,
        poll_s: float = 30.0,
        log: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.routes, self.backends, self.prices = routes, backends, prices
        self.meter, self.cache = meter, cache
        self.retry_factor, self.max_retry_tokens = retry_factor, dict(max_retry_tokens or {})
        self.ceiling_usd = ceiling_usd
        self.ledger = ledger if ledger is not None else SpendLedger(None)
        self.run = run  # the run's fingerprint: calls paid under it count as its spend on a rerun
        self.batches, self.poll_retries, self.log = batches, poll_retries, log
        # False (replay_cache off): every request goes to the API; the ledger only records
        self.replay = replay
        self._prefetched: dict[tuple[str, str], object] = {}  # (model, cache key) -> Completion
        self._counted: set[str] = set()  # keys this process has counted as the target's spend
        self.poll_s = poll_s
        self._left_collected = False
        # batches whose results can never be read (the API no longer knows them), for the report:
        # a resumed or adopted batch is read as if never left, so the report stays the run's own
        self.batch_events: list[dict] = []

    @property
    def committed_usd(self) -> float:
        """Spent or possibly spent by this target, across its processes (the ceiling's measure)."""
        return self.ledger.committed_usd

    def ask(self, request: Request, *, cut_ok: bool = False) -> str:
        self.collect_left()
        completion = self._ask_once(request)
        if not completion.truncated:
            return completion.text
        self.meter.truncated[request.purpose] += 1
        if cut_ok:
            return completion.text
        larger = request.max_tokens * self.retry_factor
        larger = min(larger, self.max_retry_tokens.get(request.purpose, larger))
        if larger > request.max_tokens:
            again = self._ask_once(dataclasses.replace(request, max_tokens=larger))
            if not again.truncated:
                return again.text
            self.meter.truncated[request.purpose] += 1
            request = dataclasses.replace(request, max_tokens=larger)
        self.meter.failed[request.purpose] += 1
        raise Truncated(request.purpose, self.routes.model_for(request.purpose), request.max_tokens)

    # --- Message Batches ------------------------------------------------------------------------
    def prefetch(self, requests: list[Request], *, poll_s: float = 30.0) -> int:
        """Send the live, uncached ``requests`` in one Message Batch (half the list price) so that
        asking them later costs nothing more. A batch an earlier process of this target left is
        resumed first. Requests the cache holds, scripted ones, and any that would take the
        committed spend past the ceiling at their worst case are left to ``ask``. Returns how many
        went in a new batch."""
        self.collect_left(poll_s)
        todo, worst = [], 0.0
        for r in dict.fromkeys(requests):
            model = self.routes.model_for(r.purpose)
            if model == SCRIPTED_MODEL or (model, r.cache_key(model)) in self._prefetched:
                continue
            if self.cache is not None and self.cache.get(model, r) is not None:
                continue
            if self.replay and self.ledger.reply(r.cache_key(model)) is not None:  # paid for; asked from the ledger
                continue
            cost = BATCH_PRICE * self.prices.price(model).worst_case(r.input_token_bound(), r.max_tokens)
            if self.ceiling_usd is not None and self.committed_usd + worst + cost > self.ceiling_usd:
                break
            worst += cost
            todo.append((model, r, cost))
        if not todo:
            return 0
        backend = self.backends.for_model(todo[0][0], todo[0][1].purpose)
        items = {}
        for model, r, cost in todo:
            key = r.cache_key(model)
            items[self.custom_id(key)] = {"send": self.ledger.send(self.run, key, r.purpose, model, cost, batch="pending"),
                                          "request": r.identity(model), "key": key}
        first = todo[0][1].purpose, todo[0][0]
        sending = [(self.custom_id(r.cache_key(model)), model, r) for model, r, _ in todo]
        if self.batches is None:  # no journal (no work folder): the batch lives as long as this process
            record = {"id": None, "state": "pending", "items": items, "journal": "(none)"}
            record["id"] = self._create(backend, sending, items, first, lambda: None)
        else:
            pending = self.batches.pending(self.ledger.path or Path("-"), items, marker=self.marker)
            batch_id = self._create(backend, sending, items, first, pending.unlink)
            record = {**self.batches.created(pending, batch_id), "journal": str(self.batches.path(batch_id))}
        self.log(f"message batch {record['id']}: {len(items)} requests sent")
        self._collect(backend, record, poll_s)
        return len(todo)

    def _create(self, backend, sending: list, items: dict, first: tuple[str, str], forget: Callable[[], None]) -> str:
        try:
            return backend.create_batch(sending)
        except _wire_errors() as exc:
            if 400 <= (getattr(exc, "status_code", None) or 0) < 500:  # refused: no batch exists, nothing billed
                for item in items.values():
                    self.ledger.settle(item["send"], [])
                forget()
            raise CallFailed(*first, f"message batch not created: {type(exc).__name__}") from None

    @property
    def marker(self) -> str:
        """What every custom_id of this target's run starts with (its fingerprint's head): a batch
        whose id never came back is told apart from any other by it."""
        return (self.run or "urd")[:12]

    def custom_id(self, key: str) -> str:
        return f"{self.marker}-{key[:51]}"  # the API's limit: 64 characters

    def collect_left(self, poll_s: float | None = None) -> None:
        """Before this process asks anything: every batch an earlier process of this target left
        (journalled, or whose id never came back) is read to its end and settled, whatever this
        run's settings (batches on or off), so nothing it answered is bought again."""
        if self._left_collected or self.batches is None or self.ledger.path is None:
            return
        self._left_collected = True
        for record in self.batches.open_records(self.ledger.path):
            self._resume(record, self.poll_s if poll_s is None else poll_s)

    def _resume(self, record: dict, poll_s: float) -> None:
        model, request = next(iter(BatchJournal.requests(record).values()))
        backend = self.backends.for_model(model, request.purpose)
        if record["id"] is None:
            self._adopt(backend, record, poll_s)
            return
        self.log(f"resuming message batch {record['id']}, left by an earlier process (journal {record['journal']})")
        self._collect(backend, record, poll_s)

    def _adopt(self, backend, record: dict, poll_s: float) -> None:
        """A journal whose batch id never came back (the create's answer was lost, or the process
        died waiting for it): the batch may exist. Among the workspace's recent batches, one made
        since the journal was written, of its size, whose results carry exactly its custom ids is
        adopted and read; if none can, no batch was made, and the requests go back to the queue."""
        ours = set(record["items"])
        model, request = next(iter(BatchJournal.requests(record).values()))
        since = _instant(record.get("created_after"))
        try:
            listed = backend.list_batches(ADOPT_LISTED)
        except _wire_errors() as exc:
            raise CallFailed(request.purpose, model, f"listing message batches to find the one journal "
                                                     f"{record['journal']} sent: {type(exc).__name__}") from None
        fits = sorted((b for b in listed if b["requests"] == len(ours)
                       and (since is None or b["created_at"] >= since - ADOPT_SLACK)), key=lambda b: b["created_at"])
        for b in fits:
            if not self._until_ended(backend, b["id"], record["journal"], request.purpose, model, poll_s):
                continue  # gone since it was listed: not one to adopt
            try:
                carried = backend.batch_custom_ids(b["id"])
            except _wire_errors() as exc:
                raise BatchLeft(request.purpose, model, b["id"], record["journal"], type(exc).__name__) from None
            if carried != ours:
                continue
            self.log(f"adopting message batch {b['id']}: it carries the requests of journal {record['journal']}, "
                     "whose create never returned an id")
            adopted = {**self.batches.created(Path(record["journal"]), b["id"]), "journal": str(self.batches.path(b["id"]))}
            self._collect(backend, adopted, poll_s)
            return
        full = len(listed) >= ADOPT_LISTED and since is not None and min(b["created_at"] for b in listed) > since
        if full:  # more batches were made since than one page shows: it may be further back
            raise CallFailed(request.purpose, model, f"journal {record['journal']}: its batch may be among more than "
                                                     f"{ADOPT_LISTED} made since; left for a later rerun")
        for item in record["items"].values():
            if not self.ledger.settled(item["send"]):
                self.ledger.settle(item["send"], [])
        Path(record["journal"]).unlink()
        self.log(f"no message batch carries the requests of journal {record['journal']}: none was made, and they "
                 "go back to the queue")

    def cancel(self, record: dict, *, poll_s: float) -> None:
        """Cancel the journalled batch ``record`` and read what it had already done (billed, so
        kept in the replay cache and settled in the ledger), then close its journal."""
        model, request = next(iter(BatchJournal.requests(record).values()))
        backend = self.backends.for_model(model, request.purpose)
        try:
            backend.cancel_batch(record["id"])
        except _wire_errors() as exc:
            raise CallFailed(request.purpose, model, f"cancel of message batch {record['id']}: {type(exc).__name__}") from None
        self._collect(backend, record, poll_s, closing="canceled")

    def _collect(self, backend, record: dict, poll_s: float, closing: str = "done") -> None:
        """Poll ``record``'s batch to its end and settle its results as they arrive (into the
        replay cache, then the ledger); a poll that fails is retried with backoff, and after
        ``poll_retries`` the batch is left for a rerun (:class:`BatchLeft`)."""
        try:
            self._poll(backend, record, poll_s)
        except KeyboardInterrupt:  # the batch is billed whether or not anyone reads it: say where it is
            self.log(BatchLeft("", "", record["id"], record["journal"], "interrupted").why)
            raise
        items = BatchJournal.requests(record)
        for cid, item in record["items"].items():  # asked for, never answered: not billed
            if not self.ledger.settled(item["send"]):
                self.ledger.settle(item["send"], [])
                self.meter.failed[items[cid][1].purpose] += 1
        if self.batches is not None and record.get("state") != "gone":
            self.batches.close(record, closing)

    def _poll(self, backend, record: dict, poll_s: float) -> None:
        items = BatchJournal.requests(record)
        model, first = next(iter(items.values()))
        failures = 0
        while True:
            if not self._until_ended(backend, record["id"], record["journal"], first.purpose, model, poll_s):
                self._gone(record, items)
                return
            try:
                for cid, got in backend.batch_results(record["id"], items):
                    self._settle_item(record, items, cid, got)
                return
            except _wire_errors() as exc:
                failures += 1
                if failures > self.poll_retries:
                    raise BatchLeft(first.purpose, model, record["id"], record["journal"], type(exc).__name__) from None
                time.sleep(min(poll_s * 2 ** (failures - 1), 300.0))

    def _until_ended(self, backend, batch_id: str, journal: str, purpose: str, model: str, poll_s: float) -> bool:
        """Poll a batch until it has ended (True), or until the API has twice in a row said it does not
        know it (False). A poll that fails is retried with backoff; after ``poll_retries`` failures in
        a row the batch is left for a rerun (:class:`BatchLeft`)."""
        from .anthropic_backend import not_found

        failures = unknown = 0
        while True:
            try:
                if backend.batch_status(batch_id) == "ended":
                    return True
                failures = unknown = 0  # only failures in a row leave the batch
                time.sleep(poll_s)
            except _wire_errors() as exc:
                if not_found(exc):
                    unknown += 1
                    if unknown >= 2:  # confirmed: asked again after a pause, still unknown
                        return False
                    time.sleep(min(poll_s, 5.0))
                    continue
                failures += 1
                if failures > self.poll_retries:
                    raise BatchLeft(purpose, model, batch_id, journal, type(exc).__name__) from None
                time.sleep(min(poll_s * 2 ** (failures - 1), 300.0))

    def _gone(self, record: dict, items: dict) -> None:
        """The API does not know the batch (404, twice): its results can never be read. What it
        may have cost stays counted at each request's worst case (an unknown outcome, as a reply
        lost on the wire), and the requests go back to the queue: asked again when needed."""
        unread = [cid for cid, item in record["items"].items() if not self.ledger.settled(item["send"])]
        worst = 0.0
        for cid in unread:
            model = items[cid][0]
            cost = self.ledger.worst_usd(record["items"][cid]["send"])
            worst += cost
            self.ledger.settle(record["items"][cid]["send"], [Bill("lost", cost, model, batched=True)])
        why = "the API does not know it (HTTP 404, asked twice)"
        self.log(f"message batch {record['id']}: {why}; its {len(unread)} unread requests stay counted at their "
                 f"worst case (US${worst:.4f}) and go back to the queue")
        self.batch_events.append({"batch": record["id"], "journal": record["journal"], "event": "unknown to the API",
                                  "why": why, "requests_requeued": len(unread), "counted_at_worst_usd": round(worst, 6)})
        if self.batches is not None:
            self.batches.close(record, "gone")

    def _settle_item(self, record: dict, items: dict, cid: str, got) -> None:
        send = record["items"][cid]["send"]
        key = record["items"][cid].get("key", cid)  # journals before custom ids were marked: the key itself
        if self.ledger.settled(send):  # read by an earlier process
            return
        model, request = items[cid]
        if isinstance(got, CallFailed):
            self.meter.failed[request.purpose] += 1
            usage = getattr(got, "usage", None)
            bills = [] if usage is None else [
                Bill("failed", BATCH_PRICE * self._cost(model, got.answered, usage), got.answered, usage, batched=True)]
            self.ledger.settle(send, bills)
            for bill in bills:  # billed although unusable
                self.meter.add(CallRecord(request.purpose, model, bill.model, usage, bill.cost_usd, batched=True))
            return  # asked again, alone, when the suite needs it
        self.ledger.settle(send, [Bill("answered", BATCH_PRICE * self._cost(model, got.model, got.usage), got.model,
                                       got.usage, batched=True, reply=got)])
        failpoint("llm.settled")
        if self.cache is not None:
            self.cache.put(model, request, got)
        self._prefetched[(model, key)] = got

    def peek(self, request: Request) -> str | None:
        """The reply a prefetch (or the cache) holds for ``request``, without asking or metering."""
        model = self.routes.model_for(request.purpose)
        held = self._prefetched.get((model, request.cache_key(model)))
        if held is None and self.cache is not None:
            held = self.cache.get(model, request)
        if held is None and self.replay:
            held = self.ledger.reply(request.cache_key(model))
        return None if held is None or held.truncated else held.text

    # --- one call -------------------------------------------------------------------------------
    def _ask_once(self, request: Request):
        model = self.routes.model_for(request.purpose)
        key = request.cache_key(model)
        if model == SCRIPTED_MODEL:  # costs nothing and is its own table: never cached, never in the ledger
            try:
                completion = self.backends.for_model(model, request.purpose).complete(model, request)
            except RequestRefused:
                self.meter.refused[request.purpose] += 1
                raise
            self._record(request, model, completion, replayed=False)
            return completion
        held = self._prefetched.pop((model, key), None)
        if held is None and self.cache is not None:
            held = self.cache.get(model, request)
        if held is None and self.replay:  # paid for, then killed before the cache had it
            held = self.ledger.reply(key)
            if held is not None and self.cache is not None:
                self.cache.put(model, request, held)
        if held is not None:
            self._record_held(request, model, key, held)
            return held
        worst = self.prices.price(model).worst_case(request.input_token_bound(), request.max_tokens)
        self._check_ceiling(request.purpose, model, worst)
        backend = self.backends.for_model(model, request.purpose)  # a missing key fails before anything is sent
        try:  # the ceiling once more, under the ledger's lock with every process's entries read
            sent = self.ledger.send(self.run, key, request.purpose, model, worst, ceiling_usd=self.ceiling_usd)
        except OverCeiling as over:
            raise CeilingReached(request.purpose, model, over.committed, worst, over.ceiling) from None
        completion = self._live(backend, request, model, sent, worst)
        self.ledger.settle(sent, [*self._lost(model, worst, completion.lost),
                                  Bill("answered", self._cost(model, completion.model, completion.usage),
                                       completion.model, completion.usage, reply=completion)])
        failpoint("llm.settled")
        if self.cache is not None:  # a cut reply is kept too, so a rerun replays the cut and its retry
            self.cache.put(model, request, completion)
        self._counted.add(key)
        self._record(request, model, completion, replayed=False)
        return completion

    def _live(self, backend, request: Request, model: str, sent: str, worst: float):
        """The call ``sent`` on the wire; a failure is settled in the ledger as the API billed it."""
        def guard(tried: int) -> None:
            # Before an SDK retry: the ledger holds this call at one worst case; each attempt so far
            # may have been billed too, and the retry may be billed in full.
            self._check_ceiling(request.purpose, model, worst * tried, retrying=True)

        try:
            completion = backend.complete(model, request, guard=guard)
        except (CallFailed, CeilingReached) as exc:
            self._count_retries(request.purpose, exc.retries)
            usage = getattr(exc, "usage", None)
            billed = [] if usage is None else [Bill("failed", self._cost(model, exc.answered, usage), exc.answered, usage)]
            self.ledger.settle(sent, [*self._lost(model, worst, exc.lost), *billed])
            if isinstance(exc, CallFailed):
                self.meter.failed[request.purpose] += 1
                if usage is not None:
                    self.meter.add(CallRecord(request.purpose, model, exc.answered, usage, billed[0].cost_usd))
            raise
        self._count_retries(request.purpose, completion.retries)
        return completion

    def _count_retries(self, purpose: str, n: int) -> None:
        if n:
            self.meter.retried[purpose] += n

    def _lost(self, model: str, worst: float, n: int) -> list[Bill]:
        if n:
            self.meter.lost[model] += n
        return [Bill("lost", worst, model)] * n

    def _check_ceiling(self, purpose: str, model: str, worst: float, *, retrying: bool = False) -> None:
        if self.ceiling_usd is None or self.committed_usd + worst <= self.ceiling_usd:
            return
        error = CeilingReached(purpose, model, self.committed_usd, worst, self.ceiling_usd)
        if retrying:  # raised inside the SDK's retry loop, which passes its own error types through
            from .anthropic_backend import StopRetrying

            raise StopRetrying(error)
        raise error

    def _record_held(self, request: Request, model: str, key: str, held) -> None:
        """Meter a reply from a batch or the cache: the target's spend if its ledger paid for it
        (and this process has not counted it yet), replayed for nothing otherwise."""
        bill = None if key in self._counted else self.ledger.paid(self.run, key)
        if bill is None:
            self._record(request, model, held, replayed=True)
            return
        self._counted.add(key)
        self.meter.add(CallRecord(request.purpose, model, held.model, held.usage, bill["cost_usd"],
                                  batched=bill["batched"]))

    def _record(self, request: Request, model: str, completion, *, replayed: bool) -> None:
        self.meter.add(
            CallRecord(
                purpose=request.purpose,
                pinned_model=model,
                answered_model=completion.model,
                usage=completion.usage,
                list_cost_usd=self._cost(model, completion.model, completion.usage),
                replayed=replayed,
            )
        )

    def _cost(self, pinned: str, answered: str, usage) -> float:
        # A leak to an unpriced model is priced at the pinned model's rate; the run is
        # invalid anyway, and its spend must still count against the ceiling.
        return self.prices.cost(answered if self.prices.has(answered) else pinned, usage)


# Adoption: a batch made up to this long before its journal's clock said (clocks differ), among
# the newest this many the workspace lists.
ADOPT_SLACK = datetime.timedelta(minutes=10)
ADOPT_LISTED = 100


def _instant(text: str | None) -> datetime.datetime | None:
    return None if text is None else datetime.datetime.fromisoformat(text)


def _wire_errors() -> tuple[type[BaseException], ...]:  # the SDK is imported only when a call is live
    from .anthropic_backend import WIRE_ERRORS as errors

    return errors
