"""Measured usage profiles: what a live report's runs used, per purpose, so the next
estimate of that case and model is priced from measurement instead of the bound."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping

from ..core.errors import InputError

ABOUT = (
    "Measured usage per purpose, from live reports of one model on every purpose: for "
    "trip-vs-move the costliest run of each variant, for update-gate the whole replay. "
    "The estimate prices these tokens at the configured list prices."
)
TOKENS = ("input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens", "calls")


def _by_purpose(rows: Iterable[Mapping]) -> dict:
    out: dict[str, dict] = {}
    for row in rows:
        acc = out.setdefault(row["purpose"], dict.fromkeys(TOKENS, 0))
        for k in TOKENS:
            acc[k] += row[k]
    return dict(sorted(out.items()))


def _usable(report: Mapping, origin: str) -> None:
    if report.get("arm") != "live" or report.get("mixed"):
        raise InputError(origin, "arm", "a live report with every purpose on one model")
    if report["suite"] == "trip-vs-move" and any(r["incomplete"] or r["invalid"] for r in report["runs"]):
        raise InputError(origin, "runs", "every run complete and valid")
    if report["suite"] == "update-gate" and (report["incomplete"] or report["invalid"]):
        raise InputError(origin, "incomplete", "a complete, valid replay")


def merge(profile: Mapping, report: Mapping, origin: str) -> dict:
    """``profile`` with the entries ``report`` measures added or replaced."""
    _usable(report, origin)
    out = copy.deepcopy(dict(profile)) or {"about": ABOUT}
    source = f"{origin}, measured on {report['model']}"
    if report["suite"] == "trip-vs-move":
        entry = out.setdefault("trip-vs-move", {}).setdefault(report["case"], {}).setdefault(report["model"], {})
        for variant in ("move", "trip-alone"):
            runs = [r for r in report["runs"] if r["variant"] == variant]
            if runs:
                costliest = max(runs, key=lambda r: sum(row["list_cost_usd"] for row in r["usage"]["by_purpose"]))
                entry[variant] = {"by_purpose": _by_purpose(costliest["usage"]["by_purpose"]), "source": source}
    elif report["suite"] == "update-gate":
        out.setdefault("update-gate", {})[report["model"]] = {
            "samples": report["samples_per_pair"],
            "by_purpose": _by_purpose(report["usage"]["by_purpose"]),
            "source": source,
        }
    else:
        raise InputError(origin, "suite", "trip-vs-move or update-gate", report.get("suite"))
    return out
