"""ConverseStream and InvokeModelWithResponseStream streams, one wire event at a time.
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html"""

from __future__ import annotations

import base64
from typing import Any

import msgspec
import orjson

from refusals.events import (
    ReasoningDelta,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    UsageUpdate,
    Verdict,
    WireDecoder,
)
from refusals.model import (
    ErrorKind,
    FinishReason,
    ProviderError,
    Usage,
    loads_lenient,
)
from refusals.providers import anthropic  # Claude on Bedrock speaks Anthropic's format
from refusals.providers._common import (
    FINAL as _FINAL,
)
from refusals.providers._common import (
    JsonObject,
    error_events,
    says_blocked,
    typed_detail,
)
from refusals.providers._lenient import lenient, raw_value
from refusals.providers.bedrock.errors import (
    error_message,
    exception_name,
    known_exception,
    parse_error,
    to_error,
)
from refusals.providers.bedrock.guardrail import guardrail_outcome, trace_guardrail
from refusals.providers.bedrock.invoke import NATIVE_STOP_REASONS
from refusals.providers.bedrock.response import base64_text, finish_of
from refusals.providers.bedrock.schema import (
    API,
    DECLINED,
    STREAM_DECODERS,
    STREAM_EVENT_TYPES,
    BlockDelta,
    BlockStart,
    BlockStop,
    Chunk,
    ErrorBody,
    InvokeChunk,
    MessageStop,
    StreamMetadata,
    Wrapped,
    decode_error,
    decode_invoke_chunk,
    decode_opaque,
    decode_wrapped,
)

STREAM_EVENTS = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
        "chunk",
    }
)
"""ConverseStream event types, and InvokeModelWithResponseStream's `chunk` (the
`:event-type` header, or the key of a decoded event)."""


def detect_stream(name: str | None, payload: Any) -> str | None:
    """`"bedrock"` when the first event of a stream is a ConverseStream event.

    With a name (the event-stream `:event-type` or `:exception-type`), the name must be a
    ConverseStream event with an object payload, or a known Bedrock exception. Without
    one, the payload must be an object whose single key is such an event.
    """
    if name is not None:
        if name in STREAM_EVENTS:
            return "bedrock" if isinstance(payload, dict) else None
        return "bedrock" if known_exception(name) is not None else None
    if not isinstance(payload, dict) or len(payload) != 1:
        return None
    ((key, value),) = payload.items()
    if key in STREAM_EVENTS and isinstance(value, dict):
        return "bedrock"
    if known_exception(key) is not None:
        return "bedrock"
    return None


class _Block:
    """What the decoder keeps about one open content block (never its text)."""

    __slots__ = ("kind", "redacted", "signature", "streamed", "thinking", "wrote")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.thinking = False  # reasoning text or a signature arrived
        self.signature: str | None = None
        self.redacted: str | None = None
        self.streamed = False  # a tool's input arrived as deltas
        self.wrote = False  # reasoning text was emitted


