# Replay baselines: one tuning job per (scale, recipe, transcript), writing
# artifacts/replay/{scale}/{recipe}/{transcript sha256}/. Session-B cells of replay systems read
# these artifacts (urd.smk: session_b); they never tune. Tuning jobs ask for a GPU, so the SLURM
# profile sends them to the gpu partition; on a workstation they run on whatever torch finds.

from urd.estimate import tune_resources
from urd.replay import plan as replay_plan

REPLAY = replay_plan.replay_recipes(config)  # {system: recipe}
REPLAY_RECIPES = sorted(set(REPLAY.values()))
REPLAY_CODE = code_digest("urd.replay.tune")
REPLAY_SETTINGS = config.get("replay", {})


def replay_artifact(scale, recipe, sha, name="costs.json"):
    return f"artifacts/replay/{scale}/{recipe}/{sha}/{name}"


def replay_inputs(wildcards):
    """Session-B inputs of a replay system: the artifacts of every evaluated episode."""
    recipe = REPLAY.get(wildcards.system)
    if recipe is None:
        return {}
    shas = [t.sha256 for t in replay_plan.transcripts(config, wildcards.task)]
    return {
        "artifacts": [
            replay_artifact(wildcards.scale, recipe, sha, name)
            for sha in shas
            for name in ("costs.json", "time_state.npy")
        ]
    }


def replay_artifacts_arg(wildcards):
    recipe = REPLAY.get(wildcards.system)
    return f"--artifacts artifacts/replay/{wildcards.scale}/{recipe}" if recipe else ""


def _tuning(wildcards):
    return replay_plan.recipe_for(config, wildcards.scale, wildcards.recipe, wildcards.sha)


def _tune_resource(key):
    # estimated from the recipe's trained tokens at the scale's stated throughput (urd.estimate)
    return lambda wc: tune_resources(config, wc.scale, _tuning(wc).trained_tokens)[key]


def _tune_inputs(wildcards):
    t = replay_plan.by_sha(config, wildcards.sha)
    model = model_path(wildcards.scale)
    return {
        "model": model,
        "model_checked": verified(model),
        "data": DATA[t.task],
        "checked": verified(DATA[t.task]),
    }


if REPLAY_RECIPES:

    rule tune_state:
        input:
            unpack(_tune_inputs),
        output:
            state="artifacts/replay/{scale}/{recipe}/{sha}/time_state.npy",
            costs="artifacts/replay/{scale}/{recipe}/{sha}/costs.json",
        wildcard_constraints:
            recipe="|".join(re.escape(r) for r in REPLAY_RECIPES),
            sha="[0-9a-f]{64}",
        params:
            task=lambda wc: replay_plan.by_sha(config, wc.sha).task,
            episode=lambda wc: replay_plan.by_sha(config, wc.sha).episode,
            settings=lambda wc: json.dumps(
                replay_plan.settings(config, wc.scale, wc.recipe), sort_keys=True
            ),
            factor=config["consolidation_factor"],
            # torch threads from config, not {threads}: Snakemake lowers {threads} to --cores,
            # and a CPU run's bytes depend on the thread count
            threads=REPLAY_SETTINGS.get("threads", 1),
            chunk=REPLAY_SETTINGS.get("wkv_chunk", 64),
            ckpt="--checkpoint-layers" if REPLAY_SETTINGS.get("checkpoint_layers") else "",
            code=REPLAY_CODE,
        threads: REPLAY_SETTINGS.get("threads", 1)
        resources:
            gpu=1,
            gpu_seconds=_tune_resource("gpu_seconds"),
            runtime=_tune_resource("runtime"),
            mem_mb=_tune_resource("mem_mb"),
        log:
            "logs/replay/{scale}/{recipe}/{sha}.log",
        shell:
            "{PY} -m urd.replay.tune --checkpoint {input.model}"
            " --checkpoint-stamp {input.model_checked} --data {input.data}"
            " --task {params.task} --episode {params.episode} --sha256 {wildcards.sha}"
            " --recipe {wildcards.recipe} --scale {wildcards.scale} --settings {params.settings:q}"
            " --factor {params.factor} --threads {params.threads} --wkv-chunk {params.chunk} {params.ckpt}"
            " --out-dir artifacts/replay/{wildcards.scale}/{wildcards.recipe}/{wildcards.sha}"
            " --verified {input.model_checked} {input.checked} 2> {log}"

    rule replay_costs:
        input:
            lambda wc: [
                replay_artifact(wc.scale, recipe, t.sha256)
                for recipe in REPLAY_RECIPES
                for t in replay_plan.transcripts(config)
            ],
        output:
            "results/urd/{scale}/replay_costs.json",
        params:
            code=code_digest("urd.replay.costs"),
        log:
            "logs/replay/{scale}/costs.log",
        shell:
            "{PY} -m urd.replay.costs --scale {wildcards.scale} --out {output} {input} 2> {log}"
