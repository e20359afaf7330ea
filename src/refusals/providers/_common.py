"""Pieces every provider module shares: the payload error, field readers, error defaults."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from refusals.model import ErrorKind, FinishReason, LLMResponse, ProviderError, StopDetails

JsonObject = dict[str, Any]


class NormalizeError(ValueError):
    """A payload that is not a response or error body of any known wire format.

    The message names what was expected; it is safe to show to a user.
    """


def obj(value: Any) -> JsonObject:
    """`value` when it is a JSON object, else an empty one (absent and null read alike)."""
    return value if isinstance(value, dict) else {}


def arr(value: Any) -> list[Any]:
    """`value` when it is a JSON array, else an empty list."""
    return value if isinstance(value, list) else []


def string(value: Any) -> str | None:
    """`value` when it is a string, else None (numbers, null and lists are not strings)."""
    return value if isinstance(value, str) else None


def integer(value: Any) -> int:
    """A token count: `value` when it is a non-negative integer, else 0."""
    # type() rather than isinstance: a JSON boolean is an int subclass, and not a count.
    return value if type(value) is int and value > 0 else 0


def require_object(payload: Any, what: str) -> JsonObject:
    if not isinstance(payload, dict):
        raise NormalizeError(f"expected {what} as a JSON object, got {type_name(payload)}")
    return payload


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def status_error_kind(status: int | None) -> ErrorKind:
    """What an HTTP status means when the body says nothing more specific."""
    if status is None:
        return ErrorKind.INVALID_REQUEST
    if status in (408, 409, 425, 429) or status >= 500:
        return ErrorKind.TRANSIENT
    if status in (401, 402, 403, 407):
        return ErrorKind.AUTH
    return ErrorKind.INVALID_REQUEST


def error_response(
    error: ProviderError,
    *,
    provider: str,
    api: str,
    stop: StopDetails | None = None,
    model: str | None = None,
    request_id: str | None = None,
) -> LLMResponse:
    """The `LLMResponse` for an HTTP error body: a policy block is a content-filter stop."""
    finish = FinishReason.CONTENT_FILTER if error.kind is ErrorKind.POLICY else FinishReason.ERROR
    if finish is FinishReason.CONTENT_FILTER and stop is None:
        stop = StopDetails(explanation=error.message)
    return LLMResponse(
        finish_reason=finish,
        raw_finish_reason=error.code if error.code is not None else _status_text(error.status),
        reasoning_details=[stop.to_detail()] if stop is not None else [],
        model=model,
        request_id=request_id,
        provider=provider,
        api=api,
        error=error,
    )


def _status_text(status: int | None) -> str | None:
    return None if status is None else f"http_{status}"
