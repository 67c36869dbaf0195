"""The suites' settings: ``config['agentmem']``, validated against its JSON Schema."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import jsonschema
import yaml

from ..core.errors import InputError
from ..llm import PriceBook

REPO_ROOT = Path(__file__).resolve().parents[3]
CONFIG_FILE = Path("config/agentmem.yaml")
SCHEMA_FILE = Path("config/agentmem.schema.yaml")


@dataclass(frozen=True)
class StoreLimits:
    """Stated bounds the store enforces; the estimate's bound is computed from them."""

    max_claims_per_note: int = 8
    max_claim_chars: int = 400
    max_pairs_per_claim: int = 8
    max_reanchor_candidates: int = 6
    max_conflict_checks: int = 4


@dataclass(frozen=True)
class Settings:
    raw: Mapping
    origin: str

    @property
    def calibration_dir(self) -> Path:
        return Path(self.raw["calibration_dir"])

    @property
    def work_dir(self) -> Path:
        return Path(self.raw["work_dir"])

    @property
    def pins(self) -> dict[str, str]:
        return dict(self.raw["llm"]["pins"])

    @property
    def max_tokens(self) -> dict[str, int]:
        return dict(self.raw["llm"]["max_tokens"])

    @property
    def limits(self) -> StoreLimits:
        s = self.raw["store"]
        return StoreLimits(**{k: s[k] for k in StoreLimits.__dataclass_fields__})

    @property
    def read_at(self) -> date | None:
        value = self.raw["store"]["read_at"]
        return date.fromisoformat(value) if value else None

    @property
    def prices(self) -> PriceBook:
        return PriceBook.from_settings(self.raw["prices"], origin=f"{self.origin}: agentmem.prices")

    @property
    def confirm_live(self) -> bool:
        return str(self.raw["spend"]["confirm_live"]).lower() == "true"

    @property
    def store_plugins(self) -> dict[str, str]:
        return dict(self.raw["stores"]["plugins"])

    @property
    def runs(self) -> dict[str, int]:
        r = self.raw["trip_vs_move"]["runs"]
        return {"move": r["move"], "trip-alone": r["trip_alone"]}


def _schema_path() -> Path:
    return SCHEMA_FILE if SCHEMA_FILE.exists() else REPO_ROOT / SCHEMA_FILE


def validate(raw: Mapping, origin: str) -> Settings:
    """Check ``raw`` (the ``agentmem`` mapping) against the schema; errors name the field."""
    schema_path = _schema_path()
    try:
        schema = yaml.safe_load(schema_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(schema_path, "file", "the agentmem JSON Schema") from None
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(raw), key=lambda e: list(e.path))
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in ["agentmem", *first.path])
        raise InputError(origin, where, f"a value matching {schema_path}", first.message)
    settings = Settings(raw=copy.deepcopy(dict(raw)), origin=origin)
    try:
        _ = settings.read_at  # parsed on access: a bad date fails here, naming the key
    except ValueError:
        raise InputError(origin, "agentmem.store.read_at", "null or a real YYYY-MM-DD date", raw["store"]["read_at"]) from None
    return settings


#: Which of a job's names (its target's wildcards) make its own work folder, per suite.
JOB_FOLDER_KEYS = {"trip-vs-move": ("case", "store", "model"), "update-gate": ("store", "model"),
                   "planting": ("model",), "urd3-answer": ("model", "system", "family", "split"),
                   "urd3-control": ("model", "family"), "urd3-consolidate": ("model", "system", "family", "split")}


def job_folder(work_dir: str | Path, suite: str, names: Mapping[str, str]) -> Path:
    """One job's own work folder (its replay cache, batch journal, spend ledgers and run stores):
    ``work_dir/<suite>/<case>/<store>/<model>``. No job reads or writes another's: the sandbox
    binds this folder alone, and every run, rerun and spend preview of the target uses it."""
    return Path(work_dir).joinpath(suite, *(str(names[k]) for k in JOB_FOLDER_KEYS[suite]))


def for_job(settings: Settings, suite: str, **names: str) -> Settings:
    """``settings`` with its work_dir narrowed to the job's own folder (:func:`job_folder`)."""
    return with_overrides(settings, {"work_dir": str(job_folder(settings.work_dir, suite, names))})


def load(config: str | Path | None = None, *, settings_json: str | None = None) -> Settings:
    """From ``--settings JSON`` (what a rule passes) or a YAML file with an ``agentmem`` key."""
    if settings_json is not None:
        try:
            raw = json.loads(settings_json)
        except ValueError as exc:
            raise InputError("--settings", "agentmem", "a JSON object", str(exc)) from None
        return validate(raw, "--settings")
    path = Path(config) if config is not None else (CONFIG_FILE if CONFIG_FILE.exists() else REPO_ROOT / CONFIG_FILE)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "file", "a YAML config with an 'agentmem' key") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("agentmem"), dict):
        raise InputError(path, "agentmem", "a mapping")
    return validate(doc["agentmem"], str(path))


def with_overrides(settings: Settings, changes: Mapping[str, object]) -> Settings:
    """A copy with dotted keys replaced (``store.read_at="2026-10-20"``), re-validated."""
    raw = copy.deepcopy(dict(settings.raw))
    for dotted, value in changes.items():
        node = raw
        *parents, leaf = dotted.split(".")
        for p in parents:
            node = node[p]
        node[leaf] = value
    return validate(raw, settings.origin)
