"""A differentiable RWKV-7 forward over the same checkpoints, for state-tuning.

The `rwkv` package runs under torch.no_grad(), so learning an initial WKV state (`time_state`,
[n_layer, n_head, head_size, head_size] in the package's [head, value, key] layout, so it can be
dropped into the package's state list as is) needs a forward of our own. Weights are frozen
(no grad); gradients flow only to what the caller marks: time_state, optionally the shifts.

Memory stays bounded: the WKV recurrence keeps states only at chunk boundaries (see wkv.py),
`loss` never materialises all T x vocab logits at once, and checkpoint_layers recomputes each
block's activations in backward instead of keeping them (trade time for memory; under bf16 it
keeps the blocks' bf16 products).

precision="bf16" runs the frozen weight products (projections and head) in bfloat16 with float32
activations, WKV, norms and loss, as the field trains states (RWKV-PEFT); on a CPU with native
bf16 it is about 1.5x faster. "fp32" (the default) keeps every product in float32.

The block is urd.backbone.rwkv7_block's (the math batched decoding runs too), its frozen products
through F.linear over the checkpoint's [out, in] weights (`_linear`) and its WKV over the whole
sequence (`RWKV7._wkv`). Numerics follow rwkv 0.8.32's CPU path (RWKV_x070): ln0 folded into the
embedding, decay exp(-e^-0.5 * sigmoid(.)), group-norm eps 64e-5; the tests bound the difference
to its logits.
"""

from __future__ import annotations

import math
import os
from functools import partial

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts, noop_context_fn

from ..core.errors import InputError
from . import wkv_fla
from .rwkv7_block import Way, block, layer_norm
from .wkv import wkv7
from .wkv_chunked import wkv7_chunked

WKV_PATHS = ("chunked", "sequential", "fla")
LOG_TINY = math.log(torch.finfo(torch.float32).tiny)  # below it, exp is subnormal in float32


def resolve_wkv(wkv: str, device) -> str:
    """The WKV path a model on `device` runs: "auto" is fla's kernels where they run (CUDA with
    fla-core installed), else the chunked PyTorch path; a named path is checked."""
    if wkv == "auto":
        return "fla" if wkv_fla.unavailable(device) is None else "chunked"
    if wkv not in WKV_PATHS:
        raise InputError("replay.wkv", "wkv", f"auto or one of {WKV_PATHS}", wkv)
    if wkv == "fla" and (why := wkv_fla.unavailable(device)):
        raise InputError("replay.wkv", "wkv", f"a path that runs on {torch.device(device)}", f"fla: {why}")
    return wkv


# the frozen weight products that `precision="bf16"` runs in bfloat16: the projections and the head
_BF16_WEIGHTS = ("att.receptance.weight", "att.key.weight", "att.value.weight", "att.output.weight",
                 "ffn.key.weight", "ffn.value.weight", "head.weight")
PRECISIONS = ("fp32", "bf16")
_PRODUCTS = (torch.ops.aten.mm.default, torch.ops.aten.addmm.default)


def _keep_products(ctx, op, *args, **kwargs):
    """checkpoint_layers' policy under bf16: a block's bf16 products (the projections: most of its
    time, bf16 outputs at half an fp32 one's memory) are kept, the rest (the small fp32 low-rank
    products, elementwise work, norms, the WKV) recomputed in backward. Measured in interleaved runs
    at the 0.1B shape, ctx 2,048, 2 threads: keeping every product, 6.9-7.2 s a step against 7.5-8.1 s
    recomputing all; keeping the bf16 ones only (0.4 GB less), 8.4-9.4 s against 8.2-10.7 s on a
    slower hour, within its noise. In fp32, keeping the products gained nothing measurable for
    1.3 GB more, so fp32 recomputes all."""
    keep = op in _PRODUCTS and args[0].dtype == torch.bfloat16
    return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE


_SELECTIVE = partial(create_selective_checkpoint_contexts, _keep_products)


