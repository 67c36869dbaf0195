# urd: every published table is a file target.
#   snakemake results/urd/oracle.json --cores 2
# Logic lives in the `urd` package; rules only wire files to it.

import json
import sys

from urd.config import validate_config
from urd.provenance import code_digest


configfile: "config/config.yaml"


validate_config(config, "config/schema.yaml", source="config/config.yaml (+ --config)")

# The interpreter that runs Snakemake has urd installed; jobs use the same one.
PY = sys.executable
PROFILE = config["profile"]


include: "rules/data.smk"
include: "rules/urd.smk"
