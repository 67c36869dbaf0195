"""The judge: its reply grammar, and the calibration it must pass before any use.

A calibration set is a registered JSON file of items (an event, an intent, the expected
ruling, and what kind of item it is) and of ``companions``, ordinary intents no event of the
set could have shaped; its SHA-256 must match its line in the registry (``judge_sets.sha256``,
sha256sum format) or the run refuses to start. The study's standard holds at registration and
at every load (`check_set`): at least 20 items, at least 5 positives and at least 5 hard
negatives, each hard negative's ``origin`` stated: ``harvested`` (a recorded misjudgement of
the system under test, with its ``source``) or ``hand-written``. The judge is calibrated in
the run's shape: every call rules three intents against one event, the item's among two
companions, at a position that turns with the item. `candidates` lists a run's likely
misjudgements (intents its judge ruled shaped by a plant in an unplanted twin, which the
character never saw) for a person to accept or reject; `harvest` makes the next version from
the accepted ones only, each recording the model it came from and who accepted it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import InputError, UrdError
from ..core.io import atomic_write_text, sha256_bytes
from ..core.manifest import format_manifest, read_manifest
from ..llm import LLM
from ..llm.parse import json_object
from . import prompts

KINDS = ("positive", "paraphrased positive", "hard negative")


class CalibrationFailed(UrdError):
    """The judge scored below the bar on its calibration set: nothing was judged with it."""

    def __init__(self, message: str, result: dict):
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class Ruling:
    shaped: bool
    specific: str


def parse_rulings(reply: str, n: int) -> list[Ruling] | None:
    """n rulings, in intent order, or None when the reply is off the protocol."""
    data = json_object(reply)
    if data is None or not isinstance(data.get("rulings"), list):
        return None
    by_intent: dict[int, Ruling] = {}
    for r in data["rulings"]:
        if not isinstance(r, dict) or not isinstance(r.get("shaped"), bool) or not isinstance(r.get("intent"), int):
            return None
        by_intent[r["intent"]] = Ruling(r["shaped"], str(r.get("specific") or ""))
    if sorted(by_intent) != list(range(1, n + 1)):
        return None
    return [by_intent[i] for i in range(1, n + 1)]


def judge(llm: LLM, event: str, intents: Sequence[str], *, max_tokens: int, replica: str = "") -> list[Ruling] | None:
    """The judge's rulings on each intent against one event (None: the reply was off protocol)."""
    if not intents:
        return []
    return parse_rulings(llm.ask(prompts.judge(event, intents, max_tokens=max_tokens, replica=replica)), len(intents))


# --- calibration sets -------------------------------------------------------------------------

MIN_ITEMS, MIN_POSITIVES, MIN_HARD_NEGATIVES = 20, 5, 5
ORIGINS = ("harvested", "hand-written")
SHAPE = 3  # intents a judge call rules, in the run and in calibration


def check_set(path: str | Path, data: object) -> None:
    """Refuse a calibration set that breaks a field or the study's standard, naming which."""
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise InputError(path, "items", "a JSON object with a list of items")
    if not isinstance(data.get("version"), int) or data["version"] < 2:
        raise InputError(path, "version", "2 or later (v1 predates each hard negative's origin and the companion "
                         "intents a judge call rules beside an item): use calibration/planting/judge-v2.json, or "
                         "derive a newer set from a run's report with `python -m urd.planting harvest` and `accept`",
                         data.get("version"))
    items = data["items"]
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise InputError(path, f"items[{i}]", "an object", type(item).__name__)
        for key, kind in (("event", str), ("intent", str), ("expected", bool), ("kind", str)):
            if not isinstance(item.get(key), kind):
                raise InputError(path, f"items[{i}].{key}", kind.__name__, item.get(key))
        if item["kind"] not in KINDS:
            raise InputError(path, f"items[{i}].kind", f"one of {list(KINDS)}", item["kind"])
        if item["expected"] != (item["kind"] != "hard negative"):
            raise InputError(path, f"items[{i}].expected", "true for a positive, false for a hard negative",
                             item["expected"])
        if item["kind"] == "hard negative":
            if item.get("origin") not in ORIGINS:
                raise InputError(path, f"items[{i}].origin", f"one of {list(ORIGINS)} (a hard negative says where it "
                                 "comes from)", item.get("origin"))
            if item["origin"] == "harvested" and not isinstance(item.get("source"), str):
                raise InputError(path, f"items[{i}].source", "the run a harvested misjudgement was recorded in",
                                 item.get("source"))
    positives = sum(i["kind"] != "hard negative" for i in items)
    negatives = len(items) - positives
    for what, n, least in (("items", len(items), MIN_ITEMS), ("positives", positives, MIN_POSITIVES),
                           ("hard negatives", negatives, MIN_HARD_NEGATIVES)):
        if n < least:
            raise InputError(path, what, f"at least {least} (the study's standard for a calibration set)", n)
    comp = data.get("companions")
    if not (isinstance(comp, list) and len(set(comp)) >= SHAPE - 1 and all(isinstance(c, str) and c for c in comp)):
        raise InputError(path, "companions", f"at least {SHAPE - 1} distinct ordinary intents, to ask every item in "
                         f"the run's shape of {SHAPE} intents a call", comp)


