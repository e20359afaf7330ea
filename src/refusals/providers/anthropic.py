"""Anthropic Messages API (GA and beta): full responses, streams and HTTP error bodies.

Documentation:
- Messages API: https://docs.claude.com/en/api/messages
- Streaming: https://docs.claude.com/en/docs/build-with-claude/streaming
- Stop reasons: https://docs.claude.com/en/docs/build-with-claude/handling-stop-reasons
- Errors: https://docs.claude.com/en/api/errors

A refusal is an HTTP 200 message with `stop_reason: "refusal"`; the provider's reasons
come in `stop_details` (on the wire `{"type": "refusal", "category", "explanation",
"recommended_model", "fallback_credit_token", "fallback_has_prefill_claim"}`). The category
is an open set: new values pass through unchanged, never checked against a list. A
server-side fallback shows as a `fallback` content block and as `fallback_message`
entries in `usage.iterations`. All of these become `reasoning_details` (see
`refusals.model`); the notice itself is built only by `refusals.refusal`.

A stream (`StreamDecoder`) is Server-Sent Events named after their payload `type`
(`message_start`, `content_block_start` / `_delta` / `_stop`, `message_delta`,
`message_stop`, `ping`, `error`); recordings without event names (one payload per line)
are read by the payload `type` alone. The verdict rides on `message_delta`; the stream is
complete at `message_stop`.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import msgspec

from refusals.model import (
    Detail,
    ErrorKind,
    Fallback,
    FinishReason,
    LLMResponse,
    ProviderError,
    StopDetails,
    ToolCall,
    Usage,
    new_response,
    new_usage,
    stop_detail_text,
)
from refusals.providers._common import (
    FAST_FAILED,
    INTERRUPTED,
    NO_RAW,
    Count,
    Int,
    JsonObject,
    NormalizeError,
    Raw,
    arr,
    bounded_message,
    error_events,
    error_response,
    integer,
    interrupted,
    json_text,
    obj,
    page_text,
    raw_value,
    require_object,
    says_blocked,
    status_error_kind,
    string,
    typed_detail,
)
from refusals.stream import (
    FallbackSeam,
    ReasoningDelta,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    UsageUpdate,
    Verdict,
    WireDecoder,
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

ERROR_TYPES: dict[str, ErrorKind] = {
    "invalid_request_error": ErrorKind.INVALID_REQUEST,  # 400
    "authentication_error": ErrorKind.AUTH,  # 401
    "billing_error": ErrorKind.AUTH,  # 402
    "permission_error": ErrorKind.AUTH,  # 403
    "not_found_error": ErrorKind.INVALID_REQUEST,  # 404
    "conflict_error": ErrorKind.TRANSIENT,  # 409
    "request_too_large": ErrorKind.INVALID_REQUEST,  # 413
    "rate_limit_error": ErrorKind.TRANSIENT,  # 429
    "api_error": ErrorKind.TRANSIENT,  # 500
    "timeout_error": ErrorKind.TRANSIENT,  # 504
    "overloaded_error": ErrorKind.TRANSIENT,  # 529
}
"""`error.type` of an error body → ErrorKind; unknown types fall back to the HTTP status."""

NOT_RETRYABLE_ERROR_CODES: dict[str, ErrorKind] = {
    # A 429 whose `error.details.error_code` says the monthly spend limit was reached:
    # retrying fails until the limit changes.
    "enforced_spend_limit_reached": ErrorKind.AUTH,
}

MAX_ERROR_MESSAGE_CHARS = 500
"""Upper bound, in code points, on an error message copied from a provider body."""


def detect_provider(body: JsonObject) -> str | None:
    """`"anthropic"` for a Messages response or an Anthropic error body, else None."""
    if _is_message(body) or _is_error_body(body):
        return "anthropic"
    return None


def looks_like(body: JsonObject) -> bool:
    return detect_provider(body) is not None


def is_error(body: JsonObject) -> bool:
    """The body is an error (`{"type": "error", "error": {...}}`), even without a status."""
    if body.get("type") == "error":
        return True
    return isinstance(body.get("error"), dict) and not _has_message_fields(body)


def parse_response(body: JsonObject, provider: str) -> LLMResponse:
    """A full (non-streaming) Messages response as an `LLMResponse`."""
    body = require_object(body, "an Anthropic Messages response")
    if not _has_message_fields(body):
        raise NormalizeError(
            'expected an Anthropic Messages response (an object with type "message", '
            "content and stop_reason)"
        )

    texts: list[str] = []
    thinking: list[str] = []
    tool_calls: list[ToolCall] = []
    details: list[Detail] = []
    for block in arr(body.get("content")):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = string(block.get("text"))
            if text:
                texts.append(text)
        elif kind == "thinking":
            text = string(block.get("thinking"))
            if text:
                thinking.append(text)
            details.append(typed_detail("thinking", "signature", string(block.get("signature"))))
        elif kind == "redacted_thinking":
            details.append(typed_detail("redacted_thinking", "data", string(block.get("data"))))
        elif kind == "tool_use":
            tool_calls.append(
                ToolCall(
                    id=string(block.get("id")) or "",
                    name=string(block.get("name")) or "",
                    arguments=json_text(block["input"]) if "input" in block else "",
                )
            )
        elif kind == "fallback":
            # Kept in place, so a fallback's position among thinking details is preserved.
            details.append(_fallback(block).to_detail())
        # server_tool_use, web_search_tool_result, compaction and other blocks ran on the
        # server: they are neither answer text nor calls the client has to run.

    stop = _stop_details(body.get("stop_details"))
    if stop is not None:
        details.append(stop.to_detail())

    raw = string(body.get("stop_reason"))
    finish = STOP_REASONS.get(raw, FinishReason.ERROR) if raw is not None else FinishReason.ERROR
    content = "".join(texts) or None
    reasoning = "\n\n".join(thinking) or None
    return LLMResponse(
        content=content,
        tool_calls=tool_calls,
        reasoning=reasoning,
        reasoning_details=details,
        usage=_usage(body.get("usage")),
        finish_reason=finish,
        raw_finish_reason=raw,
        model=string(body.get("model")),
        request_id=string(body.get("id")),
        provider=provider,
        api=API,
        cut_off=interrupted(finish) and bool(content or tool_calls or reasoning),
    )


# --- typed fast path (see providers/_common.py) ----------------------------------------


class _FastModelRef(msgspec.Struct, gc=False):
    model: str | None = None


class _FastTrigger(msgspec.Struct, gc=False):
    type: str | None = None


class _FastBlock(msgspec.Struct, gc=False):
    type: str | None = None
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    data: str | None = None
    id: str | None = None
    name: str | None = None
    input: Raw = NO_RAW
    # A fallback block's models: `{"model": ...}` or a bare name (see `_model_name`).
    from_: str | _FastModelRef | None = msgspec.field(default=None, name="from")
    to: str | _FastModelRef | None = None
    trigger: _FastTrigger | None = None


class _FastStop(msgspec.Struct, gc=False):
    category: str | None = None
    explanation: str | None = None
    recommended_model: str | None = None
    fallback_credit_token: str | None = None
    fallback_has_prefill_claim: bool | None = None


class _FastUsage(msgspec.Struct, gc=False):
    input_tokens: Count | None = 0
    output_tokens: Count | None = 0
    cache_read_input_tokens: Count | None = 0
    cache_creation_input_tokens: Count | None = 0
    iterations: Raw = NO_RAW


class _FastMessage(msgspec.Struct, gc=False):
    type: str | None = None
    object: str | None = None
    id: str | None = None
    model: str | msgspec.UnsetType | None = msgspec.UNSET
    content: list[_FastBlock] | None = None
    stop_reason: str | msgspec.UnsetType | None = msgspec.UNSET
    stop_details: _FastStop | None = None
    usage: _FastUsage | None = None
    status: Raw = NO_RAW
    guardrail_action: Raw = msgspec.field(default=NO_RAW, name="amazon-bedrock-guardrailAction")
    invocation_metrics: Raw = msgspec.field(default=NO_RAW, name="amazon-bedrock-invocationMetrics")


_decode_message = msgspec.json.Decoder(_FastMessage).decode
_ERROR = FinishReason.ERROR  # an enum member read off its class costs ~100 ns on 3.11
_UNSET = msgspec.UNSET
_NO_FACTS = (None, None, None, None, None)


def parse_fast(data: bytes | str, provider: str | None) -> LLMResponse | None:
    """`parse_response` of a well-typed Messages body read through Structs, or None."""
    if provider is not None and provider != "anthropic":
        return None
    try:
        body = _decode_message(data)
    except FAST_FAILED:
        return None
    if body.type != "message":
        return None
    content = body.content
    stop_reason = body.stop_reason
    if provider is None:
        # What detection checks: no other format's hint, no Bedrock InvokeModel marker,
        # and a Messages shape (see `_is_message`).
        if body.object is not None and body.object in ("chat.completion", "response"):
            return None
        if body.guardrail_action or body.invocation_metrics:
            return None
        if stop_reason is _UNSET and not (
            content is not None and body.model is not _UNSET and not body.status
        ):
            return None
        provider = "anthropic"

    text: str | None = None
    texts: list[str] | None = None  # from a second text block on
    thinking: list[str] = []
    tool_calls: list[ToolCall] = []
    details: list[Detail] = []
    for block in content or ():
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
            try:
                arguments = json_text(raw_value(block.input)) if block.input else ""
            except FAST_FAILED:
                return None
            tool_calls.append(ToolCall(block.id or "", block.name or "", arguments))
        elif kind == "fallback":
            source, target, trigger = block.from_, block.to, block.trigger
            fallback = Fallback(
                source.model if isinstance(source, _FastModelRef) else source,
                target.model if isinstance(target, _FastModelRef) else target,
                trigger.type if trigger is not None else None,
            )
            details.append(fallback.to_detail())
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

    if stop_reason is None or stop_reason is _UNSET:
        raw = None
        finish = _ERROR
    else:
        raw = stop_reason
        finish = STOP_REASONS.get(raw, _ERROR)
    reasoning = "\n\n".join(thinking) if thinking else None
    usage = body.usage
    if usage is None:
        counts = Usage()
    else:
        try:
            iterations = _iterations(usage.iterations) if usage.iterations else []
        except FAST_FAILED:
            return None
        counts = new_usage(
            usage.input_tokens or 0,
            usage.output_tokens or 0,
            usage.cache_read_input_tokens or 0,
            usage.cache_creation_input_tokens or 0,
            iterations,
        )
    model = body.model
    return new_response(
        text,
        tool_calls,
        reasoning,
        details,
        counts,
        finish,
        raw,
        None if model is _UNSET else model,
        body.id,
        provider,
        API,
        finish in INTERRUPTED and bool(text or tool_calls or reasoning),
    )


def _iterations(value: Raw) -> list[JsonObject]:
    # The dicts are orjson's own, fresh: unlike `_usage`, no copy of a caller's dict.
    iterations = raw_value(value)
    return [it for it in iterations if type(it) is dict] if type(iterations) is list else []


def parse_error(body: JsonObject | str, status: int | None, provider: str) -> LLMResponse:
    """An HTTP error body (JSON, or the text of a non-JSON page) as an `LLMResponse`."""
    if isinstance(body, str):
        message = _bounded_message(page_text(body))
        kind = status_error_kind(status)
        if kind is not ErrorKind.TRANSIENT and says_blocked(message):
            kind = ErrorKind.POLICY
        return _error(ProviderError(kind, status, None, message), provider)
    body = require_object(body, "an Anthropic error body")

    error = obj(body.get("error"))
    code = string(error.get("type"))
    message = _bounded_message(string(error.get("message")) or string(body.get("message")))
    known = ERROR_TYPES.get(code) if code is not None else None
    kind = known if known is not None else status_error_kind(status)
    detail_code = string(obj(error.get("details")).get("error_code"))
    if detail_code is not None and detail_code in NOT_RETRYABLE_ERROR_CODES:
        kind = NOT_RETRYABLE_ERROR_CODES[detail_code]
        code = detail_code
    # "Output blocked by content filtering policy" (HTTP 400 invalid_request_error) and
    # similar wordings: a policy block, not a malformed request.
    if kind is not ErrorKind.TRANSIENT and says_blocked(message):
        kind = ErrorKind.POLICY
    return _error(
        ProviderError(kind, status, code, message),
        provider,
        request_id=string(body.get("request_id")),
    )


def _stop_details(value: Any) -> StopDetails | None:
    """The facts of a `stop_details` object; None when it is absent, null or says nothing."""
    if not isinstance(value, dict):
        return None
    prefill = value.get("fallback_has_prefill_claim")
    stop = StopDetails(
        category=string(value.get("category")),
        explanation=string(value.get("explanation")),
        recommended_model=string(value.get("recommended_model")),
        fallback_credit_token=string(value.get("fallback_credit_token")),
        fallback_has_prefill_claim=prefill if isinstance(prefill, bool) else None,
    )
    return None if stop.is_empty() else stop


def _bounded_message(text: str | None) -> str | None:
    # A credential header goes whole, name and all: "invalid [redacted]".
    return bounded_message(text, limit=MAX_ERROR_MESSAGE_CHARS, keep_names=False)


def _error(error: ProviderError, provider: str, request_id: str | None = None) -> LLMResponse:
    stop = StopDetails(explanation=error.message) if error.message is not None else None
    return error_response(error, provider=provider, api=API, stop=stop, request_id=request_id)


def _is_message(body: JsonObject) -> bool:
    if body.get("type") != "message":
        return False
    if "stop_reason" in body:
        return True
    # An OpenAI Responses output item is also {"type": "message", "content": [...]},
    # but it has a status and no model.
    return isinstance(body.get("content"), list) and "model" in body and "status" not in body


def _is_error_body(body: JsonObject) -> bool:
    if body.get("type") != "error":
        return False
    error = body.get("error")
    if not isinstance(error, dict) or not isinstance(error.get("type"), str):
        return False
    # OpenAI Responses stream error events share the outer shape; they carry a
    # sequence number and an error code or param, which Anthropic errors never do.
    return "sequence_number" not in body and "code" not in error and "param" not in error


def _has_message_fields(body: JsonObject) -> bool:
    return body.get("type") == "message" or "content" in body or "stop_reason" in body


_USAGE_FIELDS = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_input_tokens": "cache_read_tokens",
    "cache_creation_input_tokens": "cache_creation_tokens",
}


def _usage(value: Any) -> Usage:
    if type(value) is not dict:
        return Usage()
    iterations = value.get("iterations")
    return Usage(
        integer(value.get("input_tokens")),
        integer(value.get("output_tokens")),
        integer(value.get("cache_read_input_tokens")),
        integer(value.get("cache_creation_input_tokens")),
        [dict(it) for it in iterations if isinstance(it, dict)] if type(iterations) is list else [],
    )


def _fallback(block: JsonObject) -> Fallback:
    return Fallback(
        from_model=_model_name(block.get("from")),
        to_model=_model_name(block.get("to")),
        trigger=string(obj(block.get("trigger")).get("type")),
    )


def _model_name(value: Any) -> str | None:
    if isinstance(value, dict):
        return string(value.get("model"))
    return string(value)


# --- streams ------------------------------------------------------------------------

STREAM_EVENTS = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "error",
    }
)
"""Event types of a Messages stream; the SSE event name repeats the payload `type`."""


def detect_stream(name: str | None, payload: Any) -> str | None:
    """`"anthropic"` when the first event of a stream is a Messages stream event.

    With an SSE event name, the name must be a Messages event and the payload's `type`
    (when it has one) must repeat it; without one (recordings of one payload per line),
    the payload's `type` decides. An `error` event must have Anthropic's error shape,
    which OpenAI Responses error events (with a code and a sequence number) lack.
    """
    kind = string(payload.get("type")) if isinstance(payload, dict) else None
    if name is not None:
        if name not in STREAM_EVENTS or (kind is not None and kind != name):
            return None
        if name in ("error", "ping") and kind is None:
            return None
    elif kind is None or kind not in STREAM_EVENTS:
        return None
    if kind == "error" and not _is_error_body(payload):
        return None
    if kind == "message_start" and not isinstance(payload.get("message"), dict):
        return None
    return "anthropic"


class _Block:
    """What the decoder keeps about one open content block (never its text)."""

    __slots__ = ("input", "kind", "signature", "streamed", "wrote")

    def __init__(self, kind: str | None, signature: str | None, given: Any) -> None:
        self.kind = kind
        self.signature = signature
        self.input: Any = given  # a tool's input as its start gave it
        self.streamed = False  # a tool's arguments arrived as deltas
        self.wrote = False  # a thinking block produced reasoning text


# The block events of a Messages stream, nearly all of its events, read through Structs
# (see providers/_common.py): they declare the keys `decode`, `_delta` and `_start` read,
# and no others. A block's content (search results can be tens of KB) is skipped unread.


class _QuickDelta(msgspec.Struct, gc=False):
    type: str | None = None
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    partial_json: str | None = None


class _QuickBlock(msgspec.Struct, gc=False):
    type: str | None = None
    signature: str | None = None
    input: Raw = NO_RAW


class _QuickEvent(msgspec.Struct, gc=False):
    type: str | None = None
    # Null and absent mean the current block, as `_index` reads them; a boolean or an
    # integer past 64 bits fails the decode, so the full path reads those.
    index: Int | None = None
    delta: _QuickDelta | None = None
    content_block: _QuickBlock | None = None


_decode_event = msgspec.json.Decoder(_QuickEvent).decode

_QUICK_EVENTS = frozenset({"content_block_delta", "content_block_start", "content_block_stop"})

_READ_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "tool_use", "fallback"})
"""Blocks whose start `_start` reads more of than `_Block` keeps: left to the full path."""


class StreamDecoder(WireDecoder):
    """Decoder of a Messages stream, one wire event at a time.

    - Text, thinking and client `tool_use` blocks become text, reasoning and tool-call
      deltas; server tool blocks (`server_tool_use`, `web_search_tool_result`, ...) ran on
      the server and add nothing, as in a full response.
    - A `fallback` block (start and stop, no deltas) becomes a `FallbackSeam` in place;
      from there on the response comes from its `to` model, which becomes the model.
    - Thinking signatures and redacted thinking become reasoning details, in block order.
    - `message_delta` carries the verdict: its `stop_reason` and `stop_details`. Stop
      details that arrive without a stop reason are attached to the verdict (the earlier
      one, or the next one), so a null never erases them.
    - An `error` event is a `StreamError` classified by `parse_error`: a policy block
      mid-stream is a content filter, an overload is a transient error.
    - `message_stop` ends the stream; without it the stream is incomplete.
    """

    API = API

    def __init__(self, provider: str) -> None:
        super().__init__(provider)
        self._blocks: dict[int, _Block] = {}
        self._current = -1
        self._reasoning = False  # some reasoning text was emitted
        self._pending_stop: StopDetails | None = None

    def quick(self, name: str | None, data: str | bytes) -> list[StreamEvent] | None:
        """The events of a block event read through Structs, as `decode` gives them,
        state changes included; None for any other event."""
        if name is not None and name not in _QUICK_EVENTS:
            # Not worth a try: the payload's type would have to contradict its name.
            return None
        try:
            event = _decode_event(data)
        except FAST_FAILED:
            return None
        kind = event.type or name
        if kind == "content_block_delta":
            delta = event.delta
            if delta is None:
                return []  # as `_delta` reads a null or absent delta
            if delta.type == "text_delta":
                text = delta.text
                return [TextDelta(text)] if text else []
            return self._block_delta(
                event.index if event.index is not None else self._current,
                delta.type,
                text=delta.text,
                thinking=delta.thinking,
                signature=delta.signature,
                partial_json=delta.partial_json,
            )
        if kind == "content_block_stop":
            return self._stop(event.index if event.index is not None else self._current)
        if kind == "content_block_start":
            return self._quick_start(event)
        return None

    def _quick_start(self, event: _QuickEvent) -> list[StreamEvent] | None:
        block = event.content_block
        if block is None:
            state = _Block(None, None, None)
        elif block.type in _READ_BLOCKS:
            return None
        else:
            try:
                given = raw_value(block.input)
            except FAST_FAILED:
                return None  # before any change: the full path reads the event whole
            state = _Block(block.type, block.signature, given)
        return self._open(event.index if event.index is not None else self._current, state)

    def decode(self, name: str | None, payload: Any) -> list[StreamEvent]:
        if not isinstance(payload, dict):
            return [StreamError(f"a stream event is not a JSON object ({name or 'unnamed'})")]
        kind = string(payload.get("type")) or name
        if kind == "content_block_delta":
            return self._delta(payload)
        if kind == "content_block_start":
            return self._start(payload)
        if kind == "content_block_stop":
            return self._stop(self._index(payload))
        if kind == "message_start":
            message = obj(payload.get("message"))
            self.acc.model = string(message.get("model")) or self.acc.model
            self.acc.request_id = string(message.get("id")) or self.acc.request_id
            usage = message.get("usage")
            return [UsageUpdate(_usage(usage))] if isinstance(usage, dict) else []
        if kind == "message_delta":
            return self._message_delta(payload)
        if kind == "message_stop":
            self.done = True
            return []
        if kind == "error":
            return self._error(payload)
        return []  # ping, and event types added after this was written

    def finish(self) -> list[StreamEvent]:
        # Blocks a cut-off stream left open keep their details; a tool call keeps the
        # arguments that arrived, and is not completed.
        return self._close_all(complete=False)

    def _index(self, payload: JsonObject) -> int:
        index = payload.get("index")
        if isinstance(index, int) and not isinstance(index, bool):
            return index
        return self._current

    def _start(self, payload: JsonObject) -> list[StreamEvent]:
        index = self._index(payload)
        block = obj(payload.get("content_block"))
        kind = string(block.get("type"))
        state = _Block(kind, string(block.get("signature")), block.get("input"))
        events = self._open(index, state)
        if kind == "text":
            text = string(block.get("text"))
            if text:
                events.append(TextDelta(text))
        elif kind == "thinking":
            events += self._thinking(state, string(block.get("thinking")))
        elif kind == "redacted_thinking":
            self.acc.add_detail(
                typed_detail("redacted_thinking", "data", string(block.get("data")))
            )
            del self._blocks[index]
        elif kind == "tool_use":
            events.append(
                ToolCallDelta(
                    index,
                    id=string(block.get("id")) or None,
                    name=string(block.get("name")) or None,
                )
            )
        elif kind == "fallback":
            fallback = _fallback(block)
            if fallback.to_model:
                self.acc.model = fallback.to_model
            events.append(FallbackSeam(fallback))
        return events

    def _open(self, index: int, state: _Block) -> list[StreamEvent]:
        """Open block `index` as `state`; a block still open at that index closes first."""
        previous = self._blocks.pop(index, None)
        events = self._close(index, previous) if previous is not None else []
        self._current = index
        self._blocks[index] = state
        return events

    def _stop(self, index: int) -> list[StreamEvent]:
        block = self._blocks.pop(index, None)
        return self._close(index, block) if block is not None else []

    def _delta(self, payload: JsonObject) -> list[StreamEvent]:
        delta = payload.get("delta")
        if type(delta) is dict and delta.get("type") == "text_delta":
            # The hot path of a long answer: checked before any block bookkeeping.
            text = delta.get("text")
            if type(text) is str:
                return [TextDelta(text)] if text else []
        delta = obj(payload.get("delta"))
        return self._block_delta(
            self._index(payload),
            delta.get("type"),
            text=string(delta.get("text")),
            thinking=string(delta.get("thinking")),
            signature=string(delta.get("signature")),
            partial_json=string(delta.get("partial_json")),
        )

    def _block_delta(
        self,
        index: int,
        kind: Any,
        *,
        text: str | None,
        thinking: str | None,
        signature: str | None,
        partial_json: str | None,
    ) -> list[StreamEvent]:
        """The events of a delta to block `index`, from the delta's `type` and the string
        fields it may carry (None: absent or not a string); both readers end here."""
        block = self._blocks.get(index)
        if kind == "text_delta":
            return [TextDelta(text)] if text else []
        if kind == "thinking_delta":
            if block is None:
                block = self._blocks[index] = _Block("thinking", None, None)
            return self._thinking(block, thinking)
        if kind == "signature_delta" and block is not None:
            if signature is not None:
                block.signature = (block.signature or "") + signature
        elif (
            kind == "input_json_delta"
            and block is not None
            and block.kind == "tool_use"
            and partial_json
        ):
            block.streamed = True
            return [ToolCallDelta(index, arguments=partial_json)]
        # citations_delta: the cited text already arrived as text; server tools' input
        # deltas ran on the server.
        return []

    def _thinking(self, block: _Block, text: str | None) -> list[StreamEvent]:
        if not text:
            return []
        events: list[StreamEvent] = []
        if not block.wrote and self._reasoning:
            # A full response joins thinking blocks with a blank line.
            events.append(ReasoningDelta("\n\n"))
        block.wrote = True
        self._reasoning = True
        events.append(ReasoningDelta(text))
        return events

    def _close(self, index: int, block: _Block, complete: bool = True) -> list[StreamEvent]:
        if block.kind == "thinking":
            self.acc.add_detail(typed_detail("thinking", "signature", block.signature))
        elif (
            block.kind == "tool_use" and complete and not block.streamed and block.input is not None
        ):
            # No argument deltas: the start's input is the whole input, as in a full body.
            return [ToolCallDelta(index, arguments=json_text(block.input))]
        return []

    def _close_all(self, complete: bool = True) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for index in sorted(self._blocks):
            events += self._close(index, self._blocks[index], complete)
        self._blocks.clear()
        return events

    def _message_delta(self, payload: JsonObject) -> list[StreamEvent]:
        delta = obj(payload.get("delta"))
        events: list[StreamEvent] = []
        usage = payload.get("usage")
        if isinstance(usage, dict):
            # message_delta counts are cumulative: each one given replaces, zeros too.
            carries = frozenset(
                ours for wire, ours in _USAGE_FIELDS.items() if type(usage.get(wire)) is int
            )
            events.append(UsageUpdate(_usage(usage), carries))
        stop = _stop_details(delta.get("stop_details"))
        raw_value = delta.get("stop_reason")
        if raw_value is not None:
            raw = string(raw_value)
            finish = STOP_REASONS.get(raw, FinishReason.ERROR) if raw is not None else None
            # Blocks the stream never closed (a stop in the middle of a tool's input) end here.
            events = self._close_all() + events
            if self._pending_stop is not None:
                # Details that came ahead of the stop reason: earlier values win.
                stop = _keep_first(self._pending_stop, stop)
                self._pending_stop = None
            events.append(Verdict(finish or FinishReason.ERROR, raw, stop))
        elif stop is not None:
            current = self.acc.verdict
            if current is not None:
                # The accumulator merges them into the verdict's details; a null erases nothing.
                events.append(Verdict(current.finish_reason, current.raw_finish_reason, stop))
            else:
                self._pending_stop = _keep_first(self._pending_stop, stop)
        return events

    def _error(self, payload: JsonObject) -> list[StreamEvent]:
        # Unless a refusal or filter was decided, the error decides the response, with the
        # facts an error body gives.
        result = parse_error(payload, None, self.acc.provider or "anthropic")
        code = result.error.code if result.error is not None else None
        fallback = f"the stream reported an error ({code or 'unknown'})"
        return error_events(result, self.acc.verdict, fallback)


def _keep_first(first: StopDetails | None, later: StopDetails | None) -> StopDetails | None:
    """`first`, with the fields it lacks taken from `later`."""
    if first is None or later is None:
        return first or later
    values = {}
    for item in fields(StopDetails):
        value = getattr(first, item.name)
        values[item.name] = value if value not in (None, ()) else getattr(later, item.name)
    return StopDetails(**values)
