"""The trainable RWKV-7 behind the `learned` backbone, and its export in the released format.

Training runs urd's own differentiable forward (`urd.backbone.rwkv7_torch.RWKV7`) with every weight
trainable, in float32. Only the head is cut: the loss is a softmax over the token ids a reply can
hold (`reply_vocab`), so a step never forms 65,536 logits a position. The checkpoint still holds
every row, in the released g1d names, shapes, order and dtype (bf16), and loads through the same
`rwkv` path as the real backbones.

Untrained head rows must never win a greedy decode. The last channel of the final layer norm is
pinned to a constant (weight 0, bias 1), so that channel's column of the head is a per-token bias:
trained rows learn theirs, every untrained row gets -100, far below any trained logit.
"""

from __future__ import annotations

import re

import numpy as np
import torch

from ..backbone import tiny
from ..backbone.rwkv7_torch import RWKV7
from ..data import t1, t2

UNTRAINED_LOGIT = -100.0


def reply_vocab(tokenizer) -> list[int]:
    """Every token id a reply of either task can consist of, sorted: tokens made of the code
    alphabet (optionally after a space, optionally ending in a newline), and the tokens of
    " NONE\\n" and of every T2 reply (each item, with and without each possible marker)."""
    code = re.compile(rb"^ ?[" + re.escape(t1.ALPHABET.encode()) + rb"]*\n?$")
    ids = {i for i, b in tokenizer.id_to_bytes.items() if b and b != b" " and code.match(b)}
    ids |= set(tokenizer.encode(" " + t1.ABSTAIN + "\n"))
    items = [i for c in t2.CATEGORIES.values() for i in c]
    markers = [s + a + b for s in t2.MARKER_SIGILS for a in t2.MARKER_LETTERS for b in t2.MARKER_LETTERS]
    for item in items:
        ids |= set(tokenizer.encode(" " + t2.reply_for(item, None) + "\n"))
    for m in markers:  # a marker's tokens after any item: the item ends in ". "
        ids |= set(tokenizer.encode(". " + m + "\n"))
        ids |= set(tokenizer.encode(" " + m + "\n"))
    ids.discard(0)  # the end-of-text token never ends a reply: the newline does
    return sorted(ids)


def init_weights(seed: int, n_layer: int, n_embd: int, head_size: int = 64,
                 vocab_size: int = 65536, tied_head: bool = False, rwkv_lm: bool = False) -> dict[str, torch.Tensor]:
    """Initial float32 weights in the released names: `urd.backbone.tiny`'s seeded per-tensor
    draws, with the residual branches' output projections at zero (RWKV-LM's x070 init, so each
    block starts as the identity) and a head of small logits. tied_head: each head row starts as
    its token's embedding row (scaled to logits of ~0.5 sqrt(n_embd) for the token itself), so
    that reading a token back out of the residual stream, which copying a code needs for every one
    of ~2,000 code tokens, is there from the start rather than learned row by row. rwkv_lm: every
    block tensor as RWKV-LM's x070 trainer starts it (`x070_block_init`); the embedding and the
    head stay as above."""
    out = {}
    for name, shape in tiny.rwkv7_shapes(n_layer, n_embd, head_size, vocab_size).items():
        layer = int(name.split(".")[1]) if name.startswith("blocks.") else 0
        if rwkv_lm and name.startswith("blocks."):
            arr = x070_block_init(name, shape, tiny._rng(seed, name), layer, n_layer, n_embd, head_size)
        else:
            arr = tiny._init(name, shape, tiny._rng(seed, name), layer, n_layer)
        if name.endswith(("att.output.weight", "ffn.value.weight")):
            arr = np.zeros(shape, np.float32)
        elif name == "head.weight":
            arr = arr * 0.25
        out[name] = torch.from_numpy(np.ascontiguousarray(arr, dtype=np.float32))
    if tied_head:
        out["head.weight"] = out["emb.weight"] * (0.5 / n_embd ** 0.5)
    return out


def _orthogonal(rng: np.random.Generator, shape: tuple, gain: float) -> np.ndarray:
    """torch.nn.init.orthogonal_'s matrix from a seeded numpy draw (QR, signs fixed)."""
    rows, cols = shape
    q, r = np.linalg.qr(rng.standard_normal((max(rows, cols), min(rows, cols))))
    q = q * np.sign(np.diag(r))
    return gain * (q if rows >= cols else q.T)


