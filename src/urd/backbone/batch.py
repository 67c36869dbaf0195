"""Batched greedy decoding: all queries of a cell answered together, in lockstep.

The sequential decoder (`Backbone.generate`) streams every weight matrix from memory once per
token per query; here B rows share each read. `forward_batch` is the package's `forward_one`
(non-DeepEmbed) with a leading batch dimension: urd.backbone.rwkv7_block's block, its WKV one
step in place (`wkv_step`), over the package model's own weights (on the CPU, the head's and
from 512 wide the projections' in a packed copy: `_step_weights`). `generate_groups` takes several contexts (a state and its
prompts each: the episodes of a cell), prefills each context's common prompt prefix once, then
runs the prompt tokens every row still has before its last one as one sequence
(`forward_seq_batch`: each projection over all B x T tokens at once, only the WKV recurrence
running through time, in chunks of matrix products), then steps every row one token at a time
(the rest of its prompt, then its last generated token) and stops each row by exactly
`Backbone.generate`'s rules.

Numerics: the operations are the package's, except that the WKV update multiplies the state
by its rank-1 term as two matrix-vector products where the package forms the N x N matrix
(N^2 instead of N^3 operations: rwkv7_block.wkv_step); a sequence pass of 16 tokens or more
sums the same recurrence chunk by chunk (urd.backbone.wkv_chunked); a [B, C] @ [C, D] product
may also round differently from a [C] @ [C, D] one (on the CPU a step's head, and from 512 wide
its projections, run through oneDNN over weights packed once: `_step_weights`), and a prompt's
last tokens go step by step here where `generate` runs the whole prompt through `forward_seq`.
Logits agree to ~1e-5; a greedy token can only differ on a near-tie, which
tests/test_backbone_batch.py, benchmarks/rung1_cpu.py and benchmarks/batch_equivalence.py count
against the sequential decoder.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from ..core.errors import UrdError
from .adapter import END, MAX_BYTES, MAX_NEW_TOKENS, STOP, Generation
from .rwkv7_block import Way, block, wkv_step
from .tokenizer import END_OF_TEXT, GrowingText
from .wkv_chunked import wkv7_chunked

SEQ_MIN_TOKENS = 2  # below this a sequence pass saves nothing over stepping


def _wkv_step(inplace: bool, state, r, w, k, v, a, b):
    """The WKV of one decoding step over rows: r, w, k, v, a, b [B, C]; state [B, H, N, N] fp32
    (updated in place when `inplace`: the caller owns it) -> (y [B, C] fp32, the new state)."""
    B, H, N = state.shape[:3]
    hn = lambda t: t.float().view(B, H, N)
    y, state = wkv_step(state, hn(r), hn(w), hn(k), hn(v), hn(a), hn(b), inplace)
    return y.view(B, H * N), state


SEQ_WKV_CHUNK = 32  # a sequence pass of at least SEQ_WKV_MIN_TOKENS runs its WKV in chunks of this
SEQ_WKV_MIN_TOKENS = 16  # below this, stepping is faster (timed at B = 1 and 24, 0.1B shape)


def _wkv_seq(lengths, state, r, w, k, v, a, b):
    """The WKV of a sequence pass over rows: r, w, k, v, a, b [B, T, C]; state [B, H, N, N] fp32
    (the caller's, updated in place when stepping) -> (y [B, T, H, N] fp32, the new state).
    `lengths` ([B], or None: all T): row b's tokens are its first lengths[b]; past them its state
    does not move (decay 1, no update: exactly the state at its last token). From
    SEQ_WKV_MIN_TOKENS on, urd.backbone.wkv_chunked's matrix products within chunks (rows folded
    into heads): the same recurrence summed in another order, about 4x faster than stepping at
    T = 512."""
    B, T, _ = r.shape
    H, N = state.shape[1:3]
    r, w, k, v, a, b = (t.float().view(B, T, H, N) for t in (r, w, k, v, a, b))
    if lengths is not None:  # padding: S * 1 + sa * 0 + v * 0 leaves S exactly as it was
        pad = (torch.arange(T, device=r.device)[None, :] >= lengths[:, None])[:, :, None, None]
        w, b, k = w.masked_fill(pad, 1.0), b.masked_fill(pad, 0.0), k.masked_fill(pad, 0.0)
    if T >= SEQ_WKV_MIN_TOKENS:
        def fold(x):
            return x.transpose(0, 1).reshape(T, B * H, N)

        y, s = wkv7_chunked(state.reshape(B * H, N, N), *map(fold, (r, w, k, v, a, b)), chunk=min(SEQ_WKV_CHUNK, T))
        return y.view(T, B, H, N).transpose(0, 1), s.view(B, H, N, N)
    ys = []
    for t in range(T):
        y, state = wkv_step(state, r[:, t], w[:, t], k[:, t], v[:, t], a[:, t], b[:, t], inplace=True)
        ys.append(y)
    return torch.stack(ys, dim=1), state


def _last(x, x_prev, lengths):
    """Each row's last token of x [B, T, C] (x_prev [B, C] for a row with none)."""
    if lengths is None:
        return x[:, -1]
    rows = torch.arange(x.shape[0], device=x.device)
    return torch.where((lengths > 0)[:, None], x[rows, (lengths - 1).clamp(min=0)], x_prev)


