"""The verify step that sits in the DAG before every consumer of the data.

    python -m urd.core.verify --manifest calibration/manifest.sha256 --stamp STAMP FILE

On a mismatch it exits non-zero with a message naming the file, the expected and the actual
digest, and writes no stamp, so nothing downstream runs.
"""

from __future__ import annotations

import argparse
import sys

from .errors import UrdError
from .io import atomic_write_text
from .manifest import verify_file


def check_stamps(stamps) -> None:
    """Each stamp's file still has the digest it was verified with, now, at the moment of use:
    a file changed after verification (whatever its mtime says) is refused."""
    from pathlib import Path

    from .errors import DigestMismatch, InputError
    from .hidden import readable
    from .io import sha256_file

    for stamp in stamps or ():
        text = Path(stamp).read_text(encoding="utf-8").split()
        if len(text) != 2:
            raise InputError(stamp, "<stamp>", "'<sha256>  <path>' written by the verify rule", " ".join(text))
        digest, path = text
        if not Path(readable(path)).is_file():
            raise InputError(path, "<file>", f"the file verified as {digest} (stamp {stamp})")
        actual = sha256_file(readable(path))  # a hidden checkpoint: through its descriptor
        if actual != digest:
            rebuilt = "the fetch or make_tiny rule" if path.startswith("models/") else "the calibrate rule"
            raise DigestMismatch(path, digest, f"{actual}: it changed after it was verified. Delete it and "
                                 f"rerun ({rebuilt} rebuilds it and verify checks it again)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.core.verify")
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--stamp", required=True, help="written only when the file verifies")
    ap.add_argument("file")
    args = ap.parse_args(argv)
    try:
        digest = verify_file(args.manifest, args.file)
    except UrdError as exc:
        if args.file.startswith("models/"):
            fix = ("  A checkpoint must match its pin in the manifest byte for byte. Restore the pin with\n"
                   f"  `git checkout {args.manifest}`, or delete the checkpoint so the fetch (or, for\n"
                   "  tiny, make_tiny) rule rebuilds it.")
        else:
            fix = ("  The data must match the committed manifest byte for byte. Restore the manifest with\n"
                   f"  `git checkout {args.manifest}`, or delete the data file so the calibrate\n"
                   "  rule regenerates it from the master seed.")
        print(f"urd verify FAILED: {exc}\n{fix}", file=sys.stderr)
        return 1
    atomic_write_text(args.stamp, f"{digest}  {args.file}\n")
    print(f"verified {args.file} against {args.manifest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
