"""The model as a memory system sees it: a metered handle, not the backbone.

Systems get a ModelHandle as `self.backbone`. Every token a system sends through the model goes
through one of its methods, and the handle counts it there; the count is read-only, and the raw
model is not an attribute of the handle. So a consolidation cannot run the model off the meter
by accident (resetting a counter, calling the package's forward): it fails with a
BudgetViolation that says why. A plug-in that sets out to load the checkpoint itself is outside
what this guards (docs/rung1.md, "The contract").

The handle also serves transcript prefixes from a cache of states computed once per episode
(the `prefill` job): a prefill or generate whose prompt starts with a cached transcript resumes
from the stored state. The tokens served from the cache are still counted: the contract counts
what a system reads, not what the cache saved.
"""

from __future__ import annotations

from collections.abc import Sequence

from .contract import BudgetViolation

_RAW = ("model", "_forward", "backbone")


def _prefill(backbone, tokens, state=None):
    # what the prefill job computes (urd.harness.prefill), so a transcript reads the same with
    # or without its file
    from ..backbone.batch import prefill

    return prefill(backbone, tokens, state)


class _Private:
    """The handle's own state, out of the way of attribute access on the handle."""

    def __init__(self, backbone, loader):
        self.backbone, self.loader, self.count, self.served, self.cache = backbone, loader, 0, 0, {}
        self.scoped: dict = {}  # tokens per scope key, for consolidations batched over episodes


