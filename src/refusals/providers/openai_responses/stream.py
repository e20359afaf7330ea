"""A Responses event stream (OpenAI, and Azure OpenAI's Responses), read through the
schema's `Event`. https://platform.openai.com/docs/api-reference/responses-streaming"""

from __future__ import annotations

from typing import Any

import msgspec

from refusals.events import (
    ReasoningDelta,
    RefusalDelta,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    UsageUpdate,
    Verdict,
    WireDecoder,
)
from refusals.model import (
    FinishReason,
    LLMResponse,
    StopDetails,
    decode_detail,
    detail_type,
)
from refusals.providers._common import (
    FAST_FAILED,
    string,
)
from refusals.providers._lenient import lenient, raw_value
from refusals.providers.openai_chat import (
    keep_error_details,
    nonblank,
)
from refusals.providers.openai_responses.errors import parse_error
from refusals.providers.openai_responses.response import (
    API,
    TOOL_CALL_ITEMS,
    item_call,
    to_response,
)
from refusals.providers.openai_responses.schema import Event, Item, Response, decode_event

_UNSET: Any = msgspec.UNSET
_TEXT_DELTA = "response.output_text.delta"
_TERMINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})
_WHOLE_REFUSAL_EVENTS = frozenset(
    {"response.refusal.done", "response.content_part.done", "response.output_item.done"}
)
_OPENING_EVENTS = frozenset({"response.created", "response.in_progress", "response.queued"})
_ARGUMENT_DELTAS = frozenset(
    {"response.function_call_arguments.delta", "response.custom_tool_call_input.delta"}
)
_ARGUMENT_DONE = frozenset(
    {"response.function_call_arguments.done", "response.custom_tool_call_input.done"}
)
_REASONING_DELTAS = frozenset(
    {"response.reasoning_summary_text.delta", "response.reasoning_text.delta"}
)


_READ_FAILED = (
    *FAST_FAILED,
    TypeError,
    ValueError,
    RecursionError,
    OverflowError,
    KeyError,
    IndexError,
)
"""What reading a final object can raise (the stream driver's `_HOSTILE`, decode errors)."""


def detect_stream(name: str | None, payload: Any) -> str | None:
    """`azure` or `openai-responses` when the first event of a stream is a Responses event.

    The event's `type` starts with `response.` (and repeats the SSE event name, when there
    is one), with a Responses object, if any, under `response`; `azure` when that object
    has Azure's `content_filters` field (null while in progress). A stream may open with an
    `error` event, which carries a `sequence_number` (Anthropic's error events have none).
    """
    if not isinstance(payload, dict):
        return None
    kind = string(payload.get("type"))
    if kind is None or (name is not None and name != kind):
        return None
    if kind == "error":
        number = payload.get("sequence_number")
        if isinstance(number, int) and not isinstance(number, bool):
            return "openai-responses"
        return None
    if not kind.startswith("response."):
        return None
    response = payload.get("response")
    if response is not None:
        if not isinstance(response, dict) or response.get("object", "response") != "response":
            return None  # e.g. the Realtime API's `response.*` events
        if "content_filters" in response:
            return "azure"
    return "openai-responses"


