"""RWKV-7 backbone: the pinned fetch, the tokenizer, tiny checkpoints, the `rwkv` adapter, the
batched decoder, the differentiable forward and its WKV kernels. Imports core only."""
