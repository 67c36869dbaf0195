# Controls (included by rules/tables.smk when controls.enabled): the ceiling and the bits curve,
# computed by `python -m urd.controls` from the replay recipes' tuning artifacts
#   artifacts/replay/{scale}/{recipe}/{sha256 of the transcript}/{controls.state_file, costs.json}
# and rendered by `python -m urd.tables`. No state is tuned again: the artifacts are inputs.

from urd.controls.artifacts import evaluated_transcript_digests

CTL = config["controls"]
CONTROLS_CODE = code_digest("urd.controls") + HARNESS_CODE


def artifact_files(scale, recipe, tasks):
    root = f"{CTL['artifacts']}/{scale}/{recipe}"
    return [
        f"{root}/{sha}/{name}"
        for task in tasks
        for sha in evaluated_transcript_digests(config, task)
        for name in (CTL["state_file"], "costs.json")
    ]


def control_job_inputs(recipes, tasks):
    def inputs(wildcards):
        model = model_path(wildcards.scale)
        out = {"model": model, "checked": [verified(model)] + [verified(DATA[t]) for t in tasks]}
        for t in tasks:
            out[f"data_{t}"] = DATA[t]
            out[f"control_{t}"] = f"results/urd/{wildcards.scale}/control/{t}/responses.jsonl"
        out["artifacts"] = [f for r in recipes for f in artifact_files(wildcards.scale, r, tasks)]
        return out

    return inputs


def control_static(wildcards):
    return json.dumps(
        {
            "config_sha256": config_digest(config),
            "code_sha256": CONTROLS_CODE,
            "master_seed": config["master_seed"],
            "checkpoint": config["backbones"][wildcards.scale]["file"],
        },
        sort_keys=True,
    )


def task_args(tasks, kind):
    return " ".join(f"--{kind} {t}={{input.{kind}_{t}}}" for t in tasks)


CEIL_RECIPES = CTL["ceiling"]["recipes"]
BITS = CTL["bits_curve"]


rule ceiling:
    input:
        unpack(control_job_inputs(CEIL_RECIPES, TASKS)),
    output:
        json="results/urd/{scale}/controls/ceiling.json",
        responses="results/urd/{scale}/controls/ceiling.responses.jsonl",
    params:
        spec=lambda wc: json.dumps(cell_spec(config, "t1") | {"decode": config["decode"]}, sort_keys=True),
        static=control_static,
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
        " --spec {params.spec:q} --static {params.static:q}"
        " --out {output.json} --responses {output.responses} 2> {log}"


rule bits_curve:
    input:
        unpack(control_job_inputs([BITS["recipe"]], [BITS["task"]])),
    output:
        json="results/urd/{scale}/controls/bits_curve.json",
        responses="results/urd/{scale}/controls/bits_curve.responses.jsonl",
    params:
        spec=lambda wc: json.dumps(cell_spec(config, BITS["task"]) | {"decode": config["decode"]}, sort_keys=True),
        static=control_static,
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
        " --spec {params.spec:q} --static {params.static:q}"
        " --out {output.json} --responses {output.responses} 2> {log}"


def control_args(name):
    return " ".join(f"--control {s}=results/urd/{s}/controls/{name}.json" for s in PUB_SCALES)


rule ceiling_table:
    input:
        expand("results/urd/{scale}/controls/ceiling.json", scale=PUB_SCALES),
    output:
        md=report(f"{T.TABLES}/ceiling.md", caption=caption("ceiling"),
                  category="Control 1: ceiling", subcategory="table (Markdown)"),
        html=report(f"{T.TABLES}/ceiling.html", caption=caption("ceiling"),
                    category="Control 1: ceiling", subcategory="table"),
        caption=T.caption_file("ceiling"),
    params:
        controls=control_args("ceiling"),
        boot=BOOT,
        code=TABLES_CODE,
    shell:
        "{PY} -m urd.tables ceiling {params.controls} --bootstrap {params.boot:q}"
        " --md {output.md} --html {output.html} --caption {output.caption}"


rule bits_curve_table:
    input:
        expand("results/urd/{scale}/controls/bits_curve.json", scale=PUB_SCALES),
    output:
        md=report(f"{T.TABLES}/bits_curve.md", caption=caption("bits_curve"),
                  category="Control 2: bits curve", subcategory="table (Markdown)"),
        html=report(f"{T.TABLES}/bits_curve.html", caption=caption("bits_curve"),
                    category="Control 2: bits curve", subcategory="table"),
        png=report(f"{T.FIGURES}/bits_curve.png", caption=caption("bits_curve"),
                   category="Control 2: bits curve", subcategory="figure"),
        caption=T.caption_file("bits_curve"),
    params:
        controls=control_args("bits_curve"),
        boot=BOOT,
        dpi=DPI,
        code=TABLES_CODE,
    shell:
        "{PY} -m urd.tables bits-curve {params.controls} --bootstrap {params.boot:q} --dpi {params.dpi}"
        " --md {output.md} --html {output.html} --png {output.png} --caption {output.caption}"
