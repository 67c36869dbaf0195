"""The training stream of the `learned` backbone: episodes from urd's own generators, drawn from a
seed family of their own, with nothing of an evaluated episode in them.

Every training episode is a rung-1 (or rung-2 chain-session) episode made by `urd.data.t1` /
`urd.data.t2` from the stream ("urd-train", seed, task, index), never from the evaluation's
("urd", master seed, ...) or ("urd2", ...). Disjointness is held on content, not on the seed:
the keys of every evaluated T1 episode (shown or asked as unseen) are excluded from the training
keys, and the markers of every evaluated T2 rule from the training markers (so no category with
its marker can recur); `overlap` re-checks the finished stream against the evaluation data.

A training sequence is what the in-session control reads: the transcript, tokenized whole, then
each query tokenized alone with its expected reply (" <answer>\\n") after it, the queries one
after another in the one sequence; where each query starts is returned too, so that training can
run each from the transcript's end state, as the control answers it (`branch_queries`). The loss is taken
on the replies only (the query answers, T2's teaching replies inside the transcript, and the
codes of T1's repeated records): a code is unpredictable where it first appears, and the reply
is what the control scores.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.rng import Stream
from ..data import t1, t2

FAMILY = "urd-train"  # the training seed family: the evaluation's streams are "urd" and "urd2"
HELD_OUT = 1_000_000  # training episodes use indices below this; held-out ones at and above it
BLOCK = 100_000
# Each draw of the family takes its indices from one range, and `indices` refuses one outside it:
# training; a run's evaluations every eval_every steps, and at the curriculum's point (its choices
# between runs and resume points were made on these); FRESH, held-out episodes that only the check
# at use reads (urd.learn.check.behaviour; benchmarks/learned.py --held-out runs that function);
# and DEV, what development tools read (benchmarks/learned_recall.py).
RANGES = {"train": (0, HELD_OUT), "eval": (HELD_OUT, HELD_OUT + BLOCK),
          "eval_at_level": (HELD_OUT + BLOCK, HELD_OUT + 2 * BLOCK),
          "fresh": (HELD_OUT + 2 * BLOCK, HELD_OUT + 3 * BLOCK), "dev": (HELD_OUT + 3 * BLOCK, HELD_OUT + 4 * BLOCK)}
FRESH = RANGES["fresh"][0]


def indices(name: str, first: int, n: int) -> range:
    """Indices first .. first + n - 1 of range `name`; ValueError if any lies outside it."""
    lo, hi = RANGES[name]
    if n < 0 or first < lo or first + n > hi:
        raise ValueError(f"training-family indices {first}..{first + n - 1} lie outside the {name!r} range "
                         f"[{lo}, {hi}): a draw may not take another range's episodes")
    return range(first, first + n)


@dataclass(frozen=True)
class Exclusions:
    """What no training episode may contain: the evaluated T1 keys and values, the T2 markers."""

    keys: frozenset[str]
    values: frozenset[str]
    markers: frozenset[str]
    rules: frozenset[tuple[str, str]]

    @classmethod
    def of(cls, episodes: list[dict]) -> Exclusions:
        keys, values, markers, rules = set(), set(), set(), set()
        for ep in episodes:
            if ep["task"] == "t1":
                keys |= {p["key"] for p in ep["pairs"]} | {q["key"] for q in ep["queries"]}
                values |= {p["value"] for p in ep["pairs"]}
            else:
                markers.add(ep["rule"]["marker"])
                rules.add((ep["rule"]["category"], ep["rule"]["marker"]))
        return cls(frozenset(keys), frozenset(values), frozenset(markers), frozenset(rules))


def t1_spec(pairs: int, base: dict, query_all: bool = False, no_hot: bool = False) -> dict:
    """A T1 spec of `pairs` pairs in the published shape: an eighth of them hot (5 showings).
    query_all: every shown key is asked (each hot key once), not a quarter of the cold ones: the
    same transcript gives every pair's recall as a target. no_hot: every key shown once, so
    answering the most-shown code (which scores on hot keys without reading the key) pays nothing."""
    hot = 0 if no_hot else max(1, pairs // 8)
    cold = pairs - hot if query_all else min(pairs - hot, max(1, pairs // 4))
    return {**base, "pairs": pairs, "hot_keys": hot, "quota": {"hot": hot, "cold": cold, "unseen": max(1, pairs // 8)}}


def t1_episode(seed: int, index: int, pairs: int, base: dict, ex: Exclusions, query_all: bool = False,
               no_hot: bool = False) -> dict:
    spec = t1_spec(pairs, base, query_all, no_hot)
    q = spec["quota"]
    ep = t1.generate_episode(seed, index, spec, q["hot"] + q["cold"] + q["unseen"],
                             root=Stream(FAMILY, seed, "t1", index), exclude=ex.keys, ids=f"train-t1-{index}")
    if any(p["value"] in ex.values for p in ep["pairs"]):  # 2^-60 a value: refuse rather than train on it
        raise ValueError(f"training T1 episode {index} draws an evaluated value")
    return ep


def t2_episode(seed: int, index: int, base: dict, ex: Exclusions) -> dict:
    return t2.generate_episode(seed, index, base, root=Stream(FAMILY, seed, "t2", index),
                               exclude_markers=ex.markers, ids=f"train-t2-{index}")


# the ranges whose T2 episodes are held out by rule, not only by episode (t2_unseen_rule)
UNSEEN_RULES = ("fresh", "dev")


def t2_unseen_rule(seed: int, index: int, base: dict, ex: Exclusions) -> dict:
    """A T2 episode whose rule no training episode has: its marker is one the training stream
    excluded (an evaluated one), so no category with it was ever trained on, and the rule is no
    evaluated episode's either; the category is drawn as any episode's. (A training-family episode with any marker is unseen as an episode, but its
    rule is one training almost surely met: 6,564 of the 7,056 rules occur there.)"""
    every = {s + a + b for s in t2.MARKER_SIGILS for a in t2.MARKER_LETTERS for b in t2.MARKER_LETTERS}
    refused = every - ex.markers
    while True:  # nor an evaluated episode's rule: its marker is drawn again (its category is drawn first)
        ep = t2.generate_episode(seed, index, base, root=Stream(FAMILY, seed, "t2", index),
                                 exclude_markers=frozenset(refused), ids=f"train-t2-{index}")
        rule = (ep["rule"]["category"], ep["rule"]["marker"])
        if rule not in ex.rules:
            return ep
        refused.add(rule[1])


def reply(task: str, query: dict) -> str:
    """The reply a query is trained on, as the control decodes it: after the prompt, to the newline."""
    if task == "t1":
        return " " + (query["expected"] or t1.ABSTAIN) + "\n"
    return " " + query["expected"] + "\n"


def teaching_spans(ep: dict) -> list[tuple[int, int]]:
    """Character spans of T2's teaching replies in the transcript (after each "Out:")."""
    text, spans, at = ep["transcript"], [], 0
    while (i := text.find("\nOut:", at)) >= 0:
        start = i + len("\nOut:")
        end = text.index("\n", start) + 1
        spans.append((start, end))
        at = end - 1
    return spans


