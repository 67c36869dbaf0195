"""Random RWKV-7 checkpoints: deterministic bytes, real checkpoint layout, loadable by `rwkv`."""

import hashlib
import math

import pytest
import torch

from urd.backbone.rwkv_pkg import load_rwkv7
from urd.backbone.tiny import lora_dims, random_state_dict, rwkv7_shapes, write_tiny_checkpoint


def _sha(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_same_seed_same_bytes_across_file_names(tmp_path):
    a = write_tiny_checkpoint(tmp_path / "a.pth", seed=7, n_layer=1, n_embd=64, vocab_size=512)
    b = write_tiny_checkpoint(tmp_path / "other_name.pth", seed=7, n_layer=1, n_embd=64, vocab_size=512)
    assert (tmp_path / "a.pth").read_bytes() == (tmp_path / "other_name.pth").read_bytes()
    assert a.endswith("a.pth") and b.endswith("other_name.pth")


def test_different_seed_differs(tmp_path):
    write_tiny_checkpoint(tmp_path / "a.pth", seed=1, n_layer=1, n_embd=64, vocab_size=512)
    write_tiny_checkpoint(tmp_path / "b.pth", seed=2, n_layer=1, n_embd=64, vocab_size=512)
    assert _sha(tmp_path / "a.pth") != _sha(tmp_path / "b.pth")


def test_state_dict_is_deterministic_and_bf16():
    a = random_state_dict(3, n_layer=2, n_embd=128)
    b = random_state_dict(3, n_layer=2, n_embd=128)
    assert list(a) == list(b)
    for k in a:
        assert a[k].dtype == torch.bfloat16
        assert torch.equal(a[k], b[k]), k
        assert torch.isfinite(a[k].float()).all(), k


def test_real_01b_layout():
    # the pinned 0.1B: 402 tensors, 191,084,544 parameters (L12, D768)
    shapes = rwkv7_shapes(12, 768, 64, 65536)
    assert len(shapes) == 402
    assert sum(math.prod(s) for s in shapes.values()) == 191_084_544
    assert lora_dims(768) == {"w": 64, "a": 64, "v": 32, "g": 128}
    assert shapes["blocks.0.att.r_k"] == (12, 64)
    assert shapes["blocks.11.ffn.key.weight"] == (3072, 768)


def test_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError):
        write_tiny_checkpoint(tmp_path / "x.bin", seed=1)
    with pytest.raises(ValueError):
        rwkv7_shapes(2, 100, 64, 10)
    with pytest.raises(ValueError):
        random_state_dict(-1)


def test_loads_through_rwkv_and_gives_finite_logits(tmp_path):
    path = write_tiny_checkpoint(tmp_path / "tiny.pth", seed=5)
    loaded = torch.load(path, map_location="cpu", weights_only=True)
    assert {k: tuple(v.shape) for k, v in loaded.items()} == rwkv7_shapes(2, 128, 64, 65536)
    model = load_rwkv7(path[: -len(".pth")], "cpu fp32")
    assert (model.n_layer, model.n_embd, model.n_head, model.head_size) == (2, 128, 2, 64)
    logits, state = model.forward([1, 2, 3, 4000, 65000], None)
    assert logits.shape == (65536,)
    assert torch.isfinite(logits).all()
    assert logits.std() > 0.5  # not degenerate: the greedy pick depends on the context
    assert all(torch.isfinite(s).all() for s in state)


def test_bytes_are_pinned():
    # drift in numpy's streams or torch.save's format would silently change every tiny checkpoint
    from urd.backbone.tiny import checkpoint_bytes

    data = checkpoint_bytes(random_state_dict(7, n_layer=1, n_embd=64, vocab_size=512))
    assert hashlib.sha256(data).hexdigest() == (
        "a1042c7a2953d43dc78c8c2f9ffda3bffde89aca5b2934c10edd9c0fedc51fdd")


def test_command_line_writes_the_same_bytes(tmp_path, capsys):
    from urd.backbone.tiny import main

    assert main([str(tmp_path / "cli.pth"), "--seed", "7", "--n-layer", "1", "--n-embd", "64",
                 "--vocab-size", "512"]) == 0
    write_tiny_checkpoint(tmp_path / "api.pth", seed=7, n_layer=1, n_embd=64, vocab_size=512)
    assert capsys.readouterr().out.strip() == _sha(tmp_path / "api.pth") == _sha(tmp_path / "cli.pth")
