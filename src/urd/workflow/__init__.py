"""The layer the workflow imports: everything the Snakefile and rules need while the DAG is
built (paths, specs, digests, estimates, validation), with nothing heavy behind it: no torch, no
model, no network. Jobs reach the package through the scripts in ``scripts/`` (:mod:`.job`)."""

from ..agentmem import smk as agentmem
from ..core.config import config_digest, validate_config, validate_section
from ..core.errors import UrdError
from ..core.manifest import read_manifest
from ..core.provenance import code_digest
from ..cost.estimate import cell_cpu_seconds, controls_cpu_seconds, tune_resources
from ..cost.spend import register_spend_preview
from ..data.calibrate import data_spec
from ..data.views import view_path
from ..harness.run import cell_spec
from ..replay import plan as replay_plan
from ..systems.registry import resolve as resolve_system
from ..systems.registry import system_module
from ..tables import targets as tables

__all__ = [
    "UrdError", "agentmem", "cell_cpu_seconds", "cell_spec", "code_digest", "config_digest",
    "controls_cpu_seconds", "data_spec", "read_manifest", "register_spend_preview", "replay_plan",
    "resolve_system", "system_module", "tables", "tune_resources", "validate_config",
    "validate_section", "view_path",
]
