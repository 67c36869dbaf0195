"""The job runner's receipt: how a job ran, written by the runner after its command has exited.

A job that runs a plug-in (consolidation and answering, rung 1's and rung 2's; the agent-memory
and planting runs, whose stores and strategies are plug-ins) labels each record or report it
writes with how its process was run (``sandbox``: "bwrap", or "off (<why>)"). The plug-in runs in
that process, so under ``sandbox: off`` it could rewrite the label. The label that counts is the
runner's (:mod:`urd.workflow.job`): it runs the command in a child process and, when that has
exited, writes the rule's ``receipt`` output itself: its label and the digest of each declared
output. The judges and the suites' tables :func:`vouch` for their inputs against it before
reading them: an output changed since its job ended, or a record whose label is not the
runner's, is refused, naming the file, the record and both labels. Nothing the command writes
survives as a receipt: the runner overwrites whatever stands at that path.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from .errors import DigestMismatch, InputError
from .io import atomic_write_json, read_jsonl, sha256_file

VERSION = 1
LABEL = "sandbox"  # the record field the label goes in (urd.harness.run.labelled)


def write(path: str | os.PathLike, rule: str, label: str, outputs: Iterable[str]) -> None:
    """The receipt of a job that has ended well: its rule, its label, its outputs' digests."""
    digests = {str(o): sha256_file(o) for o in outputs if Path(o).is_file()}
    atomic_write_json(path, {"receipt": VERSION, "rule": rule, LABEL: label, "outputs": digests})


def read(path: str | os.PathLike) -> dict:
    try:
        rec = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(path, "<receipt>", "the receipt its job's runner wrote (JSON)", str(exc)) from None
    if not isinstance(rec, Mapping) or rec.get("receipt") != VERSION or not isinstance(rec.get(LABEL), str) \
            or not isinstance(rec.get("outputs"), Mapping):
        raise InputError(path, "receipt", f"version {VERSION} with {LABEL} and outputs", rec)
    return dict(rec)


def _json(path: str):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(path, "<file>", "JSON", str(exc)) from None


def vouch(receipts: Iterable[str | os.PathLike]) -> list[str]:
    """Check each receipt's outputs: their bytes are those its job ended with, and every record of
    a JSON-lines output, and a JSON output (a report), carries the runner's label. Returns the
    labels, one per receipt."""
    labels = []
    for path in receipts:
        rec = read(path)
        for out, digest in sorted(rec["outputs"].items()):
            if not Path(out).is_file():
                raise InputError(out, "<file>", f"the output its job ended with (receipt {path})", "missing")
            actual = sha256_file(out)
            if actual != digest:
                raise DigestMismatch(out, digest, f"{actual}: it changed after its job ended (receipt {path})")
            records = read_jsonl(out) if out.endswith(".jsonl") else [_json(out)] if out.endswith(".json") else []
            for n, record in enumerate(records):
                if not isinstance(record, Mapping) or record.get(LABEL) != rec[LABEL]:
                    where = f"record {n}: {LABEL}" if out.endswith(".jsonl") else LABEL
                    raise InputError(out, where, f"{rec[LABEL]!r}, the label its job's runner wrote (receipt {path})",
                                     record.get(LABEL) if isinstance(record, Mapping) else record)
        labels.append(rec[LABEL])
    return labels
