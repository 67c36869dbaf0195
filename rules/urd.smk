# urd rung 1. The oracle ceiling, then per scale:
# prefill (each transcript's state, once) -> control (score A)
#                                          -> consolidate (session A: fiches) -> answer (session B)
# -> judge (replies + expected answers = responses.jsonl) -> summary.
# consolidate reads the session-A view (transcripts); answer is a fresh process that reads the
# session-B view (header, prompts) and the fiches, nothing else.

# A system that does not exist or lacks the interface fails here, before any model is loaded,
# and so does every registered plug-in, listed or not.
for _name in SYSTEMS:
    W.resolve_system(_name, config["plugins"], source=W.merged_source())
for _name in config["plugins"]:
    W.resolve_system(_name, config["plugins"], source=W.merged_source())


wildcard_constraints:
    scale="|".join(re.escape(s) for s in config["backbones"]),
    task="t1|t2",
    split="|".join(SPLITS),
    system="|".join(SYSTEMS),


rule oracle:
    input:
        t1=T1_DATA,
        t2=T2_DATA,
        manifest=MANIFEST,
        checked=[verified(T1_DATA), verified(T2_DATA)],
    output:
        "results/urd/oracle.json",
    log:
        "logs/urd/oracle.log",
    conda:
        ENV
    params:
        spec=json.dumps({**W.data_spec(config), "profiles": config["profiles"]}, sort_keys=True),
        code=W.code_digest("urd.data.oracle"),
    script:
        "../scripts/oracle.py"


rule prefill:
    input:
        unpack(session_a_inputs),
    output:
        index="results/urd/{scale}/prefill/{task}.json",
        states="results/urd/{scale}/prefill/{task}.bin",
    log:
        "logs/urd/{scale}/prefill/{task}.log",
    benchmark:
        "results/benchmarks/urd/{scale}/prefill/{task}.tsv"
    conda:
        ENV
    resources:
        **cell_resources("prefill"),
    params:
        spec=cell_spec_json,
        code=RUN_CODE,
    script:
        "../scripts/prefill.py"


rule control:
    input:
        unpack(control_inputs),
    output:
        "results/urd/{scale}/control/{task}/raw.jsonl",
    log:
        "logs/urd/{scale}/control/{task}.log",
    benchmark:
        "results/benchmarks/urd/{scale}/control/{task}.tsv"
    conda:
        ENV
    resources:
        **cell_resources("control"),
    params:
        spec=cell_spec_json,
        code=RUN_CODE,
    script:
        "../scripts/control.py"


rule consolidate:
    input:
        unpack(consolidate_inputs),
    output:
        "results/urd/{scale}/{system}/{task}/{split}/fiches.jsonl",
        receipt="results/urd/{scale}/{system}/{task}/{split}/fiches.receipt.json",
    log:
        "logs/urd/{scale}/{system}/{task}/{split}.consolidate.log",
    benchmark:
        "results/benchmarks/urd/{scale}/{system}/{task}/{split}.consolidate.tsv"
    conda:
        ENV
    resources:
        **cell_resources("consolidate"),
    params:
        spec=cell_spec_json,
        budget=lambda wc: BUDGETS[wc.split],
        artifacts=replay_artifacts_dir,
        code=cell_code,
    script:
        "../scripts/consolidate.py"


rule answer:
    input:
        unpack(answer_inputs),
    output:
        "results/urd/{scale}/{system}/{task}/{split}/raw.jsonl",
        receipt="results/urd/{scale}/{system}/{task}/{split}/raw.receipt.json",
    log:
        "logs/urd/{scale}/{system}/{task}/{split}.answer.log",
    benchmark:
        "results/benchmarks/urd/{scale}/{system}/{task}/{split}.answer.tsv"
    conda:
        ENV
    resources:
        **cell_resources("answer"),
    params:
        spec=cell_spec_json,
        code=cell_code,
    script:
        "../scripts/answer.py"


# Judging reads two small files and runs no model: never worth a cluster job.
localrules:
    judge,
    judge_control,


rule judge_control:
    input:
        unpack(judge_inputs),
    output:
        "results/urd/{scale}/control/{task}/responses.jsonl",
    log:
        "logs/urd/{scale}/control/{task}.judge.log",
    conda:
        ENV
    params:
        spec=cell_spec_json,
        code=RUN_CODE,
    script:
        "../scripts/judge.py"


rule judge:
    input:
        unpack(judge_inputs),
    output:
        "results/urd/{scale}/{system}/{task}/{split}/responses.jsonl",
    log:
        "logs/urd/{scale}/{system}/{task}/{split}.judge.log",
    conda:
        ENV
    params:
        spec=cell_spec_json,
        code=RUN_CODE,
    script:
        "../scripts/judge.py"


rule summary:
    input:
        unpack(summary_inputs),
    output:
        "results/urd/{scale}/summary.json",
    log:
        "logs/urd/{scale}/summary.log",
    conda:
        ENV
    params:
        static=summary_static,
        code=W.code_digest("urd.harness.summarize"),
    script:
        "../scripts/summary.py"
