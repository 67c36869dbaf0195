"""The GPU table of `python -m urd.backbone.bench --gpu-table` (benchmarks/gpu_fla.sh), run on the
CPU at the tiny shape: every path a tuning job can take gets a row, and one this machine cannot
run says why rather than dropping out of the table."""

import pytest
import torch

from urd.backbone import bench


def test_the_gpu_table_has_a_row_per_ctx_and_path_and_names_what_it_skipped():
    n = torch.get_num_threads()
    try:
        res = bench.stage_table("tiny", [32, 64], repeats=1)
    finally:
        torch.set_num_threads(n)
    rows = {(r["ctx"], r["wkv"], r["precision"], r["checkpoint_layers"]): r for r in res["rows"]}
    assert set(rows) == {(c, *p) for c in (32, 64) for p in bench.TABLE_PATHS}
    chunked = rows[(64, "chunked", "fp32", True)]
    assert chunked["trained_tokens_per_s"] == pytest.approx(64 / chunked["step_s"], rel=0.02)
    assert chunked["peak_gpu_mb"] is None
    assert rows[(64, "fla", "bf16", False)]["skipped"] == "fla's kernels run on CUDA only"
    assert res["first_fla_step_s"] is None and res["device"] == "cpu"
    lines = bench.table_lines([res])
    assert lines[2].startswith("| tiny | 32 | ") and lines[2].count("skipped") == 3
    assert lines[-1] == "skipped: fla's kernels run on CUDA only"
