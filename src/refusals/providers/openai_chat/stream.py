"""A Chat Completions stream (OpenAI and every compatible vendor), read chunk by chunk
through the schema's `Completion`. https://platform.openai.com/docs/api-reference/chat-streaming,
https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-streaming,
https://openrouter.ai/docs/api/reference/streaming"""

from __future__ import annotations

from collections.abc import Callable
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
    Detail,
    ErrorKind,
    FinishReason,
    LLMResponse,
    StopDetails,
    decode_detail,
    detail_type,
)
from refusals.providers._common import FAST_FAILED, JsonObject, arguments_text, json_text, obj
from refusals.providers._lenient import Given, filled, is_object, lenient, raw_value
from refusals.providers.openai_chat.errors import (
    API,
    classify,
    error_value,
    is_error,
    parse_error,
    stop_for,
    to_error,
)
from refusals.providers.openai_chat.filters import (
    FilterSignals,
    add_azure_results,
    azure_filter_signals,
    azure_filtered_categories,
    moderation_signals,
)
from refusals.providers.openai_chat.response import (
    FINISH_REASONS,
    answer_choice,
    call_parts,
    content_refusals,
    native_finish,
    other_choices_filtered,
    parts_text,
    prompt_results,
    refusal_text,
    usage_of,
)
from refusals.providers.openai_chat.schema import (
    Call,
    Choice,
    Completion,
    ErrorBody,
    ErrorObject,
    Groq,
    Legacy,
    Message,
    Part,
    decode_completion,
    decode_error_body,
    decode_legacy,
)
from refusals.providers.openai_chat.vendors import error_vendor, response_vendor

_STREAM_EVENT_NAMES = (None, "message", "error")
"""SSE event names of a Chat Completions stream: none at all; `message`, the SSE default,
which some proxies write out; `error`, the name LM Studio and some gateways give an error."""

_LEGACY_CALL = 2**31
"""Tool-call index of a legacy `function_call`: after every `tool_calls` entry, where
`parse_response` puts it."""

_SEVERITY = {"safe": 0, "low": 1, "medium": 2, "high": 3}

_CUT_SHORT = (FinishReason.LENGTH, FinishReason.PAUSE)
"""Finish reasons that an error reported after them does not turn into an error (as in
`parse_response`): the output was cut short and the error says why."""

_UNSET: Any = msgspec.UNSET
_READ_FAILED = (*FAST_FAILED, TypeError, ValueError, OverflowError, KeyError, IndexError)


def detect_stream(name: str | None, payload: Any) -> str | None:
    """The vendor when the first event of a stream is a Chat Completions chunk.

    A chunk has `choices` (Azure's first chunk has none but `prompt_filter_results`) or
    `object: "chat.completion.chunk"`; the vendor is read from it as from a full response.
    A stream may also open with an error body (OpenAI, Azure, OpenRouter, Mistral, xAI
    shapes; not Ollama's native `{"error": "..."}` nor a typed `error` event of another
    format).
    """
    if name not in _STREAM_EVENT_NAMES or not isinstance(payload, dict):
        return None
    if isinstance(payload.get("choices"), list) or payload.get("object") == "chat.completion.chunk":
        return response_vendor(payload)
    if "prompt_filter_results" in payload or "prompt_annotations" in payload:
        return "azure"
    if is_error(payload):
        return error_vendor(payload)
    return None


class _Parts:
    """What a chunk holds that can fail to read (the parts kept raw, decoded strictly),
    read before any state changes."""

    __slots__ = ("calls", "delta", "error", "legacy", "moderation", "prompt", "results")

    def __init__(self, chunk: Completion, choice: Choice | None) -> None:
        self.error = error_value(chunk.error)
        prompt = prompt_results(chunk)
        self.prompt = raw_value(prompt) if prompt else None
        self.moderation = raw_value(chunk.moderation) if chunk.moderation else None
        given = choice.content_filter_results if choice is not None else None
        self.results = raw_value(given) if given else None
        self.delta = delta = _delta_of(choice) if choice is not None else None
        self.calls: list[tuple[Call, str | None, Any]] = []
        self.legacy: tuple[str | None, Any] | None = None
        if delta is not None:
            self.calls = [(call, *call_parts(call)) for call in delta.tool_calls or ()]
            legacy = filled(delta.function_call, Legacy, decode_legacy)
            if legacy is not None:
                self.legacy = (legacy.name, raw_value(legacy.arguments))


