"""replay_tune and replay_banc: a state tuned on the transcript, top-k packed into the fiche.

The tuning itself is a separate job (urd.replay.tune, one per transcript and recipe) whose
artifact these systems read; they never tune inside a cell, so the over and sanity splits share
one tuned state and nothing is tuned twice. consolidate() finds the artifact by the transcript's
SHA-256, declares the trained tokens its costs.json recorded (the harness checks them against
the cap; replay_banc is out of contract and labelled so), and packs the learned time_state
top-k by magnitude (urd.systems.packing, as state_carry). answer() unpacks it into the WKV slots
of a zero package state (token shifts stay zero, as in tuning) and answers from there.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from ..core.errors import InputError
from ..replay.artifact import read_artifact
from .base import MemorySystem
from .packing import pack_topk, state_with_wkv, unpack_topk


class Replay(MemorySystem):
    recipe = "unnamed"
    needs_artifacts = True  # urd.harness.run --artifacts DIR (the recipe's artifact directory)

    @property
    def state_shape(self) -> tuple[int, int, int, int]:
        b = self.backbone
        return (b.n_layer, b.n_head, b.head_size, b.head_size)

    def artifact_dir(self, transcript: str) -> Path:
        root = self.settings.get("artifacts")
        if not root:
            raise InputError(f"system {self.name}", "settings.artifacts",
                             "the directory of its tuning artifacts (urd.harness.run --artifacts)")
        return Path(root) / hashlib.sha256(transcript.encode("utf-8")).hexdigest()

    def consolidate(self, transcript, budget_bytes):
        where = self.artifact_dir(transcript)
        art = read_artifact(where, transcript_sha256=where.name, recipe=self.recipe, shape=self.state_shape)
        if bool(art.costs["out_of_contract"]) != bool(self.out_of_contract):
            raise InputError(where / "costs.json", "out_of_contract",
                             f"{self.out_of_contract} (system {self.name})", art.costs["out_of_contract"])
        self.declare_tokens(art.costs["trained_tokens"])
        return pack_topk(art.state.ravel(), budget_bytes)

    def state_from_fiche(self, fiche: bytes) -> list:
        """The package state answer() starts from: unpacked time_state in the WKV slots, zero
        token shifts (the same restore as the controls' tuned-state system)."""
        return state_with_wkv(self.backbone, unpack_topk(fiche, int(np.prod(self.state_shape))))

    def context(self, fiche, header):
        key = ("replay", hashlib.sha256(fiche).hexdigest())
        return self.state_context(self.state_from_fiche(fiche), key, header)


class ReplayTune(Replay):
    """Steps x context within the contract: trained tokens <= factor x transcript tokens."""

    name = "replay_tune"
    recipe = "replay_tune"


class ReplayBanc(Replay):
    """A realistic nightly consolidation (64 steps @ ctx 6144 at the real scales), far over the
    cap. The ratio depends on each transcript's length: costs.json records it per artifact and the
    retention table states the measured range per task."""

    name = "replay_banc"
    recipe = "replay_banc"
    out_of_contract = True
