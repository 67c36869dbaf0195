"""Job of rule tune_state: one replay recipe's state tuned on one transcript."""
from urd.replay.tune import main
from urd.workflow.job import run

sm = snakemake
i, w, p = sm.input, sm.wildcards, sm.params
run(sm, main, ["--checkpoint", i.model, "--checkpoint-stamp", i.model_checked, "--data", i.data,
               "--task", p.task, "--episode", p.episode, "--sha256", w.sha, "--recipe", w.recipe,
               "--scale", w.scale, "--settings", p.settings, "--factor", p.factor, "--threads", p.threads,
               "--wkv", p.wkv, "--wkv-chunk", p.chunk, "--precision", p.precision,
               *(["--checkpoint-layers"] if p.checkpoint_layers else []),
               *(["--cuda-precision", p.on_cuda["precision"]] if "precision" in p.on_cuda else []),
               *(["--cuda-checkpoint-layers", str(p.on_cuda["checkpoint_layers"]).lower()]
                 if "checkpoint_layers" in p.on_cuda else []),
               "--out-dir", p.out_dir, "--verified", i.model_checked, i.checked])
