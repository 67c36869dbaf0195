"""The judge: its reply grammar, and the calibration it must pass before any use.

A calibration set is a registered JSON file of items (an event, an intent, the expected
ruling, and what kind of item it is); its SHA-256 must match its line in the registry
(``judge_sets.sha256``, sha256sum format) or the run refuses to start. Hard negatives are
real misjudgements of the system under test: an intent on the event's topic that the event
did not shape. `harvest` makes the next version from a run's unplanted twins, where any
intent the judge ruled shaped by a plant the character never saw is such a misjudgement.
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

def load_set(path: str | Path, registry: str | Path) -> dict:
    """A calibration set, checked against its registered SHA-256 and for its fields."""
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
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise InputError(path, "items", "a JSON object with a list of items")
    for i, item in enumerate(data.get("items", [])):
        for key, kind in (("event", str), ("intent", str), ("expected", bool), ("kind", str)):
            if not isinstance(item.get(key), kind):
                raise InputError(path, f"items[{i}].{key}", kind.__name__, item.get(key))
        if item["kind"] not in KINDS:
            raise InputError(path, f"items[{i}].kind", f"one of {list(KINDS)}", item["kind"])
        if item["expected"] != (item["kind"] != "hard negative"):
            raise InputError(path, f"items[{i}].expected", "true for a positive, false for a hard negative",
                             item["expected"])
    if not data.get("items"):
        raise InputError(path, "items", "at least one item")
    return {"version": data.get("version"), "sha256": actual, "path": str(path), "items": data["items"]}


def calibrate(llm: LLM, cal: dict, *, max_tokens: int, min_correct: int) -> dict:
    """Ask the judge every item (one intent a call); raise CalibrationFailed below the bar."""
    misses, correct = [], 0
    for i, item in enumerate(cal["items"]):
        rulings = judge(llm, item["event"], [item["intent"]], max_tokens=max_tokens)
        got = None if rulings is None else rulings[0].shaped
        if got == item["expected"]:
            correct += 1
        else:
            misses.append({"item": i, "kind": item["kind"], "expected": item["expected"], "ruled": got})
    result = {"version": cal["version"], "sha256": cal["sha256"], "correct": correct, "items": len(cal["items"]),
              "required": min_correct, "passed": correct >= min_correct, "misses": misses}
    if not result["passed"]:
        raise CalibrationFailed(
            f"judge calibration: {correct}/{len(cal['items'])} on set v{cal['version']} ({cal['path']}), "
            f"below the required {min_correct}; misses: "
            + "; ".join(f"item {m['item']} ({m['kind']}) ruled {m['ruled']}" for m in misses[:5])
            + ". Nothing was judged with this judge.", result)
    return result


def harvest(report: dict, cal: dict, output: str | Path, registry: str | Path) -> dict:
    """The next calibration-set version: the current items plus every intent the run's judge
    ruled shaped by a plant in an unplanted twin (a false positive by construction), as hard
    negatives. Writes the set and registers its SHA-256; returns the new set."""
    items = list(cal["items"])
    seen = {(i["event"], i["intent"]) for i in items}
    for d in report.get("decisions", []):
        if d["variant"] != "unplanted":
            continue
        for plant, rulings in d["judged"].items():
            for intent, ruling in zip(d["intents"], rulings or []):
                key = (d["plant_events"][plant], intent["intent"])
                if ruling["shaped"] and key not in seen:
                    seen.add(key)
                    items.append({"event": key[0], "intent": key[1], "expected": False, "kind": "hard negative",
                                  "source": f"{report.get('model')} run, unplanted twin: {d['arm']}/{d['character']}/"
                                            f"seed {d['seed']}/{plant}"})
    new = {"version": int(cal["version"] or 0) + 1, "about": f"v{cal['version']} plus hard negatives harvested from "
           f"the unplanted twins of a {report.get('model')} run", "items": items}
    text = json.dumps(new, indent=2, ensure_ascii=False) + "\n"
    output, registry = Path(output), Path(registry)
    entries = read_manifest(registry) if registry.exists() else {}
    if output.name in entries and output.exists():
        raise InputError(output, "file", "a new calibration-set name (registered sets are never overwritten)")
    atomic_write_text(output, text)
    entries[output.name] = sha256_bytes(text.encode())
    atomic_write_text(registry, format_manifest(entries))
    return new
