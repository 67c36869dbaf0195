"""The planting suite's seeded world: each character's event stream, term by term.

Everything comes from the master seed and the roster through the project's SHA-256 stream
(urd.core.rng) and fixed templates, never from a model: the same bytes on every machine.
A world is (seed, variant); the variants share every event except these:

- ``planted``: the character's three plants (a wound and an identity moment in terms 1-2, a
  promise in term 2, due at the decision term) at seeded positions;
- ``unplanted``: the twin: the same positions hold the roster's ordinary filler instead;
- ``apologised``: ``planted`` plus the wound's apology at a seeded position of term 3 (the
  counterfactual the write-up could not run).

Ordinary promises (due a term or two later) are kept by a later event, or left open, so that
the due-promise table the store derives is never just the plant.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from ..core.errors import InputError
from ..core.rng import Stream

ROSTER_PATH = Path(__file__).parent / "data" / "roster.json"
PLANTS = ("wound", "promise", "identity")
PLANT_CATEGORY = {"wound": "conflict", "promise": "promise", "identity": "recognition"}
VARIANTS = ("unplanted", "planted", "apologised")
KEPT_SHARE = (3, 4)  # an ordinary promise is meant to be kept with probability 3/4; fewer are (about
# two in three), when its keeping falls on a plant's slot, a promise or another keeping
ORDINARY = "school"  # what a plant's slot holds in place of a drawn promise


@dataclass(frozen=True)
class Event:
    seed: int
    variant: str
    character: str
    term: int
    n: int
    category: str
    text: str
    due_term: int | None = None  # a promise: the term it falls due
    closes: str | None = None    # keeping a promise: the promise's ID
    plant: str | None = None     # which plant this is (the generator's label; never shown to an arm)

    @property
    def id(self) -> str:
        return event_id(self.term, self.n)

    def row(self) -> dict:
        return {"id": self.id, **asdict(self)}


def event_id(term: int, n: int) -> str:
    return f"ev-S{term}-{n}"


@lru_cache(maxsize=4)
def load_roster(path: str | Path = ROSTER_PATH) -> dict:
    path = Path(path)
    try:
        roster = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "file", "the planting roster") from None
    except ValueError as exc:
        raise InputError(path, "roster", "JSON", str(exc)) from None
    for i, c in enumerate(roster.get("characters", [])):
        for key in ("id", "name", "profile", "motivation", "plants", "defaults", "window", "invent_above"):
            if key not in c:
                raise InputError(path, f"characters[{i}].{key}", "present")
        for plant in PLANTS:
            need = ("text", "twin", "intent", "specific") + (("apology",) if plant == "wound" else ())
            missing = [k for k in need if k not in c["plants"].get(plant, {})]
            if missing:
                raise InputError(path, f"characters[{i}].plants.{plant}", f"keys {list(need)}", f"missing {missing}")
    return roster


@dataclass(frozen=True)
class Shape:
    terms: int = 6
    events_per_term: int = 40
    seeds: int = 6

    @classmethod
    def from_settings(cls, planting: dict) -> Shape:
        w = planting["world"]
        return cls(terms=w["terms"], events_per_term=w["events_per_term"], seeds=w["seeds"])

    @property
    def decision_term(self) -> int:
        return self.terms + 1


def _fill(template: str, name: str, stream: Stream, pools: dict, **fixed) -> tuple[str, dict]:
    slots = {k: fixed.get(k) or stream.choice(v) for k, v in pools.items()}
    return template.format(name=name, **slots, **{k: v for k, v in fixed.items() if k not in slots}), slots


def _categories(weights: dict) -> list[str]:
    return [c for c, w in sorted(weights.items()) for _ in range(w)]


def plant_positions(master_seed: int, seed: int, cid: str, shape: Shape) -> dict[str, tuple[int, int]]:
    """(term, n) of each plant, and of the wound's apology, for one character and seed."""
    s = Stream(master_seed, "planting", "positions", seed, cid)
    per = shape.events_per_term
    wound = (1, 1 + s.below(per))
    promise = (2, 1 + s.below(per))
    identity_term = 1 + s.below(2)
    taken = {wound, promise}
    while True:
        identity = (identity_term, 1 + s.below(per))
        if identity not in taken:
            break
    return {"wound": wound, "promise": promise, "identity": identity, "apology": (3, 1 + s.below(per))}


