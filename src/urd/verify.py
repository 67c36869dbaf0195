"""The verify step that sits in the DAG before every consumer of the data.

    python -m urd.verify --manifest calibration/manifest.sha256 --stamp STAMP FILE

On a mismatch it exits non-zero with a message naming the file, the expected and the actual
digest, and writes no stamp, so nothing downstream runs.
"""

from __future__ import annotations

import argparse
import sys

from .errors import UrdError
from .io import atomic_write_text
from .manifest import verify_file


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.verify")
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--stamp", required=True, help="written only when the file verifies")
    ap.add_argument("file")
    args = ap.parse_args(argv)
    try:
        digest = verify_file(args.manifest, args.file)
    except UrdError as exc:
        print(
            f"urd verify FAILED: {exc}\n"
            "  The data must match the committed manifest byte for byte. Restore the manifest with\n"
            "  `git checkout calibration/manifest.sha256`, or delete the data file so the calibrate\n"
            "  rule regenerates it from the master seed.",
            file=sys.stderr,
        )
        return 1
    atomic_write_text(args.stamp, f"{digest}  {args.file}\n")
    print(f"verified {args.file} against {args.manifest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
