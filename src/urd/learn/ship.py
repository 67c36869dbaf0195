"""The shipped checkpoint of the `learned` backbone: xz-compressed in the repository, unpacked
by the workflow when absent from models/ (the verify step then checks its SHA-256 pin).

    python -m urd.learn.ship pack models/X.pth weights/X.pth.xz \
        --record models/X.pth.train.json weights/X.train.json --command "..."   # maintainers, after training
    python -m urd.learn.ship unpack weights/X.pth.xz models/X.pth --record R models/X.pth.train.json
    python -m urd.learn.ship copy results/learn/X.pth models/X.pth --record ...  # take_trained
"""

from __future__ import annotations

import argparse
import lzma
import sys

from ..core.errors import InputError, UrdError
from ..core.io import atomic_write_bytes, sha256_bytes

# xz's own defaults, named: the compressed bytes depend on them, and pack must stay reproducible
FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME}]


def pack(src: str, dest: str) -> str:
    with open(src, "rb") as fh:
        raw = fh.read()
    atomic_write_bytes(dest, lzma.compress(raw, format=lzma.FORMAT_XZ, check=lzma.CHECK_SHA256, filters=FILTERS))
    return sha256_bytes(raw)


def unpack(src: str, dest: str) -> str:
    try:
        with open(src, "rb") as fh:
            raw = lzma.decompress(fh.read(), format=lzma.FORMAT_XZ)
    except FileNotFoundError:
        raise InputError(src, "file", "the shipped checkpoint (xz)", "missing") from None
    except lzma.LZMAError as exc:
        raise InputError(src, "xz stream", "an intact xz file", str(exc)) from None
    atomic_write_bytes(dest, raw)
    return sha256_bytes(raw)


def shipped_record(src: str, dest: str, checkpoint_sha256: str, command: str) -> None:
    """The training record beside the shipped checkpoint, with what an auditor needs to re-derive
    it: the exact command, and the machine it was packed on (the one it was trained on)."""
    import json

    from ..core.io import atomic_write_json
    from ..core.machine import machine_record

    with open(src, encoding="utf-8") as fh:
        record = json.load(fh)
    if record.get("sha256") != checkpoint_sha256:
        raise InputError(src, "sha256", f"the packed checkpoint's {checkpoint_sha256}", record.get("sha256"))
    record["shipped"] = {"command": command, **machine_record()}
    atomic_write_json(dest, record)


def copy(src: str, dest: str) -> str:
    try:
        with open(src, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise InputError(src, "file", "a checkpoint", "missing") from None
    atomic_write_bytes(dest, raw)
    return sha256_bytes(raw)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.learn.ship", description=__doc__.split("\n")[0])
    ap.add_argument("action", choices=("pack", "unpack", "copy"))
    ap.add_argument("src")
    ap.add_argument("dest")
    ap.add_argument("--record", nargs=2, metavar=("SRC", "DEST"), help="the training record to copy beside it")
    ap.add_argument("--command", help="pack: the command that trained it, recorded in the shipped record")
    a = ap.parse_args(argv)
    try:
        digest = {"pack": pack, "unpack": unpack, "copy": copy}[a.action](a.src, a.dest)
        if a.record and a.action == "pack":
            shipped_record(*a.record, digest, a.command or "")
        elif a.record:
            copy(*a.record)
    except UrdError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{a.action}ed {a.src} -> {a.dest} (checkpoint sha256 {digest})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
