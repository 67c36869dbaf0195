"""Canonical serialization and atomic writes.

Canonical JSON: UTF-8, sorted keys, fixed separators, no NaN, one trailing newline.
Every output goes through a temporary file in the same directory and an atomic rename,
so a crash never leaves a half-written target behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .failpoints import failpoint


def canonical_json(obj: Any) -> str:
    """One-line canonical JSON (no trailing newline)."""
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def pretty_json(obj: Any) -> str:
    """Readable, still deterministic JSON with a trailing newline."""
    return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs are ordinary files
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        failpoint("io.replace")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_text(path, pretty_json(obj))


def jsonl_text(records: Iterable[Any]) -> str:
    return "".join(canonical_json(r) + "\n" for r in records)


def atomic_write_jsonl(path: str | os.PathLike, records: Iterable[Any]) -> None:
    atomic_write_text(path, jsonl_text(records))


def read_jsonl(path: str | os.PathLike) -> list[Any]:
    from .errors import InputError

    out = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputError(path, f"line {n}", "one JSON object per line", str(exc)) from None
    return out


def read_json(path: str | os.PathLike) -> Any:
    """One JSON document; a file that is not one is refused naming it."""
    from .errors import InputError

    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(path, "file", "one JSON document", str(exc)) from None


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()
