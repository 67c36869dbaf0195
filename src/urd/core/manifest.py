"""SHA-256 manifests in `sha256sum` format, so `sha256sum -c` audits them with nothing installed."""

from __future__ import annotations

import re
from pathlib import Path

from .errors import DigestMismatch, InputError
from .io import atomic_write_text, sha256_file

_LINE = re.compile(r"^([0-9a-f]{64}) [ *](.+)$")


def read_manifest(path: str | Path) -> dict[str, str]:
    """{relative path: digest}; a malformed line is an error naming the line."""
    entries: dict[str, str] = {}
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(path, "<file>", "an existing sha256sum manifest") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _LINE.match(line)
        if not m:
            raise InputError(path, f"line {n}", "'<64 hex digits>  <path>'", line)
        entries[m.group(2)] = m.group(1)
    return entries


def format_manifest(entries: dict[str, str]) -> str:
    return "".join(f"{digest}  {name}\n" for name, digest in sorted(entries.items()))


def write_manifest(path: str | Path, files: list[str | Path], root: str | Path = ".") -> dict[str, str]:
    """Record the digest of each file (paths relative to root) and write the manifest atomically."""
    root = Path(root)
    entries = {str(Path(f)): sha256_file(root / f) for f in files}
    atomic_write_text(path, format_manifest(entries))
    return entries


def verify_file(manifest: str | Path, name: str, root: str | Path = ".") -> str:
    """Check one file against its manifest line; return the digest or raise DigestMismatch."""
    entries = read_manifest(manifest)
    if name not in entries:
        raise InputError(manifest, name, "a manifest line for this file")
    target = Path(root) / name
    if not target.exists():
        raise InputError(target, "<file>", f"an existing file pinned by {manifest}")
    actual = sha256_file(target)
    if actual != entries[name]:
        raise DigestMismatch(name, entries[name], actual)
    return actual


def pin_or_check(manifest: str | Path, files: list[str | Path], *, pin: bool, check: bool) -> None:
    """What a data generator's --write-manifest and --check do with the files it just wrote:
    re-pin them in the manifest, and/or verify each against it (DigestMismatch names the file)."""
    import sys

    if pin:
        write_manifest(manifest, [str(f) for f in files])
        print(f"pinned {len(files)} files in {manifest}", file=sys.stderr)
    if check:
        for f in files:
            print(f"{verify_file(manifest, str(f))}  {f}: OK")
