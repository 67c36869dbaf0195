"""Errors of the LLM layer. None of them ever carries the API key."""

from ..core.errors import UrdError


class LLMError(UrdError):
    """Base class for failures of a model call."""


class KeyMissing(LLMError):
    """A live model was routed but ANTHROPIC_API_KEY is not set."""

    def __init__(self) -> None:
        super().__init__(
            "ANTHROPIC_API_KEY is not set: a live model needs it (the scripted arm does not)"
        )


class CallFailed(LLMError):
    """The SDK gave up on a call (after its own retries) or the reply had no text."""

    retries = 0  # the SDK's retries before it gave up
    lost = 0  # replies the API billed whose body never arrived whole

    def __init__(self, purpose: str, model: str, why: str) -> None:
        self.purpose, self.model, self.why = purpose, model, why
        super().__init__(f"{purpose} call on {model} failed: {why}")


class Truncated(CallFailed):
    """The reply stopped at its output budget, again after the one retry with a larger one."""

    def __init__(self, purpose: str, model: str, max_tokens: int) -> None:
        super().__init__(purpose, model, f"reply cut at max_tokens={max_tokens} (a truncated reply is never parsed)")
        self.max_tokens = max_tokens


class CeilingReached(LLMError):
    """A call was not made: at its worst case it could have taken the spend past the ceiling."""

    retries = 0
    lost = 0

    def __init__(self, purpose: str, model: str, spent: float, worst: float, ceiling: float) -> None:
        self.purpose, self.spent, self.worst, self.ceiling = purpose, spent, worst, ceiling
        super().__init__(
            f"stopped before the next {purpose} call on {model}: spent US${spent:.4f}, and the call could cost up to "
            f"US${worst:.4f}, past the ceiling US${ceiling:g}"
        )


class RequestRefused(LLMError):
    """The scripted arm's table has no answer for this request's data."""

    def __init__(self, purpose: str, detail: str) -> None:
        self.purpose, self.detail = purpose, detail
        super().__init__(f"scripted arm refused a {purpose} request: {detail}")
