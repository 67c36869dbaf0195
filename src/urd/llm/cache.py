"""Content-addressed record/replay of live calls, so a rerun spends nothing.

A record is keyed on the SHA-256 of the canonical request (model, purpose,
instructions, data, output budget, replica) and holds the request and the reply.
It never holds a credential: nothing from the client's configuration is written.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from ..core.errors import InputError
from ..core.io import atomic_write_json
from .request import Completion, Request
from .usage import Usage


class ReplayCache:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, model: str, request: Request) -> Completion | None:
        key = request.cache_key(model)
        path = self._path(key)
        if not path.exists():
            return None
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            reply = record["response"]
            if record["key"] != key:
                raise KeyError("key")
            return Completion(text=reply["text"], model=reply["model"], usage=Usage(**reply["usage"]),
                              truncated=bool(reply.get("truncated", False)))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(path, "response", "a replay record written by urd", str(exc)) from None

    def put(self, model: str, request: Request, completion: Completion) -> None:
        key = request.cache_key(model)
        atomic_write_json(
            self._path(key),
            {
                "key": key,
                "request": request.identity(model),
                "response": {
                    "text": completion.text,
                    "model": completion.model,
                    "usage": asdict(completion.usage),
                    "truncated": completion.truncated,
                },
            },
        )
