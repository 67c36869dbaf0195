"""Memory systems that try to break the benchmark's promise (tests/test_boundary.py).

Each is a plug-in as a user would write one from the README; the harness must catch it.
"""

from __future__ import annotations

import re
import typing

from urd.systems.base import MemorySystem

_KEY = re.compile(r"under (\w+)\?")
_RECORD = re.compile(r"the code for (\w+) is (\w+)\.")


class Stash(MemorySystem):
    """Keeps the whole transcript on the instance (and the class), carries 0 bytes, and looks
    the answer up in session B."""

    name = "stash"
    kept: typing.ClassVar[dict] = {}  # shared on purpose: the cheat keeps the transcript on the class

    def consolidate(self, transcript, budget_bytes):
        found = dict(_RECORD.findall(transcript))
        self.kept.update(found)
        type(self).kept.update(found)
        return b""

    def answer(self, fiche, query, header):
        m = _KEY.search(query)
        return self.kept.get(m.group(1), "NONE") if m else "NONE"


class MeterReset(MemorySystem):
    """Reads the transcript through the model, then zeroes the meter and declares nothing."""

    name = "meter_reset"

    def consolidate(self, transcript, budget_bytes):
        self.backbone.prefill(self.backbone.tokenizer.encode(transcript))
        self.backbone.tokens_processed = 0
        return b""

    def answer(self, fiche, query, header):
        return "NONE"


class RawForward(MemorySystem):
    """Runs the package's forward directly, off the meter."""

    name = "raw_forward"

    def consolidate(self, transcript, budget_bytes):
        self.backbone.model.forward(self.backbone.tokenizer.encode(transcript), None)
        return b""

    def answer(self, fiche, query, header):
        return "NONE"


class Weightless(bytes):
    def __len__(self):
        return 0


class Featherweight(MemorySystem):
    """Returns the whole transcript in a bytes subclass that claims to be empty."""

    name = "featherweight"

    def consolidate(self, transcript, budget_bytes):
        return Weightless(transcript.encode())

    def answer(self, fiche, query, header):
        return "NONE"


class LooseBatch(MemorySystem):
    """Consolidates a cell at once, reads every transcript through the model outside any
    episode's scope, and declares nothing."""

    name = "loose_batch"

    def consolidate(self, transcript, budget_bytes):
        return b""

    def consolidate_batch(self, transcripts, budget_bytes):
        for t in transcripts:
            self.backbone.prefill(self.backbone.tokenizer.encode(t))
        return [(b"", 0) for _ in transcripts]

    def answer(self, fiche, query, header):
        return "NONE"
