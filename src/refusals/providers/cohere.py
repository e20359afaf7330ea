"""Cohere Chat API, v1 and v2: full responses, streams and HTTP error bodies.

v1 (`POST /v1/chat`) answers `{"text", "generation_id", "response_id", "finish_reason",
"tool_calls": [{"name", "parameters"}], "meta": {"billed_units", "tokens"}}`; v2
(`POST /v2/chat`) answers `{"id", "finish_reason", "message": {"role", "content": [{"type":
"text", "text"}, {"type": "thinking", "thinking"}], "tool_plan", "tool_calls": [{"id",
"function": {"name", "arguments"}}]}, "usage": {"billed_units", "tokens",
"cached_tokens"}}`. Errors are `{"message": "..."}` with the HTTP status. Streams: v2 sends
SSE events named by their `type` (`message-start` … `message-end`); v1 sends one JSON object
per line (or SSE) with an `event_type` (`stream-start` … `stream-end`). See `StreamDecoder`.

Documentation:

- https://docs.cohere.com/v1/reference/chat (v1 response, `finish_reason`)
- https://docs.cohere.com/v2/reference/chat (v2 response, `finish_reason`)
- https://docs.cohere.com/reference/errors (error body and statuses)
- https://docs.cohere.com/v2/docs/streaming and https://docs.cohere.com/docs/tool-use-streaming
  (v2 stream events), https://docs.cohere.com/reference/chat-stream-v1 (v1 stream events)
- cohere-python `ChatStreamEndEventFinishReason` documents the v1 values: `ERROR_LIMIT`
  "the reply was cut off because the model reached the maximum number of tokens for its
  context length"; `ERROR_TOXIC` "the model generated a reply that was deemed toxic".

Cohere names no filter category; an `ERROR_TOXIC` stop reports the category `toxic`, the
only thing its value says about the block.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from refusals.model import (
    Detail,
    ErrorKind,
    FinishReason,
    LLMResponse,
    ProviderError,
    StopDetails,
    ToolCall,
    Usage,
    new_response,
    new_usage,
)
from refusals.providers._common import (
    FAST_FAILED,
    INTERRUPTED,
    NO_RAW,
    Absent,
    Count,
    JsonObject,
    NormalizeError,
    Raw,
    arguments_text,
    arr,
    bounded_message,
    error_events,
    error_response,
    integer,
    key_names,
    obj,
    says_blocked,
    status_error_kind,
    stream_error,
    string,
    strip_tags,
)
from refusals.providers._lenient import raw_value
from refusals.stream import (
    ReasoningDelta,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    UsageUpdate,
    Verdict,
    WireDecoder,
)

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
_ERROR_FALLBACK = "the Cohere stream reported an error"


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
            f"generation_id, finish_reason); got keys: {key_names(body)}"
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
    usage = obj(body.get("usage"))
    return _result(
        body,
        provider,
        content="".join(texts) or None,
        reasoning="\n".join(thoughts) or None,
        tool_calls=_v2_tool_calls(message.get("tool_calls")),
        usage=_usage(usage, cached=usage.get("cached_tokens")),
        request_id=string(body.get("id")),
    )


def _v2_tool_calls(value: Any) -> list[ToolCall]:
    """v2 `message.tool_calls`: `[{"id", "function": {"name", "arguments"}}]`."""
    calls = []
    for item in arr(value):
        call = obj(item)
        function = obj(call.get("function"))
        arguments = function.get("arguments")
        calls.append(
            ToolCall(
                id=string(call.get("id")) or "",
                name=string(function.get("name")) or "",
                arguments=arguments_text(arguments),
            )
        )
    return calls


def _parse_v1(body: JsonObject, provider: str) -> LLMResponse:
    meta = obj(body.get("meta"))
    return _result(
        body,
        provider,
        content=string(body.get("text")) or None,
        reasoning=None,
        tool_calls=_v1_tool_calls(body.get("tool_calls")),
        usage=_usage(meta, cached=meta.get("cached_tokens")),
        request_id=string(body.get("response_id")) or string(body.get("generation_id")),
    )


def _v1_tool_calls(value: Any) -> list[ToolCall]:
    """v1 `tool_calls`: `[{"name", "parameters"}]` (no ids)."""
    calls = []
    for item in arr(value):
        call = obj(item)
        calls.append(
            ToolCall(
                name=string(call.get("name")) or "",
                arguments=arguments_text(call.get("parameters")),
            )
        )
    return calls


def _finish(raw: str | None, has_tool_calls: bool) -> tuple[FinishReason, StopDetails | None]:
    """The finish reason for a `finish_reason` value, and the stop details a filter has."""
    finish = FINISH_REASONS.get(raw or "", FinishReason.ERROR)
    if finish is FinishReason.STOP and has_tool_calls:
        finish = FinishReason.TOOL_CALLS
    category = FILTER_CATEGORIES.get(raw or "")
    return finish, StopDetails(category=category) if category is not None else None


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
    finish, stop = _finish(raw, bool(tool_calls))
    details: list[Detail] = [stop.to_detail()] if stop is not None else []
    cut_off = bool(content or tool_calls) and finish in INTERRUPTED
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
        text: str | None = strip_tags(payload)
    else:
        fields = obj(payload)
        text = string(fields.get("message"))
        if text is None:
            error = fields.get("error")
            text = string(error) or string(obj(error).get("message"))
    # A credential goes whole, name and all: "invalid api token: [redacted]".
    message = bounded_message(text, keep_names=False)
    kind = _error_kind(status, message)
    stop = StopDetails(explanation=message) if message else None
    return error_response(
        ProviderError(kind, status, None, message), provider=provider, api=API, stop=stop
    )


# Streams --------------------------------------------------------------------------------

V2_STREAM_EVENTS = frozenset(
    {
        "message-start",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "citation-start",
        "citation-end",
        "message-end",
    }
)
"""v2 event `type`s (also the SSE event names); `message-end` is terminal."""

V1_STREAM_EVENTS = frozenset(
    {
        "stream-start",
        "search-queries-generation",
        "search-results",
        "text-generation",
        "citation-generation",
        "tool-calls-chunk",
        "tool-calls-generation",
        "stream-end",
    }
)
"""v1 `event_type`s; `stream-end` is terminal and carries the whole response."""


def detect_stream(name: str | None, payload: Any) -> str | None:
    """`"cohere"` when the first event of a stream is a v2 event (`type`) or a v1 event
    (`event_type`) of Cohere's chat stream; the SSE event name, if any, must agree."""
    if not isinstance(payload, dict) or "choices" in payload:
        return None
    kind = payload.get("type")
    if isinstance(kind, str) and kind in V2_STREAM_EVENTS and name in (None, kind):
        return "cohere"
    kind = payload.get("event_type")
    if isinstance(kind, str) and kind in V1_STREAM_EVENTS and name in (None, kind):
        return "cohere"
    return None


