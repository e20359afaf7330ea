"""A Cohere v1 or v2 chat body as an `LLMResponse`: one mapping from the schema's `Chat`,
for bytes and decoded values alike. Cohere names no filter category; an `ERROR_TOXIC`
stop reports the category `toxic`, the only thing its value says about the block."""

from __future__ import annotations

import re
from typing import Any

import msgspec

from refusals.model import (
    FinishReason,
    LLMResponse,
    StopDetails,
    ToolCall,
    Usage,
    new_response,
    new_usage,
)
from refusals.providers._common import (
    FAST_FAILED,
    INTERRUPTED,
    JsonObject,
    NormalizeError,
    Plain,
    arguments_text,
    key_names,
    plain_of,
)
from refusals.providers._lenient import Given, filled, lenient, raw_value
from refusals.providers.cohere.schema import (
    CallV1,
    CallV2,
    Chat,
    Message,
    Tokens,
    decode_chat,
    decode_tokens,
    decode_usage,
)
from refusals.providers.cohere.schema import Usage as UsageHolder

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

_UPPER_VALUE = re.compile(r"[A-Z][A-Z_]*")
_UNSET: Any = msgspec.UNSET


def is_upper(value: Any) -> bool:
    return isinstance(value, str) and _UPPER_VALUE.fullmatch(value) is not None


def parse_response(body: JsonObject, provider: str) -> LLMResponse:
    """A decoded (non-streaming) v1 or v2 chat response."""
    if not isinstance(body.get("message"), dict) and not any(
        name in body for name in ("text", "generation_id", "finish_reason")
    ):
        raise NormalizeError(
            "expected a Cohere chat response (v2: id, message, finish_reason; v1: text, "
            f"generation_id, finish_reason); got keys: {key_names(body)}"
        )
    return to_response(lenient(body, Chat), provider)


def parse_fast(data: bytes | str, provider: str | None) -> LLMResponse | None:
    """The response of a chat body decoded strictly from its bytes; None when the body is
    not one (detection's checks, without a provider) or the decode rejects it."""
    if provider is not None and provider != "cohere":
        return None
    try:
        body = decode_chat(data)
        if body.claimed_elsewhere():
            return None
        message = body.message
        if isinstance(message, str):
            return None  # a message that is a text: an error body (see `is_error`)
        v2 = message is not None
        if provider is None:
            # `detect_provider`: a v2 message with a role, a generation id, or a v1 text,
            # with an upper-case finish reason.
            upper = is_upper(body.finish_reason)
            role = message is not None and message.role is not None
            if not (
                (role and upper)
                or type(body.generation_id) is str
                or (type(body.text) is str and upper)
            ):
                return None
            provider = "cohere"
        elif not v2 and _UNSET is body.text is body.generation_id is body.finish_reason:
            return None  # `parse_response` raises unless one of these keys is there
        return to_response(body, provider)
    except FAST_FAILED:
        return None


def parse_plain(data: bytes | str, provider: str | None) -> Plain | None:
    """`parse_fast`'s verdict (see `_protocol`): rare in logs, so read whole."""
    return plain_of(parse_fast(data, provider))


def to_response(body: Chat, provider: str) -> LLMResponse:
    """The one mapping of a chat body to an `LLMResponse`."""
    message = body.message
    if isinstance(message, Message):  # v2
        content, reasoning = v2_text(message)
        calls = v2_calls(message.tool_calls)
        usage = usage_of(body.usage)
        request_id = body.id
    else:  # v1
        text = body.text
        content = (text if type(text) is str else None) or None
        reasoning = None
        calls = v1_calls(body.tool_calls)
        usage = usage_of(body.meta)
        request_id = body.response_id or (
            body.generation_id if type(body.generation_id) is str else None
        )
    raw = body.finish_reason if type(body.finish_reason) is str else None
    finish, stop = finish_of(raw, bool(calls))
    return new_response(
        content,
        calls,
        reasoning,
        [stop.to_detail()] if stop is not None else [],
        usage,
        finish,
        raw,
        body.model,
        request_id,
        provider,
        API,
        finish in INTERRUPTED and bool(content or calls),
    )


def v2_text(message: Message) -> tuple[str | None, str | None]:
    """The text and the reasoning (thinking items, then the tool plan) of a v2 message."""
    texts: list[str] = []
    thoughts: list[str] = []
    content = message.content
    if isinstance(content, str):
        texts.append(content)
    elif content is not None:
        for part in content:
            kind = part.type
            if kind == "thinking":
                if part.thinking:
                    thoughts.append(part.thinking)
            elif (kind == "text" or kind is None) and part.text is not None:
                texts.append(part.text)
    if message.tool_plan:
        thoughts.append(message.tool_plan)
    return "".join(texts) or None, "\n".join(thoughts) or None


def v2_calls(calls: list[CallV2] | None) -> list[ToolCall]:
    """v2 `message.tool_calls`: `[{"id", "function": {"name", "arguments"}}]`."""
    found = []
    for call in calls or ():
        function = call.function
        arguments = raw_value(function.arguments) if function is not None else None
        name = function.name if function is not None else None
        found.append(ToolCall(call.id or "", name or "", arguments_text(arguments)))
    return found


def v1_calls(calls: list[CallV1] | None) -> list[ToolCall]:
    """v1 `tool_calls`: `[{"name", "parameters"}]` (no ids)."""
    return [
        ToolCall("", call.name or "", arguments_text(raw_value(call.parameters)))
        for call in calls or ()
    ]


def holder_of(value: msgspec.Raw | Given) -> UsageHolder | None:
    """A v2 `usage` or v1 `meta` when it is a non-empty object."""
    return filled(value, UsageHolder, decode_usage)


def usage_of(value: msgspec.Raw | Given) -> Usage:
    return counts_of(holder_of(value))


def counts_of(holder: UsageHolder | None) -> Usage:
    # `tokens` counts what the model processed; `billed_units` only what was billed.
    if holder is None:
        return new_usage(0, 0, 0, 0, [])
    counts = filled(holder.tokens, Tokens, decode_tokens)
    if counts is None:
        counts = filled(holder.billed_units, Tokens, decode_tokens) or Tokens()
    return new_usage(
        counts.input_tokens or 0, counts.output_tokens or 0, holder.cached_tokens or 0, 0, []
    )


def finish_of(raw: str | None, has_tool_calls: bool) -> tuple[FinishReason, StopDetails | None]:
    """The finish reason for a `finish_reason` value, and the stop details a filter has."""
    finish = FINISH_REASONS.get(raw or "", FinishReason.ERROR)
    if finish is FinishReason.STOP and has_tool_calls:
        finish = FinishReason.TOOL_CALLS
    category = FILTER_CATEGORIES.get(raw or "")
    return finish, StopDetails(category=category) if category is not None else None
