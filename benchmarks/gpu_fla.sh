#!/usr/bin/env bash
# The GPU check of the WKV paths, as one script for a machine with a CUDA GPU:
#   bash benchmarks/gpu_fla.sh
# installs the gpu extra (fla-core, pinned) beside the project, runs fla's equality tests
# against the chunked WKV, then one 0.1B state-tuning step at ctx 2,048 per WKV path
# (trained tokens a second and peak GPU memory); the figures go to $OUT (default: .) as JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-.}"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q -e '.[test,gpu]'
.venv/bin/python -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print(torch.cuda.get_device_name())"
.venv/bin/python -m pytest -q tests/test_backbone_wkv_fla.py tests/test_backbone_wkv_chunked.py
.venv/bin/python -m urd.backbone.bench --train-only --repeats 3 --out "$out/bench_train_gpu.json"
