"""Load and validate the pipeline configuration.

The schema is enforced with Snakemake's own `validate` (it fills `default:` values too); its
multi-line jsonschema report is turned into one line that names the file, the key and what was
expected. A few cross-field rules JSON Schema cannot say are checked after it.
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import yaml

from .errors import InputError
from .io import canonical_json

REPO = Path(__file__).resolve().parents[3]
DEFAULT_CONFIG = Path("config/config.yaml")
DEFAULT_SCHEMA = Path("config/schema.yaml")


def merged_source(path: str | Path = DEFAULT_CONFIG) -> str:
    """How an error names a key of the workflow's config: the shipped file, or what a run laid
    over it (Snakemake merges --configfile and --config into one dict, so which is unknown)."""
    return f"{path} (+ --configfile, --config)"


def _key_path(error, prefix: str = "") -> str:
    parts = ([prefix] if prefix else []) + [str(p) for p in error.absolute_path]
    return ".".join(parts) if parts else "<top level>"


def _one_line(error, source: str, prefix: str = "") -> InputError:
    """Turn a jsonschema ValidationError into an InputError naming key and expectation."""
    v, val, inst = error.validator, error.validator_value, error.instance
    key = _key_path(error, prefix)
    if v == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(inst) - set(allowed)) if isinstance(inst, dict) else []
        where = key if key != "<top level>" else ""
        name = ".".join(filter(None, [where, extra[0] if extra else "?"]))
        expected = f"a known key (one of: {', '.join(allowed)})" if allowed else "no key here"
        return InputError(source, name, expected)
    if v == "required":
        missing = [k for k in val if k not in inst]
        name = ".".join(filter(None, [key if key != "<top level>" else "", missing[0]]))
        return InputError(source, name, "a value (required key is missing)")
    expected = {
        "type": lambda: f"type {val}",
        "minimum": lambda: f"a number >= {val}",
        "maximum": lambda: f"a number <= {val}",
        "enum": lambda: f"one of {val}",
        "multipleOf": lambda: f"a multiple of {val}",
        "minProperties": lambda: f"at least {val} entries",
        "pattern": lambda: f"a string matching {val}",
        # a choice of forms says in its description what it accepts
        "oneOf": lambda: error.schema.get("description", error.message),
    }.get(v, lambda: error.message)()
    return InputError(source, key, expected, inst)


def validate_config(config: dict, schema: str | Path = DEFAULT_SCHEMA, source: str = str(DEFAULT_CONFIG)) -> dict:
    """Validate in place (filling defaults) and return config; raise InputError on the first problem."""
    validate_section(config, schema, source)
    _cross_checks(config, source)
    return config


def validate_section(data: dict, schema: str | Path, source: str, prefix: str = "") -> dict:
    """Snakemake's validate (fills defaults) with a one-line error; `prefix` names the section."""
    import jsonschema
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    schema = Path(schema)
    if not schema.is_absolute():
        schema = (Path.cwd() / schema) if (Path.cwd() / schema).exists() else REPO / schema
    try:
        validate(data, str(schema))
    except WorkflowError as exc:
        # Snakemake raises inside its `except ValidationError`, so the original is the context.
        inner = exc.__context__
        if not isinstance(inner, jsonschema.ValidationError):
            raise
        raise _one_line(inner, source, prefix) from None
    return data


def _cross_checks(config: dict, source: str) -> None:
    if config["profile"] not in config["profiles"]:
        raise InputError(source, "profile", f"one of {sorted(config['profiles'])}", config["profile"])
    t1 = config["tasks"]["t1"]
    q = t1["quota"]
    if q["hot"] + q["cold"] + q["unseen"] != config["queries"]:
        raise InputError(
            source, "tasks.t1.quota", f"hot + cold + unseen == queries ({config['queries']})",
            q["hot"] + q["cold"] + q["unseen"],
        )
    if t1["hot_keys"] >= t1["pairs"]:
        raise InputError(source, "tasks.t1.hot_keys", f"fewer than pairs ({t1['pairs']})", t1["hot_keys"])
    if not t1["hot_keys"] <= q["hot"] <= 2 * t1["hot_keys"] and q["hot"]:
        raise InputError(source, "tasks.t1.quota.hot", f"between hot_keys and 2 x hot_keys ({t1['hot_keys']}..{2 * t1['hot_keys']})", q["hot"])
    for name, b in config["backbones"].items():
        if sum(k in b for k in ("generate", "source", "train")) != 1:
            raise InputError(source, f"backbones.{name}", "exactly one of 'generate' (made by a rule), "
                             "'source' (fetched) or 'train' (trained here, or its shipped checkpoint)")
    if q["cold"] > t1["pairs"] - t1["hot_keys"]:
        raise InputError(source, "tasks.t1.quota.cold", "at most the number of cold keys", q["cold"])


def load_config(path: str | Path = DEFAULT_CONFIG, schema: str | Path = DEFAULT_SCHEMA, overrides: dict | None = None) -> dict:
    path = Path(path)
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "<file>", "an existing YAML file") from None
    except yaml.YAMLError as exc:
        raise InputError(path, "<file>", "valid YAML", str(exc).replace("\n", " ")) from None
    if not isinstance(config, dict):
        raise InputError(path, "<top level>", "a mapping", type(config).__name__)
    for k, v in (overrides or {}).items():
        config[k] = v
    return validate_config(config, schema, str(path))


def config_digest(config: dict) -> str:
    """SHA-256 of the canonical JSON of the validated config: the provenance of every output."""
    return hashlib.sha256(canonical_json(copy.deepcopy(config)).encode()).hexdigest()
