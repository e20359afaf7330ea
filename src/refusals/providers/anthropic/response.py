"""A full Messages response as an `LLMResponse`: one mapping from the schema's Structs,
for bytes (strict decode) and decoded values (the lenient pass) alike."""

from __future__ import annotations

from typing import Any

import msgspec

from refusals.model import (
    Detail,
    Fallback,
    FinishReason,
    LLMResponse,
    ToolCall,
    Usage,
    detail_type,
    new_response,
    new_usage,
    stop_detail_text,
)
from refusals.providers._common import (
    FAST_FAILED,
    INTERRUPTED,
    NOT_PLAIN,
    PLAIN_FINISHES,
    JsonObject,
    Keyed,
    NormalizeError,
    Plain,
    json_text,
    keyed,
    require_object,
    typed_detail,
)
from refusals.providers._lenient import lenient, raw_value
from refusals.providers.anthropic.schema import (
    Block,
    Message,
    MessageUsage,
    ModelRef,
    PlainBlock,
    PlainMessage,
    decode_message,
)

API = "messages"

STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALLS,
    "pause_turn": FinishReason.PAUSE,
    "compaction": FinishReason.PAUSE,
    "refusal": FinishReason.REFUSAL,
}
"""Raw `stop_reason` → FinishReason. Anything not listed (or absent) is ERROR, never STOP."""

_ERROR = FinishReason.ERROR  # an enum member read off its class costs ~100 ns on 3.11
_UNSET: Any = msgspec.UNSET
_NO_FACTS = (None, None, None, None, None)


def is_message(body: JsonObject) -> bool:
    """Whether a decoded body has a Messages response's shape."""
    if body.get("type") != "message":
        return False
    if "stop_reason" in body:
        return True
    # An OpenAI Responses output item is also {"type": "message", "content": [...]},
    # but it has a status and no model.
    return isinstance(body.get("content"), list) and "model" in body and "status" not in body


def has_message_fields(body: JsonObject) -> bool:
    return body.get("type") == "message" or "content" in body or "stop_reason" in body


def parse_response(body: JsonObject, provider: str) -> LLMResponse:
    """A decoded (non-streaming) Messages response as an `LLMResponse`."""
    body = require_object(body, "an Anthropic Messages response")
    if not has_message_fields(body):
        raise NormalizeError(
            'expected an Anthropic Messages response (an object with type "message", '
            "content and stop_reason)"
        )
    return to_response(lenient(body, Message), provider)


def _decoded(data: bytes | str, provider: str | None) -> Message | None:
    """The Messages body decoded strictly; None for another provider's name or when the
    strict decode rejects the body."""
    if provider is not None and provider != "anthropic":
        return None
    try:
        return decode_message(data)
    except FAST_FAILED:
        return None


def _taken(body: Message, provider: str | None) -> Message | None:
    """The body, when detection takes it for a Messages body (see `_decoded`)."""
    if provider is not None and provider != "anthropic":
        return None
    if body.type != "message":
        return None
    if provider is None:
        # What detection checks: no other format's hint, no Bedrock InvokeModel marker,
        # and a Messages shape (see `is_message`).
        if body.object is not None and body.object in ("chat.completion", "response"):
            return None
        if body.guardrail_action or body.invocation_metrics:
            return None
        if body.stop_reason is _UNSET and not (
            body.content is not None and body.model is not _UNSET and not body.status
        ):
            return None
    return body


def parse_fast(data: bytes | str, provider: str | None) -> LLMResponse | None:
    """The response of a Messages body decoded strictly from its bytes; None when the body
    is not one (detection's checks, without a provider) or the strict decode rejects it."""
    body = _decoded(data, provider)
    return message_response(body, provider) if body is not None else None


def message_response(body: Message, provider: str | None) -> LLMResponse | None:
    """`parse_fast` of a Messages body already decoded strictly (inside an envelope)."""
    if _taken(body, provider) is None:
        return None
    try:
        return to_response(body, "anthropic")
    except FAST_FAILED:
        return None  # a tool input orjson will not take: read again from the decoded value


def parse_plain(data: bytes | str, provider: str | None) -> Plain | None:
    """`to_response`'s verdict on a plain answer: a stop reason that neither refuses nor
    fails, no stop details, no fallback and no usage iterations (see `_protocol`)."""
    body = _decoded(data, provider)
    return plain_message(body, provider) if body is not None else None


def plain_message(body: Message, provider: str | None) -> Plain | None:
    """`parse_plain` of a Messages body already decoded strictly (inside an envelope)."""
    if _taken(body, provider) is None:
        return None
    stop_reason = body.stop_reason
    finish = STOP_REASONS.get(stop_reason) if type(stop_reason) is str else None
    if finish not in PLAIN_FINISHES or body.stop_details is not None:
        return NOT_PLAIN
    usage = body.usage
    if (usage is not None and usage.iterations) or not _plain_blocks(body.content):
        return NOT_PLAIN
    model = body.model
    assert finish is not None  # a plain finish
    return "anthropic", model if type(model) is str else None, finish


