"""The tensor names and shapes of a released RWKV-7 (x070) checkpoint, without torch: the
workflow sizes jobs from them while the DAG is built."""

from __future__ import annotations


def lora_dims(n_embd: int) -> dict[str, int]:
    """Low-rank widths as RWKV-LM's x070 trainer sizes them (checked against the 0.1B's
    191,084,544 parameters in the tests)."""

    def r32(x: float) -> int:
        return max(32, int(round(x / 32) * 32))

    return {
        "w": r32(1.8 * n_embd**0.5),  # decay
        "a": r32(1.8 * n_embd**0.5),  # in-context learning rate
        "v": r32(1.3 * n_embd**0.5),  # value residual
        "g": r32(0.6 * n_embd**0.8),  # output gate
    }


def rwkv7_shapes(n_layer: int, n_embd: int, head_size: int, vocab_size: int) -> dict[str, tuple]:
    """Tensor name -> shape, in RWKV-LM's registration order (the order of a released file)."""
    if n_layer < 1 or n_embd < 1 or head_size < 1 or vocab_size < 1:
        raise ValueError("n_layer, n_embd, head_size and vocab_size must be positive")
    if n_embd % head_size:
        raise ValueError(f"n_embd {n_embd} is not a multiple of head_size {head_size}")
    C, H, N, V = n_embd, n_embd // head_size, head_size, vocab_size
    d = lora_dims(C)
    vec = (1, 1, C)
    shapes: dict[str, tuple] = {"emb.weight": (V, C)}
    for i in range(n_layer):
        b = f"blocks.{i}."
        shapes.update({b + "ln1.weight": (C,), b + "ln1.bias": (C,),
                       b + "ln2.weight": (C,), b + "ln2.bias": (C,)})
        if i == 0:
            shapes.update({b + "ln0.weight": (C,), b + "ln0.bias": (C,)})
        a = b + "att."
        for m in ("x_r", "x_w", "x_k", "x_v", "x_a", "x_g"):
            shapes[a + m] = vec
        for p in ("w", "a", "v"):
            shapes.update({a + p + "0": vec, a + p + "1": (C, d[p]), a + p + "2": (d[p], C)})
        shapes.update({a + "g1": (C, d["g"]), a + "g2": (d["g"], C),
                       a + "k_k": vec, a + "k_a": vec, a + "r_k": (H, N)})
        for m in ("receptance", "key", "value", "output"):
            shapes[a + m + ".weight"] = (C, C)
        shapes.update({a + "ln_x.weight": (C,), a + "ln_x.bias": (C,)})
        f = b + "ffn."
        shapes.update({f + "x_k": vec, f + "key.weight": (4 * C, C), f + "value.weight": (C, 4 * C)})
    shapes.update({"ln_out.weight": (C,), "ln_out.bias": (C,), "head.weight": (V, C)})
    return shapes
