"""Tuned states from the replay recipes' tuning artifacts.

Layout: artifacts/replay/{scale}/{recipe}/{sha256 of the transcript, UTF-8}/ holding the tuned
state (`state_file`, .npy or .pt) and costs.json (steps, trained tokens counted with the harness
tokenizer, device, wall time, artifact SHA-256). Where costs.json names the state file's SHA-256
the file is checked against it before use.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..core.errors import InputError
from ..core.io import sha256_file

if TYPE_CHECKING:
    from .tuned import TunedState

TOKEN_KEYS = ("trained_tokens", "tokens_trained")
SHA_KEYS = ("artifact_sha256", "state_sha256", "sha256")


def transcript_sha256(transcript: str) -> str:
    return hashlib.sha256(transcript.encode("utf-8")).hexdigest()


def artifact_dir(root: str | Path, recipe: str, transcript: str) -> Path:
    """root is artifacts/replay/{scale}."""
    return Path(root) / recipe / transcript_sha256(transcript)


def evaluated_transcript_digests(config: dict, task: str) -> list[str]:
    """The transcripts the controls need artifacts for, from the config alone (the data is
    regenerated in memory), so a rule can name its inputs when the DAG is built."""
    from ..data.calibrate import t1_episode, t2_episode

    make = {"t1": t1_episode, "t2": t2_episode}[task]
    n = config.get("evaluate_episodes") or config["episodes"]
    return [transcript_sha256(make(config, i)["transcript"]) for i in range(min(n, config["episodes"]))]


def _load_state(path: Path):
    if path.suffix == ".npy":
        return np.load(path, allow_pickle=False)
    if path.suffix == ".pt":
        import torch

        return torch.load(path, map_location="cpu", weights_only=True)
    raise InputError(str(path), "state file", "a .npy or .pt file", path.suffix)


class ArtifactProvider:
    """A tuned-state provider over artifacts/replay/{scale}/{recipe}/."""

    def __init__(self, root: str | Path, recipe: str, state_file: str):
        self.root, self.recipe, self.state_file = Path(root), recipe, state_file
        self.served: dict[str, dict] = {}  # state file -> sha256, trained tokens (provenance)

    def __call__(self, transcript: str) -> TunedState:
        d = artifact_dir(self.root, self.recipe, transcript)
        state_path, costs_path = d / self.state_file, d / "costs.json"
        for p in (state_path, costs_path):
            if not p.is_file():
                raise InputError(str(p), "tuning artifact", f"the {self.recipe} artifact of this transcript", "missing")
        costs = json.loads(costs_path.read_text())
        digest = sha256_file(state_path)
        pinned = next((costs[k] for k in SHA_KEYS if isinstance(costs.get(k), str)), None)
        if pinned is not None and pinned != digest:
            raise InputError(str(state_path), "SHA-256", f"{pinned} (costs.json)", digest)
        tokens = next((costs[k] for k in TOKEN_KEYS if k in costs), None)
        if not isinstance(tokens, int) or tokens < 0:
            raise InputError(str(costs_path), "trained_tokens", "a non-negative integer", tokens)
        self.served[str(state_path)] = {"sha256": digest, "trained_tokens": tokens}
        from .tuned import TunedState  # torch: only in the job, never while the DAG is built

        return TunedState(_load_state(state_path), tokens, {"path": str(state_path), **self.served[str(state_path)]})
