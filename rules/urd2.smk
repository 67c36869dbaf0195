# urd rung 2 (docs/rung2.md), per scale:
# chains: calibrate_chains -> chain_consolidate (boundary k: session k's A view + boundary k-1's
#   fiches; f<k>: session k alone) -> chain_answer (every session so far, from one fiche) ->
#   chain_judge -> chain_summary, with chain_control (in-session, per session) beside it.
# pareto: sweep_consolidate (every budget x cap of a system and task, one job) -> sweep_answer
#   (every point in one batch) -> sweep_judge -> sweep_summary (FLOPs, frontier).
# dose: tune_state (rules/replay.smk) at each dose recipe -> dose_summary.

# A misnamed system, a replay system in the sweep, a length past the chain: refused here.
try:
    U2.check(config)
except UrdError as exc:
    raise WorkflowError(str(exc))


wildcard_constraints:
    variant="|".join(CHAIN_VARIANTS),
    k="[1-9][0-9]*",
    step="[bf][1-9][0-9]*",


rule calibrate_chains:
    output:
        chain_data_files(),
    log:
        "logs/urd2/calibrate_chains.log",
    conda:
        ENV
    params:
        spec=json.dumps(W.chain_data.data_spec(config), sort_keys=True),
        code=W.code_digest("urd.data.chains"),
    script:
        "../scripts/calibrate_chains.py"


rule chain_control:
    input:
        unpack(chain_control_inputs),
    output:
        "results/urd2/{scale}/chains/control/{variant}/raw.jsonl",
    log:
        "logs/urd2/{scale}/chains/control/{variant}.log",
    benchmark:
        "results/benchmarks/urd2/{scale}/chains/control/{variant}.tsv"
    conda:
        ENV
    resources:
        **job_resources(
            lambda wc: U2.chain_cpu_seconds(config, wc.scale, "control", chain_task(wc)),
            lambda wc: U2.chain_rows(config, wc.scale, "control", chain_task(wc)),
        ),
    params:
        spec=chain_spec_json,
        code=URD2_CODE,
    script:
        "../scripts/urd2_chain.py"


rule chain_consolidate:
    input:
        unpack(chain_consolidate_inputs),
    output:
        "results/urd2/{scale}/chains/{system}/{variant}/{split}/{step}/fiches.jsonl",
        receipt="results/urd2/{scale}/chains/{system}/{variant}/{split}/{step}/fiches.receipt.json",
    log:
        "logs/urd2/{scale}/chains/{system}/{variant}/{split}/{step}.consolidate.log",
    benchmark:
        "results/benchmarks/urd2/{scale}/chains/{system}/{variant}/{split}/{step}.consolidate.tsv"
    wildcard_constraints:
        system="|".join(U2_SYSTEMS),
        split="|".join(U2_SPLITS),
    conda:
        ENV
    resources:
        **job_resources(
            lambda wc: U2.chain_cpu_seconds(
                config, wc.scale, "consolidate", chain_task(wc), wc.system, wc.split
            ),
            lambda wc: U2.chain_rows(config, wc.scale, "consolidate", chain_task(wc)),
        ),
    params:
        spec=chain_spec_json,
        budget=lambda wc: chains_of(wc)["budgets"][wc.split],
        code=u2_code,
    script:
        "../scripts/urd2_chain.py"


rule chain_answer:
    input:
        unpack(chain_answer_inputs),
    output:
        "results/urd2/{scale}/chains/{system}/{variant}/{split}/b{k}/raw.jsonl",
        receipt="results/urd2/{scale}/chains/{system}/{variant}/{split}/b{k}/raw.receipt.json",
    log:
        "logs/urd2/{scale}/chains/{system}/{variant}/{split}/b{k}.answer.log",
    benchmark:
        "results/benchmarks/urd2/{scale}/chains/{system}/{variant}/{split}/b{k}.answer.tsv"
    wildcard_constraints:
        system="|".join(U2_SYSTEMS),
        split="|".join(U2_SPLITS),
    conda:
        ENV
    resources:
        **job_resources(
            lambda wc: U2.chain_cpu_seconds(
                config, wc.scale, "answer", chain_task(wc), wc.system, wc.split, int(wc.k)
            ),
            lambda wc: U2.chain_rows(
                config, wc.scale, "answer", chain_task(wc), wc.system, int(wc.k)
            ),
        ),
    params:
        spec=chain_spec_json,
        code=u2_code,
    script:
        "../scripts/urd2_chain.py"


# Judging and folding read small files and run no model: never worth a cluster job.
localrules:
    chain_judge,
    chain_judge_control,
    chain_summary,
    sweep_judge,


rule chain_judge_control:
    input:
        unpack(chain_judge_inputs),
    output:
        "results/urd2/{scale}/chains/control/{variant}/responses.jsonl",
    log:
        "logs/urd2/{scale}/chains/control/{variant}.judge.log",
    conda:
        ENV
    params:
        spec=chain_spec_json,
        code=URD2_CODE,
    script:
        "../scripts/urd2_chain.py"


rule chain_judge:
    input:
        unpack(chain_judge_inputs),
    output:
        "results/urd2/{scale}/chains/{system}/{variant}/{split}/responses.jsonl",
    log:
        "logs/urd2/{scale}/chains/{system}/{variant}/{split}.judge.log",
    wildcard_constraints:
        system="|".join(U2_SYSTEMS),
        split="|".join(U2_SPLITS),
    conda:
        ENV
    params:
        spec=chain_spec_json,
        code=URD2_CODE,
    script:
        "../scripts/urd2_chain.py"