def x070_block_init(name: str, shape: tuple, rng: np.random.Generator, layer: int, n_layer: int,
                    n_embd: int, head_size: int) -> np.ndarray:
    """A block tensor as RWKV-LM's x070 trainer (RWKV-v7/train_temp) initialises it: token-shift
    ramps, per-head decay zigzag, low-rank inputs at zero with small orthogonal outputs (so decay,
    in-context learning rate, value mix and gate start as their per-channel constants), small
    keys, zero output projections, layer norms at 1 and 0. Where tiny's test init adds noise to
    every tensor, this one starts each head as the trainer meant it: an in-context learning rate
    near 0.45, slow and fast decays in every head."""
    leaf = ".".join(name.split(".")[3:])  # blocks.<i>.att.<leaf> / blocks.<i>.ffn.<leaf>
    C, N = n_embd, head_size
    r01 = layer / max(1, n_layer - 1)
    r10 = 1.0 - layer / n_layer
    n = np.arange(C, dtype=np.float64)
    ddd = n / C
    linear = n / (C - 1) - 0.5
    zig = ((n % N) - (N - 1) / 2) / ((N - 1) / 2)
    zig = zig * np.abs(zig)
    vec = lambda a: np.asarray(a, np.float32).reshape(shape)
    uniform = lambda bound: rng.uniform(-bound, bound, shape).astype(np.float32)
    if name.split(".")[2] in ("ln0", "ln1", "ln2"):
        return vec(np.ones(C) if name.endswith("weight") else np.zeros(C))
    if leaf == "ln_x.weight":
        return vec(np.full(C, ((1 + layer) / n_layer) ** 0.7))
    if leaf == "ln_x.bias":
        return vec(np.zeros(C))
    if name.split(".")[2] == "ffn":
        if leaf == "x_k":
            return vec(1.0 - ddd ** (r10 ** 4))
        if leaf == "key.weight":
            return uniform(0.5 / n_embd ** 0.5)
        return np.zeros(shape, np.float32)  # ffn.value
    power = {"x_r": 0.2, "x_w": 0.9, "x_k": 0.7, "x_v": 0.7, "x_a": 0.9, "x_g": 0.2}
    if leaf in power:
        return vec(1.0 - ddd ** (power[leaf] * r10))
    if leaf == "w0":
        return vec(-6 + 6 * (n / (C - 1)) ** (1 + r01 ** 0.3) + 0.5 + zig * 2.5)
    if leaf == "a0":
        return vec(-0.19 + zig * 0.3 + linear * 0.4)
    if leaf == "v0":
        return vec(0.73 - linear * 0.4)
    if leaf == "k_k":
        return vec(0.71 - linear * 0.1)
    if leaf == "k_a":
        return vec(np.full(C, 1.02))
    if leaf == "r_k":
        return np.full(shape, -0.04, np.float32)
    if leaf in ("w1", "a1", "v1", "g1"):
        return np.zeros(shape, np.float32)
    if leaf in ("w2", "a2", "v2", "g2"):
        gain = (shape[0] / shape[1]) ** 0.5 if shape[0] > shape[1] else 1.0
        return _orthogonal(rng, shape, gain * 0.1).astype(np.float32)
    if leaf in ("receptance.weight", "value.weight"):
        return uniform(0.5 / n_embd ** 0.5)
    if leaf == "key.weight":
        return uniform(0.05 / n_embd ** 0.5)
    if leaf == "output.weight":
        return np.zeros(shape, np.float32)
    raise KeyError(f"no x070 initialiser for {name}")  # a new tensor name must be handled on purpose


