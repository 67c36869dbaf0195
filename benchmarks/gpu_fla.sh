#!/usr/bin/env bash
# The GPU check, for a machine with a CUDA GPU and perhaps no network:
#   bash benchmarks/gpu_fla.sh [--tests]        (PYTHON=/path/to/python picks the interpreter)
# It runs the project from src/ with the interpreter's own torch (a GPU node's CUDA build: nothing
# is installed over it) and its fla-core where present; otherwise it installs the pinned fla-core
# alone (it needs only einops beside torch), and where that fails offline the fla columns say why.
# It prints the spend preview's GPU figures (config train_speed): one state-tuning step of the
# 0.1B and 0.4B shapes at ctx 2,048 and 6,144 per path a tuning job can take on a GPU, trained
# tokens a second and peak GPU memory, and the first fla step of a fresh process (the kernels'
# compilation), in about 3 minutes on one GPU. No token-by-token WKV runs here. --tests then runs
# fla's equality tests against the chunked WKV (measured on an H200: 243 s from a cold Triton
# cache). The figures go to $OUT (default: .) as bench_gpu_table.json.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-.}"
py="${PYTHON:-python3}"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
"$py" - <<'PY'
import sys
import torch
if not torch.cuda.is_available():
    sys.exit(f"no CUDA device (torch {torch.__version__}): the GPU check needs one")
print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
PY
pin=$(sed -n 's/^gpu = \["\(fla-core==[^"]*\)"\]/\1/p' pyproject.toml)
if ! "$py" -c "import fla.ops.rwkv7" 2>/dev/null; then
  "$py" -m pip install -q "$pin" einops || echo "could not install $pin: the fla columns say why"
fi
"$py" -m urd.backbone.bench --gpu-table --repeats 2 --out "$out/bench_gpu_table.json"
if [ "${1:-}" = "--tests" ]; then
  "$py" -m pytest -q -p no:cacheprovider tests/test_backbone_wkv_fla.py tests/test_replay.py -k "fla or cuda"
fi
