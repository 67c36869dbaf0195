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
    """``record``, when given, receives every request asked: the call graph a live run makes."""

    def __init__(self, responder: Responder, record: list[Request] | None = None) -> None:
        self._responder, self._record = responder, record

    def complete(self, model: str, request: Request) -> Completion:
        if self._record is not None:
            self._record.append(request)
        answer = self._responder(request)
        if isinstance(answer, tuple):
            raise RequestRefused(request.purpose, answer[1])
        return Completion(text=answer, model=SCRIPTED_MODEL, usage=Usage())
