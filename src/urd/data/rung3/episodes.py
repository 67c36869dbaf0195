"""Rung 3's episodes: one seeded conversation a family and index, byte for byte.

Session A is a conversation in which the user teaches every type of the family one side, in one
of three ways (the way is dealt from the seed, the three in turn):
- explicit: "Please note: give distances in km."
- correction: the assistant answers a request on the other side and the user corrects it
  ("No, give distances in km.");
- update: the other side is stated in the first half and superseded in the second ("Change of
  plan: give distances in km from now on."): the first value is the stale one.
A scoped type is stated with its scope ("When you write to my landlord, sign as 'R. Okafor'").
Work turns (requests the assistant answers on the sides in force) and distractors (facts that do
not matter) fill the rest.

Counterbalance: episodes come in pairs (2j, 2j+1) that teach each type opposite sides, the side of
2j drawn from the seed, so every side is taught in half the episodes (one more for an odd count)
and episode i's bytes do not depend on how many episodes are made.

Session B asks, per type, `triggers` requests where it applies and, for a scoped type,
`non_triggers` requests of the same kind outside its scope. Nothing in session B states a
preference.
"""

from __future__ import annotations

from ...core.rng import Stream
from . import Family

WAYS = ("explicit", "correction", "update")
HABIT = 0  # the side the session-A assistant keeps before a type is taught (and the scripted reader's habit)
OPENERS = ("", "Please note: ", "One more thing: ", "For the record: ")
ACKS = ("Noted.", "Understood.", "Will do.", "Got it.")
DISTRACTORS = {
    "prefs": ("My sister's birthday is on the 14th and she likes tulips.", "The cabin's wifi password is on the fridge.",
              "I moved the bikes to the shed.", "Our neighbour Tomas waters the plants on Sundays.",
              "The library closes early in August.", "I still have two vouchers for the bakery.",
              "My train pass renews next month.", "The spare key is under the blue pot.",
              "I am reading a book about lighthouses.", "We might repaint the hallway green.",
              "The cat's vet is Dr. Haas.", "My cousin is learning the cello.",
              "The recycling goes out on Thursdays.", "I found my old camera in the attic."),
    "code": ("The CI runs on Python 3.11.", "Bob owns the billing module.", "We deploy on Fridays only.",
             "The staging database is reset every night.", "Release notes live in CHANGES.md.",
             "The nightly job sometimes times out on the runner.", "We vendor one library, tomlkit.",
             "Code review needs one approval.", "The docs are built with mkdocs.",
             "The legacy importer is frozen until spring.", "Coverage is reported but not enforced.",
             "Our issue tracker labels bugs in red."),
}


def user(text: str) -> str:
    return f"User: {text}"


def assistant(text: str) -> str:
    return f"Assistant: {text}"


def prompt(request: str) -> str:
    """How session B (and the control) asks a request."""
    return f"User: {request}\nAssistant:"


def sides_of(master_seed: int, family: Family, index: int) -> dict[str, int]:
    """The side each type teaches in episode `index`: pairs of episodes teach opposite sides."""
    pair = Stream("urd3", master_seed, family.name, "sides", index // 2)
    first = {k.name: pair.child(k.name).below(2) for k in family.kinds}
    return first if index % 2 == 0 else {n: 1 - s for n, s in first.items()}


def generate_episode(master_seed: int, family: Family, index: int, spec: dict) -> dict:
    """Episode `index` of `family`, derived from (master seed, family, index) alone; `spec` holds
    the counts (triggers, non_triggers, work_turns, distractors)."""
    root = Stream("urd3", master_seed, family.name, index)
    sides = sides_of(master_seed, family, index)
    kinds = family.kinds
    ways = {k.name: WAYS[(i + root.child("ways").below(3)) % 3] for i, k in enumerate(root.child("order").shuffled(kinds))}
    text = root.child("text")

    # events of each half: (lines, [(type, side) in force after it]); a tuple line is a reply to write
    early, late = [], []
    for kind in kinds:
        side, way = sides[kind.name], ways[kind.name]
        if way == "explicit":
            events = late if text.below(2) else early
            events.append(([user(text.choice(OPENERS) + kind.statement(side)),
                            assistant(text.choice(ACKS))], [(kind.name, side)]))
        elif way == "update":
            early.append(([user(text.choice(OPENERS) + kind.statement(1 - side)),
                           assistant(text.choice(ACKS))], [(kind.name, 1 - side)]))
            late.append(([user("Change of plan: " + _lower(kind.statement(side))[:-1] + " from now on."),
                          assistant(text.choice(ACKS))], [(kind.name, side)]))
        else:  # correction: a request answered on the other side, then corrected
            request = kind.request(text.child("correction", kind.name))
            (late if text.below(2) else early).append(
                ([user(request), ("reply", request, kind.name, 1 - side), user("No, " + _lower(kind.statement(side))),
                  assistant("Sorry, I will.")], [(kind.name, side)]))
    work = spec["work_turns"][family.name]
    for n in range(work):
        kind = text.choice(kinds)
        request = kind.request(text.child("work", n), inside=True)
        (early if n % 2 == 0 else late).append(([user(request), ("reply", request, None, None)], []))
    for n, fact in enumerate(text.sample(DISTRACTORS[family.name], spec["distractors"][family.name])):
        (early if n % 2 == 0 else late).append(([user(fact), assistant(text.choice(ACKS))], []))

    in_force = {k.name: HABIT for k in kinds if not k.scoped}
    lines = ["Session log.", family.header]
    for event_lines, sets in [*text.shuffled(early), *text.shuffled(late)]:
        for line in event_lines:
            if isinstance(line, tuple):  # an assistant reply, on the sides in force (or the one to correct)
                _, request, wrong, wrong_side = line
                now = {**in_force, **({wrong: wrong_side} if wrong else {})}
                now = {n: s for n, s in now.items() if family.kind(n).in_scope(request)}
                line = assistant(family.write(request, now))
            lines.append(line)
        in_force.update(dict(sets))

    queries, qs = [], root.child("queries")
    for kind in kinds:
        asks = [("trigger", True)] * spec["triggers"] + ([("non_trigger", False)] * spec["non_triggers"] if kind.scoped else [])
        for n, (what, inside) in enumerate(asks):
            request = kind.request(qs.child(kind.name, n), inside=inside)
            queries.append({"type": kind.name, "kind": what, "request": request, "prompt": prompt(request),
                            "side": sides[kind.name],
                            "stale_side": 1 - sides[kind.name] if ways[kind.name] == "update" else None})
    queries = qs.shuffled(queries)
    for n, q in enumerate(queries):
        q["id"] = f"{family.name}-e{index:03d}-q{n:02d}"
    return {
        "task": family.name,
        "episode": index,
        "master_seed": master_seed,
        "header": family.header,
        "preferences": [{"type": k.name, "side": sides[k.name], "side_name": k.sides[sides[k.name]],
                         "way": ways[k.name], "scoped": k.scoped, "statement": k.statement(sides[k.name])}
                        for k in kinds],
        "transcript": "\n".join(lines) + "\n",
        "queries": [{"id": q.pop("id"), **q} for q in queries],
    }


def _lower(statement: str) -> str:
    return statement[0].lower() + statement[1:]


def payload(episode: dict) -> str:
    """What the oracle carries: the latest statement of every type, one a line."""
    return "\n".join(p["statement"] for p in episode["preferences"])
