# Data: regenerate every episode from the master seed, then verify it against the
# committed manifest before anything reads it.


rule calibrate:
    output:
        t1=T1_DATA,
        t2=T2_DATA,
        views=[*SESSION_A.values(), *SESSION_B.values()],
    log:
        "logs/calibrate.log",
    conda:
        ENV
    params:
        spec=json.dumps(W.data_spec(config), sort_keys=True),
        code=W.code_digest("urd.data.calibrate"),
    script:
        "../scripts/calibrate.py"


rule verify:
    input:
        data="{path}",
        manifest=manifest_for,
    output:
        "results/urd/verified/{path}.sha256",
    log:
        "logs/verify/{path}.log",
    wildcard_constraints:
        path="(data|models)/[A-Za-z0-9._/-]+",
    conda:
        ENV
    params:
        code=W.code_digest("urd.core.verify"),
    script:
        "../scripts/verify.py"