def _plain_blocks(blocks: list[Block] | list[PlainBlock] | None) -> bool:
    """Whether the content blocks fit a plain answer: no fallback block, and every tool
    call's input one that `to_response` can write (orjson declines some msgspec keeps)."""
    try:
        for block in blocks or ():
            kind = block.type
            if kind == "fallback":
                return False
            if kind == "tool_use" and block.input:
                # What `to_response` may fail on: `json_text` of the value never does.
                raw_value(block.input)
    except FAST_FAILED:
        return False
    return True


def plain_answer(body: PlainMessage, provider: str | None) -> Plain | None:
    """`plain_message(body, provider)` of a body `PlainMessage` decodes (the Struct
    declines every other answer); None when detection would not take it for a Messages
    body, NOT_PLAIN when a tool call's input is one the mapping declines."""
    if provider is None:
        if body.object is not None and body.object in ("chat.completion", "response"):
            return None
    elif provider != "anthropic":
        return None
    # `PlainBlock` declines a fallback block: only a tool call's input is left to check,
    # by `_plain_blocks`, when there is one (the loop here costs less than its call).
    for block in body.content or ():
        if block.type == "tool_use":
            if not _plain_blocks(body.content):
                return NOT_PLAIN
            break
    model = body.model
    return "anthropic", model if type(model) is str else None, STOP_REASONS[body.stop_reason]


def to_response(body: Message, provider: str) -> LLMResponse:
    """The one mapping of a Messages body to an `LLMResponse`."""
    text: str | None = None
    texts: list[str] | None = None  # from a second text block on
    thinking: list[str] = []
    tool_calls: list[ToolCall] = []
    details: list[Detail] = []
    for block in body.content or ():
        kind = block.type
        if kind == "text":
            piece = block.text
            if piece:
                if text is None:
                    text = piece
                elif texts is None:
                    texts = [text, piece]
                else:
                    texts.append(piece)
        elif kind == "thinking":
            if block.thinking:
                thinking.append(block.thinking)
            details.append(typed_detail("thinking", "signature", block.signature))
        elif kind == "redacted_thinking":
            details.append(typed_detail("redacted_thinking", "data", block.data))
        elif kind == "tool_use":
            arguments = json_text(raw_value(block.input)) if block.input else ""
            tool_calls.append(ToolCall(block.id or "", block.name or "", arguments))
        elif kind == "fallback":
            # Kept in place, so a fallback's position among thinking details is preserved.
            details.append(fallback_of(block).to_detail())
        # server_tool_use, web_search_tool_result, compaction and other blocks ran on the
        # server: they are neither answer text nor calls the client has to run.
    if texts is not None:
        text = "".join(texts)

    given = body.stop_details
    if given is not None:
        facts = (
            given.category,
            given.explanation,
            given.recommended_model,
            given.fallback_credit_token,
            given.fallback_has_prefill_claim,
        )
        if facts != _NO_FACTS:  # a provider that said nothing adds no detail
            details.append(stop_detail_text(*facts))

    stop_reason = body.stop_reason
    if type(stop_reason) is str:
        raw: str | None = stop_reason
        finish = STOP_REASONS.get(stop_reason, _ERROR)
    else:
        raw = None
        finish = _ERROR
    reasoning = "\n\n".join(thinking) if thinking else None
    model = body.model
    return new_response(
        text,
        tool_calls,
        reasoning,
        details,
        usage_of(body.usage),
        finish,
        raw,
        model if type(model) is str else None,
        body.id,
        provider,
        API,
        finish in INTERRUPTED and bool(text or tool_calls or reasoning),
    )


def usage_of(usage: MessageUsage | None) -> Usage:
    if usage is None:
        return Usage()
    iterations = raw_value(usage.iterations) if usage.iterations else None
    return new_usage(
        usage.input_tokens or 0,
        usage.output_tokens or 0,
        usage.cache_read_input_tokens or 0,
        usage.cache_creation_input_tokens or 0,
        [dict(it) for it in iterations if isinstance(it, dict)] if type(iterations) is list else [],
    )


_PASSES = b"\x00iterations"
_FALLBACK_PASS = b"\x00iterations:fallback"
"""Marks `outcome_key` adds for a body whose usage has iterations (none, or a fallback's)."""


def outcome_key(body: Message) -> Keyed:
    """`Keyed` for a decoded Messages body: `to_response` reads its `id` as the request id
    and its `usage` through `usage_of` alone. Usage iterations (tokens per pass, new on
    every line) are left out but for what a response reads of them: that there are some
    (the body is then no plain answer) and whether one is a fallback's pass."""
    usage = body.usage
    counts = usage_of(usage)
    key = keyed(body, counts, id=None, usage=None)
    if usage is None or not usage.iterations:
        return key
    # JSON text holds no NUL byte, so the mark cannot be part of another body's bytes.
    served = any(detail_type(it) == "fallback_message" for it in counts.iterations)
    return key[0] + (_FALLBACK_PASS if served else _PASSES), key[1], key[2]


def fallback_of(block: Block) -> Fallback:
    source, target, trigger = block.from_, block.to, block.trigger
    return Fallback(
        source.model if isinstance(source, ModelRef) else source,
        target.model if isinstance(target, ModelRef) else target,
        trigger.type if trigger is not None else None,
    )
