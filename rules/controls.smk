# Controls (included by rules/tables.smk when controls.enabled): the ceiling and the bits curve,
# computed by `python -m urd.controls` from the replay recipes' tuning artifacts
#   artifacts/replay/{scale}/{recipe}/{sha256 of the transcript}/{controls.state_file, costs.json}
# and rendered by `python -m urd.tables`. No state is tuned again: the artifacts are inputs.


rule ceiling:
    input:
        unpack(control_job_inputs(CEIL_RECIPES, TASKS)),
    output:
        json="results/urd/{scale}/controls/ceiling.json",
        responses="results/urd/{scale}/controls/ceiling.responses.jsonl",
    log:
        "logs/urd/{scale}/controls/ceiling.log",
    benchmark:
        "results/benchmarks/urd/{scale}/controls/ceiling.tsv"
    conda:
        ENV
    resources:
        **job_resources(
            lambda wc: W.controls_cpu_seconds(config, wc.scale, TASKS, len(CEIL_RECIPES)),
            lambda wc: answer_rows(TASKS),
        ),
    params:
        command="ceiling",
        tasks=TASKS,
        extra=[],
        job=control_params("t1"),
        root=lambda wc: f"{CTL['artifacts']}/{wc.scale}",
        recipes=",".join(CEIL_RECIPES),
        state_file=CTL["state_file"],
        code=CONTROLS_CODE,
    script:
        "../scripts/controls.py"


rule bits_curve:
    input:
        unpack(control_job_inputs([BITS["recipe"]], [BITS["task"]])),
    output:
        json="results/urd/{scale}/controls/bits_curve.json",
        responses="results/urd/{scale}/controls/bits_curve.responses.jsonl",
    log:
        "logs/urd/{scale}/controls/bits_curve.log",
    benchmark:
        "results/benchmarks/urd/{scale}/controls/bits_curve.tsv"
    conda:
        ENV
    resources:
        **job_resources(
            lambda wc: W.controls_cpu_seconds(
                config, wc.scale, [BITS["task"]], len(BITS["budgets"])
            ),
            lambda wc: answer_rows([BITS["task"]]),
        ),
    params:
        command="bits-curve",
        tasks=[BITS["task"]],
        extra=[
            "--task",
            BITS["task"],
            "--budgets",
            ",".join("full" if b is None else str(b) for b in BITS["budgets"]),
        ],
        job=control_params(BITS["task"]),
        root=lambda wc: f"{CTL['artifacts']}/{wc.scale}",
        recipes=BITS["recipe"],
        state_file=CTL["state_file"],
        code=CONTROLS_CODE,
    script:
        "../scripts/controls.py"


rule ceiling_table:
    input:
        expand("results/urd/{scale}/controls/ceiling.json", scale=PUB_SCALES),
    output:
        md=report(
            f"{T.TABLES}/ceiling.md",
            caption=T.caption_abspath("ceiling"),
            category="Control 1: ceiling",
            subcategory="table (Markdown)",
        ),
        html=report(
            f"{T.TABLES}/ceiling.html",
            caption=T.caption_abspath("ceiling"),
            category="Control 1: ceiling",
            subcategory="table",
        ),
        caption=T.caption_file("ceiling"),
    log:
        "logs/tables/ceiling.log",
    conda:
        ENV
    params:
        command="ceiling",
        args=[
            *T.labelled_args("control", PUB_SCALES, "results/urd/{scale}/controls/ceiling.json"),
            "--bootstrap",
            BOOT,
        ],
        code=TABLES_CODE,
    script:
        "../scripts/tables.py"


rule bits_curve_table:
    input:
        expand("results/urd/{scale}/controls/bits_curve.json", scale=PUB_SCALES),
    output:
        md=report(
            f"{T.TABLES}/bits_curve.md",
            caption=T.caption_abspath("bits_curve"),
            category="Control 2: bits curve",
            subcategory="table (Markdown)",
        ),
        html=report(
            f"{T.TABLES}/bits_curve.html",
            caption=T.caption_abspath("bits_curve"),
            category="Control 2: bits curve",
            subcategory="table",
        ),
        png=report(
            f"{T.FIGURES}/bits_curve.png",
            caption=T.caption_abspath("bits_curve"),
            category="Control 2: bits curve",
            subcategory="figure",
        ),
        caption=T.caption_file("bits_curve"),
    log:
        "logs/tables/bits_curve.log",
    conda:
        ENV
    params:
        command="bits-curve",
        args=[
            *T.labelled_args(
                "control", PUB_SCALES, "results/urd/{scale}/controls/bits_curve.json"
            ),
            "--bootstrap",
            BOOT,
            "--dpi",
            DPI,
        ],
        code=TABLES_CODE,
    script:
        "../scripts/tables.py"