class RWKV7:
    def __init__(self, weights: dict[str, torch.Tensor], device="cpu", *, wkv_chunk: int = 64,
                 checkpoint_layers: bool = False, wkv: str = "chunked", precision: str = "fp32"):
        """wkv: "chunked" (urd.backbone.wkv_chunked: products within chunks of `wkv_chunk` tokens),
        "sequential" (urd.backbone.wkv: token by token, states kept every `wkv_chunk`), "fla"
        (urd.backbone.wkv_fla: flash-linear-attention's kernels, CUDA), or "auto" (`resolve_wkv`);
        `self.wkv` is the path that runs. precision: "fp32" or "bf16" (the frozen weight products)."""
        if any(".s_emb" in k for k in weights):
            raise InputError("checkpoint", "tensors", "a plain RWKV-7 (no DeepEmbed)", "s_emb found")
        self.device = torch.device(device)
        self.wkv = resolve_wkv(wkv, self.device)
        self.n_head, self.head_size = weights["blocks.0.att.r_k"].shape
        # vectors are stored (1, 1, C) and r_k (H, N); flatten them as the package does
        flat = lambda k, t: t.dim() == 3 or k.endswith("att.r_k")
        self.z = {k: (t.reshape(-1) if flat(k, t) else t).to(self.device, torch.float32)
                  for k, t in weights.items()}
        self.vocab_size, self.n_embd = self.z["emb.weight"].shape
        self.n_layer = 1 + max(int(k.split(".")[1]) for k in self.z if k.startswith("blocks."))
        self.wkv_chunk, self.checkpoint_layers = wkv_chunk, checkpoint_layers
        if precision not in PRECISIONS:
            raise InputError("replay.precision", "precision", f"one of {PRECISIONS}", precision)
        self.precision = precision
        if precision == "bf16":
            for k in self.z:
                if k.endswith(_BF16_WEIGHTS):
                    self.z[k] = self.z[k].to(torch.bfloat16)
        self.tokens_processed = 0  # every token through forward/loss (the contract's unit)
        self.rows = constant_rows(self.z)  # the head's rows no input can move (None: every row live)

    @classmethod
    def load(cls, checkpoint_path: str | os.PathLike, device="cpu", **kw) -> RWKV7:
        path = os.fspath(checkpoint_path)
        path = path if path.endswith(".pth") else path + ".pth"
        if not os.path.isfile(path):
            raise InputError(path, "checkpoint", "an existing .pth file", "missing")
        return cls(torch.load(path, map_location="cpu", mmap=True, weights_only=True), device, **kw)

    @property
    def time_state_shape(self) -> tuple[int, int, int, int]:
        return (self.n_layer, self.n_head, self.head_size, self.head_size)

    def zero_time_state(self, requires_grad: bool = False) -> torch.Tensor:
        return torch.zeros(self.time_state_shape, device=self.device, requires_grad=requires_grad)

    # --- blocks ------------------------------------------------------------------------------
    def _wkv(self, s0, r, w, k, v, a, b):
        """The WKV over r, w, k, v, a, b [..., T, C] from s0 [H, N, N] through `self.wkv`'s path:
        (y [..., T, C], the final state [..., H, N, N]); `rwkv7_block.Way`'s wkv."""
        H, N = self.n_head, self.head_size
        *lead, T, C = r.shape  # lead: [] or [B], a batch of sequences from one state
        if lead:  # the WKV's heads are independent: a batch runs as B x H heads of one sequence
            hv = lambda t: t.view(*lead, T, H, N).transpose(0, 1).reshape(T, -1, N)
            s0 = s0.expand(*lead, H, N, N).reshape(-1, N, N)
        else:
            hv = lambda t: t.view(T, H, N)
        # a batch of short rows (queries) runs as one chunk of its own length, not padded to
        # wkv_chunk: a third faster at 25 queries of ~24 tokens (benchmarks/branch_queries.py)
        chunk = min(self.wkv_chunk, T) if lead else self.wkv_chunk
        args = (s0, hv(r), hv(w), hv(k), hv(v), hv(a), hv(b), chunk)
        if self.wkv == "sequential":
            y, sT = wkv7(*args)
        elif self.wkv == "fla":  # fla's own backward; it keeps what it needs
            y, sT = wkv_fla.wkv7_fla(*args)
        elif torch.is_grad_enabled() and not self.checkpoint_layers:
            # keep only the inputs; the chunk products are recomputed in backward (under
            # checkpoint_layers the block's recomputation already holds them one layer at a time)
            y, sT = checkpoint(wkv7_chunked, *args, use_reentrant=False)
        else:
            y, sT = wkv7_chunked(*args)
        if lead:
            y, sT = y.reshape(T, *lead, C).transpose(0, 1), sT.reshape(*lead, H, N, N)
        return y, sT

    def _ln(self, x, name):
        return layer_norm(x, self.z, name)

    # --- forward -----------------------------------------------------------------------------
    def _tokens(self, tokens, batch: bool = False) -> torch.Tensor:
        t = torch.as_tensor(tokens, dtype=torch.long, device=self.device)
        t = t if batch and t.dim() == 2 else t.reshape(-1)
        if t.numel() == 0:
            raise InputError("tokens", "tokens", "at least one token", 0)
        if int(t.min()) < 0 or int(t.max()) >= self.vocab_size:
            raise InputError("tokens", "token id", f"in [0, {self.vocab_size})",
                             int(t.min()) if int(t.min()) < 0 else int(t.max()))
        return t

    def hidden(self, tokens, time_state=None, *, shifts=None):
        """Final-layer-normed hidden states [T, C] and the state after the last token, as a
        package-layout list (time-mix shift, WKV, channel-mix shift per layer).

        shifts: optional [n_layer, 2, n_embd] initial token shifts (time-mix, channel-mix).
        tokens [B, T]: B sequences of one length, each from the same initial state: states
        [B, T, C], and each state entry with a leading B."""
        toks = self._tokens(tokens, batch=True)
        L, C = self.n_layer, self.n_embd
        if time_state is None:
            time_state = self.zero_time_state()
        if tuple(time_state.shape) != self.time_state_shape:
            raise InputError("time_state", "shape", self.time_state_shape, tuple(time_state.shape))
        if shifts is None:
            shifts = torch.zeros(L, 2, C, device=self.device)
        if tuple(shifts.shape) != (L, 2, C):
            raise InputError("shifts", "shape", (L, 2, C), tuple(shifts.shape))
        self.tokens_processed += toks.numel()
        # ln0 is row-wise, so normalising only the rows we use equals the package's folded table
        x = self._ln(self.z["emb.weight"][toks], "blocks.0.ln0")
        v_first = torch.empty(0, device=self.device)
        state = []
        keep = _SELECTIVE if self.precision == "bf16" else noop_context_fn
        way = Way(_linear, self._wkv, _last)
        # unbind, not [i]: each index's backward would zero-fill a whole state-sized gradient
        for i, (s0, (att_shift, ffn_shift)) in enumerate(zip(time_state.unbind(0), shifts.unbind(0))):
            args = (self.z, i, self.n_head, self.head_size, x, att_shift, s0, ffn_shift, v_first, way)
            if self.checkpoint_layers and torch.is_grad_enabled():
                out = checkpoint(block, *args, use_reentrant=False, context_fn=keep)
            else:
                out = block(*args)
            x, att_last, sT, ffn_last, v_first = out
            state += [att_last, sT, ffn_last]
        return self._ln(x, "ln_out"), state

    def forward(self, tokens, time_state=None, *, shifts=None, return_state: bool = False):
        """Logits [T, vocab] ([B, T, vocab] for a batch) for every position (and the final
        state if return_state)."""
        h, state = self.hidden(tokens, time_state, shifts=shifts)
        logits = _linear(h, self.z["head.weight"])
        return (logits, state) if return_state else logits

    __call__ = forward

    def loss(self, tokens, time_state=None, *, targets=None, shifts=None, head_chunk: int = 512):
        """Mean next-token cross-entropy. targets: [T] ids, -100 = ignored; default predicts
        tokens[1:] from tokens[:-1]. The head runs `head_chunk` rows at a time and forms its
        gradient in the same pass (`_HeadNLL`): a 2K x 65536 logit matrix (and its softmax) is
        never held whole, nor computed twice."""
        toks = self._tokens(tokens)
        if targets is None:
            targets = torch.cat((toks[1:], toks.new_full((1,), -100)))
        targets = torch.as_tensor(targets, dtype=torch.long, device=self.device)
        if targets.shape != toks.shape:
            raise InputError("targets", "shape", tuple(toks.shape), tuple(targets.shape))
        bad = targets[(targets != -100) & ((targets < 0) | (targets >= self.vocab_size))]
        if bad.numel():
            raise InputError("targets", "target id", f"-100 (ignored) or in [0, {self.vocab_size})", int(bad[0]))
        n = int((targets != -100).sum())
        if n == 0:
            raise InputError("targets", "targets", "at least one target", 0)
        h, _ = self.hidden(toks, time_state, shifts=shifts)
        if self.rows is not None:  # the live rows only, the constant ones in closed form
            return _HeadNLL.apply(h, self.rows.head, targets, head_chunk, self.rows) / n
        return _HeadNLL.apply(h, self.z["head.weight"], targets, head_chunk) / n


