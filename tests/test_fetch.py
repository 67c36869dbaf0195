"""Checkpoint fetch against a real loopback HTTP server (Range support and misbehaviours)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from urd.errors import DigestMismatch, InputError
from urd.fetch import FetchError, SizeMismatch, backbone_sources, fetch_checkpoint, hf_resolve_url

_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


class FileServer:
    """Serves ``files[path]``; ``modes[path]`` picks a behaviour:

    ``ok`` (honours ``Range: bytes=N-[M]``), ``ignore_range`` (always 200 + whole body),
    ``truncate:K`` (announces the full length, sends K bytes, hangs up), ``status:C``.
    Every request is logged as ``(method, path, Range header or None)``.
    """

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.modes: dict[str, str] = {}
        self.log: list[tuple[str, str, str | None]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_GET(self):
                rng = self.headers.get("Range")
                server.log.append(("GET", self.path, rng))
                body = server.files.get(self.path)
                mode = server.modes.get(self.path, "ok")
                if body is None:
                    return self.send_error(404)
                if mode.startswith("status:"):
                    return self.send_error(int(mode.split(":")[1]))
                start, end = 0, len(body) - 1
                m = _RANGE.match(rng or "")
                if m and mode != "ignore_range":
                    start = int(m.group(1))
                    if m.group(2):
                        end = min(int(m.group(2)), end)
                    if start >= len(body):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(body)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{end}/{len(body)}")
                else:
                    self.send_response(200)
                chunk = body[start : end + 1]
                self.send_header("Content-Length", str(len(chunk)))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                if mode.startswith("truncate:"):
                    self.wfile.write(chunk[: int(mode.split(":")[1])])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(chunk)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def base(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return self.base + path

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


# ---------------------------------------------------------------- tests

BLOB = hashlib.sha256(b"urd").digest() * 4096  # 128 KiB, deterministic, not all one byte
BLOB_SHA = hashlib.sha256(BLOB).hexdigest()
SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture
def server():
    with FileServer() as srv:
        srv.files["/m.pth"] = BLOB
        yield srv


def leftovers(dest: Path) -> list[str]:
    return sorted(p.name for p in dest.parent.iterdir())


def test_good_download_verifies_and_renames(server, tmp_path):
    dest = tmp_path / "m.pth"
    seen = []
    out = fetch_checkpoint(server.url("/m.pth"), dest, sha256=BLOB_SHA, size=len(BLOB), progress=lambda d, t: seen.append((d, t)))
    assert out == dest and dest.read_bytes() == BLOB
    assert leftovers(dest) == ["m.pth"]  # no .part left behind
    assert server.log == [("GET", "/m.pth", None)]
    # progress: starts at 0, ends at total, and is rate-limited (not one call per chunk)
    assert seen[0] == (0, len(BLOB)) and seen[-1] == (len(BLOB), len(BLOB)) and len(seen) <= 4


def test_wrong_digest_names_both_and_leaves_nothing(server, tmp_path):
    dest = tmp_path / "m.pth"
    pinned = "0" * 64
    with pytest.raises(DigestMismatch) as ei:
        fetch_checkpoint(server.url("/m.pth"), dest, sha256=pinned)
    msg = str(ei.value)
    assert pinned in msg and BLOB_SHA in msg and str(dest) in msg
    assert any(server.url("/m.pth") in n for n in ei.value.__notes__)
    assert leftovers(dest) == []  # neither target nor a part that would be resumed


def test_digest_mismatch_is_not_retried_on_mirror(server, tmp_path):
    server.files["/mirror.pth"] = BLOB
    with pytest.raises(DigestMismatch):
        fetch_checkpoint(server.url("/m.pth"), tmp_path / "m.pth", sha256="1" * 64, mirrors=[server.url("/mirror.pth")])
    assert [p for _, p, _ in server.log] == ["/m.pth"]


def test_short_file_names_both_sizes_and_leaves_nothing(server, tmp_path):
    server.files["/short.pth"] = BLOB[:1000]
    dest = tmp_path / "m.pth"
    with pytest.raises(SizeMismatch) as ei:
        fetch_checkpoint(server.url("/short.pth"), dest, sha256=BLOB_SHA, size=len(BLOB))
    assert f"expected {len(BLOB)} bytes" in str(ei.value) and "actual 1000 bytes" in str(ei.value)
    assert leftovers(dest) == []


def test_resume_requests_only_the_rest(server, tmp_path):
    dest = tmp_path / "m.pth"
    (tmp_path / "m.pth.part").write_bytes(BLOB[:50_000])
    fetch_checkpoint(server.url("/m.pth"), dest, sha256=BLOB_SHA, size=len(BLOB))
    assert dest.read_bytes() == BLOB and leftovers(dest) == ["m.pth"]
    assert server.log == [("GET", "/m.pth", "bytes=50000-")]


def test_interrupted_transfer_keeps_part_then_resumes(server, tmp_path):
    dest = tmp_path / "m.pth"
    server.modes["/m.pth"] = "truncate:30000"
    with pytest.raises(FetchError) as ei:
        fetch_checkpoint(server.url("/m.pth"), dest, sha256=BLOB_SHA)
    assert "30000 bytes kept" in str(ei.value)
    assert (tmp_path / "m.pth.part").stat().st_size == 30000 and not dest.exists()
    server.modes["/m.pth"] = "ok"
    fetch_checkpoint(server.url("/m.pth"), dest, sha256=BLOB_SHA)
    assert dest.read_bytes() == BLOB
    assert server.log[-1] == ("GET", "/m.pth", "bytes=30000-")


def test_server_ignoring_range_restarts_cleanly(server, tmp_path):
    server.modes["/m.pth"] = "ignore_range"
    dest = tmp_path / "m.pth"
    (tmp_path / "m.pth.part").write_bytes(BLOB[:50_000])
    fetch_checkpoint(server.url("/m.pth"), dest, sha256=BLOB_SHA, size=len(BLOB))
    assert dest.read_bytes() == BLOB  # not the 50 000-byte prefix twice
    assert server.log == [("GET", "/m.pth", "bytes=50000-")]


def test_corrupt_part_is_refetched_from_zero_once(server, tmp_path):
    dest = tmp_path / "m.pth"
    (tmp_path / "m.pth.part").write_bytes(b"\xff" * 50_000)  # wrong prefix
    fetch_checkpoint(server.url("/m.pth"), dest, sha256=BLOB_SHA)
    assert dest.read_bytes() == BLOB
    assert server.log == [("GET", "/m.pth", "bytes=50000-"), ("GET", "/m.pth", None)]


def test_complete_part_is_verified_without_downloading_again(server, tmp_path):
    dest = tmp_path / "m.pth"
    (tmp_path / "m.pth.part").write_bytes(BLOB)  # e.g. a crash between download and rename
    fetch_checkpoint(server.url("/m.pth"), dest, sha256=BLOB_SHA)  # size unknown: asks, gets 416
    assert dest.read_bytes() == BLOB
    assert server.log == [("GET", "/m.pth", f"bytes={len(BLOB)}-")]


def test_present_file_with_right_digest_makes_no_request(server, tmp_path):
    dest = tmp_path / "m.pth"
    dest.write_bytes(BLOB)
    before = dest.stat().st_mtime_ns
    assert fetch_checkpoint(server.url("/m.pth"), dest, sha256=BLOB_SHA) == dest
    assert server.log == [] and dest.stat().st_mtime_ns == before


def test_present_file_with_wrong_digest_is_refused_untouched(server, tmp_path):
    dest = tmp_path / "m.pth"
    dest.write_bytes(b"something else")
    with pytest.raises(DigestMismatch):
        fetch_checkpoint(server.url("/m.pth"), dest, sha256=BLOB_SHA)
    assert dest.read_bytes() == b"something else" and server.log == []


def test_mirrors_tried_in_order_on_network_errors(server, tmp_path):
    server.files["/mirror.pth"] = BLOB
    server.modes["/m.pth"] = "status:503"
    with FileServer() as dead:  # a port that refuses connections once closed
        refused = dead.url("/m.pth")
    dest = tmp_path / "m.pth"
    fetch_checkpoint(refused, dest, sha256=BLOB_SHA, mirrors=[server.url("/m.pth"), server.url("/mirror.pth")])
    assert dest.read_bytes() == BLOB
    assert [p for _, p, _ in server.log] == ["/m.pth", "/mirror.pth"]


def test_all_sources_failing_names_each(server, tmp_path):
    with pytest.raises(FetchError) as ei:
        fetch_checkpoint(server.url("/nope"), tmp_path / "m.pth", sha256=BLOB_SHA, mirrors=[server.url("/gone")])
    assert "/nope: HTTP 404" in str(ei.value) and "/gone: HTTP 404" in str(ei.value)


def test_hf_resolve_url_needs_a_pinned_commit():
    rev = "a" * 40
    assert hf_resolve_url("BlinkDL/rwkv7-g1", rev, "x.pth") == f"https://huggingface.co/BlinkDL/rwkv7-g1/resolve/{rev}/x.pth"
    with pytest.raises(InputError, match="revision: expected a 40-hex commit id, got 'main'"):
        hf_resolve_url("BlinkDL/rwkv7-g1", "main", "x.pth")
    url, mirrors = backbone_sources({"file": "x.pth", "repo": "BlinkDL/rwkv7-g1", "revision": rev, "base_url": "http://127.0.0.1:1/", "mirror": "http://m/x.pth"})
    assert url == f"http://127.0.0.1:1/BlinkDL/rwkv7-g1/resolve/{rev}/x.pth" and mirrors == ["http://m/x.pth"]


def test_cli_success_and_failure(server, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    dest = tmp_path / "m.pth"
    base = [sys.executable, "-m", "urd.fetch", "--url", server.url("/m.pth"), "--dest", str(dest)]
    bad = subprocess.run(base + ["--sha256", "2" * 64], env=env, capture_output=True, text=True)
    assert bad.returncode == 1 and "SHA-256 mismatch" in bad.stderr and BLOB_SHA in bad.stderr
    assert not dest.exists()
    ok = subprocess.run(base + ["--sha256", BLOB_SHA, "--size", str(len(BLOB))], env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert dest.read_bytes() == BLOB and "100 %" in ok.stderr
