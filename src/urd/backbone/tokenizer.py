"""The RWKV World tokenizer shipped in the `rwkv` wheel (rwkv_vocab_v20230424).

Token counts are the unit of the consolidation contract, so every count in urd goes through here.
"""

from __future__ import annotations

import functools
from importlib import resources

VOCAB_FILE = "rwkv_vocab_v20230424.txt"


@functools.lru_cache(maxsize=1)
def _tokenizer():
    from rwkv.rwkv_tokenizer import TRIE_TOKENIZER

    return TRIE_TOKENIZER(str(resources.files("rwkv").joinpath(VOCAB_FILE)))


def encode(text: str) -> list[int]:
    return _tokenizer().encode(text)


def decode(ids: list[int]) -> str:
    # A random-weight model emits byte sequences that are not valid UTF-8: replace, never crash.
    return _tokenizer().decodeBytes(ids).decode("utf-8", errors="replace")


def count_tokens(text: str) -> int:
    return len(encode(text))
