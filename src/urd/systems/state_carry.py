"""state_carry: the post-session recurrent state, top-k by magnitude, restored in session B."""

from __future__ import annotations

import hashlib

import numpy as np

from .base import MemorySystem
from .packing import pack_topk, unpack_topk


class StateCarry(MemorySystem):
    name = "state_carry"
    fiche_depends_on_cap = False  # the transcript's state, whatever cap admits reading it

    def consolidate(self, transcript, budget_bytes):
        _, state = self.prefill_transcript(transcript)
        flat = np.frombuffer(self.backbone.state_to_bytes(state), dtype="<f4")
        return pack_topk(flat, budget_bytes)

    def context(self, fiche, header):
        flat = unpack_topk(fiche, self.backbone.layout.n_floats)
        state = self.backbone.state_from_bytes(flat.astype("<f4").tobytes())
        return self.state_context(state, ("state", hashlib.sha256(fiche).hexdigest()), header)
