"""A Messages stream, one wire event at a time, read through the schema's `Event`.

Server-Sent Events named after their payload `type` (`message_start`,
`content_block_start` / `_delta` / `_stop`, `message_delta`, `message_stop`, `ping`,
`error`); recordings without event names (one payload per line) are read by the payload
`type` alone. The verdict rides on `message_delta`; the stream is complete at
`message_stop`.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from refusals.events import (
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
from refusals.model import FinishReason, StopDetails, Usage
from refusals.providers._common import (
    FAST_FAILED,
    error_events,
    json_text,
    string,
    typed_detail,
)
from refusals.providers._lenient import lenient, raw_value
from refusals.providers.anthropic.errors import is_error_body, to_error
from refusals.providers.anthropic.response import (
    API,
    STOP_REASONS,
    fallback_of,
    usage_of,
)
from refusals.providers.anthropic.schema import (
    Block,
    Delta,
    DeltaUsage,
    ErrorBody,
    Event,
    StartMessage,
    StopFacts,
    decode_event,
)

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
    if kind == "error" and not is_error_body(payload):
        return None
    if kind == "message_start" and not isinstance(payload.get("message"), dict):
        return None
    return "anthropic"


class _Block:
    """What the reader keeps about one open content block (never its text)."""

    __slots__ = ("input", "kind", "signature", "streamed", "wrote")

    def __init__(self, kind: str | None, signature: str | None, given: Any) -> None:
        self.kind = kind
        self.signature = signature
        self.input: Any = given  # a tool's input as its start gave it
        self.streamed = False  # a tool's arguments arrived as deltas
        self.wrote = False  # a thinking block produced reasoning text


_USAGE_FIELDS = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_input_tokens": "cache_read_tokens",
    "cache_creation_input_tokens": "cache_creation_tokens",
}


class MessagesStreamReader(WireDecoder):
    """Reader of a Messages stream.

    - Text, thinking and client `tool_use` blocks become text, reasoning and tool-call
      deltas; server tool blocks (`server_tool_use`, `web_search_tool_result`, ...) ran on
      the server and add nothing, as in a full response.
    - A `fallback` block (start and stop, no deltas) becomes a `FallbackSeam` in place;
      from there on the response comes from its `to` model, which becomes the model.
    - Thinking signatures and redacted thinking become reasoning details, in block order.
    - `message_delta` carries the verdict: its `stop_reason` and `stop_details`. Stop
      details that arrive without a stop reason are attached to the verdict (the earlier
      one, or the next one), so a null never erases them.
    - An `error` event is a `StreamError` classified as an error body is: a policy block
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

    def read_strict(self, name: str | None, data: str | bytes) -> list[StreamEvent] | None:
        try:
            event = decode_event(data)
        except FAST_FAILED:
            return None  # the driver decodes the JSON, and `decode` reads it leniently
        try:
            return self._read(name, event)
        except FAST_FAILED:
            return None

    def decode(self, name: str | None, payload: Any) -> list[StreamEvent]:
        if not isinstance(payload, dict):
            return [StreamError(f"a stream event is not a JSON object ({name or 'unnamed'})")]
        return self._read(name, lenient(payload, Event))

    def finish(self) -> list[StreamEvent]:
        # Blocks a cut-off stream left open keep their details; a tool call keeps the
        # arguments that arrived, and is not completed.
        return self._close_all(complete=False)

    def _read(self, name: str | None, event: Event) -> list[StreamEvent]:
        kind = event.type or name
        if kind == "content_block_delta":
            delta = event.delta
            if delta is None:
                return []
            if delta.type == "text_delta":
                # The hot path of a long answer: checked before any block bookkeeping.
                text = delta.text
                return [TextDelta(text)] if text else []
            return self._delta(self._index(event), delta)
        if kind == "content_block_start":
            return self._start(self._index(event), event.content_block)
        if kind == "content_block_stop":
            return self._stop(self._index(event))
        if kind == "message_start":
            message = event.message
            if isinstance(message, StartMessage):
                # The usage first: its iterations can fail orjson, before any state changes.
                usage = usage_of(message.usage) if message.usage is not None else None
                self.acc.model = message.model or self.acc.model
                self.acc.request_id = message.id or self.acc.request_id
                if usage is not None:
                    return [UsageUpdate(usage)]
            return []
        if kind == "message_delta":
            return self._message_delta(event)
        if kind == "message_stop":
            self.done = True
            return []
        if kind == "error":
            return self._error(event)
        return []  # ping, and event types added after this was written

    def _index(self, event: Event) -> int:
        index = event.index
        return index if index is not None else self._current

    def _start(self, index: int, block: Block | None) -> list[StreamEvent]:
        if block is None:
            return self._open(index, _Block(None, None, None))
        kind = block.type
        state = _Block(kind, block.signature, raw_value(block.input))
        events = self._open(index, state)
        if kind == "text":
            if block.text:
                events.append(TextDelta(block.text))
        elif kind == "thinking":
            events += self._thinking(state, block.thinking)
        elif kind == "redacted_thinking":
            self.acc.add_detail(typed_detail("redacted_thinking", "data", block.data))
            del self._blocks[index]
        elif kind == "tool_use":
            events.append(ToolCallDelta(index, id=block.id or None, name=block.name or None))
        elif kind == "fallback":
            fallback = fallback_of(block)
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

    def _delta(self, index: int, delta: Delta) -> list[StreamEvent]:
        kind = delta.type
        block = self._blocks.get(index)
        if kind == "thinking_delta":
            if block is None:
                block = self._blocks[index] = _Block("thinking", None, None)
            return self._thinking(block, delta.thinking)
        if kind == "signature_delta" and block is not None:
            if delta.signature is not None:
                block.signature = (block.signature or "") + delta.signature
        elif (
            kind == "input_json_delta"
            and block is not None
            and block.kind == "tool_use"
            and delta.partial_json
        ):
            block.streamed = True
            return [ToolCallDelta(index, arguments=delta.partial_json)]
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

    def _message_delta(self, event: Event) -> list[StreamEvent]:
        delta = event.delta
        events: list[StreamEvent] = []
        if event.usage is not None:
            events.append(_delta_usage(event.usage))
        stop = _stop_details(delta.stop_details) if delta is not None else None
        raw_stop = raw_value(delta.stop_reason) if delta is not None else None
        if raw_stop is not None:
            raw = string(raw_stop)
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

    def _error(self, event: Event) -> list[StreamEvent]:
        # Unless a refusal or filter was decided, the error decides the response, with the
        # facts an error body gives.
        message = event.message if isinstance(event.message, str) else None
        body = ErrorBody(event.type, event.error, message, event.request_id)
        result = to_error(body, None, self.acc.provider or "anthropic")
        code = result.error.code if result.error is not None else None
        fallback = f"the stream reported an error ({code or 'unknown'})"
        return error_events(result, self.acc.verdict, fallback)


