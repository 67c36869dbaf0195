"""A seeded random stream defined by SHA-256 alone.

Python's `random` and numpy's generators are stable in practice but not promised to be across
versions; an auditor re-deriving data years later should need nothing but this file. Each stream
is named by its parts (master seed, task, episode, purpose), so episode 3 gets the same bytes
whether 1 or 600 episodes are generated.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


class Stream:
    """Counter-mode SHA-256 byte stream with unbiased integer draws."""

    def __init__(self, *parts: object):
        if not parts:
            raise ValueError("a stream needs at least one name part")
        self._key = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
        self._counter = 0
        self._buf = b""

    def child(self, *parts: object) -> Stream:
        """An independent stream derived from this one's key and a name."""
        return Stream(self._key.hex(), *parts)

    def _bytes(self, n: int) -> bytes:
        while len(self._buf) < n:
            block = hashlib.sha256(self._key + self._counter.to_bytes(8, "big")).digest()
            self._counter += 1
            self._buf += block
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def below(self, n: int) -> int:
        """Uniform integer in [0, n) by rejection sampling (no modulo bias)."""
        if n <= 0:
            raise ValueError(f"below() needs n > 0, got {n}")
        if n == 1:
            return 0
        nbytes = (n - 1).bit_length() + 7 >> 3
        limit = (256**nbytes // n) * n
        while True:
            x = int.from_bytes(self._bytes(nbytes), "big")
            if x < limit:
                return x % n

    def choice(self, seq: Sequence[T]) -> T:
        return seq[self.below(len(seq))]

    def shuffled(self, seq: Sequence[T]) -> list[T]:
        """Fisher-Yates on a copy."""
        out = list(seq)
        for i in range(len(out) - 1, 0, -1):
            j = self.below(i + 1)
            out[i], out[j] = out[j], out[i]
        return out

    def sample(self, seq: Sequence[T], k: int) -> list[T]:
        if k > len(seq):
            raise ValueError(f"cannot sample {k} from {len(seq)}")
        return self.shuffled(seq)[:k]

    def string(self, alphabet: str, length: int) -> str:
        return "".join(alphabet[self.below(len(alphabet))] for _ in range(length))
