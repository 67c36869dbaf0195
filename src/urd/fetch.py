"""Fetch a pinned checkpoint: resumable HTTP download, SHA-256 verified, atomic rename.

Why httpx and not ``huggingface_hub.hf_hub_download``: the hub client trusts its own
protocol (a HEAD request answered with ``X-Repo-Commit`` / ``X-Linked-Etag`` headers), stores
files in its cache layout (``blobs/`` + ``snapshots/`` symlinks, keyed by etag) and never checks
the bytes against a digest *we* pinned. Our pin is the SHA-256 in config (found in third-party
sources, upstream deletes old files from ``main``), the ModelScope mirror speaks plain HTTP, and
the tests serve files from a loopback ``http.server``. A plain streaming GET with ``Range``
covers all three; we only borrow the hub's URL scheme (:func:`hf_resolve_url`).

Files on disk during a fetch:

* ``dest`` appears only after size and SHA-256 both match, by ``os.replace`` from ``dest.part``.
* ``dest.part`` survives *network* failures only (connection refused, reset, timeout, HTTP
  error status), so the next attempt resumes it with ``Range: bytes=N-``.
* Any *verification* failure (wrong digest, wrong size, part larger than the pinned size)
  deletes ``dest.part``: a corrupt part would otherwise be resumed, and fail, forever. When a
  resumed download fails the digest, the old prefix may be what is wrong, so the file is
  fetched once more from byte 0 before the mismatch is reported.
* A digest mismatch is never retried on a mirror: a wrong pin or a tampered source must fail
  loudly, not be papered over by whichever source happens to agree.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

import httpx

from .errors import DigestMismatch, InputError, UrdError

Progress = Callable[[int, "int | None"], None]

CHUNK = 1 << 20
DEFAULT_TIMEOUT = 30.0  # seconds without a byte (connect/read), not a cap on the whole file
PROGRESS_INTERVAL = 1.0  # seconds between progress reports: enough for a log, not a flood

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")


class FetchError(UrdError):
    """No source could deliver the file (network or HTTP failures); names every attempt."""


class SizeMismatch(UrdError):
    """A file's size differs from the pinned (or announced) one."""

    def __init__(self, path, expected, actual):
        self.path, self.expected, self.actual = str(path), expected, actual
        super().__init__(f"{self.path}: size mismatch: expected {expected} bytes, actual {actual} bytes")


class _SourceFailed(Exception):
    """Internal: this source failed for a network/HTTP reason; try the next one."""


class _RestartFromZero(Exception):
    """Internal: a resumed download failed its digest; the prefix may be the culprit."""


def hf_resolve_url(repo: str, revision: str, file: str, base_url: str = "https://huggingface.co") -> str:
    """The Hub's download URL for ``file`` at a pinned commit.

    A branch name is refused: ``main`` moves and upstream deletes old files from it, so only a
    40-hex commit id reproduces the same bytes.
    """
    if not _COMMIT.match(revision or ""):
        raise InputError("backbone pin", "revision", "a 40-hex commit id", revision)
    if not repo or repo.count("/") != 1:
        raise InputError("backbone pin", "repo", "'owner/name'", repo)
    return f"{base_url.rstrip('/')}/{repo}/resolve/{revision}/{file}"


def backbone_sources(entry: dict, where: str = "config backbones") -> tuple[str, list[str]]:
    """(primary URL, mirror URLs) for a ``backbones:`` config entry.

    ``mirror`` (a URL or a list of URLs) must be complete file URLs: mirrors do not share the
    Hub's path scheme, so we do not guess one.
    """
    for key in ("file", "repo", "revision"):
        if not entry.get(key):
            raise InputError(where, key, "a non-empty string", entry.get(key))
    url = hf_resolve_url(entry["repo"], entry["revision"], entry["file"], entry.get("base_url") or "https://huggingface.co")
    mirrors = entry.get("mirror") or []
    if isinstance(mirrors, str):
        mirrors = [mirrors]
    return url, list(mirrors)


def fetch_checkpoint(
    url: str,
    dest: str | os.PathLike,
    *,
    sha256: str,
    size: int | None = None,
    mirrors: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    progress: Progress | None = None,
    client: httpx.Client | None = None,
) -> Path:
    """Download ``url`` (then ``mirrors`` in order, on network errors) to ``dest``.

    Returns ``dest``. Does nothing (no request) if ``dest`` already has the pinned digest;
    raises :class:`DigestMismatch` if it exists with another one (we never delete a file we did
    not write). See the module docstring for what is left on disk after each failure.
    """
    sha256 = sha256.lower()
    if not _SHA256.match(sha256):
        raise InputError(dest, "sha256", "64 lowercase hex digits", sha256)
    if size is not None and (not isinstance(size, int) or size < 0):
        raise InputError(dest, "size", "a non-negative integer or null", size)
    dest = Path(dest)
    part = dest.with_name(dest.name + ".part")

    if dest.exists():
        actual = _sha256_of(dest)
        if actual == sha256:
            return dest
        exc = DigestMismatch(dest, sha256, actual)
        exc.add_note("the existing file was left untouched; delete it to download again")
        raise exc

    dest.parent.mkdir(parents=True, exist_ok=True)
    own_client = client is None
    if own_client:
        client = httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=True)
    try:
        failures: list[str] = []
        for source in [url, *mirrors]:
            try:
                try:
                    _fetch_one(client, source, part, sha256, size, progress)
                except _RestartFromZero:
                    part.unlink(missing_ok=True)
                    _fetch_one(client, source, part, sha256, size, progress)
            except _SourceFailed as exc:
                failures.append(f"{source}: {exc}")
                continue
            except BaseException as exc:
                if isinstance(exc, (DigestMismatch, SizeMismatch)):
                    exc.add_note(f"source: {source}")
                raise
            os.replace(part, dest)
            _fsync_dir(dest.parent)
            return dest
        kept = part.stat().st_size if part.exists() else 0
        raise FetchError(
            f"{dest}: every source failed ({kept} bytes kept in {part.name} for resuming):\n  "
            + "\n  ".join(failures)
        )
    finally:
        if own_client:
            client.close()


