# Backbones: fetched from the Hub (0.1b, 0.4b; pinned by SHA-256 and size) or generated from a
# seed (tiny), then verified against calibration/backbones.sha256 like every other pinned input.


if FETCHED:

    rule fetch_backbone:
        output:
            "models/{file}",
        log:
            "logs/fetch/{file}.log",
        wildcard_constraints:
            file="|".join(re.escape(f) for f in FETCHED),
        conda:
            ENV
        resources:
            runtime=60,
        params:
            args=fetch_args,
        script:
            "../scripts/fetch_backbone.py"


if GENERATED:

    rule make_tiny:
        output:
            "models/{file}",
        log:
            "logs/make_tiny/{file}.log",
        wildcard_constraints:
            file="|".join(re.escape(f) for f in GENERATED),
        conda:
            ENV
        params:
            gen=lambda wc: GENERATED[wc.file]["generate"],
            code=W.code_digest("urd.backbone.tiny"),
        script:
            "../scripts/make_tiny.py"
