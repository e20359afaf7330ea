"""Facts that travel only in HTTP response headers, read case-insensitively.

Bedrock names its exception only in `x-amzn-ErrorType` (the body has just `message`);
the wait a rate limit asks for is in `retry-after` (seconds or an HTTP date) or
`retry-after-ms`; Anthropic and OpenAI advise on retrying with `x-should-retry`; every
provider puts its request id in a header of its own.

Documentation:
- https://docs.aws.amazon.com/bedrock/latest/APIReference/CommonErrors.html
- https://www.rfc-editor.org/rfc/rfc9110#name-retry-after
- https://docs.claude.com/en/api/errors (request-id, retry-after, x-should-retry)
- https://platform.openai.com/docs/api-reference/debugging-requests (x-request-id)
- https://learn.microsoft.com/azure/ai-foundry/openai/reference (apim-request-id)
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

from refusals.model import LLMResponse

REQUEST_ID_HEADERS = (
    "request-id",
    "x-request-id",
    "x-amzn-requestid",
    "x-amzn-request-id",
    "x-amz-request-id",
    "apim-request-id",
    "x-ms-request-id",
    "x-goog-request-id",
)
"""Headers that carry a request id, most specific first."""

MAX_HEADER_CHARS = 200
"""Header values longer than this are not facts we keep (a request id, a number)."""


@dataclass(frozen=True, slots=True)
class HeaderFacts:
    request_id: str | None = None
    retry_after: float | None = None
    should_retry: bool | None = None
    bedrock_error: str | None = None
    """The exception name of `x-amzn-ErrorType` (`ValidationException`)."""


def read(headers: Mapping[Any, Any]) -> HeaderFacts:
    """The facts of a response's headers; values that are not short text are ignored."""
    lowered: dict[str, str] = {}
    for raw_name, raw_value in headers.items():
        name = _text(raw_name)
        value = _text(raw_value)
        if name is not None and value is not None and len(value) <= MAX_HEADER_CHARS:
            lowered[name.strip().lower()] = value.strip()
    request_id = next((lowered[h] for h in REQUEST_ID_HEADERS if lowered.get(h)), None)
    error_type = lowered.get("x-amzn-errortype")
    name = error_type.split(":", 1)[0].rsplit("#", 1)[-1].strip() if error_type else None
    return HeaderFacts(
        request_id=request_id,
        retry_after=_retry_after(lowered),
        should_retry=_flag(lowered.get("x-should-retry")),
        bedrock_error=name or None,
    )


def apply(response: LLMResponse, facts: HeaderFacts) -> None:
    """Put the header facts on `response`: a request id when the body gave none, and the
    retry advice on its error."""
    if response.request_id is None and facts.request_id is not None:
        response.request_id = facts.request_id
    error = response.error
    if error is not None and (facts.retry_after is not None or facts.should_retry is not None):
        response.error = dataclasses.replace(
            error,
            retry_after=facts.retry_after if facts.retry_after is not None else error.retry_after,
            should_retry=facts.should_retry
            if facts.should_retry is not None
            else error.should_retry,
        )


def _text(value: Any) -> str | None:
    # httpx and h11 give raw header bytes in Latin-1, as HTTP defines them.
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value if isinstance(value, str) else None


def _retry_after(headers: Mapping[str, str]) -> float | None:
    milliseconds = _number(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    value = headers.get("retry-after")
    if not value:
        return None
    seconds = _number(value)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _number(value: str | None) -> float | None:
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    if math.isnan(number) or math.isinf(number) or number < 0:
        return None
    return number


def _flag(value: str | None) -> bool | None:
    if value is None:
        return None
    lowered = value.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    return None