class ChatStreamReader(WireDecoder):
    """Decoder of a Chat Completions stream (OpenAI and every compatible vendor).

    Each chunk's first choice (`index` 0) is read like `parse_response` reads a message, so
    that the stream and the full response agree:

    - `delta.content` is text (a list of parts too: Mistral `thinking` parts are
      reasoning); `delta.reasoning_content` / `reasoning` / `reasoning_details` reasoning;
      `delta.tool_calls` pieces (by `index`, else by `id`) and the legacy
      `delta.function_call` are tool calls.
    - The first non-blank `delta.refusal` is the verdict: a refusal, from that chunk on,
      whatever `finish_reason` ("stop") follows; the raw finish reason is kept as given.
      Refusal text that follows answer text is appended to the text after a blank line,
      and becomes the explanation, as `parse_response` does with a message that has both.
    - `finish_reason` (OpenRouter's `native_finish_reason` is the raw value) is the
      verdict of its chunk; an unknown value is an error, never a stop.
    - Azure: the prompt results of the first chunk and the `content_filter_results` of
      every chunk are gathered; the first category marked `filtered: true`, or a
      `content_filter` finish, makes the stream a content-filter stop on that chunk. In the
      asynchronous filter mode (chunks with `content_filter_offsets`) annotations follow
      the text they judge and can follow the model's `stop`: a later flagged annotation
      still turns the stream into a content-filter stop.
    - OpenAI `moderation` chunks are recorded; only a moderation result that says it
      blocked is a content-filter stop (see `moderation_signals`).
    - A chunk that is an error body (no `choices`) is read like an HTTP error body
      (`parse_error`): a policy error mid-stream is a content filter. An `error` inside a
      chunk with `choices` (OpenRouter) is read like an error inside a 200 body: a policy
      error blocks; any other error turns a `stop` or `tool_calls` finish (or none) into
      an error, but not a `length` finish that it follows, which it only explains.
      OpenRouter's recorded "Token limit reached" after `finish_reason: "length"` is
      therefore a length stop, as the same body read whole is.
    - The stream ends with `[DONE]` (the driver sees it). Every vendor sends it, but
      recordings (one JSON chunk per line) drop it, so a stream that ends after its
      choice's `finish_reason` is complete too; except under Azure's asynchronous filter,
      whose verdict may still follow the finish: there only `[DONE]` completes it.
      A stream that ends before either is incomplete (an error, unless a refusal or a
      filter was already seen).

    Every chunk is read through `Completion`: decoded strictly by `read_strict`, or, when that
    fails, decoded by the driver and read by `decode` through the lenient pass.
    """

    API = API

    def __init__(self, provider: str) -> None:
        super().__init__(provider)
        self._raw: str | None = None
        self._finish: FinishReason | None = None
        self._text = False
        self._refusal: list[str] = []
        self._blank_refusal = ""
        self._refusal_in_text = False
        self._refusal_stop_sent = False
        self._categories: list[str] = []
        self._filter_complete = False
        self._async_filter = False
        self._completion_results: JsonObject = {}
        self._prompt_details: list[Detail] = []
        self._moderation_details: list[Detail] = []
        self._other_details: list[Detail] = []
        self._tool_ids: dict[str, int] = {}
        self._tool_names: dict[int, str] = {}
        self._last_tool: int | None = None
        self._max_tool = -1

    def read_strict(self, name: str | None, data: str | bytes) -> list[StreamEvent] | None:
        try:
            chunk = decode_completion(data)
        except FAST_FAILED:
            return None  # the driver decodes the JSON, and `decode` reads it leniently
        try:
            return self._read(name, chunk, lambda: decode_error_body(data))
        except _READ_FAILED:
            # Raised before any state changed (what can fail is read first): `decode`
            # reads the chunk again.
            return None

    def decode(self, name: str | None, payload: Any) -> list[StreamEvent]:
        if not isinstance(payload, dict):
            return [StreamError("a Chat Completions stream event is not a JSON object")]
        return self._read(name, lenient(payload, Completion), lambda: lenient(payload, ErrorBody))

    def _read(
        self, name: str | None, chunk: Completion, error_body: Callable[[], ErrorBody]
    ) -> list[StreamEvent]:
        # First what can fail (strict decodes of the parts kept raw), then state changes.
        given = chunk.choices
        if isinstance(given, list):
            choices = given
        else:
            if _is_error_chunk(chunk, name):
                body = error_body()
                self._named(chunk)
                return self._error_body(body)
            choices = []
        choice = answer_choice(choices)
        raws = _Parts(chunk, choice)
        self._named(chunk)
        events: list[StreamEvent] = []
        if raws.prompt:
            self._prompt_filters(raws.prompt, events)
        if choice is not None:
            # n > 1: the other choices are not the response (as in parse_response)...
            self._choice(choice, raws, events)
        if len(choices) > 1 or (choices and choice is None):
            # ...but a filter that stopped one of them filtered the response.
            other = other_choices_filtered(choices, choice)
            if other is not None:
                self._other_details.extend(other.details)
                self._flag(other.filtered)
                events += self._filter_verdict(complete=False)
        usage = chunk.usage
        if usage is None:
            groq = chunk.x_groq
            usage = groq.usage if isinstance(groq, Groq) else None  # Groq's last chunk
        if usage is not None:
            events.append(UsageUpdate(usage_of(usage)))
        if raws.moderation is not None:
            signals = moderation_signals(raws.moderation)
            self._moderation_details.extend(signals.details)
            if self._flag(signals.blocked):
                events += self._filter_verdict(complete=False)
        error = raws.error
        if isinstance(error, ErrorObject) or (isinstance(error, str) and error.strip()):
            events += self._in_body_error(error)
        return events

    def _named(self, chunk: Completion) -> None:
        model = chunk.model
        if model is not None and model.strip():
            self.acc.model = model
        request_id = chunk.id
        if request_id is not None and request_id.strip():
            self.acc.request_id = request_id

    def finish(self) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        stop = self._refusal_stop()
        if stop is not None:
            events.append(Verdict(FinishReason.REFUSAL, self._raw, stop))
        if len(self._categories) > 1 and not self._filter_complete:
            events += self._filter_verdict(complete=True)
        # Details in the order parse_response gives them: prompt, completion, moderation.
        for detail in self._prompt_details:
            self.acc.add_detail(_detail_text(detail))
        if self._completion_results:
            signals = FilterSignals()
            add_azure_results(signals, self._completion_results, {"source": "completion"})
            for detail in signals.details:
                self.acc.add_detail(_detail_text(detail))
        for detail in self._other_details:
            self.acc.add_detail(_detail_text(detail))
        for detail in self._moderation_details:
            self.acc.add_detail(_detail_text(detail))
        if self._finish is not None and not self._async_filter:
            self.done = True
        return events

    # -- one chunk ---------------------------------------------------------------------

    def _prompt_filters(self, entries: Any, events: list[StreamEvent]) -> None:
        if not isinstance(entries, list) or not entries:
            return
        signals = azure_filter_signals(entries, None)
        self._prompt_details.extend(signals.details)
        if self._flag(signals.filtered):
            events += self._filter_verdict(complete=False)

    def _choice(self, choice: Choice, parts: _Parts, events: list[StreamEvent]) -> None:
        if parts.delta is not None:
            self._delta(parts.delta, parts, events)
        if choice.content_filter_offsets:
            self._async_filter = True
        flagged = False
        results = parts.results
        if isinstance(results, dict) and results:
            self._merge_results(results)
            flagged = self._flag(azure_filtered_categories(results)[0])
        raw = choice.finish_reason
        if raw is None:
            if flagged:
                events += self._filter_verdict(complete=False)
            return
        given = choice.native_finish_reason
        native = given if isinstance(given, str) else None
        self._raw = native if native is not None else raw
        self._finish = FINISH_REASONS.get(raw, FinishReason.ERROR)
        if native is not None:
            self._finish = native_finish(native, self._finish)
        if self._finish is FinishReason.CONTENT_FILTER or self._categories:
            events += self._filter_verdict(complete=self._finish is FinishReason.CONTENT_FILTER)
        elif self._refusal:
            events.append(Verdict(FinishReason.REFUSAL, self._raw, self._refusal_stop()))
        else:
            events.append(Verdict(self._finish, self._raw))

    def _delta(self, delta: Message, parts: _Parts, events: list[StreamEvent]) -> None:
        reasoning = delta.reasoning_content or delta.reasoning
        if reasoning:
            events.append(ReasoningDelta(reasoning))
        elif delta.reasoning_details:
            # OpenRouter also gives the reasoning as `reasoning_details` text entries.
            for entry in delta.reasoning_details:
                if entry.text:
                    events.append(ReasoningDelta(entry.text))
        content = delta.content
        pieces: list[str | Part] | None = None
        if isinstance(content, str):
            text = content
        elif content:
            pieces = content
            thinking: list[str] = []
            text = parts_text(content, thinking)
            events.extend(ReasoningDelta(piece) for piece in thinking)
        else:
            text = ""
        if text:
            self._text = True
            events.append(TextDelta(text))
        given = delta.refusal
        refusal = refusal_text(given) if isinstance(given, list) else given
        if not refusal and pieces is not None:
            refusal = "\n\n".join(content_refusals(pieces))
        if refusal:
            self._refusal_piece(refusal, events)
        for call, name, arguments in parts.calls:
            index = self._tool_index(call)
            events.append(self._tool_delta(index, call.id, name, arguments))
        if parts.legacy is not None:
            events.append(self._tool_delta(_LEGACY_CALL, None, *parts.legacy))

    def _refusal_piece(self, piece: str, events: list[StreamEvent]) -> None:
        if self._categories or self._finish is FinishReason.CONTENT_FILTER:
            return  # a filter stop keeps the text only, as parse_response does
        if not self._refusal:
            piece = self._blank_refusal + piece
            if not piece.strip():
                self._blank_refusal = piece  # a blank refusal is none (parse_response)
                return
            self._blank_refusal = ""
            self._refusal_in_text = self._text
            self._refusal.append(piece)
            events.append(TextDelta("\n\n" + piece) if self._text else RefusalDelta(piece))
            events.append(Verdict(FinishReason.REFUSAL, self._raw))
            return
        self._refusal.append(piece)
        events.append(TextDelta(piece) if self._refusal_in_text else RefusalDelta(piece))

    def _refusal_stop(self) -> StopDetails | None:
        """The explanation of a refusal that followed answer text, given once."""
        if not self._refusal_in_text or self._refusal_stop_sent:
            return None
        self._refusal_stop_sent = True
        return StopDetails(explanation="".join(self._refusal))

    def _tool_index(self, call: Call) -> int:
        """The call a tool-call piece belongs to: its `index`, else its `id`, else the last."""
        index = call.index
        call_id = call.id
        if isinstance(index, int) and not isinstance(index, bool):
            if call_id:
                self._tool_ids.setdefault(call_id, index)
        elif call_id:
            known = self._tool_ids.get(call_id)
            index = known if known is not None else self._max_tool + 1
            self._tool_ids[call_id] = index
        elif self._last_tool is not None:
            index = self._last_tool
        else:
            index = self._max_tool + 1
        self._last_tool = index
        self._max_tool = max(self._max_tool, index)
        return int(index)

    def _tool_delta(
        self, index: int, call_id: str | None, name: str | None, arguments: Any
    ) -> ToolCallDelta:
        # A name can come in pieces (local servers split it); one repeated whole is kept once.
        piece = name or ""
        known = self._tool_names.get(index, "")
        full = known if piece == known else known + piece
        if full:
            self._tool_names[index] = full
        return ToolCallDelta(
            index, id=call_id or None, name=full or None, arguments=arguments_text(arguments, "")
        )

    def _merge_results(self, results: JsonObject) -> None:
        """Fold one chunk's `content_filter_results` into the whole completion's."""
        merged = self._completion_results
        for name, value in results.items():
            if name == "error":
                if obj(value) and "error" not in merged:
                    merged[name] = value
            elif name == "custom_blocklists":
                if name not in merged or azure_filtered_categories({name: value})[0]:
                    merged[name] = value
            else:
                item, seen = obj(value), obj(merged.get(name))
                entry: JsonObject = dict(seen)
                for flag in ("filtered", "detected"):
                    if isinstance(item.get(flag), bool):
                        entry[flag] = seen.get(flag) is True or item[flag]
                severity = item.get("severity")
                before = seen.get("severity")
                if isinstance(severity, str) and _SEVERITY.get(severity, 4) >= _SEVERITY.get(
                    before if isinstance(before, str) else "", -1
                ):
                    entry["severity"] = severity
                merged[name] = entry

    def _flag(self, categories: list[str]) -> bool:
        """Record filtered categories; True when one of them is new."""
        new = [c for c in categories if c and c not in self._categories]
        self._categories.extend(new)
        return bool(new)

    def _filter_verdict(self, *, complete: bool) -> list[StreamEvent]:
        """The content-filter verdict, naming the categories filtered so far.

        Until the filter's last word (`complete`), only the first category is given: the
        accumulator keeps the first list it is given, and later annotations may add more.
        """
        if self._refusal:
            return []  # a refusal came first and is final
        if complete:
            self._filter_complete = True
            stop = stop_for(list(self._categories), None)
        else:
            stop = stop_for(self._categories[:1], None)
        return [Verdict(FinishReason.CONTENT_FILTER, self._raw, stop)]

    # -- errors ------------------------------------------------------------------------

    def _error_body(self, body: ErrorBody) -> list[StreamEvent]:
        """A chunk that is an error body: read as `parse_error` reads an HTTP error body."""
        result = to_error(classify(body, None), self.acc.provider or "openai")
        keep_error_details(self, result)
        error = result.error
        message = (error.message if error is not None else None) or "the stream reported an error"
        return [
            Verdict(result.finish_reason, result.raw_finish_reason, result.stop_details),
            StreamError(message, error),
        ]

    def _in_body_error(self, error: ErrorObject | str) -> list[StreamEvent]:
        """An `error` beside `choices`: read as `parse_response` reads one in a 200 body."""
        if self._refusal or self._categories or self._finish is FinishReason.CONTENT_FILTER:
            return []
        verdict = classify(ErrorBody(error=error), None)
        message = verdict.error.message or "the stream reported an error"
        if verdict.error.kind is ErrorKind.POLICY:
            finish = FinishReason.REFUSAL if verdict.refusal else FinishReason.CONTENT_FILTER
            return [Verdict(finish, self._raw, verdict.stop), StreamError(message, verdict.error)]
        if self._finish in _CUT_SHORT:
            return []
        return [Verdict(FinishReason.ERROR, self._raw), StreamError(message, verdict.error)]


