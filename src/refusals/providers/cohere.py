"""Cohere Chat API, v1 and v2: full responses and HTTP error bodies.

v1 (`POST /v1/chat`) answers `{"text", "generation_id", "response_id", "finish_reason",
"tool_calls": [{"name", "parameters"}], "meta": {"billed_units", "tokens"}}`; v2
(`POST /v2/chat`) answers `{"id", "finish_reason", "message": {"role", "content": [{"type":
"text", "text"}, {"type": "thinking", "thinking"}], "tool_plan", "tool_calls": [{"id",
"function": {"name", "arguments"}}]}, "usage": {"billed_units", "tokens",
"cached_tokens"}}`. Errors are `{"message": "..."}` with the HTTP status.

Documentation:

- https://docs.cohere.com/v1/reference/chat (v1 response, `finish_reason`)
- https://docs.cohere.com/v2/reference/chat (v2 response, `finish_reason`)
- https://docs.cohere.com/reference/errors (error body and statuses)
- cohere-python `ChatStreamEndEventFinishReason` documents the v1 values: `ERROR_LIMIT`
  "the reply was cut off because the model reached the maximum number of tokens for its
  context length"; `ERROR_TOXIC` "the model generated a reply that was deemed toxic".

Cohere names no filter category; an `ERROR_TOXIC` stop reports the category `toxic`, the
only thing its value says about the block.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from refusals.model import (
    Detail,
    ErrorKind,
    FinishReason,
    LLMResponse,
    ProviderError,
    StopDetails,
    ToolCall,
    Usage,
)
from refusals.providers._common import (
    JsonObject,
    NormalizeError,
    arr,
    error_response,
    integer,
    obj,
    status_error_kind,
    string,
)
from refusals.refusal import truncate_within

API = "chat"

FINISH_REASONS: dict[str, FinishReason] = {
    "COMPLETE": FinishReason.STOP,
    "STOP_SEQUENCE": FinishReason.STOP,
    "MAX_TOKENS": FinishReason.LENGTH,
    "ERROR_LIMIT": FinishReason.LENGTH,  # v1: cut off at the context length
    "TOOL_CALL": FinishReason.TOOL_CALLS,  # v2
    "ERROR_TOXIC": FinishReason.CONTENT_FILTER,  # v1: the reply was deemed toxic
    "ERROR": FinishReason.ERROR,
    "TIMEOUT": FinishReason.ERROR,  # v2
    "USER_CANCEL": FinishReason.ERROR,  # v1: cancelled, so not a finished answer
}
"""`finish_reason` (v1 and v2 share one namespace) → FinishReason; others are ERROR."""

FILTER_CATEGORIES: dict[str, str] = {"ERROR_TOXIC": "toxic"}
"""The category a content-filter finish reason stands for."""

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
_UPPER_VALUE = re.compile(r"[A-Z][A-Z_]*")
_MAX_MESSAGE_CHARS = 1000
_SECRET = re.compile(
    r"(?i)(?:\bsk-[A-Za-z0-9_\-]{6,}|\bAIza[0-9A-Za-z_\-]{10,}|\bbearer\s+[^\s\"',)\]}]+"
    r"|\bx-(?:goog-)?api-key\b\s*[:=]?\s*[^\s\"',)\]}]*"
    r"|\b(?:api_?key|key|token|access_token)=[^\s&\"',]+)"
)
_TAG = re.compile(r"<[^>]*>")


def detect_provider(body: JsonObject) -> str | None:
    """`"cohere"` for a v1 or v2 chat response; None for anything else.

    Error bodies (`{"message": "..."}`) are not claimed: other APIs (Bedrock among them)
    answer errors in the same shape, so only `provider="cohere"` reads them as Cohere's.
    """
    if "choices" in body or "error" in body:
        return None
    upper_finish = _is_upper(body.get("finish_reason"))
    message = body.get("message")
    if isinstance(message, dict) and isinstance(message.get("role"), str) and upper_finish:
        return "cohere"
    if isinstance(body.get("generation_id"), str):
        return "cohere"
    if isinstance(body.get("text"), str) and upper_finish:
        return "cohere"
    return None


def looks_like(body: JsonObject) -> bool:
    return detect_provider(body) is not None


def is_error(body: JsonObject) -> bool:
    """Whether `body` is a Cohere error body: `{"message": "..."}` and no finish reason."""
    return (
        isinstance(body.get("message"), str)
        and "finish_reason" not in body
        and "text" not in body
        and "generation_id" not in body
    )


def parse_response(body: JsonObject, provider: str) -> LLMResponse:
    """A full (non-streaming) v1 or v2 chat response."""
    if isinstance(body.get("message"), dict):
        return _parse_v2(body, provider)
    if not any(name in body for name in ("text", "generation_id", "finish_reason")):
        raise NormalizeError(
            "expected a Cohere chat response (v2: id, message, finish_reason; v1: text, "
            f"generation_id, finish_reason); got keys: {_keys(body)}"
        )
    return _parse_v1(body, provider)


def _parse_v2(body: JsonObject, provider: str) -> LLMResponse:
    message = obj(body.get("message"))
    texts: list[str] = []
    thoughts: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        texts.append(content)
    for item in arr(content):
        part = obj(item)
        kind = part.get("type")
        if kind == "thinking":
            thought = string(part.get("thinking"))
            if thought:
                thoughts.append(thought)
        elif kind in ("text", None):
            text = string(part.get("text"))
            if text is not None:
                texts.append(text)
    plan = string(message.get("tool_plan"))
    if plan:
        thoughts.append(plan)
    calls = []
    for item in arr(message.get("tool_calls")):
        call = obj(item)
        function = obj(call.get("function"))
        arguments = function.get("arguments")
        calls.append(
            ToolCall(
                id=string(call.get("id")) or "",
                name=string(function.get("name")) or "",
                arguments=arguments if isinstance(arguments, str) else _json_text(arguments),
            )
        )
    usage = obj(body.get("usage"))
    return _result(
        body,
        provider,
        content="".join(texts) or None,
        reasoning="\n".join(thoughts) or None,
        tool_calls=calls,
        usage=_usage(usage, cached=usage.get("cached_tokens")),
        request_id=string(body.get("id")),
    )


def _parse_v1(body: JsonObject, provider: str) -> LLMResponse:
    calls = []
    for item in arr(body.get("tool_calls")):
        call = obj(item)
        calls.append(
            ToolCall(
                name=string(call.get("name")) or "",
                arguments=_json_text(call.get("parameters")),
            )
        )
    meta = obj(body.get("meta"))
    return _result(
        body,
        provider,
        content=string(body.get("text")) or None,
        reasoning=None,
        tool_calls=calls,
        usage=_usage(meta, cached=meta.get("cached_tokens")),
        request_id=string(body.get("response_id")) or string(body.get("generation_id")),
    )


def _result(
    body: JsonObject,
    provider: str,
    *,
    content: str | None,
    reasoning: str | None,
    tool_calls: list[ToolCall],
    usage: Usage,
    request_id: str | None,
) -> LLMResponse:
    raw = string(body.get("finish_reason"))
    finish = FINISH_REASONS.get(raw or "", FinishReason.ERROR)
    if finish is FinishReason.STOP and tool_calls:
        finish = FinishReason.TOOL_CALLS
    details: list[Detail] = []
    category = FILTER_CATEGORIES.get(raw or "")
    if category is not None:
        details.append(StopDetails(category=category).to_detail())
    cut_off = bool(content or tool_calls) and finish in (
        FinishReason.CONTENT_FILTER,
        FinishReason.REFUSAL,
        FinishReason.ERROR,
    )
    return LLMResponse(
        content=content,
        tool_calls=tool_calls,
        reasoning=reasoning,
        reasoning_details=details,
        usage=usage,
        finish_reason=finish,
        raw_finish_reason=raw,
        model=string(body.get("model")),
        request_id=request_id,
        provider=provider,
        api=API,
        cut_off=cut_off,
    )


def parse_error(body: JsonObject | str, status: int | None, provider: str) -> LLMResponse:
    """An HTTP error body (`{"message": "..."}`), or the text of a page sent instead."""
    payload: Any = body
    if isinstance(payload, str):
        text: str | None = _TAG.sub(" ", payload)
    else:
        fields = obj(payload)
        text = string(fields.get("message"))
        if text is None:
            error = fields.get("error")
            text = string(error) or string(obj(error).get("message"))
    message = _clean_message(text) if text is not None else None
    kind = _error_kind(status, message)
    stop = StopDetails(explanation=message) if message else None
    return error_response(
        ProviderError(kind, status, None, message), provider=provider, api=API, stop=stop
    )


def _error_kind(status: int | None, message: str | None) -> ErrorKind:
    if (
        message is not None
        and (status is None or status in _POLICY_STATUSES)
        and _POLICY_MESSAGE.search(message)
    ):
        return ErrorKind.POLICY
    if status is None and message is not None:
        if _AUTH_MESSAGE.search(message):
            return ErrorKind.AUTH
        if _TRANSIENT_MESSAGE.search(message):
            return ErrorKind.TRANSIENT
    return status_error_kind(status)


def _usage(holder: JsonObject, *, cached: Any) -> Usage:
    # `tokens` counts what the model processed; `billed_units` only what was billed.
    tokens = obj(holder.get("tokens"))
    billed = obj(holder.get("billed_units"))
    counts = tokens if tokens else billed
    return Usage(
        input_tokens=integer(counts.get("input_tokens")),
        output_tokens=integer(counts.get("output_tokens")),
        cache_read_tokens=integer(cached),
    )


def _json_text(value: Any) -> str:
    if value is None:
        return "{}"
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # orjson.JSONEncodeError: e.g. an integer beyond 64 bits
        return "{}"


def _is_upper(value: Any) -> bool:
    return isinstance(value, str) and _UPPER_VALUE.fullmatch(value) is not None


def _clean_message(text: str) -> str | None:
    text = " ".join(_SECRET.sub("[redacted]", text).split())
    return truncate_within(text, _MAX_MESSAGE_CHARS, "...") or None


def _keys(body: JsonObject) -> str:
    names = list(body)[:8]
    return ", ".join(names) + (", ..." if len(body) > 8 else "") if names else "none"
