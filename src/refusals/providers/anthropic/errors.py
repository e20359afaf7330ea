"""Anthropic HTTP error bodies (and `error` stream events) classified: a policy block is
a content filter, an overload is transient. https://docs.claude.com/en/api/errors"""

from __future__ import annotations

from refusals.model import ErrorKind, LLMResponse, ProviderError, StopDetails
from refusals.providers._common import (
    FAST_FAILED,
    JsonObject,
    bounded_message,
    error_response,
    page_text,
    require_object,
    says_blocked,
    status_error_kind,
)
from refusals.providers._lenient import lenient
from refusals.providers.anthropic.response import API, has_message_fields
from refusals.providers.anthropic.schema import ErrorBody, decode_error

ERROR_TYPES: dict[str, ErrorKind] = {
    "invalid_request_error": ErrorKind.INVALID_REQUEST,  # 400
    "authentication_error": ErrorKind.AUTH,  # 401
    "billing_error": ErrorKind.AUTH,  # 402
    "permission_error": ErrorKind.AUTH,  # 403
    "not_found_error": ErrorKind.INVALID_REQUEST,  # 404
    "conflict_error": ErrorKind.TRANSIENT,  # 409
    "request_too_large": ErrorKind.INVALID_REQUEST,  # 413
    "rate_limit_error": ErrorKind.TRANSIENT,  # 429
    "api_error": ErrorKind.TRANSIENT,  # 500
    "timeout_error": ErrorKind.TRANSIENT,  # 504
    "overloaded_error": ErrorKind.TRANSIENT,  # 529
}
"""`error.type` of an error body → ErrorKind; unknown types fall back to the HTTP status."""

NOT_RETRYABLE_ERROR_CODES: dict[str, ErrorKind] = {
    # A 429 whose `error.details.error_code` says the monthly spend limit was reached:
    # retrying fails until the limit changes.
    "enforced_spend_limit_reached": ErrorKind.AUTH,
}

MAX_ERROR_MESSAGE_CHARS = 500
"""Upper bound, in code points, on an error message copied from a provider body."""


def is_error(body: JsonObject) -> bool:
    """The body is an error (`{"type": "error", "error": {...}}`), even without a status."""
    if body.get("type") == "error":
        return True
    return isinstance(body.get("error"), dict) and not has_message_fields(body)


def is_error_body(body: JsonObject) -> bool:
    """Whether a decoded body has exactly Anthropic's error shape (for detection)."""
    if body.get("type") != "error":
        return False
    error = body.get("error")
    if not isinstance(error, dict) or not isinstance(error.get("type"), str):
        return False
    # OpenAI Responses stream error events share the outer shape; they carry a
    # sequence number and an error code or param, which Anthropic errors never do.
    return "sequence_number" not in body and "code" not in error and "param" not in error


def parse_error(body: JsonObject | str, status: int | None, provider: str) -> LLMResponse:
    """An HTTP error body (decoded JSON, or the text of a non-JSON page) as an `LLMResponse`."""
    if isinstance(body, str):
        message = _bounded_message(page_text(body))
        kind = status_error_kind(status)
        if kind is not ErrorKind.TRANSIENT and says_blocked(message):
            kind = ErrorKind.POLICY
        return _error(ProviderError(kind, status, None, message), provider)
    return to_error(
        lenient(require_object(body, "an Anthropic error body"), ErrorBody), status, provider
    )


def parse_error_fast(data: bytes | str, status: int | None, provider: str) -> LLMResponse | None:
    """`parse_error` of an error body decoded strictly from its bytes, or None."""
    try:
        body = decode_error(data)
    except FAST_FAILED:
        return None
    return to_error(body, status, provider)


def to_error(body: ErrorBody, status: int | None, provider: str) -> LLMResponse:
    """The one mapping of an error body (or error event) to an `LLMResponse`."""
    error = body.error
    code = error.type if error is not None else None
    message = _bounded_message((error.message if error is not None else None) or body.message)
    known = ERROR_TYPES.get(code) if code is not None else None
    kind = known if known is not None else status_error_kind(status)
    details = error.details if error is not None else None
    detail_code = details.error_code if details is not None else None
    if detail_code is not None and detail_code in NOT_RETRYABLE_ERROR_CODES:
        kind = NOT_RETRYABLE_ERROR_CODES[detail_code]
        code = detail_code
    # "Output blocked by content filtering policy" (HTTP 400 invalid_request_error) and
    # similar wordings: a policy block, not a malformed request.
    if kind is not ErrorKind.TRANSIENT and says_blocked(message):
        kind = ErrorKind.POLICY
    return _error(ProviderError(kind, status, code, message), provider, body.request_id)


def _bounded_message(text: str | None) -> str | None:
    # A credential header goes whole, name and all: "invalid [redacted]".
    return bounded_message(text, limit=MAX_ERROR_MESSAGE_CHARS, keep_names=False)


def _error(error: ProviderError, provider: str, request_id: str | None = None) -> LLMResponse:
    stop = StopDetails(explanation=error.message) if error.message is not None else None
    return error_response(error, provider=provider, api=API, stop=stop, request_id=request_id)