def _fetch_one(client, url, part: Path, sha256, size, progress) -> None:
    """One source: resume/complete ``part`` and verify it. Verification errors delete ``part``."""
    have = part.stat().st_size if part.exists() else 0
    if size is not None and have > size:
        part.unlink()  # longer than the pin: cannot be a prefix of the right file
        have = 0
    if size is not None and have == size:
        _verify_part(part, sha256, size, _sha256_of(part), resumed=True)
        return

    headers = {"Range": f"bytes={have}-"} if have else {}
    try:
        with client.stream("GET", url, headers=headers) as resp:
            if resp.status_code == 416 and have:
                # The part already covers the whole remote file (crash before the rename?).
                _verify_part(part, sha256, size, _sha256_of(part), resumed=True)
                return
            if resp.status_code >= 400:
                raise _SourceFailed(f"HTTP {resp.status_code}")
            start, total = _response_span(resp, have)
            if size is not None and total is not None and total != size:
                part.unlink(missing_ok=True)
                raise SizeMismatch(part.with_name(part.name[: -len(".part")]), size, total)
            total = total if total is not None else size

            h = hashlib.sha256()
            if start:
                with open(part, "rb") as fh:
                    while block := fh.read(CHUNK):
                        h.update(block)
            done = start
            last_report = 0.0
            # "r+b" + truncate: a server that ignored Range (start 0) overwrites the old part.
            with open(part, "r+b" if part.exists() else "wb") as fh:
                fh.seek(start)
                fh.truncate()
                if progress:
                    progress(done, total)
                    last_report = time.monotonic()
                for block in resp.iter_bytes():  # as received: a hang-up keeps every byte so far
                    fh.write(block)
                    h.update(block)
                    done += len(block)
                    if progress and time.monotonic() - last_report >= PROGRESS_INTERVAL:
                        progress(done, total)
                        last_report = time.monotonic()
                fh.flush()
                os.fsync(fh.fileno())
            if progress:
                progress(done, total)
    except httpx.HTTPError as exc:  # transport errors, timeouts, truncated bodies
        raise _SourceFailed(f"{type(exc).__name__}: {exc}") from exc
    _verify_part(part, sha256, size if size is not None else total, h.hexdigest(), resumed=start > 0)


def _response_span(resp: httpx.Response, have: int) -> tuple[int, int | None]:
    """(offset the body starts at, total file size if known)."""
    if resp.status_code == 206:
        m = _CONTENT_RANGE.match(resp.headers.get("content-range", ""))
        if not m or int(m.group(1)) != have:
            raise _SourceFailed(f"unusable Content-Range {resp.headers.get('content-range')!r} for offset {have}")
        return have, None if m.group(3) == "*" else int(m.group(3))
    # 200: the whole file, whether or not we asked for a range.
    length = resp.headers.get("content-length")
    return 0, int(length) if length and length.isdigit() else None


def _verify_part(part: Path, sha256: str, size: int | None, actual_sha: str, *, resumed: bool) -> None:
    dest = part.with_name(part.name[: -len(".part")])
    actual_size = part.stat().st_size
    if size is not None and actual_size != size:
        part.unlink()
        raise SizeMismatch(dest, size, actual_size)
    if actual_sha != sha256:
        if resumed:
            raise _RestartFromZero()
        part.unlink()
        raise DigestMismatch(dest, sha256, actual_sha)


def _sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(CHUNK):
            h.update(block)
    return h.hexdigest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _print_progress(done: int, total: int | None) -> None:
    if total:
        print(f"  {done / 1e6:,.1f} / {total / 1e6:,.1f} MB ({100 * done / total:.0f} %)", file=sys.stderr, flush=True)
    else:
        print(f"  {done / 1e6:,.1f} MB", file=sys.stderr, flush=True)


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.fetch", description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--dest", required=True)
    ap.add_argument("--sha256", required=True)
    ap.add_argument("--size", type=int, default=None)
    ap.add_argument("--mirror", action="append", default=[], help="fallback URL, tried in order (repeatable)")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(list(argv) if argv is not None else None)
    try:
        path = fetch_checkpoint(
            args.url, args.dest, sha256=args.sha256, size=args.size, mirrors=args.mirror,
            timeout=args.timeout, progress=None if args.quiet else _print_progress,
        )
    except UrdError as exc:
        print(f"urd.fetch: error: {exc}", file=sys.stderr)
        for note in getattr(exc, "__notes__", []):
            print(f"  {note}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"urd.fetch: {path} OK (sha256 {args.sha256})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
