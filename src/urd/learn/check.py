"""Verify the `learned` checkpoint at use: by its SHA-256 pin, or else by what it does.

    python -m urd.learn.check CHECKPOINT --manifest M --stamp STAMP --check CHECK.json \
        --train JSON --spec JSON --record CHECKPOINT.train.json

First, whatever the bytes: the config's evaluated episodes must hold nothing the checkpoint's
training stream did not exclude (its record's `exclusions.spec`); a config that evaluates more
episodes, or others, is refused in one line.

A checkpoint whose bytes match the pin (calibration/backbones.sha256) passes as any pinned
input does. One trained here on another machine or torch may differ in bytes (floating-point
sums are not promised bitwise across CPUs); it then passes if its held-out in-session control
(urd's own judges; on the training record's held-out episodes, or with `behaviour.episodes` on
that many held-out episodes no run evaluates, `urd.learn.stream.FRESH`) is, on both tasks, no
further below the pinned checkpoint's than `behaviour.below` (the lower side of the pinned run's
own 95 % interval there) and not below the task's target (`behaviour.targets`). The check is one
sided: a model that does better passes. Only a digest mismatch falls through to it; a file with
no pin at all is refused. Either way the stamp is written with the file's actual digest and
CHECK.json says which check passed and with what figures (the summary and writeup carry it); a
checkpoint that fails both is refused in one line naming the file and both tasks' figures, and no
stamp is written.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..core.errors import DigestMismatch, InputError, UrdError
from ..core.io import atomic_write_json, atomic_write_text, read_json, sha256_file
from ..core.manifest import verify_file

TASKS = ("t1", "t2")


def behaviour(checkpoint: str, train: dict, spec: dict) -> dict[str, float]:
    """Held-out score_A of each task: as the training record measures it, or on
    `behaviour.episodes` held-out episodes no run evaluates (benchmarks/learned.py --held-out)."""
    from ..backbone.tokenizer import get_tokenizer
    from .train import Data, control_scores, settings_of, stream_inputs

    s = settings_of(train["settings"], "backbones.<learned>.train.settings")
    data = Data(s, *stream_inputs(spec), get_tokenizer())
    n = train.get("behaviour", {}).get("episodes")
    queries = spec["rung1"]["queries"]
    scores = control_scores(checkpoint, data.held_out(queries, "fresh", n) if n else data.held_out(queries), spec["decode"])
    return {t: scores[t]["score_A"] for t in ("t1", "t2")}


def floor(want: dict, task: str) -> float:
    """The least held-out score a checkpoint with other bytes may have on `task`: the pinned
    score less the pinned run's own interval below it, and never under the task's target."""
    return max(want[task] - want["below"][task], want["targets"][task])


def trained_apart(record: dict, spec: dict, where: str) -> dict:
    """Refuse a config whose evaluated episodes hold content the checkpoint's training stream did
    not exclude (its record's `exclusions.spec`: the data spec it excluded; a config asking more
    episodes, or another seed, evaluates T1 keys and T2 markers it may have trained on). Returns
    what was compared."""
    from .stream import Exclusions
    from .train import evaluated_episodes

    trained_spec = (record.get("exclusions") or {}).get("spec")
    if not trained_spec:
        raise InputError(where, "exclusions.spec", "the data spec whose evaluated content the training stream "
                         "excluded (urd.learn.train records it)", "none")
    trained, now = (Exclusions.of(evaluated_episodes(s)) for s in (trained_spec, spec))
    gaps = {name: len(getattr(now, name) - getattr(trained, name)) for name in ("keys", "values", "markers")}
    if any(gaps.values()):
        r1 = trained_spec["rung1"]
        raise InputError("config/config.yaml", "episodes, master_seed",
                         f"evaluation episodes whose content the training stream of {where} excluded (rung 1's "
                         f"{r1['episodes']} episodes at master seed {r1['master_seed']}, and the chains of that spec)",
                         f"{spec['rung1']['episodes']} episodes at master seed {spec['rung1']['master_seed']}: "
                         f"{gaps['keys']} T1 keys, {gaps['values']} T1 codes and {gaps['markers']} T2 markers it did "
                         "not exclude, so may have trained on")
    return {"t1_keys": len(now.keys), "t2_markers": len(now.markers), "excluded_t1_keys": len(trained.keys),
            "excluded_t2_markers": len(trained.markers)}


def check(checkpoint: str, manifest: str, train: dict, spec: dict, record: dict | None = None) -> dict:
    """{"check": "sha256" | "behaviour", ...}; raises UrdError when neither passes. With the
    checkpoint's training `record`, the config's evaluated episodes are first held to what its
    training stream excluded (`trained_apart`), whichever check then passes."""
    apart = {"trained_apart": trained_apart(record, spec, checkpoint)} if record is not None else {}
    return {**_check(checkpoint, manifest, train, spec), **apart}


def _check(checkpoint: str, manifest: str, train: dict, spec: dict) -> dict:
    try:
        return {"check": "sha256", "sha256": verify_file(manifest, checkpoint)}
    except DigestMismatch as exc:  # other bytes than the pin's: judged by what they do
        pinned_digest = str(exc)
    want = train["behaviour"]
    got = behaviour(checkpoint, train, spec)
    floors = {t: floor(want, t) for t in TASKS}
    low = [t for t in TASKS if got[t] is None or got[t] < floors[t]]
    figures = ", ".join(f"{t.upper()} held-out score_A {_f(got[t])} (pinned run {want[t]:.3f}, at least "
                        f"{floors[t]:.3f})" for t in TASKS)
    if low:
        raise InputError(checkpoint, "checkpoint", "the pinned bytes, or held-out score_A on both tasks no further "
                         "below the pinned run's than its own interval and not below the target",
                         f"neither: {pinned_digest}; {figures}")
    return {"check": "behaviour", "sha256": sha256_file(checkpoint), "measured": got, "floor": floors,
            "pinned": {t: want[t] for t in TASKS}, "below": dict(want["below"]), "targets": dict(want["targets"]),
            "differs": pinned_digest}


def _f(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.learn.check", description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--stamp", required=True, help="written only when a check passes")
    ap.add_argument("--check", required=True, help="which check passed, with its figures (JSON)")
    ap.add_argument("--train", required=True, help="the backbone's train block (JSON): settings, behaviour")
    ap.add_argument("--spec", required=True, help="urd.learn.plan.learn_spec (JSON)")
    ap.add_argument("--record", required=True, help="the checkpoint's training record: what its stream excluded")
    a = ap.parse_args(argv)
    try:
        record = read_json(a.record)
        result = check(a.checkpoint, a.manifest, json.loads(a.train), json.loads(a.spec), record)
    except UrdError as exc:
        print(f"urd verify FAILED: {exc}", file=sys.stderr)
        return 1
    if result["check"] == "behaviour":
        m, p = result["measured"], result["pinned"]
        f = result["floor"]
        print(f"{a.checkpoint}: bytes differ from the pin; checked by behaviour instead: held-out score_A "
              f"T1 {m['t1']:.3f} (pinned {p['t1']:.3f}, at least {f['t1']:.3f}), T2 {m['t2']:.3f} "
              f"(pinned {p['t2']:.3f}, at least {f['t2']:.3f})", file=sys.stderr)
    else:
        print(f"verified {a.checkpoint} against {a.manifest}", file=sys.stderr)
    atomic_write_json(a.check, result)
    atomic_write_text(a.stamp, f"{result['sha256']}  {a.checkpoint}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