class StreamDecoder(WireDecoder):
    """Cohere's chat stream, v2 or v1, told apart event by event (`type` or `event_type`).

    v2: `content-delta` text (or `thinking`) and `tool-plan-delta` become text and reasoning
    deltas; `tool-call-start`/`-delta` build tool calls by `index`; `message-end` carries the
    verdict (`delta.finish_reason`), the usage and, on a failure, `delta.error`, and ends the
    stream. v1: `text-generation` text, `tool-calls-chunk` deltas (or the whole calls of
    `tool-calls-generation` when no chunk came), and `stream-end`, which carries the verdict
    and the whole response: whatever the stream did not deliver (text, tool calls, usage, ids)
    is taken from it. Finish values map as in `parse_response` (`ERROR_TOXIC` is a filter,
    category `toxic`). A bare `{"message": ...}` error body in the stream is a `StreamError`
    with the verdict `parse_error` gives the same body; `delta.error` is a `StreamError`
    beside the finish reason's verdict.
    """

    API = API

    def __init__(self, provider: str) -> None:
        super().__init__(provider)
        self._tool_calls: set[int] = set()
        self._last_tool = 0
        self._text_seen = False
        self._tool_chunks_seen = False
        self._reasoning_block: tuple[str, int] | None = None
        self._reasoning_seen = False

    def decode(self, name: str | None, payload: Any) -> list[StreamEvent]:
        if not isinstance(payload, dict):
            return [StreamError("a Cohere stream event is not a JSON object")]
        kind = payload.get("type")
        if isinstance(kind, str):
            return self._v2(kind, payload)
        kind = payload.get("event_type")
        if isinstance(kind, str):
            return self._v1(kind, payload)
        if is_error(payload):
            result = parse_error(payload, None, self.acc.provider or "cohere")
            return error_events(result, self.acc.verdict, _ERROR_FALLBACK)
        return []

    # v2 ------------------------------------------------------------------------------

    def _v2(self, kind: str, event: JsonObject) -> list[StreamEvent]:
        delta = obj(event.get("delta"))
        message = obj(delta.get("message"))
        if kind == "message-start":
            request_id = string(event.get("id"))
            if request_id:
                self.acc.request_id = request_id
            return []
        if kind in ("content-start", "content-delta"):
            content = obj(message.get("content"))
            index = _index(event.get("index"), 0)
            events: list[StreamEvent] = self._reasoning(
                ("content", index), string(content.get("thinking"))
            )
            text = string(content.get("text"))
            if text:
                self._text_seen = True
                events.append(TextDelta(text))
            return events
        if kind == "tool-plan-delta":
            return self._reasoning(("plan", 0), string(message.get("tool_plan")))
        if kind in ("tool-call-start", "tool-call-delta"):
            call = obj(message.get("tool_calls"))
            function = obj(call.get("function"))
            starts = kind == "tool-call-start"
            index = _index(event.get("index"), self._next_tool() if starts else self._last_tool)
            self._last_tool = index
            self._tool_calls.add(index)
            arguments = function.get("arguments")
            return [
                ToolCallDelta(
                    index,
                    id=string(call.get("id")) or None,
                    name=string(function.get("name")) or None,
                    arguments=arguments if isinstance(arguments, str) else "",
                )
            ]
        if kind == "message-end":
            return self._end(
                string(delta.get("finish_reason")),
                usage=obj(delta.get("usage")),
                error=string(delta.get("error")),
            )
        return []

    def _reasoning(self, block: tuple[str, int], text: str | None) -> list[StreamEvent]:
        """A reasoning delta; blocks (thinking items, the tool plan) are joined by a line
        feed, as `parse_response` joins them."""
        if not text:
            return []
        events: list[StreamEvent] = []
        if self._reasoning_seen and block != self._reasoning_block:
            events.append(ReasoningDelta("\n"))
        self._reasoning_block = block
        self._reasoning_seen = True
        events.append(ReasoningDelta(text))
        return events

    # v1 ------------------------------------------------------------------------------

    def _v1(self, kind: str, event: JsonObject) -> list[StreamEvent]:
        if kind == "stream-start":
            generation_id = string(event.get("generation_id"))
            if generation_id:
                self.acc.request_id = generation_id
            return []
        if kind == "text-generation":
            text = string(event.get("text"))
            if not text:
                return []
            self._text_seen = True
            return [TextDelta(text)]
        if kind == "tool-calls-chunk":
            chunk = obj(event.get("tool_call_delta"))
            name = string(chunk.get("name"))
            parameters = string(chunk.get("parameters"))
            if name is None and parameters is None:
                return []
            self._tool_chunks_seen = True
            starts = name is not None
            index = _index(chunk.get("index"), self._next_tool() if starts else self._last_tool)
            self._last_tool = index
            self._tool_calls.add(index)
            return [ToolCallDelta(index, name=name or None, arguments=parameters or "")]
        if kind == "tool-calls-generation":
            events: list[StreamEvent] = []
            text = string(event.get("text"))
            if text and not self._text_seen:
                self._text_seen = True
                events.append(TextDelta(text))
            if not self._tool_chunks_seen:
                events.extend(self._whole_calls(event.get("tool_calls")))
            return events
        if kind == "stream-end":
            return self._stream_end(event)
        return []

    def _stream_end(self, event: JsonObject) -> list[StreamEvent]:
        response = obj(event.get("response"))
        request_id = string(response.get("response_id")) or string(response.get("generation_id"))
        if request_id:
            self.acc.request_id = request_id
        model = string(response.get("model"))
        if model:
            self.acc.model = model
        events: list[StreamEvent] = []
        text = string(response.get("text"))
        if text and not self._text_seen:
            self._text_seen = True
            events.append(TextDelta(text))
        if not self._tool_calls:
            events.extend(self._whole_calls(response.get("tool_calls")))
        raw = string(event.get("finish_reason")) or string(response.get("finish_reason"))
        meta = obj(response.get("meta"))
        return events + self._end(raw, usage=meta, error=None)

    def _whole_calls(self, calls: Any) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for item in arr(calls):
            call = obj(item)
            index = self._next_tool()
            self._tool_calls.add(index)
            events.append(
                ToolCallDelta(
                    index,
                    name=string(call.get("name")) or None,
                    arguments=arguments_text(call.get("parameters")),
                )
            )
        return events

    # both ----------------------------------------------------------------------------

    def _next_tool(self) -> int:
        return max(self._tool_calls, default=-1) + 1

    def _end(self, raw: str | None, *, usage: JsonObject, error: str | None) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if usage:
            events.append(UsageUpdate(_usage(usage, cached=usage.get("cached_tokens"))))
        if error:
            # The error text is kept with the error; the verdict is the finish reason's.
            result = parse_error({"message": error}, None, self.acc.provider or "cohere")
            events.append(stream_error(result, _ERROR_FALLBACK))
        finish, stop = _finish(raw, bool(self._tool_calls))
        events.append(Verdict(finish, raw, stop))
        self.done = True
        return events