rule chain_summary:
    input:
        unpack(chain_summary_inputs),
    output:
        "results/urd2/{scale}/chains/summary.json",
    log:
        "logs/urd2/{scale}/chains/summary.log",
    conda:
        ENV
    params:
        spec=lambda wc: json.dumps(
            U2.chain_spec(config, wc.scale, "t1", summary=True), sort_keys=True
        ),
        args=chain_summary_args,
        static=u2_static,
        code=URD2_CODE,
    script:
        "../scripts/urd2_chain.py"


rule sweep_consolidate:
    input:
        unpack(session_a_inputs),
    output:
        "results/urd2/{scale}/pareto/{system}/{task}/fiches.jsonl",
        receipt="results/urd2/{scale}/pareto/{system}/{task}/fiches.receipt.json",
    log:
        "logs/urd2/{scale}/pareto/{system}/{task}.consolidate.log",
    benchmark:
        "results/benchmarks/urd2/{scale}/pareto/{system}/{task}.consolidate.tsv"
    wildcard_constraints:
        system="|".join(U2_SYSTEMS),
    priority: sweep_priority("consolidate")
    conda:
        ENV
    resources:
        **job_resources(
            lambda wc: U2.sweep_cpu_seconds(config, wc.scale, "consolidate", wc.task, wc.system),
            lambda wc: U2.sweep_rows(config, wc.scale, "consolidate", wc.task, wc.system),
        ),
    params:
        spec=sweep_spec_json,
        code=u2_code,
    script:
        "../scripts/urd2_sweep.py"


rule sweep_answer:
    input:
        unpack(sweep_answer_inputs),
    output:
        "results/urd2/{scale}/pareto/{system}/{task}/raw.jsonl",
        receipt="results/urd2/{scale}/pareto/{system}/{task}/raw.receipt.json",
    log:
        "logs/urd2/{scale}/pareto/{system}/{task}.answer.log",
    benchmark:
        "results/benchmarks/urd2/{scale}/pareto/{system}/{task}.answer.tsv"
    wildcard_constraints:
        system="|".join(U2_SYSTEMS),
    priority: sweep_priority("answer")
    conda:
        ENV
    resources:
        **job_resources(
            lambda wc: U2.sweep_cpu_seconds(config, wc.scale, "answer", wc.task, wc.system),
            lambda wc: U2.sweep_rows(config, wc.scale, "answer", wc.task, wc.system),
        ),
    params:
        spec=sweep_spec_json,
        code=u2_code,
    script:
        "../scripts/urd2_sweep.py"


rule sweep_judge:
    input:
        data=lambda wc: DATA[wc.task],
        checked=lambda wc: verified(DATA[wc.task]),
        raw="results/urd2/{scale}/pareto/{system}/{task}/raw.jsonl",
        fiches="results/urd2/{scale}/pareto/{system}/{task}/fiches.jsonl",
        receipts=[
            "results/urd2/{scale}/pareto/{system}/{task}/raw.receipt.json",
            "results/urd2/{scale}/pareto/{system}/{task}/fiches.receipt.json",
        ],
    output:
        "results/urd2/{scale}/pareto/{system}/{task}/responses.jsonl",
    log:
        "logs/urd2/{scale}/pareto/{system}/{task}.judge.log",
    wildcard_constraints:
        system="|".join(U2_SYSTEMS),
    conda:
        ENV
    params:
        spec=sweep_spec_json,
        code=URD2_CODE,
    script:
        "../scripts/urd2_sweep.py"


rule sweep_summary:
    input:
        unpack(sweep_summary_inputs),
    output:
        "results/urd2/{scale}/pareto/summary.json",
    log:
        "logs/urd2/{scale}/pareto/summary.log",
    conda:
        ENV
    resources:
        **job_resources(
            lambda wc: U2.sweep_cpu_seconds(config, wc.scale, "summary", "t1"),
            lambda wc: 0,  # reads the checkpoint to count its parameters
        ),
    params:
        spec=lambda wc: json.dumps(U2.sweep_spec(config, wc.scale, "t1"), sort_keys=True),
        args=lambda wc: ["--cell", *[f"{k}={p}" for k, p in sweep_cells(wc.scale).items()]],
        static=u2_static,
        code=URD2_CODE,
    script:
        "../scripts/urd2_sweep.py"


rule dose_summary:
    input:
        unpack(dose_inputs),
    output:
        json="results/urd2/{scale}/dose/summary.json",
        responses="results/urd2/{scale}/dose/responses.jsonl",
    log:
        "logs/urd2/{scale}/dose/summary.log",
    benchmark:
        "results/benchmarks/urd2/{scale}/dose/summary.tsv"
    conda:
        ENV
    resources:
        **job_resources(
            lambda wc: U2.dose_cpu_seconds(config, wc.scale),
            lambda wc: U2.dose_rows(config, wc.scale),
        ),
    params:
        spec=lambda wc: json.dumps(U2.dose_spec(config, wc.scale), sort_keys=True),
        root=lambda wc: f"{CTL['artifacts']}/{wc.scale}",
        static=u2_static,
        code=URD2_CODE,
    script:
        "../scripts/urd2_dose.py"