class Rows:
    """A head whose rows split into live ones and constant ones (`constant_rows`): the live rows'
    weights, where each vocabulary id sits among them (-1: constant), each id's constant logit, and
    the log of the constant rows' summed exponentials."""

    def __init__(self, head: torch.Tensor, live: torch.Tensor, const_logit: torch.Tensor):
        self.head = head[live]
        self.position = torch.full((head.shape[0],), -1, dtype=torch.long, device=head.device)
        self.position[live] = torch.arange(live.numel(), device=head.device)
        self.const_logit = const_logit.to(torch.float32)  # per id; a live id's entry is unused
        mask = self.position < 0
        # in float64, then rounded once: the term the live rows' log-sum-exp is joined with
        self.const_lse = torch.logsumexp(const_logit.double()[mask], 0).to(torch.float32)
        self.live = int(live.numel())


def constant_rows(z: dict[str, torch.Tensor]) -> Rows | None:
    """The head's rows that no input can move, declared by the checkpoint itself: a channel of the
    final layer norm with weight exactly 0 outputs its bias whatever it reads, so a head row that is
    zero on every other channel scores the same logit at every position (the learned backbone's
    untrained rows: -100, urd.learn.model). None where every row is live (a released checkpoint).
    Their softmax terms then have a closed form, and the loss and its gradient (to the state: the
    fixed channels pass none back) equal the full softmax's to float32 rounding."""
    w, b, head = z["ln_out.weight"], z["ln_out.bias"], z["head.weight"]
    fixed = w == 0
    if not bool(fixed.any()):
        return None
    const = (head[:, ~fixed] == 0).all(dim=1)
    if not bool(const.any()):
        return None
    const_logit = (head[:, fixed].double() * b[fixed].double()).sum(1)
    return Rows(head, torch.nonzero(~const).flatten(), const_logit)


