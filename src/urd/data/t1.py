"""T1 — delayed associative recall.

64 random key->value pairs, values 12 characters over a 32-symbol alphabet (5 bits a character,
so 64 x 60 bits = 480 bytes of exact-entropy payload). Exposed over 96 lines: 8 hot keys shown
5 times, 56 cold keys once. Queries: 15 hot, 5 cold, 5 unseen (keys never exposed).
"""

from __future__ import annotations

from ..core.rng import Stream

# Crockford's base32: 32 symbols without I, L, O, U, so a value cannot be misread.
ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
BITS_PER_SYMBOL = 5
CONSONANTS = "bdfghjklmnprstvz"
VOWELS = "aeiou"

TASK = "t1"
HEADER = (
    "Each record gives the code stored under a key. When asked for a key, answer with its code "
    "exactly; if the key was never recorded, answer NONE."
)
ABSTAIN = "NONE"


def make_key(stream: Stream) -> str:
    """A pronounceable five-letter key (CVCVC): 16*5*16*5*16 = 102,400 possible keys."""
    return "".join(
        stream.choice(CONSONANTS if i % 2 == 0 else VOWELS) for i in range(5)
    )


def exposure_line(key: str, value: str) -> str:
    return f"Record: the code for {key} is {value}."


def query_prompt(key: str) -> str:
    return f"Q: What is the code stored under {key}?\nA:"


def transcript_of(lines: list[str]) -> str:
    return "\n".join(["Session log.", HEADER, *lines]) + "\n"


def generate_episode(master_seed: int, index: int, spec: dict, queries: int, *, root: Stream | None = None,
                     exclude: frozenset[str] = frozenset(), ids: str | None = None) -> dict:
    """Episode `index`, derived from (master seed, task, index) alone. A rung-2 chain session
    passes its own stream `root`, the keys of the chain's earlier sessions to `exclude` (shown
    or asked as unseen: no key means two things in one chain) and its query-id prefix `ids`."""
    quota = spec["quota"]
    if quota["hot"] + quota["cold"] + quota["unseen"] != queries:
        raise ValueError(f"t1 quota {quota} does not sum to queries={queries}")
    n_pairs, n_hot, repeats = spec["pairs"], spec["hot_keys"], spec["hot_repeats"]
    root = root or Stream("urd", master_seed, TASK, index)
    ids = ids or f"t1-e{index:03d}"

    keys_stream = root.child("keys")
    keys: list[str] = []
    seen: set[str] = set()
    while len(keys) < n_pairs + quota["unseen"]:
        k = make_key(keys_stream)
        if k not in seen and k not in exclude:
            seen.add(k)
            keys.append(k)
    exposed, unseen = keys[:n_pairs], keys[n_pairs:]

    values_stream = root.child("values")
    pairs = [
        {"key": k, "value": values_stream.string(ALPHABET, spec["value_length"]), "hot": i < n_hot}
        for i, k in enumerate(exposed)
    ]
    hot = [p for p in pairs if p["hot"]]
    cold = [p for p in pairs if not p["hot"]]

    shown = [p for p in hot for _ in range(repeats)] + cold
    order = root.child("exposure").shuffled(shown)
    lines = [exposure_line(p["key"], p["value"]) for p in order]

    qs = root.child("queries")
    if quota["hot"] > n_hot * 2:
        raise ValueError("t1 quota asks each hot key more than twice")
    # Every hot key once, then the remainder again without repeats: 15 = 8 + 7.
    if quota["hot"] >= n_hot:
        hot_q = list(hot) + qs.sample(hot, quota["hot"] - n_hot)
    else:
        hot_q = qs.sample(hot, quota["hot"])
    cold_q = qs.sample(cold, quota["cold"])
    picks = (
        [("hot", p["key"], p["value"]) for p in hot_q]
        + [("cold", p["key"], p["value"]) for p in cold_q]
        + [("unseen", k, None) for k in unseen]
    )
    picks = qs.shuffled(picks)
    query_records = [
        {
            "id": f"{ids}-q{n:02d}",
            "kind": kind,
            "key": key,
            "expected": value,
            "prompt": query_prompt(key),
        }
        for n, (kind, key, value) in enumerate(picks)
    ]
    return {
        "task": TASK,
        "episode": index,
        "master_seed": master_seed,
        "header": HEADER,
        "abstain": ABSTAIN,
        "alphabet": ALPHABET,
        "pairs": pairs,
        "lines": lines,
        "transcript": transcript_of(lines),
        "queries": query_records,
    }
