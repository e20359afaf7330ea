"""Errors of the Responses API: HTTP error bodies, read with the same shape and rules as
Chat Completions errors. https://platform.openai.com/docs/guides/error-codes"""

from __future__ import annotations

from refusals.model import (
    LLMResponse,
)
from refusals.providers._common import (
    JsonObject,
    error_response,
)
from refusals.providers.openai_chat import (
    classify_error,
    finish_error,
)
from refusals.providers.openai_responses.response import API, looks_like


def is_error(body: JsonObject) -> bool:
    """A bare error body (`{"error": {...}}`); a `failed` Responses object is a response."""
    if looks_like(body):
        return False
    error = body.get("error")
    return isinstance(error, dict | str)


def parse_error(body: JsonObject | str, status: int | None, provider: str) -> LLMResponse:
    """An HTTP error body (same shape and rules as Chat Completions errors)."""
    verdict = classify_error(body, status)
    response = error_response(
        verdict.error, provider=provider, api=API, stop=verdict.stop, model=verdict.model
    )
    return finish_error(response, verdict)
