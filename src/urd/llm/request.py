"""A model request, its content address, and the data fences inside it.

Every piece of stored or deposited text (a note, a claim) goes into the user turn behind
a fence, so that instructions stay in the system turn and the scripted arm can read a
request's data without reading its instructions.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from ..core.io import canonical_json
from .usage import Usage

_FENCE = re.compile(
    r'<(?P<label>[a-z][a-z0-9_]*) nonce="(?P<nonce>[0-9a-f]{12})">\n'
    r'(?P<text>.*?)\n</(?P=label) nonce="(?P=nonce)">',
    re.DOTALL,
)


def fence(label: str, text: str) -> str:
    """``text`` behind a labelled fence whose nonce depends on the text.

    A content-derived nonce keeps a request byte-identical across reruns, which the
    record/replay cache needs; a claim cannot close a fence it cannot predict.
    """
    nonce = hashlib.sha256(f"{label}\n{text}".encode()).hexdigest()[:12]
    return f'<{label} nonce="{nonce}">\n{text}\n</{label} nonce="{nonce}">'


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """Every fenced ``(label, text)`` in ``text``, in order."""
    return [(m["label"], m["text"]) for m in _FENCE.finditer(text)]


FRAMING_TOKENS = 64  # headroom for the tokens the API adds around a system and a user turn


@dataclass(frozen=True)
class Request:
    """One call: its purpose, instructions, fenced data, output budget and replica.

    ``replica`` names the independent sample a call belongs to (``move-2``,
    ``sample-3``): two samples of one question are two calls, not one cached answer.
    """

    purpose: str
    system: str
    user: str
    max_tokens: int
    replica: str = ""

    def identity(self, model: str) -> dict[str, object]:
        return {
            "model": model,
            "purpose": self.purpose,
            "system": self.system,
            "user": self.user,
            "max_tokens": self.max_tokens,
            "replica": self.replica,
        }

    def cache_key(self, model: str) -> str:
        return hashlib.sha256(canonical_json(self.identity(model)).encode()).hexdigest()

    def size_bytes(self) -> int:
        return len(self.system.encode()) + len(self.user.encode())

    def input_token_bound(self) -> int:
        """No tokenizer makes more tokens than bytes; the message framing adds a few."""
        return self.size_bytes() + FRAMING_TOKENS


@dataclass(frozen=True)
class Completion:
    """What a backend returned: the text, the model that answered, its usage, and whether the
    reply stopped at ``max_tokens`` (then it is cut short and never parsed as complete)."""

    text: str
    model: str
    usage: Usage = field(default_factory=Usage)
    truncated: bool = False
    # How the call went on the wire (never cached): the SDK's retries, and replies billed but lost
    retries: int = field(default=0, compare=False)
    lost: int = field(default=0, compare=False)
