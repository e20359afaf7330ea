"""An `/api/chat` or `/api/generate` body (or stream line) as an `LLMResponse`: one
mapping from the schema's `Body`, for bytes and decoded values alike."""

from __future__ import annotations

from typing import Any

import msgspec

from refusals.model import FinishReason, LLMResponse, ToolCall, Usage, new_response, new_usage
from refusals.providers._common import (
    FAST_FAILED,
    JsonObject,
    NormalizeError,
    Plain,
    arguments_text,
    key_names,
    plain_of,
)
from refusals.providers._lenient import filled, is_object, lenient, raw_value
from refusals.providers.ollama.schema import (
    Body,
    Message,
    ToolCallItem,
    decode_body,
    decode_message,
)

API = "chat"

DONE_REASONS: dict[str, FinishReason] = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    # Answers to an empty request that loads or unloads the model: nothing was asked, so
    # the request finished normally (with no content).
    "load": FinishReason.STOP,
    "unload": FinishReason.STOP,
}
"""`done_reason` → FinishReason; any other value is ERROR. A body with `done: true` and no
`done_reason` (older Ollama versions sent none) is STOP."""

_UNSET: Any = msgspec.UNSET
_UNFINISHED = FinishReason.ERROR


def parse_response(body: JsonObject, provider: str) -> LLMResponse:
    """A decoded (non-streaming) `/api/chat` or `/api/generate` response."""
    if not any(name in body for name in ("message", "response", "done", "done_reason")):
        raise NormalizeError(
            "expected an Ollama /api/chat or /api/generate response (message or response, "
            f"done, done_reason); got keys: {key_names(body)}"
        )
    return to_response(lenient(body, Body), provider)


def parse_fast(data: bytes | str, provider: str | None) -> LLMResponse | None:
    """The response of a body decoded strictly from its bytes; None when the body is not
    one (detection's checks, without a provider) or the decode rejects it."""
    if provider is not None and provider != "ollama":
        return None
    try:
        body = decode_body(data)
        if body.error is not None or body.claimed_elsewhere():
            return None  # an error body, or detection would look elsewhere
        if provider is None:
            # `detect_provider`: a boolean `done`, and a message object or a response text.
            has_message = is_object(body.message)
            if type(body.done) is not bool or not (has_message or type(body.response) is str):
                return None
            provider = "ollama"
        elif not body.message and _UNSET is body.response is body.done is body.done_reason:
            return None  # `parse_response` raises unless one of these keys is there
        return to_response(body, provider, message_of(body))
    except FAST_FAILED:
        return None


def parse_plain(data: bytes | str, provider: str | None) -> Plain | None:
    """`parse_fast`'s verdict (see `_protocol`): rare in logs, so read whole."""
    return plain_of(parse_fast(data, provider))


def message_of(body: Body) -> Message | None:
    """The body's message when it is a non-empty object (an empty one, or anything else,
    reads as none: the body is then a generate body)."""
    return filled(body.message, Message, decode_message)


def to_response(body: Body, provider: str, message: Message | Any | None = _UNSET) -> LLMResponse:
    """The one mapping of a chat or generate body to an `LLMResponse`."""
    if message is _UNSET:
        message = message_of(body)
    if message is not None:
        content, reasoning = message.content, message.thinking
        calls = [tool_call(item) for item in message.tool_calls or ()]
    else:
        response = body.response
        content = response if type(response) is str else None
        reasoning, calls = body.thinking, []
    raw = body.done_reason if type(body.done_reason) is str else None
    # A body that says it is not done is a cut stream, not an answer.
    finish = finish_of(raw, bool(calls)) if body.done is True else _UNFINISHED
    content = content or None
    return new_response(
        content,
        calls,
        reasoning or None,
        [],
        usage_of(body),
        finish,
        raw,
        body.model,
        None,
        provider,
        API,
        finish is _UNFINISHED and bool(content or calls),
    )


def finish_of(raw: str | None, has_tool_calls: bool) -> FinishReason:
    """How a finished (`done: true`) body ended, from its `done_reason`."""
    finish = FinishReason.STOP if raw is None else DONE_REASONS.get(raw, FinishReason.ERROR)
    if finish is FinishReason.STOP and has_tool_calls:
        finish = FinishReason.TOOL_CALLS
    return finish


def usage_of(body: Body) -> Usage:
    return new_usage(body.prompt_eval_count or 0, body.eval_count or 0, 0, 0, [])


def tool_call(item: ToolCallItem) -> ToolCall:
    function = item.function
    arguments = raw_value(function.arguments) if function is not None else None
    return ToolCall(
        item.id or "",
        (function.name if function is not None else None) or "",
        arguments_text(arguments),
    )
