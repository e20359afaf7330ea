"""Cohere's chat stream, v2 or v1, told apart event by event (`type` or `event_type`), read
through the schema's `Event`: v2 sends SSE events named by their `type` (`message-start` …
`message-end`); v1 one JSON object per line (or SSE) with an `event_type`
(`stream-start` … `stream-end`)."""

from __future__ import annotations

from typing import Any

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
from refusals.model import Usage
from refusals.providers._common import FAST_FAILED, error_events, stream_error
from refusals.providers._lenient import lenient
from refusals.providers.cohere.errors import error_of, is_error, parse_error
from refusals.providers.cohere.response import (
    API,
    counts_of,
    finish_of,
    holder_of,
    v1_calls,
)
from refusals.providers.cohere.schema import CallV1, Chat, Event, decode_event
from refusals.providers.cohere.schema import Usage as UsageHolder

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

_ERROR_FALLBACK = "the Cohere stream reported an error"


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


class ChatStreamReader(WireDecoder):
    """Reader of Cohere's chat stream, v2 or v1.

    v2: `content-delta` text (or `thinking`) and `tool-plan-delta` become text and reasoning
    deltas; `tool-call-start`/`-delta` build tool calls by `index`; `message-end` carries the
    verdict (`delta.finish_reason`), the usage and, on a failure, `delta.error`, and ends the
    stream. v1: `text-generation` text, `tool-calls-chunk` deltas (or the whole calls of
    `tool-calls-generation` when no chunk came), and `stream-end`, which carries the verdict
    and the whole response: whatever the stream did not deliver (text, tool calls, usage, ids)
    is taken from it. Finish values map as in a full body (`ERROR_TOXIC` is a filter,
    category `toxic`). A bare `{"message": ...}` error body in the stream is a `StreamError`
    with the verdict the same error body gives; `delta.error` is a `StreamError` beside the
    finish reason's verdict.
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

    def read_strict(self, name: str | None, data: str | bytes) -> list[StreamEvent] | None:
        try:
            event = decode_event(data)
            if event.type is None and event.event_type is None:
                return None  # maybe an error body: read whole, by `decode`
            # What can fail a strict read, read before any state changes.
            usage, calls = self._prepare(event)
        except FAST_FAILED:
            return None
        return self._read(event, usage, calls)

    def decode(self, name: str | None, payload: Any) -> list[StreamEvent]:
        if not isinstance(payload, dict):
            return [StreamError("a Cohere stream event is not a JSON object")]
        event = lenient(payload, Event)
        if event.type is None and event.event_type is None:
            if is_error(payload):
                result = parse_error(payload, None, self.acc.provider or "cohere")
                return error_events(result, self.acc.verdict, _ERROR_FALLBACK)
            return []
        usage, calls = self._prepare(event)
        return self._read(event, usage, calls)

    def _prepare(self, event: Event) -> tuple[Usage | None, list[list[Any]]]:
        """The usage (when given) and the whole calls' arguments an event carries."""
        if event.type is not None:
            delta = event.delta
            return (_counts(holder_of(delta.usage)) if delta is not None else None), []
        response = event.response or Chat()
        return _counts(holder_of(response.meta)), [
            [call.name, _arguments(call)] for call in (event.tool_calls or ())
        ] + [[call.name, _arguments(call)] for call in (response.tool_calls or ())]

    def _read(self, event: Event, usage: Usage | None, calls: list[list[Any]]) -> list[StreamEvent]:
        if event.type is not None:
            return self._v2(event.type, event, usage)
        assert event.event_type is not None
        return self._v1(event.event_type, event, usage, calls)

    # v2 ------------------------------------------------------------------------------

    def _v2(self, kind: str, event: Event, usage: Usage | None) -> list[StreamEvent]:
        delta = event.delta
        message = delta.message if delta is not None else None
        if kind == "message-start":
            if event.id:
                self.acc.request_id = event.id
            return []
        if kind in ("content-start", "content-delta"):
            content = message.content if message is not None else None
            index = _index(event.index, 0)
            events: list[StreamEvent] = self._reasoning(
                ("content", index), content.thinking if content is not None else None
            )
            text = content.text if content is not None else None
            if text:
                self._text_seen = True
                events.append(TextDelta(text))
            return events
        if kind == "tool-plan-delta":
            return self._reasoning(("plan", 0), message.tool_plan if message is not None else None)
        if kind in ("tool-call-start", "tool-call-delta"):
            call = message.tool_calls if message is not None else None
            function = call.function if call is not None else None
            starts = kind == "tool-call-start"
            index = _index(event.index, self._next_tool() if starts else self._last_tool)
            self._last_tool = index
            self._tool_calls.add(index)
            arguments = function.arguments if function is not None else None
            return [
                ToolCallDelta(
                    index,
                    id=(call.id if call is not None else None) or None,
                    name=(function.name if function is not None else None) or None,
                    arguments=arguments if arguments is not None else "",
                )
            ]
        if kind == "message-end":
            return self._end(
                delta.finish_reason if delta is not None else None,
                usage=usage,
                error=delta.error if delta is not None else None,
            )
        return []

    def _reasoning(self, block: tuple[str, int], text: str | None) -> list[StreamEvent]:
        """A reasoning delta; blocks (thinking items, the tool plan) are joined by a line
        feed, as a full body joins them."""
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

    def _v1(
        self, kind: str, event: Event, usage: Usage | None, calls: list[list[Any]]
    ) -> list[StreamEvent]:
        if kind == "stream-start":
            if event.generation_id:
                self.acc.request_id = event.generation_id
            return []
        if kind == "text-generation":
            if not event.text:
                return []
            self._text_seen = True
            return [TextDelta(event.text)]
        if kind == "tool-calls-chunk":
            chunk = event.tool_call_delta
            name = chunk.name if chunk is not None else None
            parameters = chunk.parameters if chunk is not None else None
            if name is None and parameters is None:
                return []
            assert chunk is not None
            self._tool_chunks_seen = True
            starts = name is not None
            index = _index(chunk.index, self._next_tool() if starts else self._last_tool)
            self._last_tool = index
            self._tool_calls.add(index)
            return [ToolCallDelta(index, name=name or None, arguments=parameters or "")]
        if kind == "tool-calls-generation":
            events: list[StreamEvent] = []
            if event.text and not self._text_seen:
                self._text_seen = True
                events.append(TextDelta(event.text))
            if not self._tool_chunks_seen:
                events.extend(self._whole_calls(calls[: len(event.tool_calls or ())]))
            return events
        if kind == "stream-end":
            return self._stream_end(event, usage, calls[len(event.tool_calls or ()) :])
        return []

    def _stream_end(
        self, event: Event, usage: Usage | None, calls: list[list[Any]]
    ) -> list[StreamEvent]:
        response = event.response or Chat()
        generation_id = response.generation_id if type(response.generation_id) is str else None
        request_id = response.response_id or generation_id
        if request_id:
            self.acc.request_id = request_id
        if response.model:
            self.acc.model = response.model
        events: list[StreamEvent] = []
        text = response.text if type(response.text) is str else None
        if text and not self._text_seen:
            self._text_seen = True
            events.append(TextDelta(text))
        if not self._tool_calls:
            events.extend(self._whole_calls(calls))
        given = response.finish_reason if type(response.finish_reason) is str else None
        raw = event.finish_reason or given
        return events + self._end(raw, usage=usage, error=None)

    def _whole_calls(self, calls: list[list[Any]]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for name, arguments in calls:
            index = self._next_tool()
            self._tool_calls.add(index)
            events.append(ToolCallDelta(index, name=name or None, arguments=arguments))
        return events

    # both ----------------------------------------------------------------------------

    def _next_tool(self) -> int:
        return max(self._tool_calls, default=-1) + 1

    def _end(self, raw: str | None, *, usage: Usage | None, error: str | None) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if usage is not None:
            events.append(UsageUpdate(usage))
        if error:
            # The error text is kept with the error; the verdict is the finish reason's.
            result = error_of(error, None, self.acc.provider or "cohere")
            events.append(stream_error(result, _ERROR_FALLBACK))
        finish, stop = finish_of(raw, bool(self._tool_calls))
        events.append(Verdict(finish, raw, stop))
        self.done = True
        return events


StreamReader = ChatStreamReader
"""The name every wire format's reader has in `providers._protocol.WireFormat`."""


def _counts(holder: UsageHolder | None) -> Usage | None:
    return counts_of(holder) if holder is not None else None


def _arguments(call: CallV1) -> str:
    return v1_calls([call])[0].arguments


def _index(value: int | None, default: int) -> int:
    return value if value is not None and value >= 0 else default