@torch.no_grad()
def forward_batch(model, tokens: torch.Tensor, state: list, rows: torch.Tensor | None = None, *,
                  inplace: bool = False):
    """One token for each of B rows, each from its own state.

    tokens: [B] int64; state: the package's 3 * n_layer slots, each with a leading [B] dim (see
    `stack_state`); rows: indices of the rows whose logits are wanted (None = all). Returns
    (logits [len(rows), vocab] fp32, or None when no row wants them; the new state). Neither
    `state` nor its tensors are modified, unless `inplace` (the WKV matrices are then updated
    where they are: for a caller that owns them and drops the old state)."""
    z, C = _step_weights(model), int(model.n_embd)
    way = Way(_mm, functools.partial(_wkv_step, inplace))
    x, new_state = _blocks(model, z["emb.weight"][tokens], state, way, z)
    if rows is not None:
        if rows.numel() == 0:
            return None, new_state
        if rows.numel() < x.shape[0]:
            x = x[rows]
    # the head (C x vocab, a third of the 0.1B shape's weights): only rows that pick a token pay for it
    x = F.layer_norm(x, (C,), weight=z["ln_out.weight"], bias=z["ln_out.bias"])
    return _mm(x, z["head.weight"]).float(), new_state


_STEP_WEIGHTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
PACK_MIN_EMBD = 512  # narrower (tiny): a block's projections run faster through MKL, conversions and all
_PROJECTIONS = ("att.receptance.weight", "att.key.weight", "att.value.weight", "att.output.weight",
                "ffn.key.weight", "ffn.value.weight")


def _step_weights(model) -> dict:
    """model.z for a decoding step (made once a model): on the CPU in fp32, the head and, from
    PACK_MIN_EMBD wide, each block's six projections become oneDNN weights in their own
    [out, in] layout (`_mm`). MKL's x @ W packs W again on every call, which at a step's few rows
    is much of the product's cost (benchmarks/step_weights.py times both paths). Each output is
    still one row's dot product over the same terms, summed in another order (see the module
    note); the sequence pass, whose products have hundreds of rows, keeps MKL.

    The copies stay for the model's life (about 540 MB at the 0.1B shape, 340 MB of it the
    projections) and are not made again: weights edited in place after a model's first step
    are not seen by the next (load the model again instead)."""
    z = _STEP_WEIGHTS.get(model)
    if z is None:
        z = dict(model.z)
        head = z["head.weight"]
        if head.device.type == "cpu" and head.dtype == torch.float32 and torch.backends.mkldnn.is_available():
            names = ["head.weight"]
            if int(model.n_embd) >= PACK_MIN_EMBD:
                names += [f"blocks.{i}.{p}" for i in range(int(model.n_layer)) for p in _PROJECTIONS]
            for name in names:
                z[name] = z[name].t().contiguous().to_mkldnn()
        _STEP_WEIGHTS[model] = z
    return z


