# urd: every published table is a file target.
#   snakemake results/urd/tiny/summary.json --cores 2     (offline, a random-weight backbone)
#   snakemake results/urd/0.4b/summary.json --cores 8     (fetches the pinned checkpoint)
# Logic lives in the `urd` package: rules wire files to thin scripts in scripts/, and import
# only urd.workflow (rules/common.smk) while the DAG is built.

import json
import re
import sys
from pathlib import Path

import urd
from snakemake.exceptions import WorkflowError
from urd.workflow import (
    UrdError,
    merged_source,
    register_spend_preview,
    validate_config,
    validate_section,
)

# A checkout's rules must run its own package: an editable install of another clone would
# compute (and digest) other code without a word.
_here = Path(workflow.basedir, "src", "urd").resolve()
if _here.is_dir() and Path(urd.__file__).resolve().parent != _here:
    raise WorkflowError(
        f"the urd package Python imports ({Path(urd.__file__).parent}) is not this checkout's "
        f"({_here}): run `{sys.executable} -m pip install -e .` here, or use this checkout's .venv"
    )


configfile: "config/agentmem.yaml"
configfile: "config/urd3.yaml"
configfile: "config/config.yaml"


try:
    validate_config(config, "config/schema.yaml", source=merged_source())
    validate_section(
        config["agentmem"],
        "config/agentmem.schema.yaml",
        merged_source("config/agentmem.yaml"),
        "agentmem",
    )
    validate_section(
        config["urd3"], "config/urd3.schema.yaml", merged_source("config/urd3.yaml"), "urd3"
    )
except UrdError as exc:  # one line naming the key, not a traceback
    raise WorkflowError(f"urd config: {exc}") from None

# `snakemake -n` ends with the planned spend of the jobs still to run (GPU, CPU, API dollars).
register_spend_preview(workflow, config["prices"], where="config/config.yaml")

PROFILE = config["profile"]


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/backbone.smk"
include: "rules/urd.smk"
include: "rules/replay.smk"
include: "rules/urd2.smk"
include: "rules/urd3_common.smk"
include: "rules/urd3.smk"
include: "rules/agentmem.smk"
include: "rules/planting.smk"
include: "rules/tables.smk"


# `snakemake` alone, and `snakemake --report report.html`, build every published table and figure.
rule all:
    default_target: True
    input:
        rules.published.input,