class ConverseStreamReader(WireDecoder):
    """Decoder of a ConverseStream stream, one wire event at a time.

    - Text deltas become text; `toolUse` starts and input deltas become tool-call deltas;
      `reasoningContent` deltas become reasoning, and their signature or redacted content
      become reasoning details when the block stops, as in a full response.
    - `messageStop` carries the verdict (`guardrail_intervened` and `content_filtered` are
      content-filter stops) and is emitted right there.
    - The `metadata` event after it carries usage and, with tracing on, the guardrail
      trace: the blocked categories and `actionReason` are merged into the verdict's stop
      details by a second verdict with the same finish reason. A blocked policy in the
      trace turns an ordinary stop into a filter stop, as `parse_response` does.
    - Modelled exceptions (`throttlingException`, `modelStreamErrorException`,
      `validationException`, ...) are stream errors classified by `parse_error`: a
      validation error that says a filter blocked the request is a content filter.

    Completeness: the stream is complete at the `metadata` event that follows
    `messageStop`. Bedrock always sends that event, but the wait for it is bounded by the
    end of the stream: a stream that ends right after `messageStop` is complete too,
    because `messageStop` already carries the verdict and `metadata` only adds usage and
    the trace (a guardrail stop without it has a notice without categories). A stream
    that ends before `messageStop` is incomplete.
    """

    API = API

    def __init__(self, provider: str) -> None:
        super().__init__(provider)
        self._blocks: dict[int, _Block] = {}
        self._reasoning = False  # some reasoning text was emitted
        self._stop: tuple[FinishReason, str | None] | None = None
        self._inner: WireDecoder | None = None  # Claude's events inside InvokeModel chunks

    def read_strict(self, name: str | None, data: str | bytes) -> list[StreamEvent] | None:
        try:
            if name is None:
                found = _only_event(decode_wrapped(data))
                if found is None:
                    return None  # no event, several, or an exception: the decoded value says
                name, raw = found
                event = STREAM_DECODERS[name](raw)
            elif name in STREAM_DECODERS:
                event = STREAM_DECODERS[name](data)
            elif _is_exception(name):
                return self._exception(name, decode_error(data))
            else:
                decode_opaque(data)
                return []  # an event type added after this was written
            return self._read(event, strict=True)
        except _READ_FAILED:
            # Raised before any state changed (what can fail is read first): `decode`
            # reads the event again from its decoded value.
            return None

    def decode(self, name: str | None, payload: Any) -> list[StreamEvent]:
        if name is None:
            found = _wrapped_event(payload)
            if found is None:
                if isinstance(payload, dict):
                    return []  # an event type added after this was written
                return [StreamError("a stream event is not a JSON object")]
            name, payload = found
        if _is_exception(name):
            body = lenient(payload if isinstance(payload, dict) else {}, ErrorBody)
            if isinstance(payload, str):
                body.message = payload
            return self._exception(name, body)
        if not isinstance(payload, dict):
            return [StreamError(f"the {name} stream event is not a JSON object")]
        kind = STREAM_EVENT_TYPES.get(name)
        if kind is None:
            return []  # an event type added after this was written
        return self._read(lenient(payload, kind), strict=False)

    def _read(self, event: msgspec.Struct, *, strict: bool) -> list[StreamEvent]:
        if isinstance(event, BlockDelta):
            return self._delta(event)
        if isinstance(event, BlockStart):
            return self._start(event)
        if isinstance(event, BlockStop):
            index = _block_index(event.content_block_index)
            block = self._blocks.pop(index, None)
            return self._close(index, block) if block is not None else []
        if isinstance(event, MessageStop):
            return self._message_stop(event)
        if isinstance(event, StreamMetadata):
            return self._metadata(event)
        if isinstance(event, Chunk):
            return self._chunk(event, strict=strict)
        return []  # messageStart carries only the role

    # InvokeModelWithResponseStream: each `chunk` carries the model's own stream event as
    # base64 `bytes`: Anthropic Messages events for Claude, native chunks for the others.

    def _chunk(self, chunk: Chunk, *, strict: bool) -> list[StreamEvent]:
        data = _chunk_bytes(raw_value(chunk.bytes) if chunk.bytes else None)
        if strict:
            # Claude's events, once the first one chose the Messages reader, are read by
            # its strict decode; anything else from the decoded value (`decode`).
            if data is None or self._inner is None:
                raise _Deferred
            marks = decode_invoke_chunk(data)
            trace = _guardrail_of(marks)
            events = self._inner.read_strict(None, data)
            if events is None:
                raise _Deferred
        else:
            inner = _chunk_object(data)
            if inner is None:
                return [StreamError("an InvokeModel stream chunk does not hold a JSON object")]
            marks = lenient(inner, InvokeChunk)
            trace = _guardrail_of(marks)
            if self._inner is None and anthropic.detect_stream(None, inner) is not None:
                self._inner = anthropic.StreamReader(self.acc.provider or "bedrock")
                self._inner.acc = self.acc  # one response, whichever decoder reads the event
            if self._inner is not None:
                events = self._inner.decode(None, inner)
            else:
                events = self._native_chunk(marks)
        if self._inner is not None:
            self.done = self.done or self._inner.done
        metrics = marks.metrics
        if metrics is not None:
            usage = Usage(
                input_tokens=metrics.input_token_count or 0,
                output_tokens=metrics.output_token_count or 0,
            )
            events.append(UsageUpdate(usage))
        action = marks.guardrail_action
        if action is not None and action.upper() == "INTERVENED":
            _, stop = guardrail_outcome(FinishReason.CONTENT_FILTER, trace)
            events.append(Verdict(FinishReason.CONTENT_FILTER, action, stop))
        return events

    def _native_chunk(self, inner: InvokeChunk) -> list[StreamEvent]:
        # Titan: {"outputText", "completionReason"}; Llama: {"generation", "stop_reason"};
        # Mistral: {"outputs": [{"text", "stop_reason"}]}.
        if inner.output_text is not msgspec.UNSET:
            text, raw = inner.output_text, inner.completion_reason
        elif inner.generation is not msgspec.UNSET:
            text, raw = inner.generation, inner.stop_reason
        else:
            first = inner.outputs[0] if inner.outputs else None
            given = first.text if first is not None else None
            text = given if isinstance(given, str) else None
            raw = first.stop_reason if first is not None else None
        events: list[StreamEvent] = [TextDelta(text)] if text else []
        if raw is not None:
            events.append(Verdict(NATIVE_STOP_REASONS.get(raw, FinishReason.ERROR), raw))
            self.done = True
        return events

    def finish(self) -> list[StreamEvent]:
        # Blocks left open keep their details; a tool call is not completed.
        events = self._close_all(complete=False)
        if self._inner is not None:
            events += self._inner.finish()
        if self._stop is not None:
            # messageStop came but no metadata: the stream is complete all the same.
            self.done = True
        return events

    def _start(self, event: BlockStart) -> list[StreamEvent]:
        index = _block_index(event.content_block_index)
        tool = event.start.tool_use if event.start is not None else None
        if tool is None:
            return []
        self._blocks[index] = _Block("tool")
        return [ToolCallDelta(index, id=tool.tool_use_id or None, name=tool.name or None)]

    def _delta(self, event: BlockDelta) -> list[StreamEvent]:
        index = _block_index(event.content_block_index)
        delta = event.delta
        if delta is None:
            return []
        reasoning = delta.reasoning_content
        redacted = None
        if reasoning is not None and reasoning.redacted_content:
            redacted = base64_text(raw_value(reasoning.redacted_content))  # read first: may fail
        events: list[StreamEvent] = []
        text = delta.text
        if text:
            events.append(TextDelta(text))
        tool = delta.tool_use
        if tool is not None:
            block = self._blocks.setdefault(index, _Block("tool"))
            part = tool.input
            if part:
                block.streamed = True
                events.append(ToolCallDelta(index, arguments=part))
        if reasoning is not None:
            block = self._blocks.setdefault(index, _Block("reasoning"))
            thought = reasoning.text
            if thought is not None:
                block.thinking = True
                if thought:
                    if not block.wrote and self._reasoning:
                        # A full response joins reasoning blocks with a blank line.
                        events.append(ReasoningDelta("\n\n"))
                    block.wrote = self._reasoning = True
                    events.append(ReasoningDelta(thought))
            signature = reasoning.signature
            if signature is not None:
                block.thinking = True
                block.signature = (block.signature or "") + signature
            if redacted is not None:
                block.redacted = (block.redacted or "") + redacted
        # citation deltas: the cited text arrives as text.
        return events

    def _close(self, index: int, block: _Block, complete: bool = True) -> list[StreamEvent]:
        if block.thinking:
            self.acc.add_detail(typed_detail("thinking", "signature", block.signature))
        if block.redacted is not None:
            self.acc.add_detail(typed_detail("redacted_thinking", "data", block.redacted))
        if block.kind == "tool" and complete and not block.streamed:
            # No input deltas: an empty input, which a full response gives as {}.
            return [ToolCallDelta(index, arguments="{}")]
        return []

    def _close_all(self, complete: bool = True) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for index in sorted(self._blocks):
            events += self._close(index, self._blocks[index], complete)
        self._blocks.clear()
        return events

    def _message_stop(self, event: MessageStop) -> list[StreamEvent]:
        raw = event.stop_reason
        finish = finish_of(raw)
        self._stop = (finish, raw)
        return [*self._close_all(), Verdict(finish, raw)]

    def _metadata(self, event: StreamMetadata) -> list[StreamEvent]:
        guardrail = trace_guardrail(event.trace)  # read first: may fail
        events: list[StreamEvent] = []
        usage = event.usage
        if usage is not None:
            events.append(
                UsageUpdate(
                    Usage(
                        input_tokens=usage.input_tokens or 0,
                        output_tokens=usage.output_tokens or 0,
                        cache_read_tokens=usage.cache_read_input_tokens or 0,
                        cache_creation_tokens=usage.cache_write_input_tokens or 0,
                    )
                )
            )
        if self._stop is not None:
            finish, raw = self._stop
            outcome, stop = guardrail_outcome(finish, guardrail)
            if outcome is not finish or stop is not None:
                events.append(Verdict(outcome, raw, stop))
            self.done = True
        elif guardrail:
            # A trace before any messageStop (out of order): a blocked policy still says
            # a filter stopped the response.
            outcome, stop = guardrail_outcome(FinishReason.STOP, guardrail)
            if outcome is FinishReason.CONTENT_FILTER:
                events.append(Verdict(outcome, None, stop))
        return events

    def service_error(self, code: str | None, message: str | None) -> list[StreamEvent]:
        """An event-stream message of type `error` (outside the modelled exceptions), whose
        `:error-code` and `:error-message` headers are all it says: a transient fault,
        unless the message says a filter blocked the request. The message is redacted and
        bounded like any error body's; the events are folded in and returned."""
        name = exception_name(code) or "UnknownError"
        text = error_message(message)
        result = parse_error(
            {"__type": name, "message": text or ""}, None, self.acc.provider or "bedrock"
        )
        kind = ErrorKind.POLICY if says_blocked(text) else ErrorKind.TRANSIENT
        error = ProviderError(kind, None, name, f"{name}: {text}" if text else name)
        events: list[StreamEvent] = [StreamError(error.message or name, error)]
        if kind is ErrorKind.POLICY and (
            self.acc.verdict is None or self.acc.verdict.finish_reason not in _FINAL
        ):
            events.append(Verdict(FinishReason.CONTENT_FILTER, name, result.stop_details))
        for event in events:
            self.acc.apply(event, self.acc.events_seen)
        return events

    def _exception(self, name: str, body: ErrorBody) -> list[StreamEvent]:
        body.aws_type = name
        # Unless a filter was decided, the exception decides the response, with the facts
        # an error body gives.
        result = to_error(body, None, self.acc.provider or "bedrock")
        code = result.error.code if result.error is not None else None
        return error_events(result, self.acc.verdict, f"the stream reported {code or name}")