def _mm(x, w):
    """x [..., C] @ w, through oneDNN's linear where `_step_weights` packed w."""
    if not w.is_mkldnn:
        return x @ w
    return torch.ops.aten.mkldnn_linear(x.contiguous().to_mkldnn(), w, None).to_dense()


@torch.no_grad()
def forward_seq_batch(model, tokens: torch.Tensor, state: list, lengths: torch.Tensor | None = None) -> list:
    """T tokens for each of B rows ([B, T] int64), each from its own batched state, no logits:
    the prompt tokens that precede each row's last one. `lengths` ([B]): row b has only its
    first lengths[b] tokens (the rest is padding, which changes nothing). The caller owns
    `state` and its list: the new slots replace the old ones in it (returned too)."""
    way = Way(_mm, functools.partial(_wkv_seq, lengths), functools.partial(_last, lengths=lengths))
    return _blocks(model, model.z["emb.weight"][tokens], state, way, model.z, owned=True)[1]


def _blocks(model, x, state: list, way: Way, z: dict, owned: bool = False):
    """The block stack (urd.backbone.rwkv7_block) over x ([B, C] for a step, [B, T, C] for a
    sequence: `way`) with weights z (model.z, or `_step_weights`); returns (x, the new state
    slots). `owned`: the new slots replace the old ones in `state` itself, so that each old slot
    is freed once its layer has run (a sequence pass over many rows would otherwise hold two
    states at once)."""
    H, N = int(model.n_head), int(model.head_size)
    v_first = torch.empty_like(x)
    new_state = state if owned else list(state)
    for i in range(int(model.n_layer)):
        x, *slots, v_first = block(z, i, H, N, x, *state[3 * i: 3 * i + 3], v_first, way)
        new_state[3 * i: 3 * i + 3] = slots
    return x, new_state


# tokens a sequence pass takes at once: bounds the [B, T, 4C] activations and the chunked WKV's
# [B * H, T / 32, N, N] per-chunk matrices (3 MB each for one row of 512 tokens at the 0.1B shape)
PREFILL_CHUNK = 512


def advance(backbone, tokens: Sequence[int], state=None) -> list:
    """The state after `tokens` from `state` (None: the zero state; never modified), through this
    module's sequence pass: each projection over a whole chunk at once, the WKV recurrence in
    chunks of matrix products (1.6x the package's `forward` at 800 tokens, 2.1x at 3,000, 0.1B
    shape, 2 cores; it rounds like `forward_seq_batch`, see the module note). Counts the tokens
    on the backbone's meter."""
    toks = backbone._check_tokens(tokens)
    if state is not None:
        backbone.layout.check(state)
    st = stack_state(state if state is not None else backbone.zero_state(), 1)
    for i in range(0, len(toks), PREFILL_CHUNK):
        st = forward_seq_batch(backbone.model, torch.tensor([toks[i: i + PREFILL_CHUNK]], device=backbone.device), st)
    backbone.tokens_processed += len(toks)
    return [t[0] for t in st]


def prefill(backbone, tokens: Sequence[int], state=None) -> tuple[torch.Tensor, list]:
    """`Backbone.prefill` through the sequence pass: (last logits fp32 [vocab], state). What the
    batched path prefills (transcripts once per episode, each group's common prompt prefix)
    goes through here; the sequential decoder keeps the package's forward."""
    toks = backbone._check_tokens(tokens)
    if state is not None:
        backbone.layout.check(state)
    st = advance(backbone, toks[:-1], state) if len(toks) > 1 else \
        [t.clone() for t in (state if state is not None else backbone.zero_state())]
    logits, st = forward_batch(backbone.model, torch.tensor([toks[-1]], device=backbone.device),
                               [t.unsqueeze(0) for t in st], inplace=True)
    backbone.tokens_processed += 1
    return logits[0], [t[0] for t in st]


def stack_state(state: list, n: int) -> list:
    """n copies of one state as batched slots [n, ...] (always fresh memory)."""
    return [t.repeat(n, *(1,) * t.dim()) for t in state]


