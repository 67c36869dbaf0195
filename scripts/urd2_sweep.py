"""Jobs of the Pareto sweep's rules (rules/urd2.smk): one command of `python -m urd.rung2` each."""
from urd.rung2.cli import main
from urd.workflow.job import run

sm = snakemake
i, p, w = sm.input, sm.params, sm.wildcards
out = ["--spec", p.spec, "--out", sm.output[0]]
if sm.rule == "sweep_consolidate":
    argv = ["sweep-consolidate", "--checkpoint", i.model, "--sessions", i.sessions, "--task", w.task,
            "--system", w.system, "--verified", i.model_checked, i.checked]
elif sm.rule == "sweep_answer":
    argv = ["sweep-answer", "--checkpoint", i.model, "--prompts", i.prompts, "--fiches", i.fiches,
            "--system", w.system, "--verified", i.model_checked, i.checked]
elif sm.rule == "sweep_judge":
    argv = ["sweep-judge", "--task", w.task, "--data", i.data, "--raw", i.raw, "--fiches", i.fiches,
            "--receipts", i.receipts, "--verified", i.checked]
else:  # sweep_summary
    argv = ["sweep-summary", "--checkpoint", i.model, "--scale", w.scale, *p.args, "--static", p.static,
            "--verified", i.model_checked]
run(sm, main, [*argv, *out])
