"""Checkpoint fetch against a real loopback server: the Hub through huggingface_hub, mirrors over
plain HTTP (Range support and misbehaviours)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from loopback_http import FileServer

from urd.backbone.fetch import FetchError, SizeMismatch, fetch_backbone, fetch_checkpoint
from urd.core.errors import DigestMismatch

BLOB = hashlib.sha256(b"urd").digest() * 4096  # 128 KiB, deterministic, not all one byte
BLOB_SHA = hashlib.sha256(BLOB).hexdigest()
SRC = REPO / "src"


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


REPO_ID = "BlinkDL/rwkv7-g1"
COMMIT = "c0ffee" + "0" * 34


@pytest.fixture
def hub(server, monkeypatch):
    """The loopback server as the Hub: HF_ENDPOINT points the client at it, as RWKV users do."""
    server.hub_file(REPO_ID, "m.pth", BLOB, commit=COMMIT)
    monkeypatch.setenv("HF_ENDPOINT", server.base)
    return server


def hub_fetch(dest, **kw):
    said = []
    kw = {"sha256": BLOB_SHA, "size": len(BLOB), "repo": REPO_ID, "say": said.append, **kw}
    return fetch_backbone(dest, **kw), said


def test_hub_main_resolves_to_a_commit_and_the_bytes_are_verified(hub, tmp_path):
    dest = tmp_path / "models" / "m.pth"
    out, said = hub_fetch(dest, base_url="http://127.0.0.1:1")  # HF_ENDPOINT wins over base_url
    assert out == dest and dest.read_bytes() == BLOB
    assert any(f"{REPO_ID}@main is commit {COMMIT}" in line for line in said)
    paths = [(m, p) for m, p, _ in hub.log]
    assert ("HEAD", f"/{REPO_ID}/resolve/main/m.pth") in paths
    assert ("GET", f"/cdn/{BLOB_SHA}") in paths  # the bytes come from the commit main pointed to
    assert sorted(p.name for p in dest.parent.iterdir()) == [".hub", "m.pth"]
    assert not list((dest.parent / ".hub").glob("*.pth"))  # moved into place, not copied


def test_hub_announcing_other_bytes_fetches_nothing(hub, tmp_path):
    dest = tmp_path / "m.pth"
    with pytest.raises(DigestMismatch) as ei:
        hub_fetch(dest, sha256="0" * 64)
    assert BLOB_SHA in str(ei.value) and "nothing was fetched" in " ".join(ei.value.__notes__)
    assert not [p for m, p, _ in hub.log if p.startswith("/cdn/")] and not dest.exists()


def test_hub_announcing_another_size_fetches_nothing(hub, tmp_path):
    with pytest.raises(SizeMismatch, match=f"expected {len(BLOB) + 1} bytes, actual {len(BLOB)} bytes"):
        hub_fetch(tmp_path / "m.pth", size=len(BLOB) + 1)
    assert not [p for m, p, _ in hub.log if p.startswith("/cdn/")]


def test_hub_serving_other_bytes_than_pinned_fails_and_no_mirror_papers_over_it(hub, tmp_path):
    tampered = bytes(reversed(BLOB))
    hub.hub_file(REPO_ID, "m.pth", tampered, commit="d" * 40, announce=BLOB_SHA)
    hub.files["/mirror/m.pth"] = BLOB
    dest = tmp_path / "m.pth"
    with pytest.raises(DigestMismatch) as ei:
        hub_fetch(dest, mirrors=[hub.url("/mirror")])
    assert hashlib.sha256(tampered).hexdigest() in str(ei.value)
    assert not dest.exists() and not list(tmp_path.rglob("m.pth"))
    assert not [p for _, p, _ in hub.log if p.startswith("/mirror")]


def test_unreachable_hub_falls_back_to_the_mirrors_in_order(server, tmp_path, monkeypatch):
    with FileServer() as dead:
        refused = dead.base
    monkeypatch.setenv("HF_ENDPOINT", refused)
    server.files["/mirror2/m.pth"] = BLOB
    dest = tmp_path / "m.pth"
    _, said = hub_fetch(dest, mirrors=[server.url("/mirror1"), server.url("/mirror2")])
    assert dest.read_bytes() == BLOB
    assert [p for _, p, _ in server.log] == ["/mirror1/m.pth", "/mirror2/m.pth"]
    assert any("the Hub failed" in line and refused in line for line in said)


def test_every_source_failing_names_each_and_keeps_the_pin(hub, tmp_path):
    with pytest.raises(FetchError) as ei:
        hub_fetch(tmp_path / "m.pth", revision="no-such-branch", mirrors=[hub.url("/gone")])
    msg = str(ei.value)
    assert "at no-such-branch: RevisionNotFoundError" in msg and "/gone/m.pth: HTTP 404" in msg


def test_an_interrupted_hub_download_resumes_where_it_stopped(hub, tmp_path, monkeypatch):
    import huggingface_hub.constants

    # 16 KiB chunks, so a 128 KiB file is written in parts before the connection drops
    monkeypatch.setattr(huggingface_hub.constants, "DOWNLOAD_CHUNK_SIZE", 1 << 14)
    cdn = f"/cdn/{BLOB_SHA}"
    hub.modes[cdn] = "truncate:40000"  # every answer hangs up after 40,000 bytes
    dest = tmp_path / "m.pth"
    hub_fetch(dest)
    assert dest.read_bytes() == BLOB
    ranges = [r for _, p, r in hub.log if p == cdn]
    assert ranges[0] is None and ranges[1:] == [f"bytes={k * 32768}-" for k in range(1, len(ranges))]


def test_cli_success_and_failure(hub, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    dest = tmp_path / "m.pth"
    base = [sys.executable, "-m", "urd.backbone.fetch", "--repo", REPO_ID, "--file", "m.pth", "--dest", str(dest)]
    bad = subprocess.run(base + ["--sha256", "2" * 64], env=env, capture_output=True, text=True)
    assert bad.returncode == 1 and "SHA-256 mismatch" in bad.stderr and BLOB_SHA in bad.stderr
    assert not dest.exists()
    unpinned = subprocess.run(base + ["--sha256", "unpinned"], env=env, capture_output=True, text=True)
    assert unpinned.returncode == 1 and "no line pins models/m.pth" in unpinned.stderr
    ok = subprocess.run(base + ["--sha256", BLOB_SHA, "--size", str(len(BLOB))], env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert dest.read_bytes() == BLOB and f"is commit {COMMIT}" in ok.stderr


def test_a_hub_transfer_that_fails_in_the_client_falls_back_to_the_mirror(hub, tmp_path, monkeypatch):
    import huggingface_hub

    def broken(*args, **kwargs):  # as a Xet transfer or the client's consistency check would fail
        raise OSError("Consistency check failed: file should be of size 131072 but has size 40000")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", broken)
    hub.files["/mirror/m.pth"] = BLOB
    dest = tmp_path / "m.pth"
    _, said = hub_fetch(dest, mirrors=[hub.url("/mirror")])
    assert dest.read_bytes() == BLOB
    assert any("Consistency check failed" in line for line in said)
