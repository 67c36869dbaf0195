"""Planned spend of a dry run: one line after ``snakemake -n`` with GPU/CPU hours and dollars.

Rules declare what they will bill as *integer* resources, because Snakemake rounds float
resources (``cpu_seconds=1.6`` becomes 2), in seconds so that many short jobs are not each
billed a whole minute:

* ``gpu_seconds`` — GPU-device seconds (2 GPUs for 30 min = 3600),
* ``cpu_seconds`` — CPU-core seconds (4 cores for 30 min = 7200),
* ``usd_cents``   — API dollars in cents (LLM suites), billed as is.

Prices are per hour, dated, from config (see :data:`PRICES_SCHEMA`). All arithmetic is in
``Decimal`` so the printed figure does not depend on float rounding.

Hooking into Snakemake (measured on 9.27.1): ``onstart``/``onsuccess`` do not fire in a dry run
and ``workflow.dryrun`` is still False while the Snakefile is parsed, so the line is printed from
an ``atexit`` handler that reads ``workflow.dryrun`` lazily. By then the dry-run executor has
marked every job finished, so jobs are taken from ``dag.needrun_jobs(exclude_finished=False)``;
jobs whose outputs were already up to date never enter that set. A dry run that failed (missing
input, no rule for a target) logs an error through Snakemake's logger; the handler watches for
that and prints nothing rather than a misleading "nothing to spend".
"""

from __future__ import annotations

import atexit
import datetime as _dt
import logging
import re
import sys
from collections.abc import Iterable, Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, TextIO

from ..core.errors import InputError, UrdError

UNITS = ("gpu_seconds", "cpu_seconds", "usd_cents")

# JSON Schema for the ``prices:`` block of config/config.yaml (embed under properties.prices).
PRICES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["as_of", "gpu_usd_per_hour", "cpu_usd_per_hour"],
    "properties": {
        "as_of": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$",
                  "description": "date the prices were read (quote it in YAML)"},
        "gpu_usd_per_hour": {"type": "number", "minimum": 0, "description": "one GPU, per hour"},
        "cpu_usd_per_hour": {"type": "number", "minimum": 0, "description": "one CPU core, per hour"},
        "source": {"type": "string", "description": "where the prices come from"},
    },
}

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_CENT = Decimal("0.01")


def check_prices(prices: Mapping[str, Any], where: str = "config") -> dict[str, Any]:
    """Validated copy of a ``prices`` block; errors name ``prices.<field>`` and what was expected."""
    if not isinstance(prices, Mapping):
        raise InputError(where, "prices", "a mapping with as_of, gpu_usd_per_hour, cpu_usd_per_hour", prices)
    out: dict[str, Any] = {}
    as_of = prices.get("as_of")
    if isinstance(as_of, _dt.date):  # unquoted YAML dates arrive as date objects
        as_of = as_of.isoformat()
    if not isinstance(as_of, str) or not _DATE.match(as_of):
        raise InputError(where, "prices.as_of", "a date YYYY-MM-DD", as_of)
    out["as_of"] = as_of
    for key in ("gpu_usd_per_hour", "cpu_usd_per_hour"):
        v = prices.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float, Decimal)) or v < 0:
            raise InputError(where, f"prices.{key}", "a non-negative number (US$ per hour)", v)
        out[key] = Decimal(str(v))
    unknown = set(prices) - set(PRICES_SCHEMA["properties"])
    if unknown:
        raise InputError(where, f"prices.{sorted(unknown)[0]}", f"one of {sorted(PRICES_SCHEMA['properties'])}", None)
    return out


def job_units(resources: Mapping[str, Any], where: str = "job") -> dict[str, int]:
    """The three billing units of one job (0 when undeclared), checked to be integers >= 0."""
    units = {}
    for key in UNITS:
        v = resources.get(key, 0)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise InputError(where, f"resources.{key}", "a non-negative integer", v)
        units[key] = v
    return units