class Trainable:
    """RWKV7 with trainable weights and a head cut to `vocab` (sorted ids)."""

    def __init__(self, weights: dict[str, torch.Tensor], vocab: list[int]):
        self.names = list(weights)  # the released order, kept for export
        self.shapes = {k: tuple(v.shape) for k, v in weights.items()}
        self.vocab = torch.tensor(vocab, dtype=torch.long)
        self.index = torch.full((weights["head.weight"].shape[0],), -1, dtype=torch.long)
        self.index[self.vocab] = torch.arange(len(vocab))
        small = dict(weights)
        small["head.weight"] = weights["head.weight"][self.vocab].clone()
        # the embedding as initialised: rows no training step touched are exported as zero
        # (they would otherwise ship 16 MB of random numbers that compress to nothing less)
        self.emb_init = weights["emb.weight"].clone()
        self.net = RWKV7(small, wkv="chunked")
        self.vocab_size = weights["head.weight"].shape[0]
        z = self.net.z
        self.pin = z["ln_out.weight"].shape[0] - 1  # the constant channel
        with torch.no_grad():
            z["ln_out.weight"][self.pin] = 0.0
            z["ln_out.bias"][self.pin] = 1.0
        for t in z.values():
            t.requires_grad_(True)

    def parameters(self) -> list[torch.Tensor]:
        return [self.net.z[k] for k in self.names]

    def repin(self) -> None:
        """Hold the constant channel after an optimizer step."""
        with torch.no_grad():
            self.net.z["ln_out.weight"][self.pin] = 0.0
            self.net.z["ln_out.bias"][self.pin] = 1.0

    def loss(self, tokens: list[int], is_target: list[bool]) -> tuple[torch.Tensor, int]:
        """Summed cross-entropy of the targets (the token after each flagged position), over the
        cut head, and how many targets."""
        loss, k, _ = self.loss_and_hits(tokens, is_target)
        return loss, k

    def loss_and_hits(self, tokens: list[int], is_target: list[bool],
                      branches: list[int] = ()) -> tuple[torch.Tensor, int, set[int]]:
        """`loss`, and the flagged positions whose target is the head's top token (greedy's pick).
        branches: positions (ascending) where each query starts; the tokens before the first are
        the trunk, and each query runs from the trunk's end state alone, as the control answers
        it, not after the earlier queries and their replies. Positions keep their numbering."""
        toks = torch.tensor(tokens, dtype=torch.long)
        pos = torch.tensor([i for i, f in enumerate(is_target) if f], dtype=torch.long)
        tgt = self.index[toks[pos + 1]]
        # a record's last code character can merge with its full stop into a token no reply
        # holds: such a position is not a target (every reply token is in the vocabulary)
        pos, tgt = pos[tgt >= 0], tgt[tgt >= 0]
        h = self._branched(toks, list(branches)) if branches else self.net.hidden(toks)[0]
        logits = h[pos] @ self.net.z["head.weight"].t()
        hits = set(pos[logits.detach().argmax(dim=1) == tgt].tolist())
        return torch.nn.functional.cross_entropy(logits, tgt, reduction="sum"), int(pos.numel()), hits

    def _branched(self, toks: torch.Tensor, starts: list[int]) -> torch.Tensor:
        """Hidden states of the trunk (before starts[0]) and of each query run from its end state."""
        if starts != sorted(set(starts)) or not 0 < starts[0] or starts[-1] >= len(toks):
            raise ValueError(f"query starts {starts[:4]}... must ascend inside the sequence of {len(toks)} tokens")
        trunk, state = self.net.hidden(toks[:starts[0]])
        # the package-layout state: per layer time-mix shift, WKV state, channel-mix shift
        wkv = torch.stack(state[1::3])
        shifts = torch.stack([torch.stack((a, f)) for a, f in zip(state[0::3], state[2::3])])
        ends = starts[1:] + [len(toks)]
        # one batch, right-padded: a query's states never depend on the tokens after it
        width = max(b - a for a, b in zip(starts, ends))
        batch = toks.new_zeros(len(starts), width)
        for j, (a, b) in enumerate(zip(starts, ends)):
            batch[j, :b - a] = toks[a:b]
        h, _ = self.net.hidden(batch, wkv, shifts=shifts)
        return torch.cat([trunk] + [h[j, :b - a] for j, (a, b) in enumerate(zip(starts, ends))])

    def state_dict(self, released_rows: bool = False) -> dict[str, torch.Tensor]:
        """float32 training weights, full head (untrained rows at UNTRAINED_LOGIT). released_rows:
        embedding rows that no step changed are zero (the checkpoint's form; resuming needs them
        as they are)."""
        z = self.net.z
        out = {}
        for k in self.names:
            t = z[k].detach()
            if k == "head.weight":
                full = torch.zeros(self.vocab_size, t.shape[1])
                full[:, self.pin] = UNTRAINED_LOGIT
                full[self.vocab] = t
                t = full
            out[k] = t.reshape(self.shapes[k]).clone()
        if released_rows:
            untouched = (out["emb.weight"] == self.emb_init).all(dim=1)
            out["emb.weight"][untouched] = 0.0
        return out

    def load_state_dict(self, sd: dict[str, torch.Tensor]) -> None:
        with torch.no_grad():
            for k in self.names:
                src = sd[k]
                if k == "head.weight":
                    src = src[self.vocab]
                self.net.z[k].copy_(src.reshape(self.net.z[k].shape))


def released(sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The checkpoint's tensors: bf16, each in its own storage, in the released order."""
    return {k: v.detach().to(tiny.DTYPE).contiguous().clone() for k, v in sd.items()}
