"""The scripted arm's table, and the responder that answers a request from its data.

Extraction is keyed on the SHA-256 of the fenced note; the contradiction probe on the
unordered claim pair; the update probe on the ordered (earlier, later) pair; the
re-anchor probe on (retired claim, candidate). The re-anchor check confirms only a
restatement the table itself wrote. Instructions are never read, so rewording a prompt
changes no answer; a request the table does not hold is refused and counted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import InputError
from ..core.io import sha256_bytes
from ..llm import Request, fenced_blocks
from ..llm import purposes as P

TABLE_PATH = Path(__file__).parent / "data" / "scripted_table.json"
_CANDIDATE = re.compile(r"^c\d+$")


@dataclass(frozen=True)
class ScriptedTable:
    extraction: dict[str, list[dict]]
    contradiction: dict[frozenset, str]
    update: dict[tuple[str, str], tuple[str, str]]
    reanchor: dict[tuple[str, str], tuple[str, str | None]]

    @classmethod
    def load(cls, path: Path = TABLE_PATH) -> ScriptedTable:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(path, "file", "the scripted arm's table") from None
        contradiction: dict[frozenset, str] = {}
        for e in data.get("contradiction", []):
            key = frozenset((e["a"], e["b"]))
            if contradiction.setdefault(key, e["verdict"]) != e["verdict"]:
                raise InputError(path, f"contradiction[{e['a']!r}, {e['b']!r}]", "one verdict per pair")
        return cls(
            extraction={e["sha256"]: e["claims"] for e in data.get("extraction", [])},
            contradiction=contradiction,
            update={(e["earlier"], e["later"]): (e["verdict"], e.get("confirm", e["verdict"])) for e in data.get("update", [])},
            reanchor={(e["retired"], e["claim"]): (e["verdict"], e.get("restatement")) for e in data.get("reanchor", [])},
        )


def _update_reply(verdict: str) -> str:
    if verdict == "DIFFERENT":
        return "REASON: scripted table entry\nSLOT: NONE\nVERDICT: NO"
    return f"REASON: scripted table entry\nSLOT: {verdict}\nVERDICT: YES"


class ScriptedResponder:
    """Callable for :class:`urd.llm.ScriptedBackend`."""

    def __init__(self, table: ScriptedTable) -> None:
        self.table = table

    def __call__(self, request: Request):
        data = dict(fenced_blocks(request.user))
        if "note" in data:
            key = sha256_bytes(data["note"].encode("utf-8"))
            claims = self.table.extraction.get(key)
            if claims is None:
                return None, f"no extraction entry for the note with SHA-256 {key}"
            return json.dumps({"claims": claims})
        if "claim_a" in data and "claim_b" in data:
            found = self.table.contradiction.get(frozenset((data["claim_a"], data["claim_b"])))
            if found is None:
                return None, f"no contradiction entry for {data['claim_a']!r} / {data['claim_b']!r}"
            return f"REASON: scripted table entry\nVERDICT: {found}"
        if "earlier_claim" in data and "later_claim" in data:
            found = self.table.update.get((data["earlier_claim"], data["later_claim"]))
            if found is None:
                return None, f"no update entry for {data['earlier_claim']!r} then {data['later_claim']!r}"
            return _update_reply(found[1] if request.purpose == P.UPDATE_CONFIRM else found[0])
        if "retired_claim" in data and "restatement" in data:
            entry = self.table.reanchor.get((data["retired_claim"], data.get("original_claim", "")))
            if entry is None or entry[0] != "DEPENDS" or entry[1] != data["restatement"]:
                return None, "a restatement the table did not write"
            return json.dumps({"depended": True, "faithful": True, "reason": "scripted table entry"})
        if "retired_claim" in data:
            items = []
            for label, text in data.items():
                if not _CANDIDATE.match(label):
                    continue
                entry = self.table.reanchor.get((data["retired_claim"], text))
                if entry is None:
                    return None, f"no re-anchor entry for {text!r} against {data['retired_claim']!r}"
                item = {"claim": label, "verdict": entry[0], "reason": "scripted table entry"}
                if entry[1]:
                    item["restatement"] = entry[1]
                items.append(item)
            return json.dumps({"claims": items})
        return None, f"no table for a {request.purpose} request with data {sorted(data)}"