def _index(value: Any, default: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return default


def _error_kind(status: int | None, message: str | None) -> ErrorKind:
    if (status is None or status in _POLICY_STATUSES) and says_blocked(message, _POLICY_MESSAGE):
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


def _is_upper(value: Any) -> bool:
    return isinstance(value, str) and _UPPER_VALUE.fullmatch(value) is not None


# --- typed fast path (see providers/_common.py) ----------------------------------------


class _FastTokens(msgspec.Struct, gc=False):
    # Both counts required: `tokens` without one (an empty object among them) is left to
    # the dict path, so a `tokens` read here is one `_usage` reads the counts from.
    input_tokens: Count
    output_tokens: Count


class _FastUsage(msgspec.Struct, gc=False):
    """v2 `usage` and v1 `meta`, read alike by `_usage`."""

    billed_units: Raw = NO_RAW  # read only when `tokens` is absent or null
    tokens: _FastTokens | None = None
    cached_tokens: Count | None = 0


class _FastPart(msgspec.Struct, gc=False):
    type: str | None = None
    text: str | None = None
    thinking: str | None = None


class _FastMessage(msgspec.Struct, gc=False):
    role: str | None = None
    content: str | list[_FastPart] | None = None
    tool_plan: str | None = None
    tool_calls: Raw = NO_RAW


class _FastChat(msgspec.Struct, gc=False):
    id: str | None = None
    response_id: str | None = None
    text: str | None = None
    generation_id: str | None = None
    message: _FastMessage | None = None
    finish_reason: str | None = None
    model: str | None = None
    meta: _FastUsage | None = None
    usage: _FastUsage | None = None
    tool_calls: Raw = NO_RAW
    # Keys that make detection look elsewhere: the ones earlier formats claim a body by
    # (`_CLAIMED_EARLIER` in providers/__init__.py), `choices` (see `detect_provider`), and
    # those `bedrock.is_invoke_body` reads (every native InvokeModel kind needs `results`,
    # `generation` or `outputs`).
    type: Absent = 0
    object: Absent = 0
    output: Absent = 0
    error: Absent = 0
    candidates: Absent = 0
    promptFeedback: Absent = 0
    prompt_feedback: Absent = 0
    usageMetadata: Absent = 0
    usage_metadata: Absent = 0
    stopReason: Absent = 0
    aws_type: Absent = msgspec.field(default=0, name="__type")
    aws_error: Absent = msgspec.field(default=0, name="Error")
    choices: Absent = 0
    guardrail_action: Absent = msgspec.field(default=0, name="amazon-bedrock-guardrailAction")
    invocation_metrics: Absent = msgspec.field(default=0, name="amazon-bedrock-invocationMetrics")
    results: Absent = 0
    generation: Absent = 0
    outputs: Absent = 0


_decode_chat = msgspec.json.Decoder(_FastChat).decode


def _finish_row(raw: str) -> tuple[FinishReason, FinishReason, str | None, bool]:
    plain, stop = _finish(raw, False)
    with_calls, _ = _finish(raw, True)
    return plain, with_calls, stop.to_detail() if stop else None, plain in INTERRUPTED


# `_finish` of every known value worked out once, with and without tool calls: the finish
# reasons, the stop detail as JSON text, and whether content before it was cut off.
_FINISH_ROWS: dict[str | None, tuple[FinishReason, FinishReason, str | None, bool]] = {
    raw: _finish_row(raw) for raw in FINISH_REASONS
}
_UNKNOWN_FINISH = _finish_row("")


def parse_fast(data: bytes | str, provider: str | None) -> LLMResponse | None:
    """`parse_response` of a well-typed v1 or v2 chat body read through Structs, or None.

    The Structs reject every key detection would look elsewhere for; a message that is a
    string (an error body, see `is_error`) is rejected by its type.
    """
    if provider is not None and provider != "cohere":
        return None
    try:
        body = _decode_chat(data)
        raw = body.finish_reason
        message = body.message
        row = _FINISH_ROWS.get(raw)  # None for a value not in FINISH_REASONS
        if provider is None:
            # `detect_provider`, on what the Structs let through.
            upper = row is not None or (raw is not None and _is_upper(raw))
            if not (
                (message is not None and message.role is not None and upper)
                or body.generation_id is not None
                or (body.text is not None and upper)
            ):
                return None
        elif message is None and (body.text, body.generation_id, raw) == (None,) * 3:
            return None  # `parse_response` raises unless one of these keys is there

        if message is not None:  # v2, as `_parse_v2` reads it
            parts = message.content
            if (
                type(parts) is list
                and len(parts) == 1
                and parts[0].type == "text"
                and not message.tool_plan
            ):
                content, reasoning = parts[0].text or None, None  # the common answer
            else:
                content, reasoning = _fast_v2_text(message)
            calls = _v2_tool_calls(raw_value(message.tool_calls)) if message.tool_calls else []
            holder = body.usage
            request_id = body.id
        else:  # v1, as `_parse_v1` reads it
            content = body.text or None
            reasoning = None
            calls = _v1_tool_calls(raw_value(body.tool_calls)) if body.tool_calls else []
            holder = body.meta
            request_id = body.response_id or body.generation_id
        if holder is not None and (tokens := holder.tokens) is not None:
            # `_usage` of a usage with `tokens`: `Count` rejects what `integer` reads as 0.
            usage = new_usage(
                tokens.input_tokens, tokens.output_tokens, holder.cached_tokens or 0, 0, []
            )
        else:
            usage = _billed_usage(holder) if holder is not None else Usage()
    except FAST_FAILED:
        # The Structs rejected the body, or orjson a part read as the dict reader reads it
        # (tool calls, billed units).
        return None
    finish, with_calls, detail, interrupts = row if row is not None else _UNKNOWN_FINISH
    return new_response(
        content,
        calls,
        reasoning,
        [detail] if detail is not None else [],
        usage,
        with_calls if calls else finish,
        raw,
        body.model,
        request_id,
        provider or "cohere",
        API,
        interrupts and (content is not None or bool(calls)),
    )


def _fast_v2_text(message: _FastMessage) -> tuple[str | None, str | None]:
    """The text and the reasoning of a v2 message (see `_parse_v2`)."""
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


def _billed_usage(holder: _FastUsage) -> Usage:
    """`_usage` of a v2 `usage` or v1 `meta` without `tokens`: its `billed_units`."""
    billed = obj(raw_value(holder.billed_units)) if holder.billed_units else {}
    return Usage(
        integer(billed.get("input_tokens")),
        integer(billed.get("output_tokens")),
        holder.cached_tokens or 0,
    )
