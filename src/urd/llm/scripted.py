"""The scripted arm: the model name ``scripted`` answers from a table, offline and free.

The backend is generic: a responder reads the request's fenced data and returns the
reply text, or ``None`` when its table has no entry, which is refused and counted.
"""

from __future__ import annotations

from collections.abc import Callable

from .errors import RequestRefused
from .request import Completion, Request
from .usage import Usage

SCRIPTED_MODEL = "scripted"

#: Returns the reply text, or ``(None, why)`` when the table cannot answer.
Responder = Callable[[Request], "str | tuple[None, str]"]


class ScriptedBackend:
    def __init__(self, responder: Responder) -> None:
        self._responder = responder

    def complete(self, model: str, request: Request) -> Completion:
        answer = self._responder(request)
        if isinstance(answer, tuple):
            raise RequestRefused(request.purpose, answer[1])
        return Completion(text=answer, model=SCRIPTED_MODEL, usage=Usage())
