"""A tuning artifact: `time_state.npy` (the learned state, float32 little-endian, shape
[n_layer, n_head, N, N]) and `costs.json` (what it cost and how it was made).

costs.json names the state's SHA-256, so a reader checks the two belong together; the directory
is named by the transcript's SHA-256 and costs.json repeats it. Both files are written
atomically, the state first: a costs.json never points at a state that is not there.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import DigestMismatch, InputError
from ..core.io import atomic_write_bytes, atomic_write_json, sha256_bytes

STATE_FILE = "time_state.npy"
COSTS_FILE = "costs.json"
FORMAT = "urd.replay.artifact/1"
# costs.json fields that describe the run, not its result: they differ between two runs of the
# same job (timings, memory, where it ran). Everything else, the state's bytes included, repeats.
RUN_FIELDS = ("wall_time_s", "load_s", "tune_s", "seconds_per_step", "cpu_time_s", "peak_rss_mb",
              "peak_gpu_mem_mb", "slurm_job_id", "slurm_partition", "cuda_visible_devices")


def state_bytes(state: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(state, dtype="<f4"), allow_pickle=False)
    return buf.getvalue()


def write_artifact(out_dir: str | Path, state: np.ndarray, costs: dict) -> str:
    out = Path(out_dir)
    data = state_bytes(state)
    digest = sha256_bytes(data)
    atomic_write_bytes(out / STATE_FILE, data)
    atomic_write_json(out / COSTS_FILE, {
        "format": FORMAT, **costs, "state_file": STATE_FILE,
        "state_shape": list(state.shape), "artifact_sha256": digest,
    })
    return digest


@dataclass(frozen=True)
class Artifact:
    state: np.ndarray  # float32 [n_layer, n_head, N, N]
    costs: dict


def read_artifact(art_dir: str | Path, *, transcript_sha256: str | None = None,
                  recipe: str | None = None, shape: tuple | None = None) -> Artifact:
    d = Path(art_dir)
    costs_path, state_path = d / COSTS_FILE, d / STATE_FILE
    for p in (costs_path, state_path):
        if not p.is_file():
            raise InputError(p, "<file>", "a tuning artifact (run its tuning job: rules/replay.smk)", "missing")
    try:
        costs = json.loads(costs_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(costs_path, "<file>", "JSON", str(exc)) from None
    if costs.get("format") != FORMAT:
        raise InputError(costs_path, "format", FORMAT, costs.get("format"))
    data = state_path.read_bytes()
    if sha256_bytes(data) != costs.get("artifact_sha256"):
        raise DigestMismatch(state_path, costs.get("artifact_sha256"), sha256_bytes(data))
    if transcript_sha256 is not None and costs.get("transcript_sha256") != transcript_sha256:
        raise InputError(costs_path, "transcript_sha256", transcript_sha256, costs.get("transcript_sha256"))
    if recipe is not None and costs.get("recipe", {}).get("name") != recipe:
        raise InputError(costs_path, "recipe.name", recipe, costs.get("recipe", {}).get("name"))
    state = np.load(io.BytesIO(data), allow_pickle=False)
    if shape is not None and tuple(state.shape) != tuple(shape):
        raise InputError(state_path, "shape", f"{tuple(shape)} (the backbone's WKV state)", tuple(state.shape))
    for key in ("trained_tokens", "out_of_contract"):
        if key not in costs:
            raise InputError(costs_path, key, "a value")
    return Artifact(state, costs)
