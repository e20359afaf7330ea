"""OpenAI Responses API (and Azure OpenAI's Responses): response objects, streams, errors.

A Responses object (`"object": "response"`) says how it ended in `status`, not in a
finish reason. Where it says "blocked" or "declined":

- a `refusal` content part in an `output` message item: the model declined (the object
  is still `completed`); the refusal text becomes the content, as the notice expects;
- `status: "incomplete"` with `incomplete_details.reason: "content_filter"`;
- `status: "failed"` with a policy `error.code` (`invalid_prompt`, `bio_policy`,
  `image_content_policy_violation`, any other `*_policy` / `*policy_violation` code):
  a content-filter stop whose category is the code and whose explanation is the message;
- Azure's `content_filters` array: an entry with `blocked: true` names the categories.

The raw finish reason is the provider's own word for the ending: the incomplete reason,
the failed `error.code`, or else the `status` itself (`completed`, `cancelled`, ...).
HTTP error bodies have the same shape as Chat Completions ones and are classified by the
same rules (`openai_chat.classify_error`). A stream (`StreamDecoder`) ends with an event
that carries the final Responses object, which `parse_response` reads.

Documentation:

- https://platform.openai.com/docs/api-reference/responses/object
- https://platform.openai.com/docs/api-reference/responses-streaming
- https://platform.openai.com/docs/guides/structured-outputs#refusals
- https://platform.openai.com/docs/guides/error-codes
- https://learn.microsoft.com/azure/ai-foundry/openai/how-to/responses
- https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter
"""

from __future__ import annotations

from typing import Any

import msgspec
import orjson

