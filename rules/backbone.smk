# Backbones: fetched from the Hub (0.1b, 0.4b; pinned by SHA-256 and size) or generated from a seed (tiny), then
# verified against calibration/backbones.sha256 like every other pinned input.

BACKBONE_MANIFEST = "calibration/backbones.sha256"
FETCHED = {b["file"]: b for b in config["backbones"].values() if "source" in b}
GENERATED = {b["file"]: b for b in config["backbones"].values() if "generate" in b}


def model_path(scale):
    return f"models/{config['backbones'][scale]['file']}"


def pinned_sha256(path):
    from urd.manifest import read_manifest

    return read_manifest(BACKBONE_MANIFEST).get(path, "unpinned")


def fetch_args(wildcards):
    """The fetch job's pin and sources; a file missing from the manifest is refused by the job."""
    b = FETCHED[wildcards.file]
    src = b["source"]
    args = [
        "--repo", src["repo"], "--revision", src["revision"], "--base-url", src["base_url"],
        "--file", b["file"], "--sha256", pinned_sha256(f"models/{b['file']}"),
    ]
    if b.get("size"):
        args += ["--size", str(b["size"])]
    for m in b.get("mirrors", []):
        args += ["--mirror", m]
    return " ".join(args)


if FETCHED:

    rule fetch_backbone:
        output:
            "models/{file}",
        wildcard_constraints:
            file="|".join(re.escape(f) for f in FETCHED),
        params:
            args=fetch_args,
        resources:
            runtime=60,
        log:
            "logs/fetch/{file}.log",
        shell:
            "{PY} -m urd.backbone.fetch {params.args} --dest {output} 2> {log}"


if GENERATED:

    rule make_tiny:
        output:
            "models/{file}",
        wildcard_constraints:
            file="|".join(re.escape(f) for f in GENERATED),
        params:
            gen=lambda wc: GENERATED[wc.file]["generate"],
            code=code_digest("urd.backbone.tiny"),
        shell:
            "{PY} -m urd.backbone.tiny {output} --seed {params.gen[seed]}"
            " --n-layer {params.gen[n_layer]} --n-embd {params.gen[n_embd]}"
