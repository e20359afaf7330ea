"""A Converse response as an `LLMResponse`: one mapping from the schema's `Converse`, for
bytes (strict decode) and decoded values (the lenient pass) alike."""

from __future__ import annotations

import base64
from typing import Any

import msgspec

from refusals.model import (
    Detail,
    FinishReason,
    LLMResponse,
    ToolCall,
    Usage,
    new_response,
    new_usage,
)
from refusals.providers._common import (
    INTERRUPTED,
    NOT_PLAIN,
    PLAIN_FINISHES,
    JsonObject,
    Keyed,
    NormalizeError,
    Plain,
    arr,
    json_text,
    keyed,
    obj,
    require_object,
    string,
    typed_detail,
)
from refusals.providers._lenient import lenient, raw_value
from refusals.providers.bedrock.errors import known_exception
from refusals.providers.bedrock.guardrail import guardrail_outcome, trace_guardrail
from refusals.providers.bedrock.schema import (
    API,
    DECLINED,
    ContentBlock,
    Converse,
    ConverseUsage,
    PlainBlock,
    PlainConverse,
    ReasoningText,
    decode_converse,
)

STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALLS,
    "guardrail_intervened": FinishReason.CONTENT_FILTER,
    "content_filtered": FinishReason.CONTENT_FILTER,
    "malformed_model_output": FinishReason.ERROR,
    "malformed_tool_use": FinishReason.ERROR,
}
"""Raw `stopReason` → FinishReason. Anything not listed (or absent) is ERROR, never STOP."""


def detect_provider(body: JsonObject) -> str | None:
    """`"bedrock"` for a Converse response or an error body naming a Bedrock exception."""
    if isinstance(body.get("output"), dict) and "stopReason" in body:
        return "bedrock"
    if known_exception(body.get("__type")) is not None:
        return "bedrock"
    if known_exception(obj(body.get("Error")).get("Code")) is not None:
        return "bedrock"
    return None


def looks_like(body: JsonObject) -> bool:
    return detect_provider(body) is not None


def parse_response(body: JsonObject, provider: str) -> LLMResponse:
    """A full (non-streaming) Converse response as an `LLMResponse`."""
    body = require_object(body, "a Bedrock Converse response")
    if "output" not in body and "stopReason" not in body:
        raise NormalizeError(
            "expected a Bedrock Converse response (an object with output and stopReason)"
        )

    return to_response(lenient(body, Converse), provider)


def cited_texts(citations: Any) -> list[str]:
    """The texts of a `citationsContent` block's parts: cited text is content too."""
    texts = []
    for part in arr(obj(citations).get("content")):
        cited = string(obj(part).get("text"))
        if cited:
            texts.append(cited)
    return texts


def finish_of(raw: str | None) -> FinishReason:
    return STOP_REASONS.get(raw, FinishReason.ERROR) if raw is not None else FinishReason.ERROR


def base64_text(value: Any) -> str | None:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    return string(value)


_UNSET: Any = msgspec.UNSET

# Reading an enum member off its class costs about as much as a function call.
_ERROR = FinishReason.ERROR


def parse_fast(data: bytes | str, provider: str | None) -> LLMResponse | None:
    """The response of a Converse body decoded strictly from its bytes; None when the body
    is not one (detection's checks, without a provider) or the decode rejects it."""
    body = _decoded(data, provider)
    return body_response(body, provider) if body is not None else None


def body_response(body: Converse, provider: str | None) -> LLMResponse | None:
    """`parse_fast` of a Converse body already decoded strictly (inside a log line)."""
    try:
        return to_response(body, "bedrock") if _taken(body, provider) is not None else None
    except DECLINED:
        return None


def parse_plain(data: bytes | str, provider: str | None) -> Plain | None:
    """`to_response`'s verdict on a plain answer: a stop reason that is one, no guardrail
    trace, and blocks of text, reasoning text and tool calls only (see `_protocol`)."""
    body = _decoded(data, provider)
    return plain_body(body, provider) if body is not None else None


def plain_body(body: Converse, provider: str | None) -> Plain | None:
    """`parse_plain` of a Converse body already decoded strictly (inside a log line)."""
    if _taken(body, provider) is None:
        return None
    finish = finish_of(body.stop_reason if type(body.stop_reason) is str else None)
    if finish not in PLAIN_FINISHES or body.trace:
        return NOT_PLAIN
    output = body.output
    message = output.message if output is not None else None
    if not _plain_blocks(message.content if message is not None else None):
        return NOT_PLAIN
    return "bedrock", None, finish  # Converse does not echo the model id


