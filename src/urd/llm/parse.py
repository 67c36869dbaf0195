"""Reading a structured reply: the one JSON object in it."""

from __future__ import annotations

import json


def json_object(reply: str) -> dict | None:
    """The one JSON object in a reply, tolerating a code fence or prose around it."""
    start, end = reply.find("{"), reply.rfind("}")
    if start == -1 or end < start:
        return None
    try:
        data = json.JSONDecoder(strict=False).decode(reply[start : end + 1])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