class _Deferred(Exception):
    """The strict read leaves this event to `decode` (nothing was changed yet)."""


_READ_FAILED = (
    *DECLINED,
    _Deferred,
    TypeError,
    ValueError,
    RecursionError,
    OverflowError,
    KeyError,
    IndexError,
)


def _only_event(wrapped: Wrapped) -> tuple[str, msgspec.Raw] | None:
    """The one event a recorded `{"<eventType>": {...}}` holds, or None for none or more."""
    found = None
    for name, field in _WRAPPED_FIELDS:
        raw = getattr(wrapped, field)
        if raw:
            if found is not None:
                return None
            found = (name, raw)
    return found


_WRAPPED_FIELDS = (
    ("messageStart", "message_start"),
    ("contentBlockStart", "content_block_start"),
    ("contentBlockDelta", "content_block_delta"),
    ("contentBlockStop", "content_block_stop"),
    ("messageStop", "message_stop"),
    ("metadata", "metadata"),
    ("chunk", "chunk"),
)


def _guardrail_of(marks: InvokeChunk) -> JsonObject:
    """The guardrail trace of an InvokeModel chunk (read only when it intervened)."""
    action = marks.guardrail_action
    if action is None or action.upper() != "INTERVENED" or not marks.guardrail_trace:
        return {}
    return trace_guardrail(marks.guardrail_trace)


def _chunk_bytes(value: Any) -> bytes | None:
    """The bytes a chunk's `bytes` hold: base64 text on the wire, raw bytes in boto3's
    decoded events; None for anything else."""
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except ValueError:
            return None
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    return None


def _chunk_object(data: bytes | None) -> JsonObject | None:
    """The JSON object a chunk's bytes hold, or None."""
    if data is None:
        return None
    try:
        inner = orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            inner = loads_lenient(data)
        except ValueError:
            return None
    return inner if isinstance(inner, dict) else None


def _is_exception(name: str) -> bool:
    return name.lower().endswith("exception")


def _wrapped_event(payload: Any) -> tuple[str, Any] | None:
    """The event name and body of a decoded event `{"<eventName>": {...}}`."""
    if isinstance(payload, dict):
        for key, value in payload.items():
            if key in STREAM_EVENTS or _is_exception(key):
                return key, value
    return None


def _block_index(index: int | None) -> int:
    return index if index is not None else 0


StreamReader = ConverseStreamReader
"""The name `_protocol.WireFormat` asks for."""
