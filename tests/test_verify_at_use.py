"""Verification at use, where it is used: each command that consumes verified files (the harness's
session jobs, the controls, the tuning jobs, the oracle) re-checks every verify stamp it is handed
before it reads anything, so a data view, a checkpoint or a data file changed after its stamp is
refused there, naming the file; and a malformed manifest line is an error naming the line."""

import json

import pytest

from urd.controls.cli import main as controls_main
from urd.core.errors import InputError
from urd.core.io import sha256_file
from urd.core.manifest import read_manifest
from urd.harness.run import main as harness_main
from urd.replay.tune import main as tune_main


@pytest.fixture
def tampered(tmp_path, monkeypatch):
    """make(name): a file, its verify stamp, then the file changed after the stamp was written."""
    monkeypatch.chdir(tmp_path)

    def make(rel: str) -> str:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('{"episode": 0}\n')
        stamp = tmp_path / "results/urd/verified" / f"{rel}.sha256"
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(f"{sha256_file(path)}  {rel}\n")
        path.write_text('{"episode": 1}\n')  # after verification
        return str(stamp.relative_to(tmp_path))

    return make


SPEC = json.dumps({"strategy": "cpu fp32", "plugins": {}, "evaluate_episodes": None, "evaluate_queries": None,
                   "decode": {"t1": {"max_new_tokens": 4}}, "consolidation_factor": 10})
KINDS = {"data view": "data/c1/t1.session_b.jsonl", "checkpoint": "models/urd-tiny.pth", "data": "data/c1/t1.jsonl"}


def _refused(capsys, rel: str) -> None:
    err = capsys.readouterr().err
    assert f"{rel}: SHA-256 mismatch" in err and "changed after it was verified" in err, err


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("job", ["consolidate", "answer", "control"])
def test_a_session_job_refuses_a_file_changed_after_its_stamp(tampered, capsys, kind, job):
    rel = KINDS[kind]
    stamp = tampered(rel)
    args = {"consolidate": ["--sessions", "a.jsonl", "--task", "t1", "--system", "vanilla", "--split", "over"],
            "answer": ["--prompts", "b.jsonl", "--fiches", "f.jsonl", "--system", "vanilla"],
            "control": ["--sessions", "a.jsonl", "--prompts", "b.jsonl", "--prefill", "p.json"]}[job]
    code = harness_main([job, "--checkpoint", "models/urd-tiny.pth", *args, "--spec", SPEC, "--verified", stamp,
                         "--out", "out.jsonl"])
    assert code != 0
    _refused(capsys, rel)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_controls_refuse_a_file_changed_after_its_stamp(tampered, capsys, kind):
    rel = KINDS[kind]
    code = controls_main(["ceiling", "--checkpoint", "models/urd-tiny.pth", "--scale", "tiny", "--data", f"t1={rel}",
                          "--artifacts", "artifacts/replay/tiny", "--recipes", "replay_tune", "--state-file", "s.pt",
                          "--spec", SPEC, "--verified", tampered(rel), "--out", "c.json", "--responses", "c.jsonl"])
    assert code != 0
    _refused(capsys, rel)


@pytest.mark.parametrize("kind", ["checkpoint", "data"])
def test_a_tuning_job_refuses_a_file_changed_after_its_stamp(tampered, capsys, kind):
    rel = KINDS[kind]
    code = tune_main(["--checkpoint", "models/urd-tiny.pth", "--data", "data/c1/t1.jsonl", "--task", "t1",
                      "--episode", "0", "--sha256", "0" * 64, "--recipe", "replay_tune", "--scale", "tiny",
                      "--settings", "{}", "--factor", "10", "--out-dir", "artifacts/replay", "--verified", tampered(rel)])
    assert code != 0
    _refused(capsys, rel)


def test_a_malformed_manifest_line_is_an_error_naming_the_line(tmp_path):
    manifest = tmp_path / "manifest.sha256"
    good = "0" * 64
    manifest.write_text(f"{good}  data/c1/t1.jsonl\n{good[:-1]}  data/t2.jsonl\n")
    with pytest.raises(InputError, match=r"manifest.sha256: line 2: expected '<64 hex digits>  <path>'"):
        read_manifest(manifest)
    manifest.write_text(f"{good}  data/c1/t1.jsonl\n\n{good}  data/t2.jsonl\n")  # a blank line is no entry
    assert read_manifest(manifest) == {"data/c1/t1.jsonl": good, "data/t2.jsonl": good}


def test_a_checkpoint_handed_over_as_a_descriptor_is_checked_and_loaded_through_it_then_sealed(
        tiny_checkpoint, tmp_path, monkeypatch):
    """Session B in the sandbox: the checkpoint's path is not there, only the descriptor the
    runner opened (urd.core.hidden). The stamp is checked and the model loaded through it; after
    the seal nothing in the process reaches the file."""
    import os
    import shutil

    from urd.core import hidden
    from urd.core.errors import DigestMismatch
    from urd.core.verify import check_stamps
    from urd.harness.run import session_b_handle

    monkeypatch.chdir(tmp_path)
    model = tmp_path / "models/urd-tiny.pth"
    model.parent.mkdir()
    shutil.copy(tiny_checkpoint, model)
    stamp = tmp_path / "model.sha256"
    stamp.write_text(f"{sha256_file(model)}  models/urd-tiny.pth\n")
    fd = os.open(model, os.O_RDONLY)
    model.unlink()  # as in the sandbox: the path does not exist, the descriptor does
    monkeypatch.setenv(hidden.ENV, f"{fd}:{model}")
    check_stamps([stamp])
    handle = session_b_handle("models/urd-tiny.pth", json.loads(SPEC))
    assert handle.generate(handle.tokenizer.encode("the code for"), max_new_tokens=2)  # the model runs
    assert hidden.ENV not in os.environ
    with pytest.raises(OSError):
        os.fstat(fd)  # closed: /proc/self/fd leads nowhere
    with pytest.raises(InputError, match="urd-tiny.pth"):
        check_stamps([stamp])
    # a descriptor of other bytes than the stamp's: refused
    other = tmp_path / "other.pth"
    other.write_bytes(b"not the model")
    monkeypatch.setenv(hidden.ENV, f"{os.open(other, os.O_RDONLY)}:{model}")
    with pytest.raises(DigestMismatch):
        check_stamps([stamp])
    hidden.seal()
