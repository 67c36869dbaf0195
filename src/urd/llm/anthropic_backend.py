"""The live backend: the ``anthropic`` SDK's Messages API, with its retries and timeout.

The key is read from the environment and handed straight to the SDK; this object keeps
no copy of it, and no error message built here quotes a request header.
"""

from __future__ import annotations

import os
import time

import anthropic

from .errors import CallFailed, KeyMissing
from .request import Completion, Request
from .usage import Usage

KEY_VARIABLE = "ANTHROPIC_API_KEY"
# stop reasons of a reply that ended before the model finished it
CUT_SHORT = ("max_tokens", "model_context_window_exceeded")


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

    def complete(self, model: str, request: Request) -> Completion:
        try:
            message = self._client.messages.create(**self._params(model, request))
        except anthropic.APIStatusError as exc:
            raise CallFailed(request.purpose, model, f"HTTP {exc.status_code} ({type(exc).__name__})") from None
        except anthropic.APIConnectionError as exc:
            raise CallFailed(request.purpose, model, type(exc).__name__) from None
        return _completion(request, model, message)

    def complete_batch(self, items: list[tuple[str, Request]], *, poll_s: float = 30.0) -> list:
        """Every (model, request) through one Message Batch, at the batch price. Returns, in order,
        a Completion or the CallFailed of each; waits (polling every ``poll_s``) until it ends."""
        try:
            batch = self._client.messages.batches.create(
                requests=[{"custom_id": f"r{i}", "params": self._params(m, r)} for i, (m, r) in enumerate(items)]
            )
            while batch.processing_status != "ended":
                time.sleep(poll_s)
                batch = self._client.messages.batches.retrieve(batch.id)
            out: list = [CallFailed(r.purpose, m, "no result in the batch") for m, r in items]
            for result in self._client.messages.batches.results(batch.id):
                i = int(result.custom_id[1:])
                model, request = items[i]
                if result.result.type == "succeeded":
                    try:
                        out[i] = _completion(request, model, result.result.message)
                    except CallFailed as exc:
                        out[i] = exc
                else:
                    out[i] = CallFailed(request.purpose, model, f"batch request {result.result.type}")
        except (anthropic.APIStatusError, anthropic.APIConnectionError) as exc:
            raise CallFailed(items[0][1].purpose, items[0][0], f"message batch: {type(exc).__name__}") from None
        return out


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
