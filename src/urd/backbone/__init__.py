"""RWKV-7 backbone: tokenizer, random checkpoints, inference adapter, differentiable forward."""
