# Published tables and figures: every one a file target, built from summary.json and
# oracle.json (and, with controls.enabled, the controls' JSON) by `python -m urd.tables`.
#   snakemake published --cores 2                 builds them for config publish.scales
#   snakemake published --report report.html      one self-contained page with all of them
# Each output goes into the report with a caption (written by the same job) naming the SHA-256
# of every file it was built from and the commit.


rule retention_table:
    input:
        summaries=expand(SUMMARY, scale=PUB_SCALES),
        oracle="results/urd/oracle.json",
    output:
        md=report(
            T.table_files("retention")["md"],
            caption=T.caption_abspath("retention"),
            category="Retention B/A",
            subcategory="table (Markdown)",
        ),
        csv=report(
            T.table_files("retention")["csv"],
            caption=T.caption_abspath("retention"),
            category="Retention B/A",
            subcategory="table (CSV)",
        ),
        html=report(
            T.table_files("retention")["html"],
            caption=T.caption_abspath("retention"),
            category="Retention B/A",
            subcategory="table",
        ),
        caption=T.caption_file("retention"),
    log:
        "logs/tables/retention.log",
    conda:
        ENV
    params:
        command="retention",
        args=[
            *T.labelled_args("summary", PUB_SCALES, SUMMARY),
            "--oracle",
            "results/urd/oracle.json",
            "--systems",
            ",".join(SYSTEMS),
            "--omitted",
            ",".join(T.omitted_scales(config)),
            "--bootstrap",
            BOOT,
        ],
        code=TABLES_CODE,
    script:
        "../scripts/tables.py"


rule side_metrics_table:
    input:
        summaries=expand(SUMMARY, scale=PUB_SCALES),
    output:
        md=report(
            T.table_files("side_metrics")["md"],
            caption=T.caption_abspath("side_metrics"),
            category="Side metrics",
            subcategory="table (Markdown)",
        ),
        csv=report(
            T.table_files("side_metrics")["csv"],
            caption=T.caption_abspath("side_metrics"),
            category="Side metrics",
            subcategory="table (CSV)",
        ),
        html=report(
            T.table_files("side_metrics")["html"],
            caption=T.caption_abspath("side_metrics"),
            category="Side metrics",
            subcategory="table",
        ),
        caption=T.caption_file("side_metrics"),
    log:
        "logs/tables/side_metrics.log",
    conda:
        ENV
    params:
        command="side",
        args=[*T.labelled_args("summary", PUB_SCALES, SUMMARY), "--systems", ",".join(SYSTEMS)],
        code=TABLES_CODE,
    script:
        "../scripts/tables.py"


# One rule per published scale: a report caption is a fixed path, so each figure gets its own.
for _scale in PUB_SCALES:

    rule:
        name:
            f"retention_figure_{_scale}"
        input:
            summary=SUMMARY.format(scale=_scale),
        output:
            png=report(
                T.retention_png(_scale),
                caption=T.caption_abspath(f"retention_figure_{_scale}"),
                category="Retention B/A",
                subcategory=f"figure, {_scale}",
            ),
            caption=T.caption_file(f"retention_figure_{_scale}"),
        log:
            f"logs/tables/retention_figure_{_scale}.log",
        conda:
            ENV
        params:
            command="retention-figure",
            args=[
                "--summary",
                f"{_scale}={SUMMARY.format(scale=_scale)}",
                "--scale",
                _scale,
                "--systems",
                ",".join(SYSTEMS),
                "--bootstrap",
                BOOT,
                "--dpi",
                DPI,
            ],
            code=TABLES_CODE,
        script:
            "../scripts/tables.py"


if config["controls"]["enabled"]:

    include: "controls.smk"


# Name it on the command line (`snakemake published`): Snakemake restores the default target
# after each include, so a default_target here would be ignored.
rule published:
    input:
        T.published_files(config),


# Rung 2 (publish.urd2 lists which): one table a part over the published scales, and a figure
# a scale for the Pareto sweep and the dose-response.
for _part in ("chains", "pareto", "dose"):

    rule:
        name:
            f"urd2_{_part}_table"
        input:
            expand(f"results/urd2/{{scale}}/{_part}/summary.json", scale=PUB_SCALES),
        output:
            md=report(
                f"{T.TABLES}/urd2_{_part}.md",
                caption=T.caption_abspath(f"urd2_{_part}"),
                category="Rung 2",
                subcategory=f"{_part} (Markdown)",
            ),
            html=report(
                f"{T.TABLES}/urd2_{_part}.html",
                caption=T.caption_abspath(f"urd2_{_part}"),
                category="Rung 2",
                subcategory=_part,
            ),
            caption=T.caption_file(f"urd2_{_part}"),
        log:
            f"logs/tables/urd2_{_part}.log",
        conda:
            ENV
        params:
            command=f"urd2-{_part}",
            args=T.labelled_args(
                "summary", PUB_SCALES, f"results/urd2/{{scale}}/{_part}/summary.json"
            ),
            code=TABLES_CODE,
        script:
            "../scripts/tables.py"


for _part in ("pareto", "dose"):
    for _scale in PUB_SCALES:

        rule:
            name:
                f"urd2_{_part}_figure_{_scale}"
            input:
                f"results/urd2/{_scale}/{_part}/summary.json",
            output:
                png=report(
                    f"{T.FIGURES}/urd2_{_part}_{_scale}.png",
                    caption=T.caption_abspath(f"urd2_{_part}_figure_{_scale}"),
                    category="Rung 2",
                    subcategory=f"{_part}, {_scale} (figure)",
                ),
                caption=T.caption_file(f"urd2_{_part}_figure_{_scale}"),
            log:
                f"logs/tables/urd2_{_part}_figure_{_scale}.log",
            conda:
                ENV
            params:
                command=f"urd2-{_part}",
                args=[
                    "--summary",
                    f"{_scale}=results/urd2/{_scale}/{_part}/summary.json",
                    "--scale",
                    _scale,
                    "--dpi",
                    DPI,
                ],
                code=TABLES_CODE,
            script:
                "../scripts/tables.py"


# One scale's rung-1 table beside the write-up's 0.1B table, and the write-up's four findings
# measured on it (urd.tables.writeup); the README's main command builds it for `learned`.
rule writeup_comparison:
    input:
        unpack(writeup_inputs),
        summary=SUMMARY,
    output:
        md="results/urd/{scale}/writeup.md",
        json="results/urd/{scale}/writeup.json",
    log:
        "logs/tables/writeup_{scale}.log",
    conda:
        ENV
    params:
        bootstrap=BOOT,
        code=W.code_digest("urd.tables.writeup"),
    script:
        "../scripts/writeup.py"


# The learned backbone's learning curve, from its training record (urd.tables.learning).
rule learning_curve:
    input:
        record=lambda wc: f"{model_path(wc.scale)}.train.json",
    output:
        csv="results/urd/{scale}/learning_curve.csv",
        png="results/urd/{scale}/learning_curve.png",
    log:
        "logs/tables/learning_curve_{scale}.log",
    conda:
        ENV
    params:
        dpi=config["publish"]["dpi"],
        code=W.code_digest("urd.tables.learning"),
    script:
        "../scripts/learning_curve.py"
