# Data: regenerate every episode from the master seed, then verify it against the
# committed manifest before anything reads it.

from urd.calibrate import data_spec

from urd.tasks.views import view_path

T1_DATA = f"data/{PROFILE}/t1.jsonl"
T2_DATA = "data/t2.jsonl"
MANIFEST = "calibration/manifest.sha256"
# What each side of the session boundary may read (urd.tasks.views), pinned like the data.
SESSION_A = {t: str(view_path(p, "session_a")) for t, p in (("t1", T1_DATA), ("t2", T2_DATA))}
SESSION_B = {t: str(view_path(p, "session_b")) for t, p in (("t1", T1_DATA), ("t2", T2_DATA))}


def verified(path):
    """The stamp a consumer takes as input: it exists only if `path` matched the manifest."""
    return f"results/urd/verified/{path}.sha256"


rule calibrate:
    output:
        t1=T1_DATA,
        t2=T2_DATA,
        views=[*SESSION_A.values(), *SESSION_B.values()],
    params:
        spec=json.dumps(data_spec(config), sort_keys=True),
        code=code_digest("urd.calibrate"),
    log:
        "logs/calibrate.log",
    shell:
        "{PY} -m urd.calibrate --spec {params.spec:q} --t1 {output.t1} --t2 {output.t2} 2> {log}"


def manifest_for(wildcards):
    return BACKBONE_MANIFEST if wildcards.path.startswith("models/") else MANIFEST


rule verify:
    input:
        data="{path}",
        manifest=manifest_for,
    output:
        "results/urd/verified/{path}.sha256",
    params:
        code=code_digest("urd.verify"),
    shell:
        "{PY} -m urd.verify --manifest {input.manifest} --stamp {output} {input.data}"
