"""Bedrock error bodies (`{"message"}` with the exception name in `__type`, `type`, boto3's
`Error.Code` or the `x-amzn-ErrorType` header), read through the schema's `ErrorBody`."""

from __future__ import annotations

import re
from typing import Any

from refusals.model import (
    ErrorKind,
    LLMResponse,
    ProviderError,
    StopDetails,
)
from refusals.providers._common import (
    JsonObject,
    bounded_message,
    error_response,
    page_text,
    require_object,
    says_blocked,
    status_error_kind,
    string,
)
from refusals.providers._lenient import lenient
from refusals.providers.bedrock.schema import API, DECLINED, ErrorBody, decode_error

ERROR_TYPES: dict[str, ErrorKind] = {
    "ThrottlingException": ErrorKind.TRANSIENT,  # 429
    "ServiceUnavailableException": ErrorKind.TRANSIENT,  # 503
    "ModelNotReadyException": ErrorKind.TRANSIENT,  # 429
    "ModelTimeoutException": ErrorKind.TRANSIENT,  # 408
    "ModelErrorException": ErrorKind.TRANSIENT,  # 424
    "ModelStreamErrorException": ErrorKind.TRANSIENT,  # 424
    "InternalServerException": ErrorKind.TRANSIENT,  # 500
    # "You can resubmit your request later" (400), says the Converse reference.
    "ServiceQuotaExceededException": ErrorKind.TRANSIENT,
    "AccessDeniedException": ErrorKind.AUTH,  # 403
    "UnrecognizedClientException": ErrorKind.AUTH,  # 403
    "InvalidSignatureException": ErrorKind.AUTH,  # 403
    "IncompleteSignatureException": ErrorKind.AUTH,  # 400
    "MissingAuthenticationTokenException": ErrorKind.AUTH,  # 403
    "ExpiredTokenException": ErrorKind.AUTH,  # 400/403
    "ValidationException": ErrorKind.INVALID_REQUEST,  # 400, unless a filter blocked it
    "ResourceNotFoundException": ErrorKind.INVALID_REQUEST,  # 404
}
"""Exception name (from `__type`, `type` or `Error.Code`) → ErrorKind; unknown names fall
back to the HTTP status. Names are matched without regard to case (event streams spell them
`throttlingException`)."""

ERROR_NAMES = {name.lower(): name for name in ERROR_TYPES}

MAX_ERROR_MESSAGE_CHARS = 500
"""Upper bound, in code points, on an error message copied from a provider body."""

_THROTTLED = re.compile(r"too many requests|rate exceeded|throttl", re.IGNORECASE)


def is_error(body: JsonObject) -> bool:
    """The body is an error body (`{"message": ...}` and kin), even without a status."""
    if "output" in body or "stopReason" in body:
        return False
    return (
        isinstance(body.get("__type"), str)
        or isinstance(body.get("Error"), dict)
        or isinstance(body.get("message"), str)
        or isinstance(body.get("Message"), str)
    )


def parse_error(body: JsonObject | str, status: int | None, provider: str) -> LLMResponse:
    """An HTTP error body (JSON, or the text of a non-JSON page) as an `LLMResponse`."""
    if isinstance(body, str):
        return _error_of(None, error_message(page_text(body)), None, status, provider)
    body = require_object(body, "a Bedrock error body")
    return to_error(lenient(body, ErrorBody), status, provider)


def parse_error_fast(data: bytes | str, status: int | None, provider: str) -> LLMResponse | None:
    """`parse_error` of an error body decoded strictly from its bytes, or None."""
    try:
        body = decode_error(data)
    except DECLINED:
        return None
    return to_error(body, status, provider)


def to_error(body: ErrorBody, status: int | None, provider: str) -> LLMResponse:
    """The one mapping of an error body (`__type` or `type`, or boto3's `Error.Code`)."""
    error = body.error
    metadata = body.response_metadata
    name = (
        exception_name(body.aws_type)
        or exception_name(body.type)
        or exception_name(error.code if error is not None else None)
    )
    message = error_message(
        body.message or body.message_upper or (error.message if error is not None else None)
    )
    request_id = metadata.request_id if metadata is not None else None
    if status is None and metadata is not None:
        status = metadata.http_status_code
    return _error_of(name, message, request_id, status, provider)


def _error_of(
    name: str | None, message: str | None, request_id: str | None, status: int | None, provider: str
) -> LLMResponse:
    known = ERROR_NAMES.get(name.lower()) if name is not None else None
    if known is not None:
        name = known
        kind = ERROR_TYPES[known]
    elif status is not None:
        kind = status_error_kind(status)
    elif message is not None and _THROTTLED.search(message):
        kind = ErrorKind.TRANSIENT
    else:
        kind = status_error_kind(status)
    # "This request has been blocked by our content filters." and similar wordings of a
    # ValidationException: a policy block, not a malformed request.
    if kind is not ErrorKind.TRANSIENT and says_blocked(message):
        kind = ErrorKind.POLICY
    error_obj = ProviderError(kind, status, name, message)
    stop = StopDetails(explanation=message) if message is not None else None
    return error_response(error_obj, provider=provider, api=API, stop=stop, request_id=request_id)


def exception_name(value: Any) -> str | None:
    """`ValidationException` from `com.amazon.coral.validate#ValidationException` or
    `ValidationException:http://internal.amazon.com/...`."""
    text = string(value)
    if text is None:
        return None
    name = text.rsplit("#", 1)[-1].split(":", 1)[0].strip()
    return name or None


def known_exception(value: Any) -> str | None:
    name = exception_name(value)
    return ERROR_NAMES.get(name.lower()) if name is not None else None


def error_message(text: str | None) -> str | None:
    # A credential header goes whole, name and all: "Credential=[redacted]/..., [redacted]".
    return bounded_message(text, limit=MAX_ERROR_MESSAGE_CHARS, keep_names=False)
