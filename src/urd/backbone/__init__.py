"""RWKV-7 backbones through the `rwkv` package."""