def load_set(path: str | Path, registry: str | Path) -> dict:
    """A calibration set, checked against its registered SHA-256, its fields and the standard."""
    path, registry = Path(path), Path(registry)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(path, "file", "a judge calibration set") from None
    pinned = read_manifest(registry).get(path.name)
    if pinned is None:
        raise InputError(registry, path.name, "a registered SHA-256 for this calibration set")
    actual = sha256_bytes(raw)
    if actual != pinned:
        raise InputError(path, "SHA-256", f"{pinned} (as registered in {registry})", actual)
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise InputError(path, "calibration set", "JSON", str(exc)) from None
    check_set(path, data)
    cal = {"version": data.get("version"), "sha256": actual, "path": str(path), "items": data["items"],
           "companions": data["companions"]}
    return {**cal, "hard_negatives": origins(cal)}


def register(path: str | Path, registry: str | Path) -> str:
    """Check a new calibration set against the standard and add its SHA-256 to the registry
    (a name already registered is never re-pinned)."""
    path, registry = Path(path), Path(registry)
    try:
        raw = path.read_bytes()
        data = json.loads(raw)
    except FileNotFoundError:
        raise InputError(path, "file", "a judge calibration set") from None
    except ValueError as exc:
        raise InputError(path, "calibration set", "JSON", str(exc)) from None
    check_set(path, data)
    entries = read_manifest(registry) if registry.exists() else {}
    digest = sha256_bytes(raw)
    if path.name in entries and entries[path.name] != digest:
        raise InputError(registry, path.name, "a new calibration-set name (registered sets are never re-pinned)",
                         entries[path.name])
    entries[path.name] = digest
    atomic_write_text(registry, format_manifest(entries))
    return digest


def origins(cal: dict) -> dict[str, int]:
    """How many hard negatives are recorded misjudgements and how many were written by hand."""
    negs = [i for i in cal["items"] if i["kind"] == "hard negative"]
    return {o: sum(i.get("origin") == o for i in negs) for o in ORIGINS}


def calibration_call(cal: dict, i: int) -> tuple[list[str], int]:
    """Item i's intent among two companions (the run's shape), and its position: the position
    turns with the item so that no slot is the only one calibrated."""
    comp = cal["companions"]
    others = [comp[(i + k) % len(comp)] for k in range(SHAPE - 1)]
    at = i % SHAPE
    return [*others[:at], cal["items"][i]["intent"], *others[at:]], at


def calibrate(llm: LLM, cal: dict, *, max_tokens: int, min_correct: int) -> dict:
    """Ask the judge every item in the run's shape; raise CalibrationFailed below the bar.
    Only the item's ruling is scored; a companion ruled shaped is reported beside it."""
    misses, correct, companions_shaped = [], 0, 0
    for i, item in enumerate(cal["items"]):
        intents, at = calibration_call(cal, i)
        rulings = judge(llm, item["event"], intents, max_tokens=max_tokens)
        got = None if rulings is None else rulings[at].shaped
        companions_shaped += 0 if rulings is None else sum(r.shaped for k, r in enumerate(rulings) if k != at)
        if got == item["expected"]:
            correct += 1
        else:
            misses.append({"item": i, "kind": item["kind"], "expected": item["expected"], "ruled": got})
    result = {"version": cal["version"], "sha256": cal["sha256"], "correct": correct, "items": len(cal["items"]),
              "required": min_correct, "passed": correct >= min_correct, "misses": misses,
              "intents_per_call": SHAPE, "companions_ruled_shaped": companions_shaped,
              "hard_negatives": origins(cal)}
    if not result["passed"]:
        raise CalibrationFailed(
            f"judge calibration: {correct}/{len(cal['items'])} on set v{cal['version']} ({cal['path']}), "
            f"below the required {min_correct}; misses: "
            + "; ".join(f"item {m['item']} ({m['kind']}) ruled {m['ruled']}" for m in misses[:5])
            + ". Nothing was judged with this judge.", result)
    return result


