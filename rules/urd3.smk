# urd rung 3: naturalistic tasks (docs/rung3.md). Per model:
# calibrate (episodes from the seed, verified) -> control (score A)
#                                              -> consolidate (session A: fiches) -> answer (session B)
# -> summary (every reply judged, code replies run, retention with intervals).
# consolidate reads the session-A view; answer is a fresh process that reads the session-B view
# and the fiches, nothing else.


rule urd3_calibrate:
    output:
        data=list(U3_DATA.values()),
        views=[*U3_A.values(), *U3_B.values()],
    log:
        "logs/urd3/calibrate.log",
    conda:
        ENV
    params:
        spec=json.dumps(U3.data_spec(config), sort_keys=True),
        code=W.code_digest("urd.rung3.cli", "urd.data.rung3.episodes"),
    script:
        "../scripts/urd3_calibrate.py"


wildcard_constraints:
    model="|".join(re.escape(m) for m in config["urd3"]["models"]),


rule urd3_control:
    input:
        unpack(u3_model),
        sessions=lambda wc: U3_A[wc.family],
        prompts=lambda wc: U3_B[wc.family],
        checked=lambda wc: [verified(U3_A[wc.family]), verified(U3_B[wc.family])],
    output:
        "results/urd3/{model}/control/{family}/raw.jsonl",
    log:
        "logs/urd3/{model}/control/{family}.log",
    benchmark:
        "results/benchmarks/urd3/{model}/control/{family}.tsv"
    wildcard_constraints:
        family="|".join(U3_FAMILIES),
    conda:
        ENV
    resources:
        **u3_resources("control"),
    params:
        spec=u3_spec,
        code=U3_CODE,
    script:
        "../scripts/urd3_control.py"


rule urd3_consolidate:
    input:
        unpack(u3_model),
        unpack(u3_artifacts),
        sessions=lambda wc: U3_A[wc.family],
        checked=lambda wc: verified(U3_A[wc.family]),
    output:
        "results/urd3/{model}/{system}/{family}/{split}/fiches.jsonl",
        receipt="results/urd3/{model}/{system}/{family}/{split}/fiches.receipt.json",
    log:
        "logs/urd3/{model}/{system}/{family}/{split}.consolidate.log",
    benchmark:
        "results/benchmarks/urd3/{model}/{system}/{family}/{split}.consolidate.tsv"
    wildcard_constraints:
        family="|".join(U3_FAMILIES),
        system="[A-Za-z_][A-Za-z0-9_]*",
        split="|".join(U3_BUDGETS),
    conda:
        ENV
    resources:
        **u3_resources("consolidate"),
    params:
        spec=u3_spec,
        budget=lambda wc: U3_BUDGETS[wc.split],
        artifacts=u3_artifacts_dir,
        code=u3_systems_code,
    script:
        "../scripts/urd3_consolidate.py"


rule urd3_answer:
    input:
        unpack(u3_model),
        prompts=lambda wc: U3_B[wc.family],
        checked=lambda wc: verified(U3_B[wc.family]),
        fiches="results/urd3/{model}/{system}/{family}/{split}/fiches.jsonl",
    output:
        "results/urd3/{model}/{system}/{family}/{split}/raw.jsonl",
        receipt="results/urd3/{model}/{system}/{family}/{split}/raw.receipt.json",
    log:
        "logs/urd3/{model}/{system}/{family}/{split}.answer.log",
    benchmark:
        "results/benchmarks/urd3/{model}/{system}/{family}/{split}.answer.tsv"
    wildcard_constraints:
        family="|".join(U3_FAMILIES),
        system="[A-Za-z_][A-Za-z0-9_]*",
        split="|".join(U3_BUDGETS),
    conda:
        ENV
    resources:
        **u3_resources("answer"),
    params:
        spec=u3_spec,
        code=u3_systems_code,
    script:
        "../scripts/urd3_answer.py"


rule urd3_summary:
    input:
        unpack(u3_summary_inputs),
    output:
        summary="results/urd3/{model}/summary.json",
        responses="results/urd3/{model}/responses.jsonl",
        table="results/urd3/{model}/table.md",
    log:
        "logs/urd3/{model}/summary.log",
    benchmark:
        "results/benchmarks/urd3/{model}/summary.tsv"
    conda:
        ENV
    resources:
        **u3_resources("summary"),
    params:
        spec=u3_spec,
        static=u3_static,
        code=W.code_digest("urd.rung3.cli", "urd.rung3.summary"),
    script:
        "../scripts/urd3_summary.py"


rule urd3_curve:
    input:
        unpack(u3_curve_inputs),
    output:
        curve="results/urd3/{model}/curve.json",
        figure="results/urd3/{model}/curve.png",
    log:
        "logs/urd3/{model}/curve.log",
    benchmark:
        "results/benchmarks/urd3/{model}/curve.tsv"
    conda:
        ENV
    resources:
        **u3_resources("curve"),
    params:
        spec=u3_spec,
        static=u3_static,
        dpi=config["publish"]["dpi"],
        code=W.code_digest("urd.rung3.cli", "urd.rung3.summary", "urd.tables.figures"),
    script:
        "../scripts/urd3_curve.py"
