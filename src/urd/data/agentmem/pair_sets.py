"""The four registered update-gate pair sets, verified against their registry."""

from __future__ import annotations

import json
from pathlib import Path

from ...core.errors import DigestMismatch, InputError
from ...core.io import sha256_file

PAIRS_DIR = Path(__file__).parent / "pairs"
SET_ORDER = ("development", "heldout", "past-values", "past-marker-heldout")
EXPECTED = ("changes", "not_changes", "report")


def registry(calibration_dir: Path) -> dict:
    path = Path(calibration_dir) / "pair_sets.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "file", "the pair-set registry") from None
    sets = data.get("sets")
    if not isinstance(sets, dict) or set(sets) != set(SET_ORDER):
        raise InputError(path, "sets", f"exactly the sets {list(SET_ORDER)}", sorted(sets or {}))
    return data


def load_set_rows(calibration_dir: Path) -> dict[str, list[dict]]:
    """Every set's rows, in registry order, after checking each file's bytes and rows."""
    reg = registry(calibration_dir)
    out = {}
    for name in SET_ORDER:
        entry = reg["sets"][name]
        path = PAIRS_DIR / entry["file"]
        if not path.exists():
            raise InputError(path, "file", f"the registered pair set {name}")
        actual = sha256_file(path)
        if actual != entry["sha256"]:
            raise DigestMismatch(path, entry["sha256"], actual)
        rows = json.loads(path.read_text(encoding="utf-8"))["rows"]
        if len(rows) != entry["rows"]:
            raise InputError(path, "rows", f"{entry['rows']} rows as registered", len(rows))
        for i, row in enumerate(rows):
            for key in ("id", "class", "expected", "older", "newer"):
                if not isinstance(row.get(key), str) or not row[key]:
                    raise InputError(path, f"rows[{i}].{key}", "a non-empty string", row.get(key))
            if row["expected"] not in EXPECTED:
                raise InputError(path, f"rows[{i}].expected", f"one of {EXPECTED}", row["expected"])
        out[name] = rows
    return out


def set_info(calibration_dir: Path) -> dict[str, dict]:
    reg = registry(calibration_dir)
    return {name: {**reg["sets"][name], "registered": reg.get("registered")} for name in SET_ORDER}
