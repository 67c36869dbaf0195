"""The live backend: the ``anthropic`` SDK's Messages API, with its retries and timeout.

The key is read from the environment and handed straight to the SDK; this object keeps
no copy of it, and no error message built here quotes a request header.
"""

from __future__ import annotations

import dataclasses
import os

import anthropic
import httpx2

from .errors import CallFailed, KeyMissing
from .request import Completion, Request
from .usage import Usage

KEY_VARIABLE = "ANTHROPIC_API_KEY"
# stop reasons of a reply that ended before the model finished it
CUT_SHORT = ("max_tokens", "model_context_window_exceeded")


class StopRetrying(anthropic.AnthropicError):
    """Raised by a guard before an SDK retry is sent (the SDK passes its own error types through
    without retrying them); carries the error to raise instead."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class _Attempts:
    """The SDK's attempts at one Messages call, seen on the wire: how many were sent, how many
    were answered 200 (billed by the API, whether or not the body then arrived whole), and how
    many are unknown: the whole request went out (or the transport cannot say it did not) and no
    answer came back, a timeout or a dropped connection. The API may have processed and billed
    such an attempt, so it counts as billed at its worst case; one that never left (a refused
    connection) counts for nothing. Each attempt is followed through httpcore's `trace`
    extension: its request body sent, and its response."""

    def __init__(self) -> None:
        self.sent = self.ok = self.unknown = 0
        self.guard = None
        self._open: dict | None = None

    def start(self, guard) -> None:
        self.sent, self.ok, self.unknown, self.guard, self._open = 0, 0, 0, guard, None

    def on_request(self, request) -> None:
        if not _is_message(request):
            return
        self.finish()
        if self.sent and self.guard is not None:
            # A retry: every attempt so far may have been billed (a 200 whose body was lost, or a
            # request the server went on answering after the client's timeout).
            self.guard(self.sent)
        self.sent += 1
        attempt = self._open = {"traced": False, "sent": False, "answered": False}
        earlier = request.extensions.get("trace")

        def trace(event: str, info: dict, attempt=attempt) -> None:
            attempt["traced"] = True
            if event.endswith("send_request_body.complete"):
                attempt["sent"] = True
            if earlier is not None:
                earlier(event, info)

        request.extensions["trace"] = trace

    def on_response(self, response) -> None:
        if _is_message(response.request):
            if self._open is not None:
                self._open["answered"] = True
            if response.status_code == 200:
                self.ok += 1

    def finish(self) -> None:
        """Close the last attempt: unknown if it was sent, or may have been, and never answered."""
        a, self._open = self._open, None
        if a is not None and not a["answered"] and (a["sent"] or not a["traced"]):
            self.unknown += 1


def _is_message(request) -> bool:
    # a gateway may put the API under a prefix (ANTHROPIC_BASE_URL=https://gw/anthropic)
    return request.method == "POST" and request.url.path.rstrip("/").endswith("/v1/messages")


class _Hook:
    """An event hook that reports to the newest backend built on its client (a client handed in
    may outlive several backends)."""

    def __init__(self, event: str) -> None:
        self.event, self.attempts = event, None

    def __call__(self, thing) -> None:
        getattr(self.attempts, f"on_{self.event}")(thing)


def _watch(http_client, attempts: _Attempts) -> None:
    for event in ("request", "response"):
        hooks = list(http_client.event_hooks.get(event, []))
        hook = next((h for h in hooks if isinstance(h, _Hook)), None)
        if hook is None:
            hook = _Hook(event)
            hooks.append(hook)
        hook.attempts = attempts
        http_client.event_hooks = {**http_client.event_hooks, event: hooks}


class AnthropicBackend:
    def __init__(
        self,
        *,
        max_retries: int,
        timeout_s: float,
        prompt_cache: bool = True,
        http_client=None,
        base_url: str | None = None,
    ) -> None:
        key = os.environ.get(KEY_VARIABLE, "").strip()
        if not key:
            raise KeyMissing()
        self._attempts = _Attempts()
        if http_client is None:
            http_client = anthropic.DefaultHttpxClient()
        _watch(http_client, self._attempts)
        # An explicit key keeps the SDK from looking for credential profiles on disk.
        self._client = anthropic.Anthropic(
            api_key=key,
            max_retries=max_retries,
            timeout=timeout_s,
            http_client=http_client,
            base_url=base_url,
        )
        self._prompt_cache = prompt_cache

    def count_tokens(self, model: str, request: Request) -> int:
        """The input tokens ``request`` would bill on ``model`` (the Messages API's token counter)."""
        try:
            counted = self._client.messages.count_tokens(
                model=model, system=[{"type": "text", "text": request.system}],
                messages=[{"role": "user", "content": request.user}],
            )
        except (anthropic.APIStatusError, anthropic.APIConnectionError) as exc:
            raise CallFailed(request.purpose, model, f"count_tokens: {type(exc).__name__}") from None
        return int(counted.input_tokens)

    def _params(self, model: str, request: Request) -> dict:
        system: list[dict] = [{"type": "text", "text": request.system}]
        if self._prompt_cache:
            # The instructions repeat across calls of a purpose; the data never does.
            system[0]["cache_control"] = {"type": "ephemeral"}
        return {"model": model, "max_tokens": request.max_tokens, "system": system,
                "messages": [{"role": "user", "content": request.user}]}

    def complete(self, model: str, request: Request, guard=None) -> Completion:
        """One call, with the SDK's retries. The result (or the error) carries ``retries`` (attempts
        after the first) and ``lost`` (replies the API answered 200 whose body never arrived whole:
        billed, usage unknown). ``guard(lost)`` runs before each retry and may raise to stop it."""
        self._attempts.start(guard)
        try:
            try:
                message = self._client.messages.create(**self._params(model, request))
            finally:
                self._attempts.finish()
        except StopRetrying as stop:
            raise self._tally(stop.error, lost=self._attempts.ok) from None
        except anthropic.APIStatusError as exc:
            raise self._tally(CallFailed(request.purpose, model, f"HTTP {exc.status_code} ({type(exc).__name__})"),
                              lost=self._attempts.ok) from None
        except anthropic.APIConnectionError as exc:
            raise self._tally(CallFailed(request.purpose, model, type(exc).__name__), lost=self._attempts.ok) from None
        except anthropic.AnthropicError as exc:  # a reply the SDK could not read (billed if it came as 200)
            raise self._tally(CallFailed(request.purpose, model, type(exc).__name__), lost=self._attempts.ok) from None
        try:
            done = _completion(request, model, message)
        except CallFailed as exc:
            raise self._tally(exc, lost=max(self._attempts.ok - 1, 0)) from None
        return dataclasses.replace(done, retries=max(self._attempts.sent - 1, 0),
                                   lost=max(self._attempts.ok - 1, 0) + self._attempts.unknown)

    def _tally(self, error: Exception, *, lost: int) -> Exception:
        # an attempt whose outcome is unknown stays billed at its worst case, as a lost reply is
        error.retries, error.lost = max(self._attempts.sent - 1, 0), lost + self._attempts.unknown
        return error

    # --- Message Batches: the client keeps the journal; these are the API's four verbs -----------
    def create_batch(self, items: list[tuple[str, str, Request]]) -> str:
        """Send ``(custom_id, model, request)`` items as one Message Batch; returns its id. Never
        retried by the SDK: a create whose answer was lost may have made a batch, and a retry
        would buy a second one (the client adopts the first on a rerun instead)."""
        batch = self._client.with_options(max_retries=0).messages.batches.create(
            requests=[{"custom_id": cid, "params": self._params(m, r)} for cid, m, r in items]
        )
        return batch.id

    def list_batches(self, limit: int) -> list[dict]:
        """The most recent batches of the key's workspace: id, created_at (aware datetime),
        processing_status and how many requests each holds."""
        out = []
        for b in self._client.messages.batches.list(limit=limit).data:
            c = b.request_counts
            out.append({"id": b.id, "created_at": b.created_at, "processing_status": b.processing_status,
                        "requests": c.processing + c.succeeded + c.errored + c.canceled + c.expired})
        return out

    def batch_custom_ids(self, batch_id: str) -> set[str]:
        """The custom ids an ended batch's results carry (reading results costs nothing)."""
        return {r.custom_id for r in self._client.messages.batches.results(batch_id)}

    def batch_status(self, batch_id: str) -> str:
        return self._client.messages.batches.retrieve(batch_id).processing_status

    def batch_results(self, batch_id: str, items: dict[str, tuple[str, Request]]):
        """Yields ``(custom_id, Completion or CallFailed)`` as the results stream arrives."""
        for result in self._client.messages.batches.results(batch_id):
            model, request = items[result.custom_id]
            if result.result.type == "succeeded":
                try:
                    yield result.custom_id, _completion(request, model, result.result.message)
                except CallFailed as exc:
                    yield result.custom_id, exc
            else:
                yield result.custom_id, CallFailed(request.purpose, model, f"batch request {result.result.type}")

    def cancel_batch(self, batch_id: str) -> str:
        return self._client.messages.batches.cancel(batch_id).processing_status


# The errors a batch verb can meet on the wire, after the SDK's own retries (a results stream cut
# short surfaces as the transport's own error, mid-iteration).
WIRE_ERRORS = (anthropic.APIStatusError, anthropic.APIConnectionError, httpx2.TransportError)


def not_found(exc: BaseException) -> bool:
    """The API answered that it does not know the thing asked about (HTTP 404)."""
    return isinstance(exc, anthropic.NotFoundError)


def _completion(request: Request, model: str, message) -> Completion:
    text = "".join(block.text for block in message.content if getattr(block, "type", None) == "text")
    u = message.usage
    usage = Usage(
        input_tokens=u.input_tokens or 0,
        output_tokens=u.output_tokens or 0,
        cache_write_tokens=getattr(u, "cache_creation_input_tokens", None) or 0,
        cache_read_tokens=getattr(u, "cache_read_input_tokens", None) or 0,
    )
    if message.stop_reason == "refusal":  # billed, and never parsed as an answer
        raise ModelRefused(request.purpose, model, message.model, usage)
    if not text.strip():
        # An empty reply is a failed call; the tokens it burned travel with the
        # exception so the meter still counts them.
        raise EmptyReply(request.purpose, model, message.stop_reason or "no text", message.model, usage)
    return Completion(text=text, model=message.model, usage=usage, truncated=message.stop_reason in CUT_SHORT)


class EmptyReply(CallFailed):
    """The API answered, and billed, but returned no text (a budget spent on thinking)."""

    def __init__(self, purpose: str, model: str, why: str, answered: str, usage: Usage) -> None:
        super().__init__(purpose, model, f"empty reply ({why})")
        self.answered, self.usage = answered, usage


class ModelRefused(EmptyReply):
    """The model declined to answer (stop reason ``refusal``): billed, counted as failed."""

    def __init__(self, purpose: str, model: str, answered: str, usage: Usage) -> None:
        CallFailed.__init__(self, purpose, model, "the model refused to answer")
        self.answered, self.usage = answered, usage
