"""T2 — rule persistence.

An arbitrary convention is taught by 8 examples in session A and must be applied in session B
without being restated. Each episode draws a rule from a seeded family: "when the item belongs to
category C, end the reply with marker M". Application is detected mechanically: the marker
appears in the reply's first line. 12 trigger and 12 non-trigger queries, items never shown in
the teaching examples, so only the condition (not the memorised items) can carry over.
"""

from __future__ import annotations

import re

from ..core.rng import Stream

TASK = "t2"
HEADER = "Each line is a request; each reply follows the house style shown in the session."

CATEGORIES: dict[str, tuple[str, ...]] = {
    "fruit": ("apple", "apricot", "banana", "cherry", "date", "fig", "grape", "guava", "kiwi",
              "lemon", "lime", "mango", "melon", "olive", "papaya", "peach", "pear", "plum",
              "quince", "raisin"),
    "animal": ("badger", "beaver", "camel", "donkey", "eagle", "ferret", "gecko", "heron",
               "jackal", "koala", "lizard", "moose", "otter", "panda", "rabbit", "salmon",
               "tiger", "turtle", "walrus", "zebra"),
    "tool": ("anvil", "auger", "chisel", "clamp", "drill", "file", "hammer", "hatchet", "ladder",
             "level", "mallet", "pliers", "rake", "saw", "shovel", "spade", "trowel", "vise",
             "wedge", "wrench"),
    "instrument": ("banjo", "bassoon", "cello", "clarinet", "cymbal", "drum", "fiddle", "flute",
                   "gong", "guitar", "harp", "lute", "oboe", "organ", "piano", "sitar", "tuba",
                   "trumpet", "ukulele", "viola"),
    "vehicle": ("barge", "bicycle", "bus", "canoe", "cart", "ferry", "glider", "jeep", "kayak",
                "lorry", "moped", "raft", "rickshaw", "scooter", "sled", "tractor", "tram",
                "truck", "van", "wagon"),
    "garment": ("apron", "beret", "blazer", "bonnet", "cape", "cardigan", "cloak", "glove",
                "jacket", "kilt", "mitten", "poncho", "robe", "sandal", "scarf", "shawl", "skirt",
                "sock", "tunic", "vest"),
}

# Markers are short, unusual strings a model would not write by accident.
MARKER_SIGILS = "~^#%+="
MARKER_LETTERS = "bdfghjkmpqvwxz"

REQUEST_TEMPLATES = (
    "Please log the {item}.",
    "Add the {item} to the list.",
    "Record one {item}.",
    "Note the {item} for later.",
)


def reply_for(item: str, marker: str | None) -> str:
    base = f"Logged: {item}."
    return f"{base} {marker}" if marker else base


def request_line(template: str, item: str) -> str:
    return "In: " + template.format(item=item)


def query_prompt(template: str, item: str) -> str:
    return request_line(template, item) + "\nOut:"


def applied(reply: str, marker: str) -> bool:
    """The convention was applied: the marker stands as a token in the reply's first line."""
    first = reply.strip().split("\n", 1)[0] if reply.strip() else ""
    return re.search(r"(?<!\S)" + re.escape(marker) + r"(?!\S)", first) is not None


def generate_episode(master_seed: int, index: int, spec: dict, *, root: Stream | None = None,
                     categories: tuple[str, ...] | None = None, exclude_markers: frozenset[str] = frozenset(),
                     ids: str | None = None) -> dict:
    """Episode `index`, derived from (master seed, task, index) alone. A rung-2 chain session
    passes its own stream `root`, the `categories` its rule may draw from, the markers of the
    chain's earlier sessions to exclude, and its query-id prefix `ids`."""
    root = root or Stream("urd", master_seed, TASK, index)
    ids = ids or f"t2-e{index:03d}"
    rule = root.child("rule")
    names = sorted(CATEGORIES)
    category = rule.choice(sorted(categories) if categories else names)
    marker = rule.choice(MARKER_SIGILS) + rule.string(MARKER_LETTERS, 2)
    while marker in exclude_markers:  # drawn again from the same stream: still deterministic
        marker = rule.choice(MARKER_SIGILS) + rule.string(MARKER_LETTERS, 2)

    n_ex, n_trig, n_non = spec["examples"], spec["triggers"], spec["non_triggers"]
    if n_ex % 2:
        raise ValueError(f"t2 examples must be even (half trigger, half not), got {n_ex}")
    half = n_ex // 2
    trig_items = root.child("trigger-items").sample(CATEGORIES[category], half + n_trig)
    others = [i for c in names if c != category for i in CATEGORIES[c]]
    non_items = root.child("non-items").sample(others, half + n_non)

    ex = root.child("examples")
    teaching = ex.shuffled(
        [(item, True) for item in trig_items[:half]] + [(item, False) for item in non_items[:half]]
    )
    examples = []
    lines = []
    for item, is_trigger in teaching:
        template = ex.choice(REQUEST_TEMPLATES)
        reply = reply_for(item, marker if is_trigger else None)
        examples.append({"item": item, "trigger": is_trigger, "request": request_line(template, item), "reply": reply})
        lines += [request_line(template, item), "Out: " + reply]

    qs = root.child("queries")
    picks = qs.shuffled(
        [("trigger", item) for item in trig_items[half:]]
        + [("non_trigger", item) for item in non_items[half:]]
    )
    queries = []
    for n, (kind, item) in enumerate(picks):
        template = qs.choice(REQUEST_TEMPLATES)
        queries.append(
            {
                "id": f"{ids}-q{n:02d}",
                "kind": kind,
                "item": item,
                "prompt": query_prompt(template, item),
                "expected": reply_for(item, marker if kind == "trigger" else None),
            }
        )
    return {
        "task": TASK,
        "episode": index,
        "master_seed": master_seed,
        "header": HEADER,
        "rule": {"category": category, "marker": marker},
        "examples": examples,
        "transcript": "\n".join(["Session log.", HEADER, *lines]) + "\n",
        "queries": queries,
    }