class ResponsesStreamReader(WireDecoder):
    """Decoder of a Responses event stream (OpenAI, and Azure OpenAI's Responses).

    - `response.output_text.delta` is text (messages after the first start after a blank
      line, as `parse_response` joins them); `response.reasoning_summary_text.delta` and
      `response.reasoning_text.delta` are reasoning; `function_call` and
      `custom_tool_call` items, with their argument deltas (or their `done` events when
      no delta came), are tool calls, by `output_index`.
    - The first non-blank `response.refusal.delta` is the verdict: a refusal from that
      event on. Refusal text after answer text is appended to it after a blank line and is
      the explanation, as `parse_response` does with a message holding both parts. A
      refusal that comes only whole (`response.refusal.done`, a `refusal` part in
      `response.content_part.done` or a message in `response.output_item.done`) is the
      verdict there, when no delta brought it.
    - The terminal events `response.completed`, `response.incomplete` and
      `response.failed` carry the final Responses object, which is read by
      `parse_response` itself: its verdict (status, incomplete reason, failed error code,
      Azure's `content_filters`, moderation), usage and details. Output that never came as
      deltas is taken from it.
    - An `error` event is a `StreamError` classified by `parse_error`, with the verdict
      that body gives (a policy error is a content filter); the stream then ends, usually
      with `response.failed`.
    - A stream that ends before a terminal event (or an `error`) is incomplete.

    Every event is read through `Event`: decoded strictly by `read_strict`, or, when that
    fails, decoded by the driver and read by `decode` through the lenient pass.
    """

    API = API

    def __init__(self, provider: str) -> None:
        super().__init__(provider)
        self._text = False
        self._text_part: tuple[Any, ...] | None = None
        self._refusal: list[str] = []
        self._refusal_part: tuple[Any, ...] | None = None
        self._blank_refusal = ""
        self._refusal_in_text = False
        self._refusal_stop_sent = False
        self._reasoning_part: tuple[Any, ...] | None = None
        self._item_index: dict[str, int] = {}
        self._tools_streamed: set[int] = set()
        self._tool_calls = False
        self._streamed = False

    def read_strict(self, name: str | None, data: str | bytes) -> list[StreamEvent] | None:
        try:
            event = decode_event(data)
        except FAST_FAILED:
            return None  # the driver decodes the JSON, and `decode` reads it leniently
        try:
            return self._read(name, event)
        except _READ_FAILED:
            # Raised before any state changed (each handler reads what can fail first):
            # `decode` reads the event again.
            return None

    def decode(self, name: str | None, payload: Any) -> list[StreamEvent]:
        if not isinstance(payload, dict):
            return [StreamError("a Responses stream event is not a JSON object")]
        return self._read(name, lenient(payload, Event))

    def _read(self, name: str | None, event: Event) -> list[StreamEvent]:
        kind = event.type or name
        if kind == _TEXT_DELTA:
            return self._text_delta(event)
        if kind == "response.refusal.delta":
            return self._refusal_delta(event, event.delta)
        if kind in _WHOLE_REFUSAL_EVENTS:
            return self._whole_refusal(kind, event)
        if kind in _ARGUMENT_DELTAS:
            return self._arguments(event, event.delta, done=False)
        if kind in _ARGUMENT_DONE:
            given = raw_value(event.arguments) if event.arguments else raw_value(event.input)
            return self._arguments(event, given if isinstance(given, str) else None, done=True)
        if kind in _REASONING_DELTAS:
            return self._reasoning_delta(event)
        if kind == "response.output_item.added":
            return self._item(event)
        if kind in _OPENING_EVENTS:
            if event.response is not None:
                self._named(event.response.model, event.response.id)
            return []
        if kind in _TERMINAL_EVENTS:
            return self._terminal(kind, event.response)
        if kind == "error":
            return self._error(event)
        return []  # part and item bookkeeping, annotations, and event types added later

    def finish(self) -> list[StreamEvent]:
        stop = self._refusal_stop()
        return [Verdict(FinishReason.REFUSAL, None, stop)] if stop is not None else []

    def _named(self, model: Any, request_id: Any) -> None:
        """The model and request id a Responses object names, when it names them."""
        if nonblank(model) is not None:
            self.acc.model = model
        if nonblank(request_id) is not None:
            self.acc.request_id = request_id

    @staticmethod
    def _part(event: Event, *more: Any) -> tuple[Any, ...]:
        """Where an event belongs: its output index when the key is there (null too), else
        its item id, then the content or summary indexes given."""
        first = event.output_index if event.output_index is not _UNSET else event.item_id
        return (first, *more)

    def _text_delta(self, event: Event) -> list[StreamEvent]:
        text = event.delta
        if not text:
            return []
        self._streamed = True
        item = self._part(event)
        if self._text and item != self._text_part:
            text = "\n\n" + text  # a new message: a full body joins messages so
        self._text_part = item
        self._text = True
        return [TextDelta(text)]

    def _refusal_delta(self, event: Event, piece: str | None) -> list[StreamEvent]:
        if not piece:
            return []
        self._streamed = True
        part = self._part(event, event.content_index)
        if not self._refusal:
            piece = self._blank_refusal + piece
            if not piece.strip():
                self._blank_refusal = piece  # a blank refusal is none (as in a full body)
                return []
            self._blank_refusal = ""
            self._refusal_part = part
            self._refusal_in_text = self._text
            self._refusal.append(piece)
            first: StreamEvent = TextDelta("\n\n" + piece) if self._text else RefusalDelta(piece)
            return [first, Verdict(FinishReason.REFUSAL)]
        if part != self._refusal_part:
            piece = "\n\n" + piece  # refusal parts are joined so
            self._refusal_part = part
        self._refusal.append(piece)
        return [TextDelta(piece) if self._refusal_in_text else RefusalDelta(piece)]

    def _refusal_stop(self) -> StopDetails | None:
        """The explanation of a refusal that followed answer text, given once."""
        if not self._refusal_in_text or self._refusal_stop_sent:
            return None
        self._refusal_stop_sent = True
        return StopDetails(explanation="".join(self._refusal))

    def _whole_refusal(self, kind: str, event: Event) -> list[StreamEvent]:
        """A refusal given whole (`response.refusal.done`, a refusal part or a message item
        that is done): the refusal, when no delta brought it already. The final object may
        come with an empty `output`, so this is the only place it is said."""
        if self._refusal:
            return []
        if kind == "response.refusal.done":
            texts = [event.refusal or ""]
        elif kind == "response.content_part.done":
            part = event.part
            texts = [part.refusal or ""] if part is not None and part.type == "refusal" else []
        else:
            item = event.item
            if item is None or item.type != "message":
                return self._item(event)
            texts = [part.refusal or "" for part in item.content or () if part.type == "refusal"]
        text = "\n\n".join(t for t in texts if t.strip())
        if not text:
            return []
        return self._refusal_delta(event, text)

    def _reasoning_delta(self, event: Event) -> list[StreamEvent]:
        text = event.delta
        if not text:
            return []
        part = self._part(event, event.summary_index, event.content_index)
        if self._reasoning_part is not None and part != self._reasoning_part:
            text = "\n\n" + text
        self._reasoning_part = part
        return [ReasoningDelta(text)]

    def _index(self, event: Event, item: Item | None = None) -> int | None:
        index = event.output_index
        item_id = event.item_id if type(event.item_id) is str else None
        if not item_id and item is not None:
            item_id = item.id
        if type(index) is int:
            if item_id:
                self._item_index[item_id] = index
            return index
        return self._item_index.get(item_id) if item_id else None

    def _item(self, event: Event) -> list[StreamEvent]:
        item = event.item
        if item is None or item.type not in TOOL_CALL_ITEMS:
            return []
        call = item_call(item)  # first: its arguments can fail a strict read
        index = self._index(event, item)
        if index is None:
            return []
        self._streamed = True
        self._tool_calls = True
        arguments = ""
        if call.arguments and index not in self._tools_streamed:
            self._tools_streamed.add(index)
            arguments = call.arguments
        return [
            ToolCallDelta(index, id=call.id or None, name=call.name or None, arguments=arguments)
        ]

    def _arguments(self, event: Event, text: str | None, *, done: bool) -> list[StreamEvent]:
        index = self._index(event)
        if index is None or not text or (done and index in self._tools_streamed):
            return []
        self._streamed = True
        self._tools_streamed.add(index)
        return [ToolCallDelta(index, arguments=text)]

    def _terminal(self, kind: str, response: Response | None) -> list[StreamEvent]:
        body = response if response is not None else Response()
        if body.status is None:
            body.status = kind.removeprefix("response.")
        # Read before any state changes: a value it cannot take fails here.
        result = to_response(body, self.acc.provider or "openai-responses")
        self.done = True
        self._named(body.model, body.id)
        return self._ended(result, has_usage=body.usage is not None)

    def _ended(self, result: LLMResponse, *, has_usage: bool) -> list[StreamEvent]:
        """The events of a terminal event whose final object reads as `result`."""
        events: list[StreamEvent] = []
        if not self._streamed:
            events += _output_events(result)
        if result.reasoning and self._reasoning_part is None:
            events.append(ReasoningDelta(result.reasoning))
        if has_usage and result.usage is not None:
            events.append(UsageUpdate(result.usage))
        for detail in result.reasoning_details or ():
            if isinstance(detail, str) and detail_type(decode_detail(detail)) != "stop_details":
                self.acc.add_detail(detail)
        refusal_stop = self._refusal_stop()
        if refusal_stop is not None:
            events.append(Verdict(FinishReason.REFUSAL, result.raw_finish_reason, refusal_stop))
        finish = result.finish_reason
        if finish is FinishReason.STOP and self._tool_calls:
            finish = FinishReason.TOOL_CALLS  # the calls came as events, not in the final output
        events.append(Verdict(finish, result.raw_finish_reason, result.stop_details))
        if result.error is not None:
            message = result.error.message or f"the response {result.raw_finish_reason}"
            events.append(StreamError(message, result.error))
        return events

    def _error(self, event: Event) -> list[StreamEvent]:
        error = raw_value(event.error) if event.error else None
        if not isinstance(error, dict | str):
            # The documented shape: {"type": "error", "code", "message", "param"}.
            fields = (("code", event.code), ("message", event.message), ("param", event.param))
            error = {key: raw_value(value) for key, value in fields if value}
        result = parse_error({"error": error}, None, self.acc.provider or "openai-responses")
        keep_error_details(self, result)
        failure = result.error
        message = (failure.message if failure is not None else None) or "the stream failed"
        return [
            Verdict(result.finish_reason, result.raw_finish_reason, result.stop_details),
            StreamError(message, failure),
        ]


def _output_events(result: LLMResponse) -> list[StreamEvent]:
    """The output of a final Responses object whose stream sent none of it as deltas."""
    events: list[StreamEvent] = []
    if result.content:
        plain_refusal = result.finish_reason is FinishReason.REFUSAL and (
            result.stop_details is None or result.stop_details.explanation is None
        )
        events.append(RefusalDelta(result.content) if plain_refusal else TextDelta(result.content))
    for index, call in enumerate(result.tool_calls):
        events.append(
            ToolCallDelta(
                index, id=call.id or None, name=call.name or None, arguments=call.arguments
            )
        )
    return events


StreamReader = ResponsesStreamReader
"""The name every wire format's reader has in `providers._protocol.WireFormat`."""
