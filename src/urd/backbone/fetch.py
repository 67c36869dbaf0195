"""Fetch a pinned checkpoint: the Hub through ``huggingface_hub``, mirrors over plain HTTP.

The pin is the SHA-256 in ``calibration/backbones.sha256`` (and the size, where known), not a
commit: upstream names its files by date and deletes old ones from ``main``, so the default
revision is ``main``, resolved to a commit at fetch time and written to the log. Whatever
answers must deliver the pinned bytes.

* **Hub** (:func:`fetch_from_hub`): ``huggingface_hub`` does the transfer (its resume, Xet,
  retries, and the ``HF_ENDPOINT`` convention, which overrides the configured ``base_url``). A
  HEAD first reads the file's size and LFS ETag (the SHA-256 of an LFS file), so a wrong pin
  fails before a byte is fetched; the download is staged in ``<models>/.hub/`` and moved into
  place only after size and SHA-256 match.
* **Mirrors** (:func:`fetch_checkpoint`, e.g. ModelScope, tried in order when the Hub cannot
  be reached): a streaming GET to ``dest.part`` with ``Range`` resume.

Files on disk during a mirror fetch:

* ``dest`` appears only after size and SHA-256 both match, by ``os.replace`` from ``dest.part``.
* ``dest.part`` survives *network* failures only (connection refused, reset, timeout, HTTP
  error status), so the next attempt resumes it with ``Range: bytes=N-``.
* Any *verification* failure (wrong digest, wrong size, part larger than the pinned size)
  deletes ``dest.part``: a corrupt part would otherwise be resumed, and fail, forever. When a
  resumed download fails the digest, the old prefix may be what is wrong, so the file is
  fetched once more from byte 0 before the mismatch is reported.
* A digest mismatch is never retried on another source: a wrong pin or a tampered source must
  fail loudly, not be papered over by whichever source happens to agree.

    python -m urd.backbone.fetch --repo BlinkDL/rwkv7-g1 [--revision main] --file F.pth \
        --sha256 <hex> [--size N] [--base-url URL] [--mirror BASE_URL ...] --dest models/F.pth
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import httpx

from ..core.errors import DigestMismatch, InputError, UrdError

Progress = Callable[[int, "int | None"], None]

CHUNK = 1 << 20
DEFAULT_TIMEOUT = 30.0  # seconds without a byte (connect/read), not a cap on the whole file
PROGRESS_INTERVAL = 1.0  # seconds between progress reports: enough for a log, not a flood

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
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
    dest = Path(dest)
    sha256 = _check_pin(dest, sha256, size)
    part = dest.with_name(dest.name + ".part")
    if _already_there(dest, sha256):
        return dest

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


def fetch_backbone(
    dest: str | os.PathLike,
    *,
    sha256: str,
    size: int | None,
    repo: str,
    revision: str = "main",
    base_url: str = "https://huggingface.co",
    mirrors: Sequence[str] = (),
    say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
) -> Path:
    """The Hub first, then each mirror (a base URL the file name is appended to) on network errors."""
    dest = Path(dest)
    endpoint = os.environ.get("HF_ENDPOINT") or base_url
    try:
        return fetch_from_hub(dest, sha256=sha256, size=size, repo=repo, revision=revision, endpoint=endpoint, say=say)
    except _SourceFailed as exc:
        hub = f"{endpoint.rstrip('/')}/{repo} at {revision}: {exc}"
    urls = [f"{base.rstrip('/')}/{dest.name}" for base in mirrors]
    if not urls:
        raise FetchError(f"{dest}: the only source failed:\n  {hub}")
    say(f"urd fetch: the Hub failed ({hub}); trying {len(urls)} mirror(s)")
    try:
        return fetch_checkpoint(urls[0], dest, sha256=sha256, size=size, mirrors=urls[1:], progress=_print_progress)
    except FetchError as exc:
        head, _, tried = str(exc).partition(":\n  ")
        raise FetchError(f"{head}:\n  {hub}\n  {tried}") from None


def fetch_from_hub(
    dest: Path,
    *,
    sha256: str,
    size: int | None,
    repo: str,
    revision: str,
    endpoint: str,
    say: Callable[[str], None],
) -> Path:
    """Download ``dest.name`` from a Hub repository at ``revision`` (a branch or a commit)."""
    # Imported here: the workflow builds its DAG without loading the Hub client.
    import httpx2
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url
    from huggingface_hub.errors import EntryNotFoundError, FileMetadataError, HfHubHTTPError, OfflineModeIsEnabled

    sha256 = _check_pin(dest, sha256, size)
    if _already_there(dest, sha256):
        return dest
    unreachable = (HfHubHTTPError, EntryNotFoundError, FileMetadataError, OfflineModeIsEnabled, httpx2.HTTPError)
    try:
        meta = get_hf_file_metadata(hf_hub_url(repo, dest.name, revision=revision, endpoint=endpoint), endpoint=endpoint)
    except unreachable as exc:
        raise _SourceFailed(_hub_reason(exc)) from exc
    if not meta.commit_hash:
        raise _SourceFailed("the answer carries no X-Repo-Commit header: not a Hub endpoint")
    say(f"urd fetch: {repo}@{revision} is commit {meta.commit_hash}; {dest.name}: {meta.size} bytes, ETag {meta.etag}")
    # Before any byte moves: the Hub announces an LFS file's size and SHA-256 (its ETag).
    if size is not None and meta.size is not None and meta.size != size:
        raise SizeMismatch(dest, size, meta.size)
    if meta.etag and _SHA256.match(meta.etag) and meta.etag != sha256:
        exc = DigestMismatch(dest, sha256, meta.etag)
        exc.add_note(f"announced by {repo}@{meta.commit_hash} before download; nothing was fetched")
        raise exc

    staging = dest.parent / ".hub"  # the client's partial downloads live here between attempts
    try:
        got = Path(
            hf_hub_download(repo, dest.name, revision=meta.commit_hash, endpoint=endpoint, local_dir=staging)
        )
    except Exception as exc:  # HTTP, Xet and the client's own consistency checks alike:
        raise _SourceFailed(_hub_reason(exc)) from exc  # the bytes are judged below, never here
    actual_size = got.stat().st_size
    if size is not None and actual_size != size:
        got.unlink()
        raise SizeMismatch(dest, size, actual_size)
    actual = _sha256_of(got)
    if actual != sha256:
        got.unlink()
        exc = DigestMismatch(dest, sha256, actual)
        exc.add_note(f"source: {repo}@{meta.commit_hash} at {endpoint}; the download was deleted")
        raise exc
    os.replace(got, dest)
    _fsync_dir(dest.parent)
    say(f"urd fetch: {dest} OK ({actual_size} bytes, sha256 {sha256})")
    return dest


def _hub_reason(exc: BaseException) -> str:
    """The first line of what the Hub client said, and of its cause (a refused connection hides there)."""
    reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    if exc.__cause__ is not None and str(exc.__cause__).strip():
        reason += f" ({type(exc.__cause__).__name__}: {str(exc.__cause__).strip().splitlines()[0]})"
    return reason


def _check_pin(dest, sha256: str, size) -> str:
    sha256 = sha256.lower()
    if not _SHA256.match(sha256):
        raise InputError(dest, "sha256", "64 lowercase hex digits", sha256)
    if size is not None and (not isinstance(size, int) or size < 0):
        raise InputError(dest, "size", "a non-negative integer or null", size)
    return sha256


def _already_there(dest: Path, sha256: str) -> bool:
    """True if ``dest`` holds the pinned bytes; a file with other bytes is never overwritten."""
    if not dest.exists():
        return False
    actual = _sha256_of(dest)
    if actual == sha256:
        return True
    exc = DigestMismatch(dest, sha256, actual)
    exc.add_note("the existing file was left untouched; delete it to download again")
    raise exc


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.backbone.fetch", description=__doc__.splitlines()[0])
    ap.add_argument("--repo", required=True, help="Hub repository, owner/name")
    ap.add_argument("--revision", default="main", help="branch or commit (default: main); the SHA-256 is the pin")
    ap.add_argument("--base-url", default="https://huggingface.co", help="Hub endpoint; HF_ENDPOINT overrides it")
    ap.add_argument("--file", required=True)
    ap.add_argument("--dest", required=True)
    ap.add_argument("--sha256", required=True)
    ap.add_argument("--size", type=int, default=None)
    ap.add_argument("--mirror", action="append", default=[], help="fallback base URL, tried in order (repeatable)")
    args = ap.parse_args(list(argv) if argv is not None else None)
    try:
        if args.sha256 == "unpinned":
            raise UrdError(f"calibration/backbones.sha256: no line pins models/{args.file}")
        if Path(args.dest).name != args.file:
            raise InputError("urd.backbone.fetch", "--dest", f"a path ending in {args.file}", args.dest)
        fetch_backbone(
            args.dest, sha256=args.sha256, size=args.size, repo=args.repo, revision=args.revision,
            base_url=args.base_url, mirrors=args.mirror,
        )
    except UrdError as exc:
        print(f"urd fetch FAILED: {exc}", file=sys.stderr)
        for note in getattr(exc, "__notes__", []):
            print(f"  {note}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