DECISIONS = ("accept", "reject")


def candidates(report: dict) -> dict:
    """A run's candidate misjudgements, for a person to review: every intent the run's judge ruled
    shaped by a plant in an unplanted twin, with the event, the intent and the ruling. A twin's
    character never saw the plant, so such a ruling is likely a misjudgement, but only a reviewer
    can say the intent is not shaped by the twin's own filler: each candidate's `decision` is
    left null, to be set to "accept" or "reject", and `reviewed_by` to who (or what) reviewed."""
    out, seen = [], set()
    for d in report.get("decisions", []):
        if d["variant"] != "unplanted":
            continue
        for plant, rulings in d["judged"].items():
            for intent, ruling in zip(d["intents"], rulings or []):
                key = (d["plant_events"][plant], intent["intent"])
                if ruling["shaped"] and key not in seen:
                    seen.add(key)
                    out.append({"event": key[0], "intent": key[1], "ruling": dict(ruling), "model": report.get("model"),
                                "source": f"{report.get('model')} run, unplanted twin: {d['arm']}/{d['character']}/"
                                          f"seed {d['seed']}/{plant}", "decision": None})
    return {"about": "candidate misjudgements of a planting run's judge: set each decision to accept or reject, "
                     "and reviewed_by; `python -m urd.planting accept` makes the next calibration set of the accepted",
            "model": report.get("model"), "reviewed_by": None, "candidates": out}


def accepted(review: dict, where: str | Path) -> list[dict]:
    """The accepted candidates of a reviewed file as calibration items (hard negatives,
    harvested, with who accepted them); an unreviewed file or candidate is refused by name."""
    who = review.get("reviewed_by")
    if not isinstance(who, str) or not who.strip():
        raise InputError(where, "reviewed_by", "who (or what) reviewed the candidates", who)
    items = []
    for n, c in enumerate(review.get("candidates", [])):
        if c.get("decision") not in DECISIONS:
            raise InputError(where, f"candidates[{n}].decision", "accept or reject", c.get("decision"))
        if c["decision"] == "accept":
            items.append({"event": c["event"], "intent": c["intent"], "expected": False, "kind": "hard negative",
                          "origin": "harvested", "model": c.get("model"), "source": c["source"], "accepted_by": who})
    return items


def harvest(review: dict, cal: dict, output: str | Path, registry: str | Path, where: str | Path = "review") -> dict:
    """The next calibration-set version: the current items plus the reviewed file's accepted
    candidates. Writes the set and registers its SHA-256; returns the new set."""
    items = list(cal["items"])
    seen = {(i["event"], i["intent"]) for i in items}
    items += [i for i in accepted(review, where) if (i["event"], i["intent"]) not in seen]
    new = {"version": int(cal["version"] or 0) + 1, "about": f"v{cal['version']} plus the hard negatives accepted from "
           f"the unplanted twins of a {review.get('model')} run by {review['reviewed_by']}",
           "companions": list(cal["companions"]), "items": items}
    text = json.dumps(new, indent=2, ensure_ascii=False) + "\n"
    output, registry = Path(output), Path(registry)
    check_set(output, new)
    entries = read_manifest(registry) if registry.exists() else {}
    if output.name in entries and output.exists():
        raise InputError(output, "file", "a new calibration-set name (registered sets are never overwritten)")
    atomic_write_text(output, text)
    entries[output.name] = sha256_bytes(text.encode())
    atomic_write_text(registry, format_manifest(entries))
    return new
