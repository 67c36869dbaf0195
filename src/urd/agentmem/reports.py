"""Reading a saved suite report back (the table, the rescore and the planting CLI read them)."""

from __future__ import annotations

import json
from pathlib import Path

from ..core.errors import InputError


def read_report(path: Path, suite: str) -> dict:
    """A saved report of `suite`; a missing file, bad JSON or another suite's report is an error."""
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "file", f"a saved {suite} report") from None
    except ValueError as exc:
        raise InputError(path, "report", "JSON", str(exc)) from None
    if report.get("suite") != suite:
        raise InputError(path, "suite", suite, report.get("suite"))
    return report