def character_events(master_seed: int, seed: int, variant: str, c: dict, filler: dict, shape: Shape) -> list[Event]:
    """One character's stream in one world, terms 1..shape.terms, in order."""
    if variant not in VARIANTS:
        raise InputError("planting world", "variant", f"one of {list(VARIANTS)}", variant)
    name, pools = c["name"], filler["pools"]
    cats = _categories(filler["weights"])
    where = plant_positions(master_seed, seed, c["id"], shape)
    at = {pos: plant for plant, pos in where.items()}
    open_promises: dict[int, list[tuple[str, dict]]] = {}  # due term -> (promise ID, slots)
    out: list[Event] = []
    for term in range(1, shape.terms + 1):
        s = Stream(master_seed, "planting", "events", seed, c["id"], term)
        # ordinary promises falling due now: kept at a seeded position, or left open
        due = [(pid, slots) for pid, slots in open_promises.pop(term, []) if s.below(KEPT_SHARE[1]) < KEPT_SHARE[0]]
        keep_at = {1 + s.below(shape.events_per_term): item for item in due}
        for n in range(1, shape.events_per_term + 1):
            plant = at.get((term, n))
            # the filler draw happens whatever the slot holds, so the variants stay in step; a
            # plant's slot (the apology's too) never holds an ordinary promise or keeps one, in
            # any variant, so the due promises never differ between variants
            category = s.choice(cats)
            if category == "promise" and plant is not None:
                category = ORDINARY
            if category == "promise":
                due_term = min(term + 1 + s.below(2), shape.terms + 1)
                text, slots = _fill(filler["promise"], name, s, pools, due=str(due_term))
                ev = Event(seed, variant, c["id"], term, n, "promise", text, due_term=due_term)
                if due_term <= shape.terms:
                    open_promises.setdefault(due_term, []).append((ev.id, slots))
            else:
                text, _ = _fill(s.choice(filler["categories"][category]), name, s, pools)
                ev = Event(seed, variant, c["id"], term, n, category, text)
            if n in keep_at and not ev.due_term and plant is None:
                pid, slots = keep_at[n]
                ev = Event(seed, variant, c["id"], term, n, "promise", _fill(filler["kept"], name, s, pools, **slots)[0],
                           closes=pid)
            if plant == "apology":
                if variant == "apologised":
                    ev = Event(seed, variant, c["id"], term, n, "conflict", c["plants"]["wound"]["apology"], plant="apology")
            elif plant is not None:
                spec = c["plants"][plant]
                if variant == "unplanted":  # the twin stands where the plant stood, in its category:
                    # every arm routes it as it routes the plant (kept, summarised or dropped alike)
                    ev = Event(seed, variant, c["id"], term, n, PLANT_CATEGORY[plant], spec["twin"])
                else:
                    ev = Event(seed, variant, c["id"], term, n, PLANT_CATEGORY[plant], spec["text"], plant=plant,
                               due_term=shape.decision_term if plant == "promise" else None)
            out.append(ev)
    return out


def world_events(master_seed: int, shape: Shape, roster: dict) -> Iterator[Event]:
    """Every event of every world: seeds 1..shape.seeds, each variant, each character."""
    for seed in range(1, shape.seeds + 1):
        for variant in VARIANTS:
            for c in roster["characters"]:
                yield from character_events(master_seed, seed, variant, c, roster["filler"], shape)


def write_world(path: str | Path, master_seed: int, shape: Shape, roster: dict) -> int:
    """The world as JSON lines (one event a line, in generation order), written atomically."""
    from ..core.io import atomic_write_text

    lines = [json.dumps(e.row(), sort_keys=True, ensure_ascii=False) for e in world_events(master_seed, shape, roster)]
    atomic_write_text(path, "\n".join(lines) + "\n")
    return len(lines)


def read_world(path: str | Path) -> dict[tuple[int, str, str], list[Event]]:
    """{(seed, variant, character): events in order} from a world file."""
    path = Path(path)
    out: dict[tuple[int, str, str], list[Event]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(path, "file", "a planting world (python -m urd.planting world)") from None
    fields = set(Event.__dataclass_fields__)
    for i, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
            ev = Event(**{k: row[k] for k in fields})
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(path, f"line {i}", f"an event with fields {sorted(fields)}", str(exc)) from None
        if row.get("id") != ev.id:
            raise InputError(path, f"line {i}: id", ev.id, row.get("id"))
        out.setdefault((ev.seed, ev.variant, ev.character), []).append(ev)
    return out
