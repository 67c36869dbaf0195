"""The layer the workflow imports: everything the Snakefile and rules need while the DAG is
built (paths, specs, digests, estimates, validation), with nothing heavy behind it: no torch, no
model, no network. Jobs reach the package through the scripts in ``scripts/`` (:mod:`.job`).

Names resolve on first use (PEP 562): a job's script imports :mod:`.job` alone, so a job does not
pay for the DAG-time helpers (and a sandboxed job's wrapper stays light)."""

from __future__ import annotations

import importlib

#: name -> (module, attribute); attribute None: the module itself
_NAMES = {
    "TASKS": ("urd.data", "TASKS"),
    "UrdError": ("urd.core.errors", "UrdError"),
    "agentmem": ("urd.workflow.agentmem", None),
    "cell_cpu_seconds": ("urd.cost.estimate", "cell_cpu_seconds"),
    "cell_rows": ("urd.cost.estimate", "cell_rows"),
    "cell_spec": ("urd.harness.run", "cell_spec"),
    "chain_data": ("urd.data.chains", None),
    "code_digest": ("urd.core.provenance", "code_digest"),
    "config_digest": ("urd.core.config", "config_digest"),
    "controls_cpu_seconds": ("urd.cost.estimate", "controls_cpu_seconds"),
    "data_spec": ("urd.data.calibrate", "data_spec"),
    "dose": ("urd.rung2.dose", None),
    "job_resources": ("urd.cost.estimate", "job_resources"),
    "learn_spec": ("urd.learn.plan", "learn_spec"),
    "learned_backbones": ("urd.learn.plan", "learned_backbones"),
    "learn_resources": ("urd.learn.plan", "resources"),
    "merged_source": ("urd.core.config", "merged_source"),
    "placement": ("urd.cost.placement", "placement"),
    "read_manifest": ("urd.core.manifest", "read_manifest"),
    "register_spend_preview": ("urd.cost.spend", "register_spend_preview"),
    "replay_plan": ("urd.workflow.replay", None),
    "resolve_system": ("urd.systems.registry", "resolve"),
    "system_module": ("urd.systems.registry", "system_module"),
    "tables": ("urd.tables.targets", None),
    "tune_resources": ("urd.cost.estimate", "tune_resources"),
    "urd2": ("urd.rung2.plan", None),
    "urd3": ("urd.rung3.plan", None),
    "validate_config": ("urd.core.config", "validate_config"),
    "validate_section": ("urd.core.config", "validate_section"),
    "view_path": ("urd.data.views", "view_path"),
}

__all__ = sorted(_NAMES)


def __getattr__(name: str):
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _NAMES[name]
    value = importlib.import_module(module)
    value = value if attr is None else getattr(value, attr)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_NAMES})