StreamReader = MessagesStreamReader
"""The name every wire format's reader has in `providers._protocol.WireFormat`."""


def _delta_usage(usage: DeltaUsage) -> UsageUpdate:
    values = (
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_input_tokens,
        usage.cache_creation_input_tokens,
    )
    carries = frozenset(
        ours
        for value, ours in zip(values, _USAGE_FIELDS.values(), strict=True)
        if value is not None
    )
    iterations = raw_value(usage.iterations) if usage.iterations else None
    given, taken, read, created = (
        value if value is not None and value > 0 else 0 for value in values
    )
    counts = Usage(
        given,
        taken,
        read,
        created,
        [dict(it) for it in iterations if isinstance(it, dict)] if type(iterations) is list else [],
    )
    return UsageUpdate(counts, carries)


def _stop_details(facts: StopFacts | None) -> StopDetails | None:
    """The facts of a `stop_details` object; None when it is absent, null or says nothing."""
    if facts is None:
        return None
    stop = StopDetails(
        category=facts.category,
        explanation=facts.explanation,
        recommended_model=facts.recommended_model,
        fallback_credit_token=facts.fallback_credit_token,
        fallback_has_prefill_claim=facts.fallback_has_prefill_claim,
    )
    return None if stop.is_empty() else stop


def _keep_first(first: StopDetails | None, later: StopDetails | None) -> StopDetails | None:
    """`first`, with the fields it lacks taken from `later`."""
    if first is None or later is None:
        return first or later
    values = {}
    for item in fields(StopDetails):
        value = getattr(first, item.name)
        values[item.name] = value if value not in (None, ()) else getattr(later, item.name)
    return StopDetails(**values)