def _last(x, prev):
    """The token shift a sequence leaves: its last token."""
    return x[..., -1, :]


def _linear(x, w):
    """x @ w^T in w's precision, returned in x's (fp32 activations, fp32 or bf16 frozen weights)."""
    return F.linear(x, w) if x.dtype == w.dtype else F.linear(x.to(w.dtype), w).to(x.dtype)


class _HeadNLL(torch.autograd.Function):
    """The summed next-token NLL of h @ head^T (h [T, C], head [vocab, C] frozen, targets [T] with
    -100 ignored), chunk by chunk. The loss is the graph's end, so d(NLL)/dh = (softmax - onehot)
    @ head is formed while each chunk's logits are at hand and kept ([T, C], small): backward
    only scales it, where autograd would compute the logits again (0.2 TFLOP of a 0.1B step at
    ctx 2,048)."""

    @staticmethod
    def forward(ctx, h, head, targets, chunk: int, rows: Rows | None = None):
        if head.requires_grad:
            raise ValueError("_HeadNLL keeps only the gradient of h: the head must be frozen")
        total = h.new_zeros(())
        grad = torch.empty_like(h) if h.requires_grad else None
        for s in range(0, h.shape[0], chunk):
            tc = targets[s: s + chunk]
            keep = tc != -100
            hit = keep  # positions whose target row takes the one-hot's -1
            if rows is None:
                tk = tc.clamp(min=0).unsqueeze(1)
                logp = torch.log_softmax(_linear(h[s: s + chunk], head), dim=1)
                total = total - (logp.gather(1, tk).squeeze(1) * keep).sum()
            else:  # the live rows' logits; the constant rows join the normaliser as one term
                ids = tc.clamp(min=0)
                pos = rows.position[ids]
                logits = _linear(h[s: s + chunk], head)
                lse = torch.logaddexp(torch.logsumexp(logits, dim=1), rows.const_lse)
                tk = pos.clamp(min=0).unsqueeze(1)
                target = torch.where(pos >= 0, logits.gather(1, tk).squeeze(1), rows.const_logit[ids])
                total = total - ((target - lse) * keep).sum()
                logp = logits.sub_(lse.unsqueeze(1))
                hit = keep & (pos >= 0)  # a constant target's row has no logit here to push down
            if grad is not None:
                # softmax, in the log-probabilities' memory. On the CPU in float32, a log-probability
                # under LOG_TINY has a subnormal exp, which the tuning job's flush-denormal (set
                # before its threads start) makes 0 and the CPU's exp computes 10-30x slower (the
                # learned scale's untrained rows sit at -100): sent to -inf, it is 0 at once, the
                # same bytes under flush. A GPU keeps subnormals at full speed: left as they are.
                if logp.device.type == "cpu" and logp.dtype == torch.float32:
                    logp.masked_fill_(logp < LOG_TINY, float("-inf"))
                p = logp.exp_()
                p.scatter_add_(1, tk, -hit.to(p.dtype).unsqueeze(1))
                p.mul_(keep.to(p.dtype).unsqueeze(1))
                grad[s: s + chunk] = _linear(p, head.t())
        ctx.save_for_backward(grad)
        return total

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (grad,) = ctx.saved_tensors
        return grad * g, None, None, None, None
