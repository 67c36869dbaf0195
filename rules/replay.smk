# Replay baselines: one tuning job per (scale, recipe, transcript), writing
# artifacts/replay/{scale}/{recipe}/{transcript sha256}/. Session-A cells of replay systems read
# these artifacts; they never tune. Where a tuning job runs is decided when the DAG is built
# (urd.cost.placement): under the SLURM profile it asks for a GPU, which sends it to the gpu
# partition; on a workstation it runs on whatever torch finds, priced as GPU or CPU seconds.


if TUNE_RECIPES:

    rule tune_state:
        input:
            unpack(tune_inputs),
        output:
            state="artifacts/replay/{scale}/{recipe}/{sha}/time_state.npy",
            costs="artifacts/replay/{scale}/{recipe}/{sha}/costs.json",
        log:
            "logs/replay/{scale}/{recipe}/{sha}.log",
        benchmark:
            "results/benchmarks/replay/{scale}/{recipe}/{sha}.tsv"
        wildcard_constraints:
            recipe="|".join(re.escape(r) for r in TUNE_RECIPES),
            sha="[0-9a-f]{64}",
        conda:
            ENV
        threads: REPLAY_SETTINGS.get("threads", 1)
        resources:
            gpu=tune_resource("gpu"),
            gpu_seconds=tune_resource("gpu_seconds"),
            cpu_seconds=tune_resource("cpu_seconds"),
            runtime=tune_resource("runtime"),
            mem_mb=tune_resource("mem_mb"),
        params:
            task=lambda wc: W.replay_plan.by_sha(config, wc.sha).task,
            episode=lambda wc: W.replay_plan.by_sha(config, wc.sha).episode,
            settings=lambda wc: json.dumps(
                W.replay_plan.settings(config, wc.scale, wc.recipe), sort_keys=True
            ),
            factor=config["consolidation_factor"],
            # torch threads from config, not {threads}: Snakemake lowers {threads} to --cores,
            # and a CPU run's bytes depend on the thread count
            threads=REPLAY_SETTINGS.get("threads", 1),
            wkv=REPLAY_SETTINGS.get("wkv", "auto"),
            chunk=REPLAY_SETTINGS.get("wkv_chunk", 64),
            precision=REPLAY_SETTINGS.get("precision", "fp32"),
            checkpoint_layers=bool(REPLAY_SETTINGS.get("checkpoint_layers")),
            on_cuda=REPLAY_SETTINGS.get("on_cuda", {}),
            out_dir=lambda wc: f"artifacts/replay/{wc.scale}/{wc.recipe}/{wc.sha}",
            code=W.code_digest("urd.replay.tune"),
        script:
            "../scripts/tune_state.py"


if REPLAY_RECIPES:

    rule replay_costs:
        input:
            replay_costs_inputs,
        output:
            "results/urd/{scale}/replay_costs.json",
        log:
            "logs/replay/{scale}/costs.log",
        conda:
            ENV
        params:
            code=W.code_digest("urd.replay.costs"),
        script:
            "../scripts/replay_costs.py"