def repeat_spans(ep: dict) -> list[tuple[int, int]]:
    """Character spans of T1's codes in records whose key was shown before (a hot key's second to
    fifth showing): recalling them is the task's skill at a shorter distance."""
    text, spans, shown, at = ep["transcript"], [], set(), 0
    for line in ep["lines"]:
        start = text.index(line, at)
        at = start + len(line)
        key = line.split(" for ", 1)[1].split(" ", 1)[0]
        if key in shown:
            v = line.rindex(" is ") + len(" is")  # the space before the code, as a reply starts
            spans.append((start + v, start + len(line) - 1))  # up to the full stop
        shown.add(key)
    return spans


def encode_spans(tokenizer, text: str, spans: list[tuple[int, int]]) -> tuple[list[int], list[bool]]:
    """`text` tokenized whole, and for each token whether it starts inside one of `spans`."""
    ids = tokenizer.encode(text)
    raw = text.encode("utf-8")
    # spans are in characters; tokens are bytes: map through the byte offset of each character
    byte_at = [len(text[:i].encode("utf-8")) for i in range(len(text) + 1)] if not text.isascii() else None
    bspans = [(byte_at[a], byte_at[b]) if byte_at else (a, b) for a, b in spans]
    mask, pos = [], 0
    for t in ids:
        mask.append(any(a <= pos < b for a, b in bspans))
        pos += len(tokenizer.id_to_bytes[t])
    if pos != len(raw):
        raise ValueError("token bytes do not add up to the text")
    return ids, mask


def sequence(tokenizer, ep: dict) -> tuple[list[int], list[bool]]:
    """One episode as a training sequence: token ids and, per position, whether the NEXT token
    is a target (the loss predicts token i+1 from position i)."""
    ids, is_target, _, _ = sequence_with_replies(tokenizer, ep)
    return ids, is_target


def sequence_with_replies(tokenizer, ep: dict) -> tuple[list[int], list[bool], list[tuple[str, range]], list[int]]:
    """`sequence`; for each query its kind and the positions that predict its reply's tokens
    (a reply is right, teacher-forced, when every one of them is: then greedy decoding gives it);
    and the position where each query's prompt starts."""
    spans = teaching_spans(ep) if ep["task"] == "t2" else repeat_spans(ep)
    ids, is_target = encode_spans(tokenizer, ep["transcript"], spans)
    replies, starts = [], []
    for q in ep["queries"]:
        p = tokenizer.encode(q["prompt"])
        r = tokenizer.encode(reply(ep["task"], q))
        starts.append(len(ids))
        start = len(ids) + len(p)
        replies.append((q["kind"], range(start - 1, start - 1 + len(r))))
        ids += p + r
        is_target += [False] * len(p) + [True] * len(r)
    # position i predicts token i+1: shift the flags left by one
    return ids, is_target[1:] + [False], replies, starts


def overlap(train: list[dict], ex: Exclusions) -> dict[str, list]:
    """What a set of training episodes shares with the evaluation: empty lists when disjoint."""
    keys, values, rules = set(), set(), set()
    for ep in train:
        if ep["task"] == "t1":
            keys |= {p["key"] for p in ep["pairs"]} | {q["key"] for q in ep["queries"]}
            values |= {p["value"] for p in ep["pairs"]}
        else:
            rules.add((ep["rule"]["category"], ep["rule"]["marker"]))
    return {"keys": sorted(keys & ex.keys), "values": sorted(values & ex.values),
            "rules": sorted(rules & ex.rules)}
