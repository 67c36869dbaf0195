"""symbolic: a reference system whose every score follows from arithmetic.

It runs no model. It parses the transcript into fixed-size entries and keeps as many as the
budget holds, newest session first, so what it recalls after any boundary can be computed by
hand (docs/rung2.md). It exists to test the rung-2 machinery (chains, the Pareto sweep)
through the real harness on `tiny`, where every model-backed system scores 0; it is not one of
the write-up's baselines.

- T1: one entry per key, 10 bytes: the key (CVCVC, 102,400 possibilities: 17 bits) and the value
  (12 base32 characters: 60 bits) in 80 bits. A session's keys go in by how often they were shown
  (the 8 hot keys first), ties by first appearance; then the prior fiche's entries, in their order.
  k = floor(budget / 10) entries are kept: 80 B holds a session's hot keys (recall 15/20 = 0.75),
  640 B a whole session (recall 1), 1,280 B the last two sessions.
- T2: one entry per convention, 4 bytes: the category's index and the 3-byte marker, the category
  inferred from the taught trigger items (the task's categories are public). A newer convention
  for the same category replaces the older; k = floor(budget / 4) conventions are kept.
Answers: the stored value or NONE (T1); the house reply with the marker when the item's category
has a convention (T2).
"""

from __future__ import annotations

import re
from collections import Counter

from ..data import t1 as t1task
from ..data import t2 as t2task
from .base import MemorySystem

T1_ENTRY, T2_ENTRY = 10, 4
_RECORD = re.compile(r"^Record: the code for ([a-z]{5}) is ([0-9A-Z]{12})\.$")
_OUT = re.compile(r"^Out: Logged: ([a-z]+)\.(?: (\S+))?$")
_KEY_ASKED = re.compile(r"stored under ([a-z]{5})\?")
_RADIX = [t1task.CONSONANTS if i % 2 == 0 else t1task.VOWELS for i in range(5)]
CATEGORIES = sorted(t2task.CATEGORIES)
_ITEM_CATEGORY = {item: c for c, items in t2task.CATEGORIES.items() for item in items}


def _key_index(key: str) -> int:
    n = 0
    for ch, symbols in zip(key, _RADIX):
        n = n * len(symbols) + symbols.index(ch)
    return n


def _key_of(n: int) -> str:
    out = []
    for symbols in reversed(_RADIX):
        n, r = divmod(n, len(symbols))
        out.append(symbols[r])
    return "".join(reversed(out))


def pack_t1(key: str, value: str) -> bytes:
    bits = 0
    for ch in value:
        bits = bits << 5 | t1task.ALPHABET.index(ch)
    return (_key_index(key) << 60 | bits).to_bytes(T1_ENTRY, "big")


def unpack_t1(entry: bytes) -> tuple[str, str]:
    n = int.from_bytes(entry, "big")
    value = "".join(t1task.ALPHABET[(n >> (5 * i)) & 31] for i in reversed(range(12)))
    return _key_of(n >> 60), value


def _entries(fiche: bytes | None, size: int) -> list[bytes]:
    fiche = fiche or b""
    return [fiche[i:i + size] for i in range(0, len(fiche) - len(fiche) % size, size)]


def t1_entries(transcript: str) -> list[tuple[str, str]]:
    """(key, value) of every key shown, most shown first, ties by first appearance."""
    shown = [m.groups() for m in map(_RECORD.match, transcript.split("\n")) if m]
    counts = Counter(k for k, _ in shown)
    first: dict[str, int] = {}
    value: dict[str, str] = {}
    for i, (k, v) in enumerate(shown):
        first.setdefault(k, i)
        value[k] = v
    return [(k, value[k]) for k in sorted(counts, key=lambda k: (-counts[k], first[k]))]


def t2_convention(transcript: str) -> tuple[str, str] | None:
    """(category, marker) taught by the examples, or None when the triggers share no category."""
    outs = [m.groups() for m in map(_OUT.match, transcript.split("\n")) if m]
    marked = [(item, marker) for item, marker in outs if marker]
    markers = {marker for _, marker in marked}
    categories = {_ITEM_CATEGORY.get(item) for item, _ in marked}
    if len(markers) != 1 or len(categories) != 1 or None in categories:
        return None
    return categories.pop(), markers.pop()


def _keep(budget: int | None, size: int) -> int | None:
    return None if budget is None else budget // size


class Symbolic(MemorySystem):
    name = "symbolic"
    consolidates_from_text = True
    answers_with_model = False

    def consolidate(self, transcript, budget_bytes, prior=None):
        if t1task.HEADER in transcript:
            new = [pack_t1(k, v) for k, v in t1_entries(transcript)]
            keys = {unpack_t1(e)[0] for e in new}
            old = [e for e in _entries(prior, T1_ENTRY) if unpack_t1(e)[0] not in keys]
            size = T1_ENTRY
        else:
            conv = t2_convention(transcript)
            new = [] if conv is None else [bytes([CATEGORIES.index(conv[0])]) + conv[1].encode("utf-8")]
            newest = {e[0] for e in new}
            old = [e for e in _entries(prior, T2_ENTRY) if e[0] not in newest]
            size = T2_ENTRY
        kept = (new + old)[:_keep(budget_bytes, size)]
        return b"".join(kept)

    def answer(self, fiche, query, header):
        if header == t1task.HEADER:
            m = _KEY_ASKED.search(query)
            stored = dict(unpack_t1(e) for e in _entries(fiche, T1_ENTRY))
            return stored.get(m.group(1), t1task.ABSTAIN) if m else t1task.ABSTAIN
        items = [w for w in re.findall(r"[a-z]+", query.split("\n", 1)[0]) if w in _ITEM_CATEGORY]
        if not items:
            return ""
        item = items[-1]
        conventions = {CATEGORIES[e[0]]: e[1:].decode("utf-8") for e in reversed(_entries(fiche, T2_ENTRY))}
        return t2task.reply_for(item, conventions.get(_ITEM_CATEGORY[item]))
