"""Google error bodies (`google.rpc.Status`) classified, for HTTP errors and errors inside a
stream: a Responsible-AI block is a content filter, a bad key is an auth error whatever
the status says. https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes"""

from __future__ import annotations

import re
from typing import Any

from refusals.model import ErrorKind, LLMResponse, ProviderError, StopDetails
from refusals.providers._common import (
    FAST_FAILED,
    JsonObject,
    bounded_message,
    error_response,
    obj,
    says_blocked,
    status_error_kind,
    strip_tags,
)
from refusals.providers._lenient import lenient
from refusals.providers.gemini.response import API, looks_like
from refusals.providers.gemini.schema import Body, ErrorInfo, decode_body

ERROR_STATUSES: dict[str, ErrorKind] = {
    "RESOURCE_EXHAUSTED": ErrorKind.TRANSIENT,
    "UNAVAILABLE": ErrorKind.TRANSIENT,
    "INTERNAL": ErrorKind.TRANSIENT,
    "DEADLINE_EXCEEDED": ErrorKind.TRANSIENT,
    "ABORTED": ErrorKind.TRANSIENT,
    "UNKNOWN": ErrorKind.TRANSIENT,
    "PERMISSION_DENIED": ErrorKind.AUTH,
    "UNAUTHENTICATED": ErrorKind.AUTH,
    "INVALID_ARGUMENT": ErrorKind.INVALID_REQUEST,
    "FAILED_PRECONDITION": ErrorKind.INVALID_REQUEST,
    "NOT_FOUND": ErrorKind.INVALID_REQUEST,
    "OUT_OF_RANGE": ErrorKind.INVALID_REQUEST,
    "ALREADY_EXISTS": ErrorKind.INVALID_REQUEST,
    "UNIMPLEMENTED": ErrorKind.INVALID_REQUEST,
}
"""`error.status` (google.rpc.Code name) → ErrorKind; others fall back to the HTTP status."""

# `google.rpc.ErrorInfo.reason` values that mean the credentials are wrong, whatever the
# status says (a bad Gemini API key is a 400 INVALID_ARGUMENT).
AUTH_REASONS = frozenset(
    {
        "API_KEY_INVALID",
        "API_KEY_EXPIRED",
        "API_KEY_SERVICE_BLOCKED",
        "API_KEY_HTTP_REFERRER_BLOCKED",
        "API_KEY_IP_ADDRESS_BLOCKED",
        "API_KEY_ANDROID_APP_BLOCKED",
        "API_KEY_IOS_APP_BLOCKED",
        "ACCESS_TOKEN_EXPIRED",
        "ACCESS_TOKEN_SCOPE_INSUFFICIENT",
        "CONSUMER_INVALID",
        "SERVICE_DISABLED",
    }
)

# An error message that states a Responsible-AI / policy block (e.g. Vertex AI's "…violate
# Google's Responsible AI practices"), told apart from a permission or argument error.
_POLICY_MESSAGE = re.compile(
    r"responsible ai|prohibited content|violat\w*\s[^.]{0,80}?(?:polic|guideline)",
    re.IGNORECASE,
)
_GOOGLE_STATUS = re.compile(r"[A-Z][A-Z0-9_]*")


def detect_error(body: JsonObject) -> str | None:
    """`"gemini"` for a Google error body (`error.status` an upper-case code name)."""
    status = obj(body.get("error")).get("status")
    if isinstance(status, str) and _GOOGLE_STATUS.fullmatch(status):
        return "gemini"
    return None


def is_error(body: JsonObject) -> bool:
    """Whether `body` is a Google error body (`{"error": {"code", "message", "status"}}`)."""
    return isinstance(body.get("error"), dict | str) and not looks_like(body)


def parse_error(
    body: JsonObject | str | list[Any], status: int | None, provider: str
) -> LLMResponse:
    """An HTTP error body: `{"error": {"code": 429, "message": …, "status": "RESOURCE_EXHAUSTED",
    "details": [...]}}`, or the text of a page a gateway sent instead."""
    payload: Any = body
    if isinstance(payload, list):  # streaming endpoints wrap the error in an array
        payload = next((item for item in payload if isinstance(item, dict)), {})
    if isinstance(payload, str):
        message = bounded_message(strip_tags(payload))
        error = ProviderError(status_error_kind(status), status, None, message)
        return error_response(error, provider=provider, api=API, stop=_error_stop(message))
    return to_error(lenient(payload if isinstance(payload, dict) else {}, Body), status, provider)


def parse_error_fast(data: bytes | str, status: int | None, provider: str) -> LLMResponse | None:
    """`parse_error` of an error body decoded strictly from its bytes, or None."""
    try:
        body = decode_body(data)
    except FAST_FAILED:
        return None
    return to_error(body, status, provider)


def to_error(body: Body, status: int | None, provider: str) -> LLMResponse:
    """The one mapping of an error body (or an error chunk of a stream)."""
    error = body.error
    info = error if isinstance(error, ErrorInfo) else None
    message = info.message if info is not None else None
    if message is None:
        message = (error if isinstance(error, str) else None) or body.message
    # A credential keeps its name: "Consumer 'api_key:[redacted]' has been suspended."
    message = bounded_message(message)
    code_name = info.status if info is not None else None
    body_code = (info.code or 0) if info is not None else 0
    http = status if status is not None else (body_code if 100 <= body_code <= 599 else None)
    reasons = {d.reason for d in (info.details or ()) if d.reason is not None} if info else set()
    kind = _error_kind(code_name, http, reasons, message)
    return error_response(
        ProviderError(kind, http, code_name, message),
        provider=provider,
        api=API,
        stop=_error_stop(message),
    )


def _error_kind(
    code_name: str | None, http: int | None, reasons: set[str], message: str | None
) -> ErrorKind:
    if reasons & AUTH_REASONS:
        return ErrorKind.AUTH
    by_status = ERROR_STATUSES.get(code_name) if code_name is not None else None
    if by_status is None:
        by_status = status_error_kind(http)
    if by_status is not ErrorKind.TRANSIENT and says_blocked(message, _POLICY_MESSAGE):
        return ErrorKind.POLICY
    return by_status


def _error_stop(message: str | None) -> StopDetails | None:
    return StopDetails(explanation=message) if message else None
