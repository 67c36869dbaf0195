"""Jobs of the chain rules (rules/urd2.smk): one command of `python -m urd.rung2` each."""
import json

from urd.rung2.cli import main
from urd.workflow.job import run

sm = snakemake
i, p, w = sm.input, sm.params, sm.wildcards
out = ["--spec", p.spec, "--out", sm.output[0]]
if sm.rule == "chain_control":
    argv = ["chain-control", "--checkpoint", i.model, "--sessions", i.sessions, "--prompts", i.prompts,
            "--verified", i.model_checked, i.checked]
elif sm.rule == "chain_consolidate":
    k = int(w.step[1:])
    prior = ["--prior", i.prior] if "prior" in i.keys() else []
    fresh = ["--fresh"] if w.step.startswith("f") else []
    argv = ["chain-consolidate", "--checkpoint", i.model, "--sessions", i.sessions, *prior, *fresh,
            "--task", json.loads(p.spec)["task"], "--system", w.system,
            "--split", w.split, "--budget", p.budget, "--boundary", k, "--verified", i.model_checked, i.checked]
elif sm.rule == "chain_answer":
    fresh = ["--fresh", i.fresh] if "fresh" in i.keys() else []
    argv = ["chain-answer", "--checkpoint", i.model, "--prompts", i.prompts, "--fiches", i.fiches, *fresh,
            "--system", w.system, "--boundary", w.k, "--verified", i.model_checked, i.checked]
elif sm.rule in ("chain_judge", "chain_judge_control"):
    fiches = ["--fiches", i.fiches, "--receipts", i.receipts] if "fiches" in i.keys() else []
    argv = ["chain-judge", "--data", i.data, "--raw", i.raw, *fiches, "--verified", i.checked]
else:  # chain_summary
    argv = ["chain-summary", "--scale", w.scale, *p.args, "--static", p.static]
run(sm, main, [*argv, *out])
