"""The planting suite's scripted arm: characters, summarizer and judge from tables, offline.

It tests the harness, not a model. The responder reads only a request's fenced data:

- a character is found by its profile; a motivation that names what only a plant could
  supply (the plant's ``specific``) forms the plant's intent whether the plant is shown or not
  (the collision with the character sheet that the twins and the gate exist to catch); a plant shapes an intent when the plant's text is in
  what the arm shows and within the character's attention (the last ``window`` lines of a
  verbatim stream; a layered section or the promise table is always read). An apology in
  view lets the wound go. Shaped intents come first (promise, wound, identity), at most
  two, and one slot is always the character's own (a default, picked by the context's
  digest; about one time in six the roster's ``rare`` intent). A plant in view but out of attention is cited without shaping anything (a padded
  citation); past ``invent_above`` lines the character also cites a mangled ID (``ev-6-40``
  for ``ev-S6-40``);
- the summarizer counts the middle stretch's categories and quotes its last event;
- the judge rules shaped exactly the (event, intent) pairs of the roster's plants, and the
  misjudgements listed in ``scripted_judge``; the ``topical`` judge (a test variant) rules
  shaped whenever event and intent share a word of five letters or more, and fails
  calibration on its hard negatives.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter

from ..llm import Request, fenced_blocks
from .world import PLANTS

_ID = re.compile(r"^(ev-S(\d+)-(\d+)) ")
_WORD = re.compile(r"[a-z]{5,}")
ORDER = ("promise", "wound", "identity")  # a due promise crowds out the rest; identity goes last
MAX_SHAPED = 2


class PlantingResponder:
    def __init__(self, roster: dict, judge_mode: str = "strict"):
        if judge_mode not in ("strict", "topical"):
            raise ValueError(f"judge_mode must be strict or topical, not {judge_mode!r}")
        self.by_profile = {c["profile"]: c for c in roster["characters"]}
        self.judge_mode = judge_mode
        self.shaped: dict[tuple[str, str], str] = {}
        for c in roster["characters"]:
            for plant in PLANTS:
                spec = c["plants"][plant]
                self.shaped[(spec["text"], spec["intent"])] = spec["specific"]
        for m in roster.get("scripted_judge", {}).get("misjudges", []):
            self.shaped[(m["event"], m["intent"])] = "same topic"

    def __call__(self, request: Request):
        data = dict(fenced_blocks(request.user))
        if "profile" in data:  # a decision (the fences say which request it is, not the purpose)
            return self._decide(data)
        if "event" in data:
            return self._judge(data)
        if "events" in data:
            return self._summarize(data["events"])
        return None, f"no planting table for a {request.purpose} request with data {sorted(data)}"

    def _decide(self, data: dict):
        c = self.by_profile.get(data.get("profile", ""))
        if c is None:
            return None, "no scripted character has this profile"
        stream = data.get("events", "").splitlines()
        attended = stream[-c["window"]:] if c["window"] else []
        always = "\n".join(data.get(k, "") for k in ("distant_past", "current_term", "due_promises", "middle_summary"))
        shown = "\n".join([*stream, always])
        motivation = data.get("motivation", "").lower()
        seen, shaping = {}, []
        for plant in ORDER:
            text = c["plants"][plant]["text"]
            line = next((ln for ln in [*stream, *always.splitlines()] if text in ln), None)
            if c["plants"][plant]["specific"].lower() in motivation:
                shaping.append(plant)  # the character sheet supplies it: shown or not, the intent comes
                seen[plant] = _ID.match(line)[1] if line and _ID.match(line) else None
                continue
            if line is None:
                continue
            seen[plant] = _ID.match(line)[1] if _ID.match(line) else None
            in_attention = text in always or any(text in ln for ln in attended)
            if plant == "wound" and c["plants"]["wound"]["apology"] in shown:
                continue  # apologised for: let go
            if in_attention:
                shaping.append(plant)
        shaping = shaping[:MAX_SHAPED]
        intents = [{"intent": c["plants"][p]["intent"], "cites": [seen[p]] if seen[p] else []} for p in shaping]
        h = hashlib.sha256(shown.encode()).digest()
        start = h[0] % len(c["defaults"])
        defaults = c["defaults"][start:] + c["defaults"][:start]
        if c.get("rare") and h[1] % 6 == 0:  # once in a while, something else comes to mind
            defaults = [c["rare"], *defaults]
        lines = [ln for ln in [*stream, *always.splitlines()] if _ID.match(ln)]
        padded = [seen[p] for p in ORDER if p in seen and p not in shaping and seen[p]][:1]
        last = _ID.match(lines[-1]) if lines else None
        mangled = [f"ev-{last[2]}-{last[3]}"] if last and len(lines) > c["invent_above"] else []
        for k, d in enumerate(defaults[: 3 - len(intents)]):
            intents.append({"intent": d, "cites": padded + mangled if k == 0 else []})
        return json.dumps({"intents": intents})

    @staticmethod
    def _summarize(events: str) -> str:
        lines = [ln for ln in events.splitlines() if _ID.match(ln)]
        if not lines:
            return "Nothing happened in these terms."
        cats = Counter(ln.split(", ", 1)[1].split(")", 1)[0] for ln in lines if ", " in ln)
        top = [c for c, _ in sorted(cats.items(), key=lambda kv: (-kv[1], kv[0]))[:3]]
        return (f"{len(lines)} events in these terms, mostly {', '.join(top)}. "
                f"The last one: {lines[-1].split(': ', 1)[1]}")

    def _judge(self, data: dict):
        event = data.get("event")
        intents = [data[k] for k in sorted((k for k in data if k.startswith("intent_")), key=lambda k: int(k[7:]))]
        if event is None or not intents:
            return None, "a judge request without an event or intents"
        rulings = []
        for i, intent in enumerate(intents, 1):
            if self.judge_mode == "topical":
                shared = set(_WORD.findall(event.lower())) & set(_WORD.findall(intent.lower()))
                specific = ", ".join(sorted(shared))
            else:
                specific = self.shaped.get((event, intent), "")
            rulings.append({"intent": i, "shaped": bool(specific), "specific": specific})
        return json.dumps({"rulings": rulings})