StreamReader = ChatStreamReader
"""The name `_protocol.WireFormat` asks for."""


def _is_error_chunk(chunk: Completion, name: str | None) -> bool:
    """`is_error` of a chunk without `choices`, or any such chunk under the SSE name `error`."""
    if name == "error" and chunk.choices is _UNSET:
        return True
    if chunk.choices is not _UNSET or chunk.type == "error":
        return False
    if chunk.object == "error":
        return True
    error = chunk.error
    if not error:
        return False
    if is_object(error):
        found = error_value(error)
        # google.rpc.Status (Gemini) spells the status as a name in `error.status`.
        return not (isinstance(found, ErrorObject) and isinstance(found.status, str))
    if isinstance(error, Given):
        return isinstance(error.value, str)
    return memoryview(error)[0] == 0x22


def _delta_of(choice: Choice) -> Message | None:
    """`delta or message`, as a stream reads a choice."""
    delta = choice.delta
    if delta is None or (choice.message is not None and not delta.has_fields()):
        return choice.message
    return delta


def keep_error_details(decoder: WireDecoder, result: LLMResponse) -> None:
    """Keep the details an error body's response has besides its stop details (which
    travel in the verdict), e.g. Azure's filter results or OpenRouter's moderation facts."""
    for detail in result.reasoning_details or ():
        if detail_type(decode_detail(detail)) != "stop_details":
            decoder.acc.add_detail(_detail_text(detail))


def _detail_text(detail: Detail) -> str:
    return detail if isinstance(detail, str) else json_text(dict(detail))


__all__ = [
    "ChatStreamReader",
    "StreamReader",
    "detect_stream",
    "keep_error_details",
    "parse_error",
]
