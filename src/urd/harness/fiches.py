"""The fiche file: what crosses the session boundary, one record per episode.

A consolidation job writes it; the answering job reads it and nothing else of session A. Each
record holds the fiche's bytes (base64), their SHA-256 and size, and the weighed consolidation
(budget, declared and metered tokens, cap, out_of_contract). An auditor can open any fiche:

    python -m urd.harness.fiches results/urd/tiny/retrieval/t1/over/fiches.jsonl --episode 0 > fiche.bin
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import sys

from ..core.errors import InputError
from ..core.io import atomic_write_jsonl, read_jsonl
from ..session.contract import Consolidation

FIELDS = ("system", "task", "split", "episode", "fiche_b64", "fiche_sha256", *Consolidation.__dataclass_fields__)


def record(system: str, task: str, split: str, episode: int, fiche: bytes, weighed: Consolidation) -> dict:
    return {"system": system, "task": task, "split": split, "episode": episode,
            "fiche_b64": base64.b64encode(fiche).decode("ascii"),
            "fiche_sha256": hashlib.sha256(fiche).hexdigest(), **weighed.as_record()}


def write(path, records: list[dict]) -> None:
    atomic_write_jsonl(path, records)


def read_one(rec: dict, path="fiche record", n: int | str = "-") -> bytes:
    """The fiche bytes of one record, checked against its SHA-256 and size."""
    missing = [f for f in FIELDS if f not in rec]
    if missing:
        raise InputError(path, f"line {n}", f"a fiche record with {', '.join(missing)}")
    try:
        fiche = base64.b64decode(rec["fiche_b64"], validate=True)
    except ValueError:
        raise InputError(path, f"line {n}: fiche_b64", "base64") from None
    actual = hashlib.sha256(fiche).hexdigest()
    if actual != rec["fiche_sha256"] or len(fiche) != rec["fiche_bytes"]:
        raise InputError(path, f"line {n}: fiche_b64", f"{rec['fiche_bytes']} bytes with SHA-256 "
                         f"{rec['fiche_sha256']}", f"{len(fiche)} bytes, {actual}")
    return fiche


def read(path) -> list[tuple[dict, bytes]]:
    """(record, fiche bytes) per episode, each fiche checked against its SHA-256 and size."""
    out, seen = [], set()
    for n, rec in enumerate(read_jsonl(path), 1):
        fiche = read_one(rec, path, n)
        if rec["episode"] in seen:
            raise InputError(path, f"line {n}: episode", "one record per episode", rec["episode"])
        seen.add(rec["episode"])
        out.append((rec, fiche))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.harness.fiches", description="write one fiche's bytes to stdout")
    ap.add_argument("path")
    ap.add_argument("--episode", type=int, required=True)
    args = ap.parse_args(argv)
    for rec, fiche in read(args.path):
        if rec["episode"] == args.episode:
            sys.stdout.buffer.write(fiche)
            return 0
    print(f"{args.path}: no fiche for episode {args.episode}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
