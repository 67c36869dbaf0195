"""Inference over the `rwkv` package's RWKV-7 (the path the real g1d checkpoints run on).

Backbone adds what the harness needs around the package's forward: states that are never mutated
behind the caller's back, greedy decoding with an explicit stop rule, a canonical state encoding
and a meter of the tokens that went through the forward (the consolidation contract is checked in
those tokens).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from ..core.errors import InputError, UrdError
from .rwkv_pkg import load_rwkv7
from .state import StateLayout, clone_state
from .tokenizer import END_OF_TEXT, GrowingText, WorldTokenizer, get_tokenizer

_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}

# why a generation ended
STOP = "stop"  # a stop string appeared in the decoded text
MAX_NEW_TOKENS = "max_new_tokens"
END = "end_of_text"  # the model emitted token 0
MAX_BYTES = "max_bytes"  # the decoded text reached the caller's byte budget (batched decoding only)


@dataclass(frozen=True)
class Generation:
    text: str  # decoded output, cut before the first stop string
    tokens: tuple[int, ...]  # every generated token, including the one that completed the stop
    state: list | None  # after the prompt and all of `tokens` (None if keep_state=False)
    stop_reason: str  # STOP, MAX_NEW_TOKENS or END


class TokenMeter:
    """Tokens through the forward since the meter opened (frozen when the block exits)."""

    def __init__(self, backbone: Backbone):
        self._bb, self._start, self._end = backbone, backbone.tokens_processed, None

    @property
    def tokens(self) -> int:
        end = self._bb.tokens_processed if self._end is None else self._end
        return end - self._start


def greedy_token(logits: torch.Tensor) -> int:
    """argmax; ties go to the lowest id (torch.argmax returns the first maximum)."""
    if not torch.isfinite(logits).all():
        raise UrdError("non-finite logits: cannot decode greedily")
    return int(torch.argmax(logits))


class Backbone:
    def __init__(self, model, checkpoint_path: str, strategy: str, tokenizer: WorldTokenizer,
                 chunk_len: int = 1024):
        self.model, self.checkpoint_path, self.strategy = model, checkpoint_path, strategy
        self.tokenizer, self.chunk_len = tokenizer, chunk_len
        self.n_layer, self.n_embd = int(model.n_layer), int(model.n_embd)
        self.n_head, self.head_size = int(model.n_head), int(model.head_size)
        self.vocab_size = int(model.args.vocab_size)
        self.layout = StateLayout(self.n_layer, self.n_embd, self.n_head, self.head_size)
        device, dtype = strategy.split(" ")
        self.device, self.dtype = torch.device(device), _DTYPES[dtype]
        self.tokens_processed = 0

    @classmethod
    def load(cls, checkpoint_path: str | os.PathLike, strategy: str = "cpu fp32", *,
             chunk_len: int = 1024) -> Backbone:
        """Load a .pth checkpoint (path with or without the suffix). `chunk_len` bounds the
        tokens per forward call during prefill; it is part of the numerics (fix it for
        reproducibility)."""
        path = os.fspath(checkpoint_path)
        stem = path[: -len(".pth")] if path.endswith(".pth") else path
        if not os.path.isfile(stem + ".pth"):
            raise InputError(stem + ".pth", "checkpoint", "an existing .pth file", "missing")
        parts = strategy.split(" ")
        if len(parts) != 2 or parts[1] not in _DTYPES:
            raise InputError("strategy", "strategy", "'<device> fp32|fp16|bf16'", strategy)
        if chunk_len < 1:
            raise ValueError("chunk_len must be >= 1")
        return cls(load_rwkv7(stem, strategy), stem + ".pth", strategy, get_tokenizer(), chunk_len)

    # --- state -------------------------------------------------------------------------------
    def zero_state(self) -> list[torch.Tensor]:
        return self.layout.zeros(self.device, self.dtype)

    @staticmethod
    def clone_state(state) -> list[torch.Tensor]:
        return clone_state(state)

    def state_to_bytes(self, state) -> bytes:
        return self.layout.to_bytes(state)

    def state_from_bytes(self, data: bytes) -> list[torch.Tensor]:
        return self.layout.from_bytes(data, self.device, self.dtype)

    # --- meter -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def metered(self) -> Iterator[TokenMeter]:
        """`with bb.metered() as m: ...` then m.tokens: the tokens forwarded inside the block."""
        meter = TokenMeter(self)
        try:
            yield meter
        finally:
            meter._end = self.tokens_processed

    def reset_meter(self) -> None:
        self.tokens_processed = 0

    # --- forward -----------------------------------------------------------------------------
    def _check_tokens(self, tokens) -> list[int]:
        toks = [int(t) for t in tokens]
        if not toks:
            raise InputError("tokens", "tokens", "at least one token", 0)
        bad = [t for t in toks if not 0 <= t < self.vocab_size]
        if bad:
            raise InputError("tokens", "token id", f"in [0, {self.vocab_size})", bad[0])
        return toks

    def _forward(self, toks: list[int], state: list) -> tuple[torch.Tensor, list]:
        # `state` is already our own copy here; the package may rebind or mutate it
        logits = None
        for i in range(0, len(toks), self.chunk_len):
            chunk = toks[i: i + self.chunk_len]
            logits, state = self.model.forward(chunk, state)
            self.tokens_processed += len(chunk)
        return logits.float(), state

    def prefill(self, tokens: Sequence[int], state=None) -> tuple[torch.Tensor, list]:
        """Run `tokens` from `state` (zero state if None); returns the last token's logits
        (fp32, [vocab]) and the new state. The state passed in is never modified."""
        toks = self._check_tokens(tokens)
        if state is None:
            state = self.zero_state()
        else:
            self.layout.check(state)
            state = clone_state(state)
        return self._forward(toks, state)

    def generate(self, prompt_tokens: Sequence[int], state=None, *, max_new_tokens: int,
                 stop: Sequence[str] = ("\n",), keep_state: bool = True) -> Generation:
        """Greedy decoding. Ends at the first of: a stop string in the decoded output (STOP),
        token 0 (END), `max_new_tokens` tokens (MAX_NEW_TOKENS). With keep_state the last token
        is forwarded too, so the returned state has seen prompt + all generated tokens."""
        if max_new_tokens < 0:
            raise ValueError("max_new_tokens must be >= 0")
        if any(not s for s in stop):
            raise ValueError("stop strings must be non-empty")
        logits, st = self.prefill(prompt_tokens, state)
        return self.decode_from(logits, st, max_new_tokens=max_new_tokens, stop=stop, keep_state=keep_state)

    def decode_from(self, logits: torch.Tensor, st: list, *, max_new_tokens: int,
                    stop: Sequence[str] = ("\n",), keep_state: bool = True) -> Generation:
        """Greedy decoding from the logits and state after a prompt (`st` is consumed: pass a
        copy). The rules are generate()'s."""
        if max_new_tokens < 0:
            raise ValueError("max_new_tokens must be >= 0")
        if any(not s for s in stop):
            raise ValueError("stop strings must be non-empty")
        out: list[int] = []
        reason, grown = MAX_NEW_TOKENS, GrowingText(self.tokenizer, stop)
        while len(out) < max_new_tokens:
            tok = greedy_token(logits)
            out.append(tok)
            grown.add(tok)
            if grown.cut >= 0:
                reason = STOP
            elif tok == END_OF_TEXT:
                reason = END
            if reason != MAX_NEW_TOKENS or len(out) == max_new_tokens:
                break
            logits, st = self._forward([tok], st)
        text = grown.text[: grown.cut] if grown.cut >= 0 else grown.text
        if keep_state and out:
            _, st = self._forward([out[-1]], st)
        return Generation(text, tuple(out), st if keep_state else None, reason)
