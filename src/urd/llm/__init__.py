"""The shared LLM layer: one client on the anthropic SDK, metered, priced and replayable.

Every call names a purpose (``purposes``); routes map purposes to models. The model name ``scripted``
answers from a table instead of the network (see :mod:`urd.llm.scripted`). Imports core only.
"""

from .cache import ReplayCache
from .client import LLM, Backends
from .errors import CallFailed, CeilingReached, KeyMissing, LLMError, RequestRefused, Truncated
from .prices import Price, PriceBook
from .request import Completion, Request, fence, fenced_blocks
from .routes import Routes
from .scripted import SCRIPTED_MODEL, ScriptedBackend
from .usage import CallRecord, Meter, Usage, same_model

__all__ = [
    "LLM",
    "SCRIPTED_MODEL",
    "Backends",
    "CallFailed",
    "CallRecord",
    "CeilingReached",
    "Completion",
    "KeyMissing",
    "LLMError",
    "Meter",
    "Price",
    "PriceBook",
    "ReplayCache",
    "Request",
    "RequestRefused",
    "Routes",
    "ScriptedBackend",
    "Truncated",
    "Usage",
    "fence",
    "fenced_blocks",
    "same_model",
]
