"""What each side of the session boundary may read of an episode.

Session A (consolidation) reads the transcript; session B (answering) reads the task header and
the query prompts. Neither view carries the expected answers, the query kinds (which would tell
an answering system which keys were never shown) or the T2 marker: judging joins those back in
afterwards, from the full data. Each view is its own file, written by `calibrate` and pinned in
the manifest like the full data, so a job's declared inputs say what it could have read.
"""

from __future__ import annotations

from pathlib import Path

SIDES = ("session_a", "session_b")


def session_a(episode: dict) -> dict:
    return {"task": episode["task"], "episode": episode["episode"], "header": episode["header"],
            "transcript": episode["transcript"]}


def session_b(episode: dict) -> dict:
    return {"task": episode["task"], "episode": episode["episode"], "header": episode["header"],
            "queries": [{"id": q["id"], "prompt": q["prompt"]} for q in episode["queries"]]}


VIEWS = {"session_a": session_a, "session_b": session_b}


def view_path(data_path: str | Path, side: str) -> Path:
    """data/c1/t1.jsonl -> data/c1/t1.session_a.jsonl"""
    p = Path(data_path)
    return p.with_name(f"{p.stem}.{side}{p.suffix}")
