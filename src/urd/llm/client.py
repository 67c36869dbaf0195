"""The one client every suite calls: route by purpose, replay, meter, price."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from .cache import ReplayCache
from .errors import CallFailed, CeilingReached, RequestRefused, Truncated
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


class LLM:
    """Ask a request on its purpose's model; every answered call lands in ``meter``.

    A reply cut at ``max_tokens`` is counted (``meter.truncated``), billed, and asked once more
    with ``retry_factor`` times the budget, up to the purpose's ``max_retry_tokens`` where one is
    set; cut again, the call fails with :class:`Truncated`. A cut reply is never returned.

    With ``ceiling_usd``, no call is made whose worst case (input bounded by its bytes, the whole
    output budget) could take the measured spend past the ceiling: :class:`CeilingReached` is
    raised instead, so the spend can never overshoot, whatever one call or step asks.
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
    ) -> None:
        self.routes, self.backends, self.prices = routes, backends, prices
        self.meter, self.cache = meter, cache
        self.retry_factor, self.max_retry_tokens = retry_factor, dict(max_retry_tokens or {})
        self.ceiling_usd = ceiling_usd
        self._prefetched: dict[tuple[str, str], object] = {}  # (model, cache key) -> Completion

    def ask(self, request: Request) -> str:
        completion = self._ask_once(request)
        if not completion.truncated:
            return completion.text
        self.meter.truncated[request.purpose] += 1
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

    def prefetch(self, requests: list[Request], *, poll_s: float = 30.0) -> int:
        """Send the live, uncached ``requests`` in one Message Batch (half the list price) so that
        asking them later costs nothing more. Requests the cache holds, scripted ones, and any
        that would take the worst case past the ceiling are left to ``ask``. Returns how many went."""
        todo, worst = [], 0.0
        for r in dict.fromkeys(requests):
            model = self.routes.model_for(r.purpose)
            if model == SCRIPTED_MODEL or (model, r.cache_key(model)) in self._prefetched:
                continue
            if self.cache is not None and self.cache.get(model, r) is not None:
                continue
            cost = BATCH_PRICE * self.prices.price(model).worst_case(r.input_token_bound(), r.max_tokens)
            if self.ceiling_usd is not None and self.meter.spent_usd + worst + cost > self.ceiling_usd:
                break
            worst += cost
            todo.append((model, r))
        if not todo:
            return 0
        backend = self.backends.for_model(todo[0][0], todo[0][1].purpose)
        for (model, request), got in zip(todo, backend.complete_batch(todo, poll_s=poll_s)):
            if isinstance(got, CallFailed):
                self._bill_failure(request, model, got, batched=True)
                continue  # asked again, alone, when the suite needs it
            self.meter.add(CallRecord(request.purpose, model, got.model, got.usage,
                                      BATCH_PRICE * self._cost(model, got.model, got.usage), batched=True))
            self._prefetched[(model, request.cache_key(model))] = got
            if self.cache is not None:
                self.cache.put(model, request, got)
        return len(todo)

    def peek(self, request: Request) -> str | None:
        """The reply a prefetch (or the cache) holds for ``request``, without asking or metering."""
        model = self.routes.model_for(request.purpose)
        held = self._prefetched.get((model, request.cache_key(model)))
        if held is None and self.cache is not None:
            held = self.cache.get(model, request)
        return None if held is None or held.truncated else held.text

    def _ask_once(self, request: Request):
        model = self.routes.model_for(request.purpose)
        held = self._prefetched.pop((model, request.cache_key(model)), None)
        if held is not None:  # fetched in a batch and already metered
            return held
        # The scripted arm costs nothing and is its own table: it is never cached.
        use_cache = self.cache is not None and model != SCRIPTED_MODEL
        if use_cache:
            hit = self.cache.get(model, request)
            if hit is not None:
                self._record(request, model, hit, replayed=True)
                return hit
        if self.ceiling_usd is not None:
            worst = self.prices.price(model).worst_case(request.input_token_bound(), request.max_tokens)
            if self.meter.spent_usd + worst > self.ceiling_usd:
                raise CeilingReached(request.purpose, model, self.meter.spent_usd, worst, self.ceiling_usd)
        try:
            completion = self.backends.for_model(model, request.purpose).complete(model, request)
        except RequestRefused:
            self.meter.refused[request.purpose] += 1
            raise
        except CallFailed as exc:
            self._bill_failure(request, model, exc)
            raise
        self._record(request, model, completion, replayed=False)
        if use_cache:  # a cut reply is kept too, so a rerun replays the cut and its retry
            self.cache.put(model, request, completion)
        return completion

    def _bill_failure(self, request: Request, model: str, exc: CallFailed, *, batched: bool = False) -> None:
        """Count a failed call; one the API answered and billed (an empty reply, a refusal) is metered."""
        self.meter.failed[request.purpose] += 1
        usage = getattr(exc, "usage", None)
        if usage is not None:  # billed although unusable
            cost = self._cost(model, exc.answered, usage) * (BATCH_PRICE if batched else 1.0)
            self.meter.add(CallRecord(request.purpose, model, exc.answered, usage, cost, batched=batched))

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
