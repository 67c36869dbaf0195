"""The harness tokenizer: RWKV World (`rwkv_vocab_v20230424.txt`, shipped in the rwkv wheel).

Greedy longest-prefix matching over UTF-8 bytes, the same rule as the wheel's TRIE_TOKENIZER
(tests compare the two), built from a dict in ~0.2 s instead of the trie's ~3 s and 300 MB.
The vocabulary file is pinned by SHA-256: token counts are the contract's unit, so a different
vocabulary must fail loudly, not count differently.

Decoding never raises on model output: id 0 (end of text, not in the file) decodes to "",
ids in the vocab range but absent from the file decode to U+FFFD, and invalid UTF-8 (a random
model, or a multi-byte character cut by a stop) is decoded with errors="replace".
"""

from __future__ import annotations

import ast
import functools
import os
from importlib.util import find_spec

from ..core.errors import DigestMismatch, InputError
from ..core.io import sha256_file

VOCAB_FILE = "rwkv_vocab_v20230424.txt"
VOCAB_SHA256 = "8324476023347dec2964625ccb2075c864d250a9c6d9a74f36daba628de8c008"
VOCAB_SIZE = 65536  # the model's embedding rows; the file names ids 1..65529
END_OF_TEXT = 0
_REPLACEMENT = "\ufffd".encode("utf-8")


def vocab_path() -> str:
    spec = find_spec("rwkv")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("rwkv", "package", "the rwkv wheel installed (it ships the vocabulary)")
    return os.path.join(next(iter(spec.submodule_search_locations)), VOCAB_FILE)


def _token(literal: str) -> bytes:
    """A vocabulary line's Python literal as bytes. Most are a quoted string with no escape,
    whose text is the token as it stands; only the rest (about 1 in 80) pay for literal_eval,
    which took three quarters of a second over the whole file, in every process that counts
    tokens (each model job, and each DAG that prices its replay jobs)."""
    if len(literal) >= 2 and literal[0] in ("'", '"') and literal[-1] == literal[0] and "\\" not in literal:
        return literal[1:-1].encode("utf-8")
    tok = ast.literal_eval(literal)
    return tok.encode("utf-8") if isinstance(tok, str) else tok


class WorldTokenizer:
    def __init__(self, path: str | None = None, expected_sha256: str | None = VOCAB_SHA256):
        path = path or vocab_path()
        if expected_sha256 is not None:
            actual = sha256_file(path)
            if actual != expected_sha256:
                raise DigestMismatch(path, expected_sha256, actual)
        self.id_to_bytes: dict[int, bytes] = {}
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                idx = int(line[: line.index(" ")])
                tok = _token(line[line.index(" ") + 1: line.rindex(" ")])
                if len(tok) != int(line[line.rindex(" "):]):
                    raise InputError(path, f"line {n}", "token byte length as declared", len(tok))
                self.id_to_bytes[idx] = tok
        self.bytes_to_id = {t: i for i, t in self.id_to_bytes.items()}
        # for each first byte, the token lengths that start with it, longest first
        lengths: dict[int, set[int]] = {}
        for t in self.bytes_to_id:
            lengths.setdefault(t[0], set()).add(len(t))
        self._lengths = {b: sorted(ls, reverse=True) for b, ls in lengths.items()}

    def encode(self, text: str) -> list[int]:
        src = text.encode("utf-8")
        out, i, n = [], 0, len(src)
        table, lengths = self.bytes_to_id, self._lengths
        while i < n:
            for L in lengths[src[i]]:  # every single byte is a token, so this always matches
                if i + L <= n and (tid := table.get(src[i: i + L])) is not None:
                    out.append(tid)
                    i += L
                    break
        return out

    def decode_bytes(self, ids) -> bytes:
        parts = []
        for t in ids:
            t = int(t)
            if not 0 <= t < VOCAB_SIZE:
                raise ValueError(f"token id {t} outside [0, {VOCAB_SIZE})")
            parts.append(b"" if t == END_OF_TEXT else self.id_to_bytes.get(t, _REPLACEMENT))
        return b"".join(parts)

    def decode(self, ids) -> str:
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def count_tokens(self, text: str) -> int:
        return len(self.encode(text))


class GrowingText:
    """The text of a token list that grows one token at a time, equal at every step to
    tokenizer.decode(tokens), with the first stop string in it: what a greedy decoder checks
    after each token. Kept up in time linear in the text (decoding the whole list again at
    every token made a long note quadratic: 20,000 tokens of notes decoded 200 million).

    UTF-8 bytes are fed to an incremental decoder: what it has emitted never changes, and the
    bytes it holds (a character not yet complete) read as U+FFFD, as a one-shot decode with
    errors="replace" reads them. A stop string found now must end past what was emitted
    before this token (had it ended earlier, an earlier token would have found it), so only
    that tail is searched."""

    def __init__(self, tokenizer, stop=()):
        import codecs

        self._tokenizer = tokenizer
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._stop = tuple(stop)
        self._keep = max((len(s) for s in self._stop), default=1) - 1  # chars a stop can reach back
        self._chunks: list[str] = []
        self._chars = 0  # emitted so far
        self._bytes = 0  # UTF-8 bytes of what was emitted
        self._recent = ""  # its last `_keep` characters
        self._pending = ""  # the held bytes, as a one-shot decode reads them
        self.cut = -1  # where the first stop string starts (-1: none yet)

    def add(self, token: int) -> None:
        chunk = self._decoder.decode(self._tokenizer.decode_bytes([token]))
        self._pending = self._decoder.getstate()[0].decode("utf-8", errors="replace")
        if self.cut < 0 and self._stop:
            window = self._recent + chunk + self._pending
            start = self._chars - len(self._recent)
            self.cut = min((start + i for i in (window.find(s) for s in self._stop) if i >= 0), default=-1)
        if chunk:
            self._chunks.append(chunk)
            self._chars += len(chunk)
            self._bytes += len(chunk.encode("utf-8"))
            self._recent = (self._recent + chunk)[-self._keep:] if self._keep else ""

    @property
    def n_bytes(self) -> int:
        """len(text.encode("utf-8"))"""
        return self._bytes + len(self._pending.encode("utf-8"))

    @property
    def text(self) -> str:
        return "".join(self._chunks) + self._pending


@functools.lru_cache(maxsize=1)
def get_tokenizer() -> WorldTokenizer:
    """The process-wide tokenizer (built once)."""
    return WorldTokenizer()


def encode(text: str) -> list[int]:
    return get_tokenizer().encode(text)


def decode(ids) -> str:
    return get_tokenizer().decode(ids)


def count_tokens(text: str) -> int:
    return get_tokenizer().count_tokens(text)
