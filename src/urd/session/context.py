"""Answering queries from a shared context without prefilling it twice.

The context (a transcript, or a header and a fiche, or a restored state) is prefilled once; the
queries start from the state after it. Context and query are tokenized separately, so the
boundary between them is the same whatever the query. ask_all decodes every query together
(urd.backbone.batch); ask decodes one alone (the sequential path, kept as the reference).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Decode:
    max_new_tokens: int
    stop: tuple[str, ...] = ("\n",)


def context_state(handle, text: str, state=None):
    """The state after `text` read from `state` (None: the zero state; returned as None when
    there is no text either), through the batched path's sequence pass."""
    if text:
        return handle.prefill(handle.tokenizer.encode(text), state, seq_pass=True)[1]
    return handle.clone_state(state) if state is not None else None


#: The most queries one batch decodes. A job holds a recurrent state per row of its batch
#: (2.6 MB at the 0.1B shape, 5.4 MB at 0.4B): a cell's 150 queries decode in one batch, a
#: sweep's thousands in batches of whole contexts up to this many (the replies and the tokens
#: forwarded do not depend on the batch; urd.cost.estimate bounds a job's memory by it).
MAX_BATCH_ROWS = 1024


def batches(sizes: list[int], limit: int = MAX_BATCH_ROWS) -> list[range]:
    """Consecutive runs of groups whose sizes sum to at most `limit` (a larger group alone)."""
    out, start, rows = [], 0, 0
    for i, n in enumerate(sizes):
        if i > start and rows + n > limit:
            out.append(range(start, i))
            start, rows = i, 0
        rows += n
    if start < len(sizes):
        out.append(range(start, len(sizes)))
    return out


def batched(queries: list[list[str]]) -> str:
    """How answer_groups decodes these queries, for a job's progress line."""
    n, k = sum(map(len, queries)), len(batches([len(q) for q in queries]))
    return f"{n} queries in one batch" if k == 1 else f"{n} queries in {k} batches of up to {MAX_BATCH_ROWS}"


def answer_groups(handle, contexts: list[tuple[str, object]], queries: list[list[str]], decode: Decode,
                  limit: int = MAX_BATCH_ROWS) -> list[list[str]]:
    """Every query of every context: contexts[i] = (text, state) and queries[i] its queries,
    decoded together, in batches of whole contexts of up to `limit` queries. Each context is
    prefilled once, when its batch starts."""
    if len(contexts) != len(queries):
        raise ValueError(f"answer_groups: {len(contexts)} contexts but {len(queries)} lists of queries")
    enc = handle.tokenizer.encode
    out: list[list[str]] = []
    for batch in batches([len(q) for q in queries], limit):
        groups = [(context_state(handle, *contexts[i]), [enc(q) for q in queries[i]]) for i in batch]
        gens = handle.generate_groups(groups, max_new_tokens=decode.max_new_tokens, stop=decode.stop)
        out += [[g.text for g in gs] for gs in gens]
    return out


class ContextAnswerer:
    def __init__(self, backbone):
        self.backbone = backbone
        self._key = None
        self._logits = None
        self._state = None

    def set_context(self, text: str, state=None, key=None) -> None:
        """Prefill `text` (from `state`, or a fresh one) unless this exact context is cached."""
        key = key if key is not None else (hashlib.sha256(text.encode()).hexdigest(), None)
        if key == self._key:
            return
        tokens = self.backbone.tokenizer.encode(text) if text else []
        if tokens:
            self._logits, self._state = self.backbone.prefill(tokens, state)
        else:
            self._logits, self._state = None, self.backbone.clone_state(state) if state is not None else None
        self._key = key

    def ask_all(self, queries: list[str], decode: Decode) -> list[str]:
        """Every query from the context, decoded in one batch."""
        if not queries:
            return []
        prompts = [self.backbone.tokenizer.encode(q) for q in queries]
        gens = self.backbone.generate_batch(prompts, self._state, max_new_tokens=decode.max_new_tokens,
                                            stop=decode.stop)
        return [g.text for g in gens]

    def ask(self, query: str, decode: Decode) -> str:
        tokens = self.backbone.tokenizer.encode(query)
        state = self.backbone.clone_state(self._state) if self._state is not None else None
        gen = self.backbone.generate(
            tokens, state, max_new_tokens=decode.max_new_tokens, stop=decode.stop, keep_state=False
        )
        return gen.text
