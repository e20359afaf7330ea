"""Ollama error bodies (`{"error": "<text>"}`, a 401 adding `signin_url`) and error lines
in a stream, classified by status and wording (Ollama sends no error codes).
https://docs.ollama.com/api/errors"""

from __future__ import annotations

import re
from typing import Any

from refusals.model import ErrorKind, LLMResponse, ProviderError, StopDetails
from refusals.providers._common import (
    JsonObject,
    bounded_message,
    error_response,
    obj,
    status_error_kind,
    strip_tags,
)
from refusals.providers._lenient import lenient
from refusals.providers.ollama.response import API
from refusals.providers.ollama.schema import Body, ErrorObject
from refusals.providers.openai_chat.errors import classify_error, to_error

_AUTH_MESSAGE = re.compile(r"unauthori[sz]ed|api key|forbidden", re.IGNORECASE)
_INVALID_MESSAGE = re.compile(
    r"not found|no such model|invalid|missing|must be|does not support|not supported",
    re.IGNORECASE,
)


def is_error(body: JsonObject) -> bool:
    """Whether `body` is an error body: an `error` and no answer beside it."""
    return (
        isinstance(body.get("error"), str | dict)
        and "message" not in body
        and "response" not in body
    )


def parse_error(body: JsonObject | str, status: int | None, provider: str) -> LLMResponse:
    """An HTTP error body (`{"error": "..."}`), or the text of a page sent instead."""
    payload: Any = body
    code: str | None = None
    if isinstance(payload, str):
        text: str | None = strip_tags(payload)
    else:
        payload = obj(payload)
        error = lenient(payload, Body).error
        text = error if isinstance(error, str) else None
        if isinstance(error, ErrorObject):  # an OpenAI-style body from Ollama's /v1 endpoints
            # OpenAI's policy codes (`invalid_prompt`, `content_filter`) are filters here
            # too; anything else keeps Ollama's own reading of the status.
            verdict = classify_error(payload, status)
            if verdict.error.kind is ErrorKind.POLICY:
                return to_error(verdict, provider)
            text = error.message
            code = error.code or error.type
    message = bounded_message(text)
    kind = _error_kind(status, message)
    stop = StopDetails(explanation=message) if message else None
    return error_response(
        ProviderError(kind, status, code, message), provider=provider, api=API, stop=stop
    )


def _error_kind(status: int | None, message: str | None) -> ErrorKind:
    if status is not None or message is None:
        # 404 (model not found) is an invalid request; 500 is a server fault, retryable.
        return status_error_kind(status)
    # No status: an error line in a 200 stream, where the model failed while running
    # ("an error was encountered while running the model"), a server fault like a 500,
    # unless the message says the request or the credentials are wrong.
    if _AUTH_MESSAGE.search(message):
        return ErrorKind.AUTH
    if _INVALID_MESSAGE.search(message):
        return ErrorKind.INVALID_REQUEST
    return ErrorKind.TRANSIENT
