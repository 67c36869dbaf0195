# Backbones: fetched from the Hub (0.1b, 0.4b; pinned by SHA-256 and size), generated from a
# seed (tiny) or trained here (learned), then verified against calibration/backbones.sha256.


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


if LEARNED:

    # models/ takes the shipped checkpoint where the repository has it, else the one trained
    # here; results/learn/ always trains (what an auditor runs to re-derive the shipped one).
    ruleorder: unpack_learned > take_trained
    ruleorder: verify_learned > verify

    rule unpack_learned:
        input:
            shipped=lambda wc: LEARNED[wc.file]["train"]["shipped"],
            record=lambda wc: LEARNED[wc.file]["train"]["record"],
        output:
            model="models/{file}",
            record="models/{file}.train.json",
        log:
            "logs/unpack_learned/{file}.log",
        wildcard_constraints:
            file="|".join(re.escape(f) for f in LEARNED),
        conda:
            ENV
        params:
            code=W.code_digest("urd.learn.ship"),
        script:
            "../scripts/unpack_learned.py"

    rule train_learned:
        output:
            model="results/learn/{file}",
            record="results/learn/{file}.train.json",
        log:
            "logs/train_learned/{file}.log",
        benchmark:
            "results/benchmarks/train_learned/{file}.tsv"
        wildcard_constraints:
            file="|".join(re.escape(f) for f in LEARNED),
        conda:
            ENV
        threads: lambda wc: W.learn_resources(LEARNED[wc.file])["threads"]
        resources:
            cpu_seconds=lambda wc: W.learn_resources(LEARNED[wc.file])["cpu_seconds"],
            runtime=lambda wc: W.learn_resources(LEARNED[wc.file])["runtime"],
            mem_mb=lambda wc: W.learn_resources(LEARNED[wc.file])["mem_mb"],
        params:
            settings=lambda wc: json.dumps(LEARNED[wc.file]["train"]["settings"], sort_keys=True),
            stages=lambda wc: json.dumps(
                LEARNED[wc.file]["train"].get("stages", []), sort_keys=True
            ),
            spec=json.dumps(W.learn_spec(config), sort_keys=True),
            code=W.code_digest("urd.learn.train"),
        script:
            "../scripts/train_learned.py"

    rule take_trained:
        input:
            model="results/learn/{file}",
            record="results/learn/{file}.train.json",
        output:
            model="models/{file}",
            record="models/{file}.train.json",
        log:
            "logs/take_trained/{file}.log",
        wildcard_constraints:
            file="|".join(re.escape(f) for f in LEARNED),
        conda:
            ENV
        params:
            code=W.code_digest("urd.learn.ship"),
        script:
            "../scripts/take_trained.py"

    rule verify_learned:
        input:
            model="models/{file}",
            record="models/{file}.train.json",
            manifest=BACKBONE_MANIFEST,
        output:
            stamp="results/urd/verified/models/{file}.sha256",
            check="results/urd/verified/models/{file}.check.json",
        log:
            "logs/verify/models/{file}.log",
        wildcard_constraints:
            file="|".join(re.escape(f) for f in LEARNED),
        conda:
            ENV
        params:
            train=lambda wc: json.dumps(LEARNED[wc.file]["train"], sort_keys=True),
            spec=json.dumps(W.learn_spec(config), sort_keys=True),
            code=W.code_digest("urd.learn.check"),
        script:
            "../scripts/verify_learned.py"