from refusals.model import (
    Detail,
    ErrorKind,
    FinishReason,
    LLMResponse,
    ProviderError,
    StopDetails,
    ToolCall,
    Usage,
    decode_detail,
    detail_type,
    new_response,
    new_usage,
)
from refusals.providers._common import (
    FAST_FAILED,
    NO_RAW,
    Int,
    JsonObject,
    NormalizeError,
    Raw,
    arguments_text,
    arr,
    count,
    error_response,
    interrupted,
    key_names,
    obj,
    require_object,
    string,
)
from refusals.providers._lenient import Given, lenient, raw_value
from refusals.providers.openai_chat import (
    ErrorVerdict,
    ModerationSignals,
    azure_category,
    azure_filtered_categories,
    classify_error,
    clean_message,
    finish_error,
    keep_error_details,
    moderation_signals,
    nonblank,
    stop_for,
)
from refusals.stream import (
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

API = "responses"

STATUSES: dict[str, FinishReason] = {
    "completed": FinishReason.STOP,  # TOOL_CALLS when it ends on function calls
    "incomplete": FinishReason.ERROR,  # the reason decides: see INCOMPLETE_REASONS
    "failed": FinishReason.ERROR,  # a policy error code makes it CONTENT_FILTER
    "cancelled": FinishReason.ERROR,
    "in_progress": FinishReason.ERROR,
    "queued": FinishReason.ERROR,
}
"""`status` → FinishReason; any value not listed (or none) is ERROR."""

INCOMPLETE_REASONS: dict[str, FinishReason] = {
    "max_output_tokens": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
}
"""`incomplete_details.reason` → FinishReason; any value not listed is ERROR."""

_TOOL_CALL_ITEMS = ("function_call", "custom_tool_call")
_UNSET: Any = msgspec.UNSET


def looks_like(body: JsonObject) -> bool:
    """Whether `body` is a Responses object (not a Chat Completions body or an error)."""
    if body.get("object") == "response":
        return True
    return (
        isinstance(body.get("output"), list)
        and isinstance(body.get("status"), str)
        and "choices" not in body
    )


def detect_provider(body: JsonObject) -> str | None:
    """`azure` for a Responses object with Azure's `content_filters`, else `openai-responses`.

    Error bodies are left to `openai_chat`, which reads the same shape.
    """
    if not looks_like(body):
        return None
    return "azure" if "content_filters" in body else "openai-responses"


def is_error(body: JsonObject) -> bool:
    """A bare error body (`{"error": {...}}`); a `failed` Responses object is a response."""
    if looks_like(body):
        return False
    error = body.get("error")
    return isinstance(error, dict | str)


def parse_response(body: JsonObject, provider: str) -> LLMResponse:
    """A full Responses object as an `LLMResponse`."""
    body = require_object(body, "an OpenAI Responses object")
    if not (looks_like(body) or "output" in body or "status" in body):
        raise NormalizeError(
            'expected an OpenAI Responses object (`object: "response"` with `output` and '
            "`status`), got an object with keys: " + key_names(body)
        )

    return _fast_response(lenient(body, _FastResponse), provider)


def _response(
    messages: list[str],
    refusals: list[str],
    reasoning: list[str],
    tool_calls: list[ToolCall],
    *,
    status: str | None,
    incomplete_reason: str | None,
    failure: JsonObject,
    filtered: tuple[list[str], list[Detail]],
    moderation: ModerationSignals,
    usage: Usage,
    model: str | None,
    request_id: str | None,
    provider: str,
) -> LLMResponse:
    """The response from what a Responses object says (see `_fast_response`)."""
    text = "\n\n".join(messages)
    failure_code = string(failure.get("code"))

    finish = STATUSES.get(status, FinishReason.ERROR) if status is not None else FinishReason.ERROR
    raw = status
    if status == "incomplete" or incomplete_reason == "content_filter":
        # A filter's reason stands whatever the status says (a gateway may report a
        # filtered response as `completed` with the reason still set).
        finish = INCOMPLETE_REASONS.get(incomplete_reason or "", FinishReason.ERROR)
        raw = incomplete_reason or status
    elif status == "failed":
        raw = failure_code or status
    elif finish is FinishReason.STOP and tool_calls:
        finish = FinishReason.TOOL_CALLS

    filters, filter_details = filtered
    stop: StopDetails | None = None
    error: ProviderError | None = None
    verdict: ErrorVerdict | None = None
    if failure:
        # `failed` responses say why in `error`, with the same codes as HTTP error bodies.
        verdict = classify_error({"error": failure}, None)
        error = verdict.error

    content = text
    if (
        finish is FinishReason.CONTENT_FILTER
        or filters
        or moderation.blocked
        or (verdict is not None and verdict.error.kind is ErrorKind.POLICY)
    ):
        finish = FinishReason.CONTENT_FILTER
        categories = list(dict.fromkeys([*filters, *moderation.blocked]))
        explanation = None
        if verdict is not None and verdict.error.kind is ErrorKind.POLICY:
            # A failed response: the error code is the category, its message the explanation.
            if failure_code and failure_code not in categories:
                categories.insert(0, failure_code)
            explanation = verdict.error.message
        stop = stop_for(categories, explanation)
    elif refusals:
        finish = FinishReason.REFUSAL
        refusal_text = "\n\n".join(refusals)
        if content:
            content = f"{content}\n\n{refusal_text}"
            stop = StopDetails(explanation=refusal_text)
        else:
            content = refusal_text
    elif verdict is not None:
        finish = FinishReason.ERROR
        stop = verdict.stop

    details: list[Detail] = [stop.to_detail()] if stop is not None else []
    details.extend(filter_details)
    details.extend(moderation.details)

    terminal = interrupted(finish)
    return new_response(
        content or None,
        tool_calls,
        "\n\n".join(reasoning) or None,
        details,
        usage,
        finish,
        raw,
        model,
        request_id,
        provider,
        API,
        terminal and (bool(text) or bool(tool_calls)),
        error,
    )


def parse_error(body: JsonObject | str, status: int | None, provider: str) -> LLMResponse:
    """An HTTP error body (same shape and rules as Chat Completions errors)."""
    verdict = classify_error(body, status)
    response = error_response(
        verdict.error, provider=provider, api=API, stop=verdict.stop, model=verdict.model
    )
    return finish_error(response, verdict)


def _azure_content_filters(filters: Any) -> tuple[list[str], list[Detail]]:
    """Azure `content_filters`: the categories of blocked entries, and one detail per entry.

    In a blocked entry the categories are those marked `filtered: true`, or, when none is,
    those marked `detected: true`. Entries that are not blocked only add a detail, and only
    when something in them was filtered, detected or rated above `safe`.
    """
    categories: list[str] = []
    details: list[Detail] = []
    for entry in arr(filters):
        item = obj(entry)
        blocked = item.get("blocked") is True
        results = obj(item.get("content_filter_results"))
        filtered, kept = azure_filtered_categories(results)
        if blocked:
            detected = [
                azure_category(name)
                for name, value in results.items()
                if obj(value).get("detected") is True and isinstance(name, str)
            ]
            categories.extend(filtered or [d for d in detected if d != "error"])
        filter_error = obj(results.get("error"))
        if not (blocked or kept or filter_error):
            continue
        detail: JsonObject = {"type": "azure_content_filter", "blocked": blocked}
        source = string(item.get("source_type"))
        if source:
            detail["source"] = source
        if kept:
            detail["results"] = kept
        if filter_error:
            detail["error"] = {
                "code": string(filter_error.get("code")),
                "message": clean_message(filter_error.get("message")),
            }
        details.append(orjson.dumps(detail).decode())
    return list(dict.fromkeys(categories)), details


# ---------------------------------------------------------------------------------------
# Streams

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


class StreamDecoder(WireDecoder):
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

    Every event is read through `_FastEvent`: decoded strictly by `quick`, or, when that
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

    def quick(self, name: str | None, data: str | bytes) -> list[StreamEvent] | None:
        try:
            event = _decode_event(data)
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
        return self._read(name, lenient(payload, _FastEvent))

    def _read(self, name: str | None, event: _FastEvent) -> list[StreamEvent]:
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
    def _part(event: _FastEvent, *more: Any) -> tuple[Any, ...]:
        """Where an event belongs: its output index when the key is there (null too), else
        its item id, then the content or summary indexes given."""
        first = event.output_index if event.output_index is not _UNSET else event.item_id
        return (first, *more)

    def _text_delta(self, event: _FastEvent) -> list[StreamEvent]:
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

    def _refusal_delta(self, event: _FastEvent, piece: str | None) -> list[StreamEvent]:
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

    def _whole_refusal(self, kind: str, event: _FastEvent) -> list[StreamEvent]:
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

    def _reasoning_delta(self, event: _FastEvent) -> list[StreamEvent]:
        text = event.delta
        if not text:
            return []
        part = self._part(event, event.summary_index, event.content_index)
        if self._reasoning_part is not None and part != self._reasoning_part:
            text = "\n\n" + text
        self._reasoning_part = part
        return [ReasoningDelta(text)]

    def _index(self, event: _FastEvent, item: _FastItem | None = None) -> int | None:
        index = event.output_index
        item_id = event.item_id if type(event.item_id) is str else None
        if not item_id and item is not None:
            item_id = item.id
        if type(index) is int:
            if item_id:
                self._item_index[item_id] = index
            return index
        return self._item_index.get(item_id) if item_id else None

    def _item(self, event: _FastEvent) -> list[StreamEvent]:
        item = event.item
        if item is None or item.type not in _TOOL_CALL_ITEMS:
            return []
        call = _item_call(item)  # first: its arguments can fail a strict read
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

    def _arguments(self, event: _FastEvent, text: str | None, *, done: bool) -> list[StreamEvent]:
        index = self._index(event)
        if index is None or not text or (done and index in self._tools_streamed):
            return []
        self._streamed = True
        self._tools_streamed.add(index)
        return [ToolCallDelta(index, arguments=text)]

    def _terminal(self, kind: str, response: _FastResponse | None) -> list[StreamEvent]:
        body = response if response is not None else _FastResponse()
        if body.status is None:
            body.status = kind.removeprefix("response.")
        # Read before any state changes: a value it cannot take fails here.
        result = _fast_response(body, self.acc.provider or "openai-responses")
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

    def _error(self, event: _FastEvent) -> list[StreamEvent]:
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


def _item_call(item: _FastItem) -> ToolCall:
    """A `function_call` or `custom_tool_call` item as a tool call."""
    arguments = item.arguments if item.arguments else item.input
    return ToolCall(
        item.call_id or item.id or "", item.name or "", arguments_text(raw_value(arguments), "")
    )


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


# --- typed fast path (see providers/_common.py) ----------------------------------------

# The names `normalize` sends a Responses object to this module under (`_module_for`): its
# own, and every chat-compatible vendor's when the body looks like a Responses object.
_PROVIDER_NAMES = frozenset(
    {"openai-responses", "openai", "azure", "openrouter", "deepseek", "xai", "groq", "mistral"}
)


class _FastPart(msgspec.Struct):
    """A message content part, or a reasoning summary or content part."""

    type: str | None = None
    text: str | None = None
    refusal: str | None = None


class _FastItem(msgspec.Struct):
    type: str | None = None
    content: list[_FastPart] | None = None
    summary: list[_FastPart] | None = None
    call_id: str | None = None
    id: str | None = None
    name: str | None = None
    arguments: Raw = NO_RAW
    input: Raw = NO_RAW


class _FastIncomplete(msgspec.Struct):
    reason: str | None = None


class _FastTokenDetails(msgspec.Struct):
    # 0 for null as for absent: `integer` reads both as 0.
    cached_tokens: Int | None = 0
    cache_write_tokens: Int | None = 0


class _FastUsage(msgspec.Struct):
    input_tokens: Int | None = 0
    output_tokens: Int | None = 0
    input_tokens_details: _FastTokenDetails | None = None


class _FastResponse(msgspec.Struct):
    object: str | None = None
    id: str | None = None
    model: str | None = None
    status: str | None = None
    output: list[_FastItem] | None = None
    incomplete_details: _FastIncomplete | None = None
    error: Raw = NO_RAW
    content_filters: Raw = NO_RAW
    moderation: Raw = NO_RAW
    usage: _FastUsage | None = None
    choices: Raw = NO_RAW
    guardrail_action: Raw = msgspec.field(default=NO_RAW, name="amazon-bedrock-guardrailAction")
    invocation_metrics: Raw = msgspec.field(default=NO_RAW, name="amazon-bedrock-invocationMetrics")


_decode_response = msgspec.json.Decoder(_FastResponse).decode


class _FastEvent(msgspec.Struct):
    """A stream event of any type; `type` (or the SSE name) says which fields matter."""

    type: str | None = None
    delta: str | None = None
    # Where the event belongs; values of other types read as null.
    output_index: Int | str | msgspec.UnsetType | None = msgspec.UNSET
    item_id: Int | str | None = None
    content_index: Int | str | None = None
    summary_index: Int | str | None = None
    item: _FastItem | None = None
    part: _FastPart | None = None
    response: _FastResponse | None = None
    refusal: str | None = None
    # The `done` events of arguments (`arguments`, or `input` for custom tools), and an
    # error event's fields: any JSON value, read when the event is.
    arguments: Raw = NO_RAW
    input: Raw = NO_RAW
    error: Raw = NO_RAW
    code: Raw = NO_RAW
    message: Raw = NO_RAW
    param: Raw = NO_RAW


_decode_event = msgspec.json.Decoder(_FastEvent).decode
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


# Azure `content_filters` and OpenAI `moderation` come as Raw and are read a second time:
# through these Structs for the common case (nothing filtered, a moderation result that
# blocked nothing), which `_fast_filters` and `_fast_moderation` map themselves; any other
# case, or a value these Structs reject, goes to the dict reader's helper on the raw value.


class _FastFilterResult(msgspec.Struct):
    filtered: bool | None = None
    detected: bool | None = None
    severity: str | None = None


class _FastFilter(msgspec.Struct):
    blocked: bool | None = None
    content_filter_results: dict[str, _FastFilterResult | None] | None = None


class _FastModerationResult(msgspec.Struct):
    type: str | None = None
    results: Raw = NO_RAW
    categories: dict[str, Any] | None = None
    flagged: bool | None = None
    blocked: bool | None = None
    action: str | None = None
    model: str | None = None


class _FastModeration(msgspec.Struct):
    input: _FastModerationResult | None = None
    output: _FastModerationResult | None = None


_decode_filters = msgspec.json.Decoder(list[_FastFilter | None] | None).decode
_decode_moderation = msgspec.json.Decoder(_FastModeration | None).decode
_NULL = msgspec.Raw(b"null")
_NO_FILTERS: tuple[list[str], list[Detail]] = ([], [])
_NO_MODERATION = ModerationSignals()
"""Read only: `_response` copies what it takes from these."""


def parse_fast(data: bytes | str, provider: str | None) -> LLMResponse | None:
    """`parse_response` of a well-typed Responses object read through Structs, or None."""
    if provider is not None and provider not in _PROVIDER_NAMES:
        return None
    try:
        body = _decode_response(data)
        if provider is None:
            # What detection checks: `object: "response"` is the hint (no other format's
            # is looked at), no Bedrock InvokeModel marker, and `detect_provider` then says
            # azure exactly when the key `content_filters` is present.
            if body.object != "response" or body.guardrail_action or body.invocation_metrics:
                return None
            provider = "azure" if body.content_filters else "openai-responses"
        elif body.object != "response" and (
            body.output is None or body.status is None or body.choices
        ):
            # Not `looks_like`: an error body, a Chat Completions body, or one the dict
            # reader rejects.
            return None
        return _fast_response(body, provider)
    except FAST_FAILED:
        return None


def _fast_response(body: _FastResponse, provider: str) -> LLMResponse:
    """The one mapping of a Responses object (read strictly from bytes, or by the lenient
    pass from a decoded value) to an `LLMResponse`."""
    messages: list[str] = []
    refusals: list[str] = []
    reasoning: list[str] = []
    tool_calls: list[ToolCall] = []
    for item in body.output or ():
        kind = item.type
        if kind == "message":
            texts: list[str] = []
            for part in item.content or ():
                part_type = part.type
                if part_type in ("output_text", "text"):
                    texts.append(part.text or "")
                elif part_type == "refusal":
                    refusal = part.refusal
                    if refusal and refusal.strip():
                        refusals.append(refusal)
            text = "".join(texts)
            if text:
                messages.append(text)
        elif kind in _TOOL_CALL_ITEMS:
            tool_calls.append(_item_call(item))
        elif kind == "reasoning":
            for parts in (item.summary, item.content):
                for part in parts or ():
                    piece = part.text
                    if piece and piece.strip():
                        reasoning.append(piece)

    usage = body.usage
    if usage is None:
        counts = Usage()
    else:
        details = usage.input_tokens_details
        counts = new_usage(
            count(usage.input_tokens),
            count(usage.output_tokens),
            count(details.cached_tokens) if details is not None else 0,
            count(details.cache_write_tokens) if details is not None else 0,
            [],
        )
    incomplete = body.incomplete_details
    model = body.model
    request_id = body.id
    return _response(
        messages,
        refusals,
        reasoning,
        tool_calls,
        status=body.status,
        incomplete_reason=incomplete.reason if incomplete is not None else None,
        # `error` is null in all but failed responses: {} as `obj` reads null, not decoded.
        failure=obj(raw_value(body.error)) if body.error and body.error != _NULL else {},
        filtered=_fast_filters(body.content_filters) if body.content_filters else _NO_FILTERS,
        moderation=_fast_moderation(body.moderation) if body.moderation else _NO_MODERATION,
        usage=counts,
        model=model if model is not None and model.strip() else None,
        request_id=request_id if request_id is not None and request_id.strip() else None,
        provider=provider,
    )


def _fast_filters(value: Raw | Given) -> tuple[list[str], list[Detail]]:
    """`_azure_content_filters` of a raw `content_filters` value."""
    if isinstance(value, Given):
        return _azure_content_filters(value.value)
    try:
        entries = _decode_filters(value)
    except FAST_FAILED:
        return _azure_content_filters(raw_value(value))
    for entry in entries or ():
        if entry is None:
            continue
        results = entry.content_filter_results or {}
        if entry.blocked is True or "error" in results or "custom_blocklists" in results:
            return _azure_content_filters(raw_value(value))
        for result in results.values():
            if result is not None and (
                result.filtered is True
                or result.detected is True
                or (result.severity is not None and result.severity != "safe")
            ):
                return _azure_content_filters(raw_value(value))
    # Nothing blocked, filtered, detected or rated above safe: no category, no detail.
    return _NO_FILTERS


def _fast_moderation(value: Raw | Given) -> ModerationSignals:
    """`moderation_signals` of a raw `moderation` value."""
    if isinstance(value, Given):
        return moderation_signals(value.value)
    try:
        moderation = _decode_moderation(value)
    except FAST_FAILED:
        return moderation_signals(raw_value(value))
    if moderation is None:
        return _NO_MODERATION
    details: list[Detail] = []
    for source, result in (("input", moderation.input), ("output", moderation.output)):
        if result is None:
            continue
        if (
            result.type == "error"
            or result.results
            or result.blocked is not None
            or result.action is not None
        ):
            # An error outcome, a list of results, or one that may say it blocked.
            return moderation_signals(raw_value(value))
        # One result per side, as Responses gives it, that blocked nothing: recorded
        # when flagged or with a category, as `moderation_signals` records it.
        categories = [name for name, flag in (result.categories or {}).items() if flag is True]
        if result.flagged is not True and not categories:
            continue
        detail: JsonObject = {
            "type": "moderation",
            "source": source,
            "flagged": result.flagged is True,
            "categories": categories,
        }
        if result.model:
            detail["model"] = result.model
        details.append(orjson.dumps(detail).decode())
    return ModerationSignals([], details) if details else _NO_MODERATION