def planned_spend(jobs_resources: Iterable[Mapping[str, Any]], prices: Mapping[str, Any]) -> dict[str, Any]:
    """Sum the billing units of the jobs to run and price them.

    Returns ``jobs``, the summed units, ``gpu_hours``/``cpu_hours``, ``usd_compute``,
    ``usd_api``, ``usd_total`` (Decimals; dollars rounded half-up to the cent at the end) and
    the prices used (``as_of`` included).
    """
    p = check_prices(prices)
    n = 0
    tot = dict.fromkeys(UNITS, 0)
    for i, res in enumerate(jobs_resources):
        for key, v in job_units(res, where=f"job {i}").items():
            tot[key] += v
        n += 1
    gpu_h = Decimal(tot["gpu_seconds"]) / 3600
    cpu_h = Decimal(tot["cpu_seconds"]) / 3600
    compute = gpu_h * p["gpu_usd_per_hour"] + cpu_h * p["cpu_usd_per_hour"]
    api = Decimal(tot["usd_cents"]) / 100
    return {
        "jobs": n,
        **tot,
        "gpu_hours": gpu_h,
        "cpu_hours": cpu_h,
        "usd_compute": compute.quantize(_CENT, ROUND_HALF_UP),
        "usd_api": api,
        "usd_total": (compute + api).quantize(_CENT, ROUND_HALF_UP),
        "prices": p,
    }


def format_spend_line(spend: Mapping[str, Any]) -> str:
    """One line, e.g. ``urd planned spend (3 jobs to run): GPU 1.50 h, CPU 0.20 h, US$ 3.41 (...)``."""
    p = spend["prices"]
    if spend["jobs"] == 0:
        return "urd planned spend: nothing to run, nothing to spend (US$ 0.00)"
    jobs = f"{spend['jobs']} job{'s' if spend['jobs'] != 1 else ''} to run"
    return (
        f"urd planned spend ({jobs}): "
        f"GPU {_2(spend['gpu_hours'])} h, CPU {_2(spend['cpu_hours'])} h, US$ {_2(spend['usd_total'])} "
        f"(GPU US${_2(p['gpu_usd_per_hour'])}/h, CPU US${_2(p['cpu_usd_per_hour'])}/h as of {p['as_of']}; "
        f"API US${_2(spend['usd_api'])})"
    )


def _2(x: Decimal) -> str:
    return str(Decimal(x).quantize(_CENT, ROUND_HALF_UP))


def sweep_of(rule: str, wildcards: Mapping[str, Any]) -> str | None:
    """The rung-2 sweep a job belongs to (its own line under the total), or None."""
    if rule.startswith("chain_"):
        return "rung 2 chains"
    if rule.startswith("sweep_"):
        return "rung 2 Pareto sweep"
    if rule == "dose_summary" or (rule == "tune_state" and str(wildcards.get("recipe", "")).startswith("dose")):
        return "rung 2 dose-response"
    return None


def format_breakdown(groups: Mapping[str, list[dict[str, int]]], prices: Mapping[str, Any]) -> list[str]:
    """One line a sweep: ``  of which rung 2 chains (12 jobs): GPU 0.00 h, CPU 1.20 h, US$ 0.06``."""
    out = []
    for name in sorted(groups):
        spend = planned_spend(groups[name], prices)
        out.append(f"  of which {name} ({spend['jobs']} job{'s' if spend['jobs'] != 1 else ''}): "
                   f"GPU {_2(spend['gpu_hours'])} h, CPU {_2(spend['cpu_hours'])} h, US$ {_2(spend['usd_total'])}")
    return out


class _ErrorSeen(logging.Handler):
    """Remembers whether Snakemake logged an error (the dry run failed)."""

    def __init__(self):
        super().__init__(level=logging.ERROR)
        self.seen = False

    def emit(self, record):
        self.seen = True


_registered: set[int] = set()


def register_spend_preview(workflow, prices: Mapping[str, Any], *, where: str = "config",
                           stream: TextIO | None = None) -> None:
    """Print the planned-spend line at the end of a dry run. Call once from the Snakefile.

    ``prices`` is validated now, so a bad price block fails at parse time, naming the field.
    """
    checked = check_prices(prices, where)
    if id(workflow) in _registered:  # the Snakefile may be parsed again in one process
        return
    _registered.add(id(workflow))
    errors = _ErrorSeen()
    logging.getLogger("snakemake.logging").addHandler(errors)

    def _report():
        if not workflow.dryrun or errors.seen:
            return
        dag = getattr(workflow, "dag", None)
        if dag is None:
            return
        out = stream or sys.stdout
        try:
            units, groups = [], {}
            for job in dag.needrun_jobs(exclude_finished=False):
                u = job_units(job.resources, where=f"rule {job.rule.name}")
                units.append(u)
                sweep = sweep_of(job.rule.name, dict(job.wildcards_dict))
                if sweep:
                    groups.setdefault(sweep, []).append(u)
            lines = [format_spend_line(planned_spend(units, checked)), *format_breakdown(groups, checked)]
        except UrdError as exc:
            print(f"urd planned spend: not computed: {exc}", file=sys.stderr, flush=True)
            return
        print("\n".join(lines), file=out, flush=True)

    atexit.register(_report)
