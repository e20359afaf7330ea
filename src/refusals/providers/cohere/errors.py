"""Cohere error bodies (`{"message": "..."}` with the HTTP status) and errors in a stream,
classified by status and wording (Cohere sends no error codes).
https://docs.cohere.com/reference/errors"""

from __future__ import annotations

import re
from typing import Any

from refusals.model import ErrorKind, LLMResponse, ProviderError, StopDetails
from refusals.providers._common import (
    JsonObject,
    bounded_message,
    error_response,
    obj,
    says_blocked,
    status_error_kind,
    string,
    strip_tags,
)
from refusals.providers.cohere.response import API

# A 400/422 whose message says the content itself was blocked, not the request's form.
_POLICY_MESSAGE = re.compile(
    r"\b(?:toxic|unsafe|harmful)\b"
    r"|\b(?:blocked|flagged|rejected)\b[^.]{0,40}\b(?:safety|moderation|policy|content)\b"
    r"|\b(?:content|prompt|input|output|message)\b[^.]{0,40}\b(?:blocked|flagged)\b"
    r"|content polic|safety (?:filter|guardrail|mode)",
    re.IGNORECASE,
)
_POLICY_STATUSES = (400, 403, 422)
_AUTH_MESSAGE = re.compile(r"api (?:key|token)|unauthori[sz]ed|no api key", re.IGNORECASE)
_TRANSIENT_MESSAGE = re.compile(
    r"rate limit|too many requests|trial key|try again|overloaded|unavailable", re.IGNORECASE
)


def is_error(body: JsonObject) -> bool:
    """Whether `body` is a Cohere error body: `{"message": "..."}` and no finish reason."""
    return (
        isinstance(body.get("message"), str)
        and "finish_reason" not in body
        and "text" not in body
        and "generation_id" not in body
    )


def parse_error(body: JsonObject | str, status: int | None, provider: str) -> LLMResponse:
    """An HTTP error body (`{"message": "..."}`), or the text of a page sent instead."""
    payload: Any = body
    if isinstance(payload, str):
        text: str | None = strip_tags(payload)
    else:
        fields = obj(payload)
        text = string(fields.get("message"))
        if text is None:
            error = fields.get("error")
            text = string(error) or string(obj(error).get("message"))
    return error_of(text, status, provider)


def error_of(text: str | None, status: int | None, provider: str) -> LLMResponse:
    """The response of an error with this message text."""
    # A credential goes whole, name and all: "invalid api token: [redacted]".
    message = bounded_message(text, keep_names=False)
    kind = _error_kind(status, message)
    stop = StopDetails(explanation=message) if message else None
    return error_response(
        ProviderError(kind, status, None, message), provider=provider, api=API, stop=stop
    )


def _error_kind(status: int | None, message: str | None) -> ErrorKind:
    if (status is None or status in _POLICY_STATUSES) and says_blocked(message, _POLICY_MESSAGE):
        return ErrorKind.POLICY
    if status is None and message is not None:
        if _AUTH_MESSAGE.search(message):
            return ErrorKind.AUTH
        if _TRANSIENT_MESSAGE.search(message):
            return ErrorKind.TRANSIENT
    return status_error_kind(status)
