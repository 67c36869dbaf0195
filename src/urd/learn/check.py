"""Verify the `learned` checkpoint at use: by its SHA-256 pin, or else by what it does.

    python -m urd.learn.check CHECKPOINT --manifest M --stamp STAMP --check CHECK.json \
        --train JSON --spec JSON

A checkpoint whose bytes match the pin (calibration/backbones.sha256) passes as any pinned
input does. One trained here on another machine or torch may differ in bytes (floating-point
sums are not promised bitwise across CPUs); it then passes if its held-out in-session control
(urd's own judges; on the training record's held-out episodes, or with `behaviour.episodes` on
that many held-out episodes no run evaluates, `urd.learn.stream.FRESH`) is within the stated
tolerance of the pinned checkpoint's on both tasks. Either way the stamp is written with the file's actual digest and CHECK.json
says which check passed and with what figures (the summary carries it); a checkpoint that fails
both is refused in one line naming the file and both figures, and no stamp is written.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..core.errors import DigestMismatch, InputError, UrdError
from ..core.io import atomic_write_json, atomic_write_text, sha256_file
from ..core.manifest import verify_file


def behaviour(checkpoint: str, train: dict, spec: dict) -> dict[str, float]:
    """Held-out score_A of each task: as the training record measures it, or on
    `behaviour.episodes` held-out episodes no run evaluates (benchmarks/learned.py --held-out)."""
    from ..backbone.tokenizer import get_tokenizer
    from .stream import FRESH
    from .train import Data, control_scores, settings_of, stream_inputs

    s = settings_of(train["settings"], "backbones.<learned>.train.settings")
    data = Data(s, *stream_inputs(spec), get_tokenizer())
    n = train.get("behaviour", {}).get("episodes")
    queries = spec["rung1"]["queries"]
    scores = control_scores(checkpoint, data.held_out(queries, FRESH, n) if n else data.held_out(queries), spec["decode"])
    return {t: scores[t]["score_A"] for t in ("t1", "t2")}


def check(checkpoint: str, manifest: str, train: dict, spec: dict) -> dict:
    """{"check": "sha256" | "behaviour", ...}; raises UrdError when neither passes."""
    try:
        return {"check": "sha256", "sha256": verify_file(manifest, checkpoint)}
    except DigestMismatch as exc:
        pinned_digest = str(exc)
    want = train["behaviour"]
    got = behaviour(checkpoint, train, spec)
    tol = want["tolerance"]
    far = {t: (got[t], want[t]) for t in ("t1", "t2") if got[t] is None or abs(got[t] - want[t]) > tol}
    figures = ", ".join(f"{t.upper()} held-out score_A {_f(got[t])} (pinned run {want[t]:.3f})" for t in ("t1", "t2"))
    if far:
        raise InputError(checkpoint, "checkpoint", f"the pinned bytes, or held-out score_A within {tol} of the "
                         "pinned run's", f"neither: {pinned_digest}; {figures}")
    return {"check": "behaviour", "sha256": sha256_file(checkpoint), "tolerance": tol,
            "measured": got, "pinned": {t: want[t] for t in ("t1", "t2")}, "differs": pinned_digest}


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
    a = ap.parse_args(argv)
    try:
        result = check(a.checkpoint, a.manifest, json.loads(a.train), json.loads(a.spec))
    except UrdError as exc:
        print(f"urd verify FAILED: {exc}", file=sys.stderr)
        return 1
    if result["check"] == "behaviour":
        m, p = result["measured"], result["pinned"]
        print(f"{a.checkpoint}: bytes differ from the pin; checked by behaviour instead: held-out score_A "
              f"T1 {m['t1']:.3f} (pinned {p['t1']:.3f}), T2 {m['t2']:.3f} (pinned {p['t2']:.3f}), "
              f"within {result['tolerance']}", file=sys.stderr)
    else:
        print(f"verified {a.checkpoint} against {a.manifest}", file=sys.stderr)
    atomic_write_json(a.check, result)
    atomic_write_text(a.stamp, f"{result['sha256']}  {a.checkpoint}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
