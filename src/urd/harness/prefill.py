"""The state after each transcript, computed once per (scale, task, episode).

The control answers from it, and every system that reads the transcript with the model resumes
from it (ModelHandle.cache_prefix), so no transcript is prefilled twice. Stored as two files:
`<name>.bin`, each episode's canonical state bytes (urd.backbone.state) then its last-token
logits (fp32, little-endian), back to back; and `<name>.json`, the index: per episode the
transcript's SHA-256 and token count, offsets, sizes and the SHA-256 of its bytes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np

from ..core.errors import InputError
from ..core.io import atomic_write_bytes, atomic_write_json, sha256_bytes


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def compute(backbone, sessions: list[dict], bin_path, index_path, progress=None) -> dict:
    """Prefill every session-A transcript and write the two files."""
    from ..backbone.batch import prefill

    blobs, entries, at = [], [], 0
    for ep in sessions:
        tokens = backbone.tokenizer.encode(ep["transcript"])
        logits, state = prefill(backbone, tokens)
        blob = backbone.state_to_bytes(state) + logits.detach().cpu().numpy().astype("<f4").tobytes()
        entries.append({"episode": ep["episode"], "transcript_sha256": _sha(ep["transcript"]),
                        "tokens": len(tokens), "offset": at, "state_bytes": backbone.layout.n_bytes,
                        "logits_bytes": len(blob) - backbone.layout.n_bytes, "sha256": sha256_bytes(blob)})
        blobs.append(blob)
        at += len(blob)
        if progress:
            progress(ep)
    index = {"state_layout": dataclasses.asdict(backbone.layout), "episodes": entries}
    atomic_write_bytes(bin_path, b"".join(blobs))
    atomic_write_json(index_path, index)
    return index


def load_into(handle, sessions: list[dict], bin_path, index_path) -> int:
    """Give `handle` the stored state of each session's transcript; returns how many. A transcript
    the index does not hold, or bytes that do not match their digest, is an error naming the file."""
    index = json.loads(open(index_path, encoding="utf-8").read())
    by_sha = {e["transcript_sha256"]: e for e in index["episodes"]}
    data = open(bin_path, "rb").read()
    for ep in sessions:
        entry = by_sha.get(_sha(ep["transcript"]))
        if entry is None:
            raise InputError(index_path, f"episode {ep['episode']}", "the state of this episode's transcript "
                             "(rerun the prefill job)", "no entry with its SHA-256")
        blob = data[entry["offset"]: entry["offset"] + entry["state_bytes"] + entry["logits_bytes"]]
        if sha256_bytes(blob) != entry["sha256"]:
            raise InputError(bin_path, f"episode {ep['episode']}", f"bytes with SHA-256 {entry['sha256']}",
                             sha256_bytes(blob))
        tokens = handle.tokenizer.encode(ep["transcript"])
        if len(tokens) != entry["tokens"]:
            raise InputError(index_path, f"episode {ep['episode']}: tokens", entry["tokens"], len(tokens))
        import torch

        state = handle.state_from_bytes(blob[: entry["state_bytes"]])
        logits = torch.from_numpy(np.frombuffer(blob[entry["state_bytes"]:], dtype="<f4").copy())
        handle.cache_prefix(tokens, logits, state)
    return len(sessions)
