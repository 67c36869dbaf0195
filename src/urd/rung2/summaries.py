"""Rung 2's summaries folded from the judged responses, and rescored offline.

    python -m urd.rung2.summaries --rescore results/urd2/tiny/chains/summary.json results/urd2/tiny/pareto/summary.json

A chains or Pareto summary records which responses file each of its cells was folded from
(`provenance.cells`, with every input's SHA-256 in `provenance.inputs`) and what the fold used
(sessions, lengths, bootstrap; budgets, caps, parameter count, each system's contract label).
--rescore checks each file's SHA-256, folds them again with the same code and compares every
figure and every stored verdict (the fold judges each reply again); it exits 1 on any difference. (The dose summary is computed in its model-running job,
from the tuned states: its responses are kept, but it has no offline fold to rescore.)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..core.errors import InputError, UrdError
from ..core.io import read_jsonl, sha256_file

CHAIN_METHOD = {
    "R": "R[k][j]: mean over chains of the session-j score after boundary k (T1 recall on seen keys, T2 "
         "discrimination); rows k = 1..n, None above the diagonal",
    "backward": "BWT(n) = mean over j < n of R[n][j] - R[j][j], per chain, then the mean over chains with a "
                "percentile bootstrap interval (chains resampled)",
    "forward": "FWT(n) = mean over 2 <= j <= n of R[j][j] - F[j], F[j] = the score of a fresh consolidation of "
               "session j alone (no prior); undefined at n = 1",
    "by_age": "age a = k - j: mean of R[j+a][j]; relative = its sum over the sum of R[j][j]",
}
DOMINANCE = ("p dominates q when p's score >= q's, p's bits <= q's and p's FLOPs <= q's, one of them strictly; the "
             "frontier is the qualified points no point dominates")


def _read(path: str) -> list[dict]:
    if not Path(path).is_file():
        raise InputError(path, "<file>", "a judged responses.jsonl (build it with snakemake first)")
    return read_jsonl(path)


def chain_summary(cells: dict[str, str], controls: dict[str, str], sessions: int, lengths: list[int], boot) -> dict:
    """cells: {"system:variant:split": responses path}; controls: {variant: responses path}."""
    from ..data.chains import task_of
    from .chains import fold_chain

    ctrl = {v: _read(p) for v, p in controls.items()}
    systems: dict = {}
    for key, path in cells.items():
        system, variant, split = key.split(":")
        if variant not in ctrl:
            raise InputError("chain-summary", "--control", f"the control of variant {variant}")
        fig = fold_chain(task_of(variant), sessions, lengths, _read(path), ctrl[variant], boot)
        systems.setdefault(system, {}).setdefault(variant, {})[split] = fig
    inputs = {p: sha256_file(p) for p in [*cells.values(), *controls.values()]}
    return {"suite": "urd2-chains", "sessions": sessions, "lengths": lengths,
            "method": {**CHAIN_METHOD, "bootstrap": boot.as_dict()}, "systems": systems,
            "provenance": {"cells": dict(sorted(cells.items())), "controls": dict(sorted(controls.items())),
                           "inputs": dict(sorted(inputs.items()))}}


def sweep_summary(cells: dict[str, str], n_params: int, budgets: list[int], caps: list[int], boot) -> dict:
    """cells: {"system:task": judged responses path (violations included)}. Whether a system ran
    out of contract is what its consolidation records say (every judged reply and violation
    carries it), as the chains' summary reads it: no system's code is loaded here."""
    from . import flops, pareto

    tasks: dict = {}
    out_of_contract: dict[str, bool] = {}
    for key, path in cells.items():
        system, task = key.split(":")
        recs = _read(path)
        labels = {r.get("out_of_contract") for r in recs}
        if len(labels) != 1 or not isinstance(next(iter(labels)), bool):
            raise InputError(path, "out_of_contract", f"one label (true or false) on every record of {system}",
                             sorted(map(str, labels)))
        label = labels.pop()
        if out_of_contract.setdefault(system, label) != label:
            raise InputError(path, "out_of_contract", f"the label {system}'s other sweeps carry", label)
        violations = {(r["budget_point"], r["cap_factor"]): r["violation"] for r in recs if "violation" in r}
        answered = [r for r in recs if "violation" not in r]
        points = pareto.fold_system(task, answered, violations, n_params, boot, system, out_of_contract[system])
        tasks.setdefault(task, {})[system] = {"points": points}
    return {"suite": "urd2-pareto", "n_params": n_params, "budgets": budgets, "caps": caps,
            "flops_formula": flops.FORMULA, "dominance": DOMINANCE, "bootstrap": boot.as_dict(),
            "tasks": {t: pareto.fold(t, systems) for t, systems in sorted(tasks.items())},
            "provenance": {"cells": dict(sorted(cells.items())), "out_of_contract": dict(sorted(out_of_contract.items())),
                           "inputs": {p: sha256_file(p) for p in sorted(cells.values())}}}


def rescore(path: str | Path) -> list[str]:
    """The differences between a saved chains or Pareto summary and a fresh fold of the files it
    lists (none: identical). Paths in it are relative to the directory snakemake ran in."""
    from ..harness.fold import verdict_drift
    from ..tables.bootstrap import Bootstrap

    path = Path(path)
    if not path.is_file():
        raise InputError(path, "<file>", "a rung-2 summary.json built by the workflow")
    saved = json.loads(path.read_text())
    prov = saved.get("provenance", {})
    if "cells" not in prov or "inputs" not in prov:
        raise InputError(path, "provenance.cells", "the responses each cell was folded from (rebuild the summary)")
    problems = [f"{p}: SHA-256 differs from the one {path.name} recorded"
                for p, digest in sorted(prov["inputs"].items()) if Path(p).is_file() and sha256_file(p) != digest]
    suite = saved.get("suite")
    if suite == "urd2-chains":
        b = saved["method"]["bootstrap"]
        fresh = chain_summary(prov["cells"], prov["controls"], saved["sessions"], saved["lengths"],
                              Bootstrap(b["resamples"], b["level"], b["seed"]))
        figures = "systems"
    elif suite == "urd2-pareto":
        b = saved["bootstrap"]
        fresh = sweep_summary(prov["cells"], saved["n_params"], saved["budgets"], saved["caps"],
                              Bootstrap(b["resamples"], b["level"], b["seed"]))
        figures = "tasks"
    else:
        raise InputError(path, "suite", "urd2-chains or urd2-pareto (the dose summary is not rescored offline)", suite)
    if json.loads(json.dumps(fresh[figures])) != saved.get(figures):
        problems.append(f"{figures}: {path} differs from the figures folded again from its responses")
    judged = {p: [r for r in _read(p) if "response" in r] for p in prov["cells"].values()}  # violations: no reply
    drift = verdict_drift({(p,): recs for p, recs in judged.items()})
    if drift:
        problems.append(f"{len(drift)} stored verdicts differ from a fresh judgement (first: {drift[0]})")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.rung2.summaries", description=__doc__.split("\n")[0])
    ap.add_argument("--rescore", nargs="+", required=True, metavar="SUMMARY", help="chains or pareto summary.json")
    args = ap.parse_args(argv)
    bad = 0
    try:
        for p in args.rescore:
            problems = rescore(p)
            for line in problems:
                print(f"rescore: {line}", file=sys.stderr)
            print(f"rescore {p}: {'identical' if not problems else 'DIFFERENT'}", file=sys.stderr)
            bad += bool(problems)
    except UrdError as exc:
        print(f"rescore FAILED: {exc}", file=sys.stderr)
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