class ModelHandle:
    __slots__ = ("__p",)

    def __init__(self, backbone=None, *, loader=None):
        """`backbone`, or `loader()` that returns one on first use (a consolidation that never
        runs the model, such as gzip_tail's, then never loads it)."""
        if backbone is None and loader is None:
            raise ValueError("ModelHandle needs a backbone or a loader")
        object.__setattr__(self, "_ModelHandle__p", _Private(backbone, loader))

    def __setattr__(self, name, value):
        if name == "tokens_processed":
            raise BudgetViolation("the token meter is read-only: a system declares its tokens with "
                                  "declare_tokens() and cannot reset what the handle counted")
        raise AttributeError(f"ModelHandle has no settable attribute {name!r}")

    def __getattr__(self, name):
        if name in _RAW:
            raise BudgetViolation(f"the raw model ({name}) is not exposed to memory systems: use the "
                                  "handle's prefill/generate, which are metered")
        raise AttributeError(f"ModelHandle has no attribute {name!r}")

    @property
    def __bb(self):
        p = self.__p
        if p.backbone is None:
            p.backbone = p.loader()
        return p.backbone

    # --- what the harness (not a system) uses ---------------------------------------------------
    @property
    def tokens_processed(self) -> int:
        """Tokens through the model on behalf of this handle's users, cached prefixes included."""
        return self.__p.count

    @property
    def tokens_served(self) -> int:
        """Of tokens_processed, those served from cached transcript states (not forwarded)."""
        return self.__p.served

    def cache_prefix(self, tokens: Sequence[int], logits=None, state=None) -> None:
        """Serve `tokens` (a transcript) from (logits, state) from now on. Without them the state
        is computed on first use, alone: a prompt that starts with a transcript is then read as
        the transcript's state plus the rest, with or without the prefill job's file."""
        key = tuple(int(t) for t in tokens)
        if state is not None or key not in self.__p.cache:
            self.__p.cache[key] = None if state is None else (logits, state)

    def __prefix(self, tokens: list[int]):
        """(prefix length, logits, state, tokens served) of the cached transcript `tokens` starts
        with; a pending one is computed here (forwarded and metered, so none served)."""
        for key, entry in self.__p.cache.items():
            if len(key) <= len(tokens) and tuple(tokens[: len(key)]) == key:
                if entry is None:
                    entry = self.__p.cache[key] = self.__metered(lambda key=key: _prefill(self.__bb, list(key)))
                    return len(key), *entry, 0
                return len(key), *entry, len(key)
        return 0, None, None, 0

    def __metered(self, fn, served: int = 0):
        before = self.__bb.tokens_processed
        try:
            return fn()
        finally:
            self.__p.count += self.__bb.tokens_processed - before + served
            self.__p.served += served

    def __resume(self, tokens, state, seq_pass: bool = False):
        """(logits, state) after `tokens` from `state`, through the cache where it applies."""
        toks = [int(t) for t in tokens]
        bb = self.__bb
        forward = (lambda t, s: _prefill(bb, t, s)) if seq_pass else bb.prefill
        n, logits, cached, served = self.__prefix(toks) if state is None else (0, None, None, 0)
        if n == 0:
            return self.__metered(lambda: forward(toks, state))
        if n == len(toks):
            return self.__metered(lambda: (logits.clone(), bb.clone_state(cached)), served=served)
        return self.__metered(lambda: forward(toks[n:], cached), served=served)

    # --- what a system uses -----------------------------------------------------------------
    @property
    def tokenizer(self):
        # the harness tokenizer (the backbone's own): reading it never loads the model
        from ..backbone.tokenizer import get_tokenizer

        return get_tokenizer()

    @property
    def layout(self):
        return self.__bb.layout

    n_layer = property(lambda self: self.__bb.n_layer)
    n_embd = property(lambda self: self.__bb.n_embd)
    n_head = property(lambda self: self.__bb.n_head)
    head_size = property(lambda self: self.__bb.head_size)
    vocab_size = property(lambda self: self.__bb.vocab_size)
    device = property(lambda self: self.__bb.device)
    dtype = property(lambda self: self.__bb.dtype)

    def zero_state(self):
        return self.__bb.zero_state()

    @staticmethod
    def clone_state(state):
        return [t.clone() for t in state]

    def state_to_bytes(self, state) -> bytes:
        return self.__bb.state_to_bytes(state)

    def state_from_bytes(self, data: bytes):
        return self.__bb.state_from_bytes(data)

    def prefill(self, tokens: Sequence[int], state=None, *, seq_pass: bool = False):
        """(last logits, state) after `tokens` from `state` (None: the zero state). `seq_pass`:
        through the batched decoder's sequence pass (urd.backbone.batch.prefill, what the batched
        path reads contexts with) instead of the package's forward (the sequential reference)."""
        return self.__resume(tokens, state, seq_pass)

    def generate(self, prompt_tokens: Sequence[int], state=None, *, max_new_tokens: int,
                 stop: Sequence[str] = ("\n",), keep_state: bool = True):
        """Backbone.generate, metered (the prompt may resume from a cached transcript)."""
        if any(not s for s in stop):
            raise ValueError("stop strings must be non-empty")
        logits, st = self.__resume(prompt_tokens, state)
        return self.__metered(lambda: self.__bb.decode_from(
            logits, st, max_new_tokens=max_new_tokens, stop=stop, keep_state=keep_state))

    def generate_groups(self, groups, *, max_new_tokens, stop: Sequence[str] = ("\n",), scopes=None,
                        max_bytes=None):
        """Several (state, prompts) groups decoded in one batch (urd.backbone.batch). A group of
        one prompt from no state resumes from a cached transcript it starts with. `scopes`: a key
        per group (an episode) under which its tokens are also counted (scoped_tokens);
        `max_bytes`: a row ends once its text holds that many bytes. `max_new_tokens` and
        `max_bytes` are one value for all, or one a group."""
        from ..backbone.batch import generate_groups

        bb = self.__bb
        if getattr(bb, "decodes_remotely", False):  # a model behind an API (urd.rung3.live.LLMWriter):
            counts = [0] * len(groups)              # no state, no cached transcript; it meters every row
            out = self.__metered(lambda: bb.generate_groups(groups, max_new_tokens=max_new_tokens, stop=stop,
                                                            counts=counts, max_bytes=max_bytes))
            for key, c in zip(scopes or (), counts):
                self.__p.scoped[key] = self.__p.scoped.get(key, 0) + c
            return out
        resolved, served, resumed = [], [], []
        for state, prompts in groups:
            prompts = [[int(t) for t in p] for p in prompts]
            k = n = 0
            if state is None and len(prompts) == 1:
                k, _, cached, n = self.__prefix(prompts[0])
                if 0 < k < len(prompts[0]):  # at least one token left to step
                    state, prompts = cached, [prompts[0][k:]]
                else:
                    k = n = 0  # a prompt that is all transcript: stepped whole (nothing served)
            resolved.append((state, prompts))
            served.append(n)
            resumed.append(k)
        counts = [0] * len(groups)
        out = self.__metered(lambda: generate_groups(self.__bb, resolved, max_new_tokens=max_new_tokens, stop=stop,
                                                     counts=counts, max_bytes=max_bytes), served=sum(served))
        for key, k, c in zip(scopes or (), resumed, counts):  # the transcript read (served or not) + the rest
            self.__p.scoped[key] = self.__p.scoped.get(key, 0) + k + c
        return out

    def scoped_tokens(self) -> dict:
        """Tokens counted per scope key since the last call (which clears them)."""
        out, self.__p.scoped = self.__p.scoped, {}
        return out

    def generate_batch(self, prompts: Sequence[Sequence[int]], state=None, *, max_new_tokens: int,
                       stop: Sequence[str] = ("\n",)):
        """Every prompt from the same `state`, decoded together (urd.backbone.batch)."""
        from ..backbone.batch import generate_batch

        return self.__metered(lambda: generate_batch(self.__bb, [list(p) for p in prompts], state,
                                                     max_new_tokens=max_new_tokens, stop=stop))
