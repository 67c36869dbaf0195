# Controls (included by rules/tables.smk when controls.enabled): the ceiling and the bits curve,
# computed by `python -m urd.controls` from the replay recipes' tuning artifacts
#   artifacts/replay/{scale}/{recipe}/{sha256 of the transcript}/{controls.state_file, costs.json}
# and rendered by `python -m urd.tables`. No state is tuned again: the artifacts are inputs.

CTL = config["controls"]
CONTROLS_CODE = code_digest("urd.controls.__main__")
CEIL_RECIPES = CTL["ceiling"]["recipes"]
BITS = CTL["bits_curve"]


def control_job_inputs(recipes, tasks):
    def inputs(wildcards):
        model = model_path(wildcards.scale)
        out = {"model": model, "checked": [verified(model)] + [verified(DATA[t]) for t in tasks]}
        for t in tasks:
            out[f"data_{t}"] = DATA[t]
            out[f"control_{t}"] = f"results/urd/{wildcards.scale}/control/{t}/responses.jsonl"
        out["artifacts"] = [f for r in recipes for f in T.artifact_files(config, wildcards.scale, r, tasks)]
        return out

    return inputs


def control_params(wildcards, task):
    """The cell spec (decode lengths for every task) and the provenance known at DAG time."""
    return {
        "spec": json.dumps(cell_spec(config, task) | {"decode": config["decode"]}, sort_keys=True),
        "static": json.dumps(
            {
                "config_sha256": config_digest(config),
                "code_sha256": CONTROLS_CODE,
                "master_seed": config["master_seed"],
                "checkpoint": config["backbones"][wildcards.scale]["file"],
            },
            sort_keys=True,
        ),
    }


rule ceiling:
    input:
        unpack(control_job_inputs(CEIL_RECIPES, TASKS)),
    output:
        json="results/urd/{scale}/controls/ceiling.json",
        responses="results/urd/{scale}/controls/ceiling.responses.jsonl",
    params:
        job=lambda wc: control_params(wc, "t1"),
        root=lambda wc: f"{CTL['artifacts']}/{wc.scale}",
        recipes=",".join(CEIL_RECIPES),
        state_file=CTL["state_file"],
        code=CONTROLS_CODE,
    log:
        "logs/urd/{scale}/controls/ceiling.log",
    shell:
        "{PY} -m urd.controls ceiling --checkpoint {input.model} --scale {wildcards.scale}"
        " --data t1={input.data_t1} --data t2={input.data_t2}"
        " --control t1={input.control_t1} --control t2={input.control_t2}"
        " --artifacts {params.root} --recipes {params.recipes} --state-file {params.state_file}"
        " --spec {params.job[spec]:q} --static {params.job[static]:q}"
        " --verified {input.checked} --out {output.json} --responses {output.responses} 2> {log}"


rule bits_curve:
    input:
        unpack(control_job_inputs([BITS["recipe"]], [BITS["task"]])),
    output:
        json="results/urd/{scale}/controls/bits_curve.json",
        responses="results/urd/{scale}/controls/bits_curve.responses.jsonl",
    params:
        job=lambda wc: control_params(wc, BITS["task"]),
        root=lambda wc: f"{CTL['artifacts']}/{wc.scale}",
        task=BITS["task"],
        recipe=BITS["recipe"],
        budgets=",".join("full" if b is None else str(b) for b in BITS["budgets"]),
        state_file=CTL["state_file"],
        code=CONTROLS_CODE,
    log:
        "logs/urd/{scale}/controls/bits_curve.log",
    shell:
        "{PY} -m urd.controls bits-curve --checkpoint {input.model} --scale {wildcards.scale}"
        " --data {params.task}={input.data_" + BITS["task"] + "}"
        " --control {params.task}={input.control_" + BITS["task"] + "}"
        " --task {params.task} --budgets {params.budgets}"
        " --artifacts {params.root} --recipes {params.recipe} --state-file {params.state_file}"
        " --spec {params.job[spec]:q} --static {params.job[static]:q}"
        " --verified {input.checked} --out {output.json} --responses {output.responses} 2> {log}"


rule ceiling_table:
    input:
        expand("results/urd/{scale}/controls/ceiling.json", scale=PUB_SCALES),
    output:
        md=report(f"{T.TABLES}/ceiling.md", caption=T.caption_abspath("ceiling"),
                  category="Control 1: ceiling", subcategory="table (Markdown)"),
        html=report(f"{T.TABLES}/ceiling.html", caption=T.caption_abspath("ceiling"),
                    category="Control 1: ceiling", subcategory="table"),
        caption=T.caption_file("ceiling"),
    params:
        controls=T.labelled_args("control", PUB_SCALES, "results/urd/{scale}/controls/ceiling.json"),
        boot=BOOT,
        code=TABLES_CODE,
    log:
        "logs/tables/ceiling.log",
    shell:
        "{PY} -m urd.tables ceiling {params.controls} --bootstrap {params.boot:q}"
        " --md {output.md} --html {output.html} --caption {output.caption} 2> {log}"


rule bits_curve_table:
    input:
        expand("results/urd/{scale}/controls/bits_curve.json", scale=PUB_SCALES),
    output:
        md=report(f"{T.TABLES}/bits_curve.md", caption=T.caption_abspath("bits_curve"),
                  category="Control 2: bits curve", subcategory="table (Markdown)"),
        html=report(f"{T.TABLES}/bits_curve.html", caption=T.caption_abspath("bits_curve"),
                    category="Control 2: bits curve", subcategory="table"),
        png=report(f"{T.FIGURES}/bits_curve.png", caption=T.caption_abspath("bits_curve"),
                   category="Control 2: bits curve", subcategory="figure"),
        caption=T.caption_file("bits_curve"),
    params:
        controls=T.labelled_args("control", PUB_SCALES, "results/urd/{scale}/controls/bits_curve.json"),
        boot=BOOT,
        dpi=DPI,
        code=TABLES_CODE,
    log:
        "logs/tables/bits_curve.log",
    shell:
        "{PY} -m urd.tables bits-curve {params.controls} --bootstrap {params.boot:q} --dpi {params.dpi}"
        " --md {output.md} --html {output.html} --png {output.png} --caption {output.caption} 2> {log}"