def _plain_blocks(blocks: list[ContentBlock] | list[PlainBlock] | None) -> bool:
    """Whether the content blocks fit a plain answer: no citations or redacted reasoning
    (details of their own), and every tool input one `to_response` can write."""
    try:
        for block in blocks or ():
            reasoning = block.reasoning_content
            if block.citations_content or (reasoning is not None and reasoning.redacted_content):
                return False
            tool = block.tool_use
            if tool is not None and tool.input:
                # What `to_response` may fail on: `json_text` of the value never does.
                raw_value(tool.input)
    except DECLINED:
        return False
    return True


def plain_answer(body: PlainConverse, provider: str | None) -> Plain | None:
    """`plain_body(body, None)` of a body `PlainConverse` decodes (the Struct declines
    most bodies that are not plain answers); None for a named provider or a body
    detection would not take, NOT_PLAIN for a tool input the mapping declines."""
    if provider is not None:
        return None
    if body.object is not None and body.object in ("chat.completion", "response"):
        return None
    if body.type is not None and body.type in ("message", "error"):
        return None
    message = body.output.message
    if not _plain_blocks(message.content if message is not None else None):
        return NOT_PLAIN
    return "bedrock", None, STOP_REASONS[body.stop_reason]


def _decoded(data: bytes | str, provider: str | None) -> Converse | None:
    """The Converse body decoded strictly; None for another provider's name or when the
    strict decode rejects the body."""
    if provider is not None and provider != "bedrock":
        return None
    try:
        return decode_converse(data)
    except DECLINED:
        return None


def _taken(body: Converse, provider: str | None) -> Converse | None:
    """The body, when detection takes it for a Converse body (see `parse_fast`)."""
    if provider is not None and provider != "bedrock":
        return None
    # A stopReason always gives a hint, so `is_invoke_body` is never asked; the marker
    # keys make an InvokeModel body whatever the hint.
    if body.stop_reason is _UNSET or body.guardrail_action or body.invocation_metrics:
        return None
    if body.candidates or body.prompt_feedback:
        return None  # Gemini's keys: detection (or `_module_for`) may look elsewhere
    if provider is None:
        # What detection checks: no hint of a format asked before Bedrock, and
        # `detect_provider`'s output object beside the stopReason.
        if body.output is None:
            return None
        if body.object is not None and body.object in ("chat.completion", "response"):
            return None
        if body.type is not None and body.type in ("message", "error"):
            return None
    return body


def to_response(body: Converse, provider: str) -> LLMResponse:
    """The one mapping of a Converse body to an `LLMResponse`."""
    texts: list[str] = []
    thinking: list[str] = []
    tool_calls: list[ToolCall] = []
    details: list[Detail] = []
    output = body.output
    message = output.message if output is not None else None
    for block in (message.content if message is not None else None) or ():
        text = block.text
        if text:
            texts.append(text)
        if block.citations_content:
            texts += cited_texts(raw_value(block.citations_content))
        tool = block.tool_use
        if tool is not None:
            arguments = json_text(raw_value(tool.input)) if tool.input else ""
            tool_calls.append(ToolCall(tool.tool_use_id or "", tool.name or "", arguments))
        reasoning = block.reasoning_content
        if reasoning is not None:
            given = reasoning.reasoning_text
            if isinstance(given, ReasoningText):
                if given.text:
                    thinking.append(given.text)
                details.append(typed_detail("thinking", "signature", given.signature))
            elif given is None:  # present, but null (or not an object): no text, no signature
                details.append(typed_detail("thinking", "signature", None))
            if reasoning.redacted_content:
                redacted = base64_text(raw_value(reasoning.redacted_content))
                details.append(typed_detail("redacted_thinking", "data", redacted))

    raw = body.stop_reason if type(body.stop_reason) is str else None
    guardrail = trace_guardrail(body.trace)
    finish, stop = guardrail_outcome(finish_of(raw), guardrail)
    if stop is not None:
        details.append(stop.to_detail())

    content = "".join(texts) or None
    reasoning_text = "\n\n".join(thinking) if thinking else None
    metadata = body.response_metadata
    return new_response(
        content,
        tool_calls,
        reasoning_text,
        details,
        usage_of(body.usage),
        finish,
        raw,
        None,  # Converse does not echo the model id in the body.
        metadata.request_id if metadata is not None else None,
        provider,
        API,
        finish in INTERRUPTED
        and bool(content or tool_calls or reasoning_text)
        and not (stop is not None and stop.altered),
    )


def usage_of(usage: ConverseUsage | None) -> Usage:
    if usage is None:
        return Usage()
    return new_usage(
        usage.input_tokens or 0,
        usage.output_tokens or 0,
        usage.cache_read_input_tokens or 0,
        usage.cache_write_input_tokens or 0,
        [],
    )


def outcome_key(body: Converse) -> Keyed:
    """`Keyed` for a decoded Converse body: `to_response` reads its `ResponseMetadata` for
    the request id and its `usage` through `usage_of` alone (`metrics` is not declared)."""
    return keyed(body, usage_of(body.usage), usage=None, response_metadata=None)
