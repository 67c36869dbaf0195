# urd rung 1: the oracle ceiling and session statistics.


rule oracle:
    input:
        t1=T1_DATA,
        t2=T2_DATA,
        manifest=MANIFEST,
        checked=[verified(T1_DATA), verified(T2_DATA)],
    output:
        "results/urd/oracle.json",
    params:
        spec=json.dumps(
            {**data_spec(config), "profiles": config["profiles"]}, sort_keys=True
        ),
        code=code_digest("urd.oracle", "urd.tasks", "urd.backbone.tokenizer"),
    shell:
        "{PY} -m urd.oracle --spec {params.spec:q} --t1 {input.t1} --t2 {input.t2}"
        " --manifest {input.manifest} --out {output}"
