# The planting suite: context strategies judged by behaviour (urd.planting). The world is
# generated from the master seed and verified against the manifest like every data file;
# a run reads only the verified world and the registered judge calibration set.

PLANTING = config["agentmem"]["planting"]
# Every arm is checked here, at DAG build: a plug-in strategy that does not resolve stops the DAG.
try:
    PLANTING_ARMS = W.agentmem.planting_arms(config["agentmem"])
except W.UrdError as exc:  # one line naming the key, not a traceback
    raise WorkflowError(f"urd planting: {exc}") from None
PLANTING_WORLD = "data/planting/world.jsonl"
PLANTING_CODE = W.code_digest("urd.planting.cli")


rule planting_world:
    input:
        schema="config/agentmem.schema.yaml",
    output:
        PLANTING_WORLD,
    log:
        "logs/planting/world.log",
    conda:
        ENV
    params:
        args=[
            "world",
            "--master-seed",
            str(config["master_seed"]),
            "--settings",
            W.agentmem.settings_json(config["agentmem"]),
        ],
        code=W.code_digest("urd.planting.world"),
    script:
        "../scripts/planting.py"


rule planting_run:
    """One model's run: calibrate the judge, the unplanted twins, the gate, the planted worlds
    and the wound counterfactual. A live model spends money: see agentmem.spend."""
    input:
        world=PLANTING_WORLD,
        verified=verified(PLANTING_WORLD),
        calibration=PLANTING["judge"]["calibration_set"],
        registry=PLANTING["judge"]["registry"],
        schema="config/agentmem.schema.yaml",
    output:
        report="results/planting/{model}/report.json",
        receipt="results/planting/{model}/report.receipt.json",
    log:
        "logs/planting/{model}.log",
    wildcard_constraints:
        model=W.agentmem.MODEL_PATTERN,
    conda:
        ENV
    resources:
        usd_cents=lambda wc: W.agentmem.planting_cents(
            config["agentmem"], wc.model, config["master_seed"]
        ),
    params:
        args=lambda wc, input: [
            "run",
            "--model",
            wc.model,
            "--world",
            input.world,
            "--settings",
            W.agentmem.settings_json(config["agentmem"]),
            # a stop at the judge's calibration or the baseline gate is a finding: the job keeps
            # its report (status stopped, and why); the tables refuse it by name
            "--stopped-ok",
        ],
        code=PLANTING_CODE,
        estimate=lambda wc: W.agentmem.planting_estimate(
            config["agentmem"], wc.model, config["master_seed"]
        ).line(),
    message:
        "{params.estimate}"
    script:
        "../scripts/planting.py"


rule planting_tables:
    input:
        reports=expand("results/planting/{model}/report.json", model=PLANTING["publish"]),
        receipts=expand("results/planting/{model}/report.receipt.json", model=PLANTING["publish"]),
    output:
        md=report(
            W.tables.PLANTING_TABLES["md"], category="Planting", subcategory="table (Markdown)"
        ),
        csv=report(W.tables.PLANTING_TABLES["csv"], category="Planting", subcategory="table (CSV)"),
        html=report(W.tables.PLANTING_TABLES["html"], category="Planting", subcategory="table"),
        png=report(W.tables.PLANTING_TABLES["png"], category="Planting", subcategory="figure"),
    log:
        "logs/planting/tables.log",
    conda:
        ENV
    params:
        args=lambda wc, input, output: [
            "tables",
            *input.reports,
            "--receipts",
            *input.receipts,
            *(a for k, v in output.items() for a in (f"--{k}", v)),
        ],
        code=PLANTING_CODE,
    script:
        "../scripts/planting.py"