def _common_prefix(rows: list[list[int]]) -> int:
    """Length of the longest common prefix, leaving every row at least one token to step."""
    limit = min(len(r) for r in rows) - 1
    n = 0
    while n < limit and all(r[n] == rows[0][n] for r in rows):
        n += 1
    return n


def generate_batch(backbone, prompts: Sequence[Sequence[int]], state=None, *, max_new_tokens: int,
                   stop: Sequence[str] = ("\n",)) -> list[Generation]:
    """`backbone.generate(p, clone(state), max_new_tokens=..., stop=..., keep_state=False)` for
    every p in `prompts`, decoded together. Returns one Generation (state=None) per prompt, in
    order. `state` (None = zero state) is never modified. backbone.tokens_processed grows by the
    tokens actually forwarded: the common prefix once, then one per active row per step."""
    return generate_groups(backbone, [(state, prompts)], max_new_tokens=max_new_tokens, stop=stop)[0]


def generate_groups(backbone, groups: Sequence[tuple[list | None, Sequence[Sequence[int]]]], *,
                    max_new_tokens: int | Sequence[int], stop: Sequence[str] = ("\n",),
                    counts: list[int] | None = None,
                    max_bytes: int | Sequence[int | None] | None = None) -> list[list[Generation]]:
    """generate_batch for several contexts at once: each group is (state, prompts), and every
    row of every group steps in the same batch (more rows a step use the CPU's matrix units
    better). Returns the Generations group by group, in order. Each group's common prompt prefix
    is prefilled once from its own state. `counts`, if given, gets each group's forwarded
    tokens added at its index (so a caller can meter groups apart). `max_bytes`, if given, also
    ends a row once its decoded text (before any stop string) holds that many UTF-8 bytes: a
    caller that keeps only that many bytes stops paying for tokens it would cut.
    `max_new_tokens` and `max_bytes` may also be one value a group (rung 2's sweep decodes the
    points of a budget sweep together, each with its own limits): each row stops at its own."""
    limits = [max_new_tokens] * len(groups) if isinstance(max_new_tokens, int) else list(max_new_tokens)
    byte_limits = [max_bytes] * len(groups) if max_bytes is None or isinstance(max_bytes, int) else list(max_bytes)
    if len(limits) != len(groups) or len(byte_limits) != len(groups):
        raise ValueError(f"one max_new_tokens and max_bytes a group: {len(groups)} groups")
    if any(n < 0 for n in limits):
        raise ValueError("max_new_tokens must be >= 0")
    if any(not s for s in stop):
        raise ValueError("stop strings must be non-empty")
    toks_by_group = [[backbone._check_tokens(p) for p in prompts] for _, prompts in groups]
    for state, _ in groups:
        if state is not None:
            backbone.layout.check(state)
    # the same prompt from the same context decodes to the same reply: each is decoded once;
    # a group with nothing to decode needs nothing forwarded
    unique_by_group = [[list(u) for u in dict.fromkeys(map(tuple, toks))] if limit else []
                       for toks, limit in zip(toks_by_group, limits)]

    starts, tails, group_of = [], [], []  # starts: (each group's state after its prefix, its rows)
    counts = counts if counts is not None else [0] * len(groups)
    for g, ((state, _), toks) in enumerate(zip(groups, unique_by_group)):
        if not toks:
            continue
        n_prefix = _common_prefix(toks)
        counts[g] += n_prefix
        if n_prefix:
            state = advance(backbone, toks[0][:n_prefix], state)  # works on a copy
        elif state is None:
            state = backbone.zero_state()
        starts.append((state, len(toks)))
        tails += [t[n_prefix:] for t in toks]
        group_of += [g] * len(toks)
    B, dev = len(tails), backbone.device
    if B == 0:  # no prompts, or nothing to decode
        return [[Generation("", (), None, MAX_NEW_TOKENS) for _ in toks] for toks in toks_by_group]
    # one copy of each group's state per row, written straight into the batched slots (expanded
    # views, no per-group stacks to concatenate: a batch of thousands of rows holds one state)
    st = [torch.cat([s[j].expand(n, *s[j].shape) for s, n in starts]) for j in range(len(starts[0][0]))]
    del starts

    # per active row (tensors so that a step needs no loop over rows): prompt tail (padded),
    # its length, the last generated token; `ids` maps active rows to prompt indices
    width = max(len(t) for t in tails)
    tail = torch.tensor([t + [0] * (width - len(t)) for t in tails], dtype=torch.long, device=dev)
    tail_len = torch.tensor([len(t) for t in tails], dtype=torch.long, device=dev)
    last = torch.zeros(B, dtype=torch.long, device=dev)
    ids = list(range(B))
    outs: list[list[int]] = [[] for _ in range(B)]
    texts = [GrowingText(backbone.tokenizer, stop) for _ in range(B)]
    results: list[Generation | None] = [None] * B

    # every row's prompt tokens before its last one go through as one sequence (rows shorter
    # than the longest are padded, and padding changes no state): each weight matrix is read
    # once for all of them, and every row then starts decoding at the same step
    pos = torch.zeros(B, dtype=torch.long, device=dev)  # each row's next prompt position
    if int(tail_len.max()) - 1 >= SEQ_MIN_TOKENS:
        pos = tail_len - 1
        for t0 in range(0, int(pos.max()), PREFILL_CHUNK):  # bounded activations, as in `advance`
            seg = tail[:, t0: t0 + PREFILL_CHUNK]
            st = forward_seq_batch(backbone.model, seg, st, (pos - t0).clamp(0, seg.shape[1]))
        backbone.tokens_processed += int(pos.sum())
        for i, n in zip(ids, pos.tolist()):
            counts[group_of[i]] += n
    rows_all = torch.arange(B, device=dev)
    while ids:
        inside = pos < tail_len
        feed = torch.where(inside, tail[rows_all[: len(ids)], pos.clamp(max=width - 1)], last)
        # rows at their last prompt token or past it pick a token after this step
        want = torch.nonzero(pos >= tail_len - 1).flatten()
        logits, st = forward_batch(backbone.model, feed, st, want, inplace=True)  # st is ours
        backbone.tokens_processed += len(ids)
        for i in ids:
            counts[group_of[i]] += 1
        pos = pos + 1
        if logits is None:
            continue
        if not torch.isfinite(logits).all():
            raise UrdError("non-finite logits: cannot decode greedily")
        picked = torch.argmax(logits, dim=-1)  # first maximum: ties go to the lowest id
        last[want] = picked
        done = []
        for row, tok in zip(want.tolist(), picked.tolist()):
            i = ids[row]
            outs[i].append(tok)
            # Backbone.generate's rule, token for token
            grown = texts[i]
            grown.add(tok)
            reason = STOP if grown.cut >= 0 else END if tok == END_OF_TEXT else MAX_NEW_TOKENS
            cap_bytes = byte_limits[group_of[i]]
            if reason == MAX_NEW_TOKENS and cap_bytes is not None and grown.n_bytes >= cap_bytes:
                reason = MAX_BYTES
            if reason != MAX_NEW_TOKENS or len(outs[i]) == limits[group_of[i]]:
                text = grown.text[: grown.cut] if grown.cut >= 0 else grown.text
                results[i] = Generation(text, tuple(outs[i]), None, reason)
                done.append(row)
        if done:  # finished rows leave the batch
            gone = set(done)
            keep = torch.tensor([r for r in range(len(ids)) if r not in gone], dtype=torch.long,
                                device=dev)
            ids = [ids[r] for r in keep.tolist()]
            for j, t in enumerate(st):  # slot by slot: the old one is freed before the next is copied
                st[j] = t[keep]
            tail, tail_len, last, pos = tail[keep], tail_len[keep], last[keep], pos[keep]
    out, at = [], 0
    for toks, unique in zip(toks_by_group, unique_by_group):
        if not unique:  # max_new_tokens 0
            out.append([Generation("", (), None, MAX_NEW_TOKENS) for _ in toks])
            continue
        reply = {tuple(u): results[at + i] for i, u in enumerate(unique)}
        out.append([reply[tuple(t)] for t in toks])
        at += len(unique)
    return out
