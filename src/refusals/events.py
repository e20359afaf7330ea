"""Typed stream events, and the accumulator every stream decoder builds its response with.

A provider's stream decoder turns each wire event into zero or more of these events and
feeds them to a `StreamAccumulator`, whose `response` is the `LLMResponse` so far. The
`Verdict` event is emitted on the wire event that carries the verdict, so a consumer can
stop reading the moment a refusal or filter is known.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from refusals.model import (
    ErrorKind,
    Fallback,
    FinishReason,
    LLMResponse,
    ProviderError,
    StopDetails,
    ToolCall,
    Usage,
    loads_lenient,
    sanitize_json,
)


# Events are made once per wire event, so they are plain slotted dataclasses (a frozen
# one pays object.__setattr__ per field); treat them as values all the same.
@dataclass(slots=True)
class TextDelta:
    text: str


@dataclass(slots=True)
class ReasoningDelta:
    text: str


@dataclass(slots=True)
class ToolCallDelta:
    """Part of a tool call; `id` and `name` arrive with its first delta."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(slots=True)
class RefusalDelta:
    """Refusal text the model streams instead of an answer (OpenAI `refusal` fields)."""

    text: str


@dataclass(slots=True)
class FallbackSeam:
    """A server-side fallback took over: what follows comes from `fallback.to_model`."""

    fallback: Fallback


@dataclass(slots=True)
class UsageUpdate:
    """Token counts so far; a later update replaces the counts it carries.

    A zero replaces nothing unless `carries` names it: most wire events leave out what
    they do not know, but a count the provider did send as 0 is a real count.
    """

    usage: Usage
    carries: frozenset[str] = frozenset()


@dataclass(slots=True)
class Verdict:
    """How the response ends, known from this event on.

    A refusal or content-filter verdict is final: the decoder keeps reading only to
    collect details and usage, and a consumer may stop here.
    """

    finish_reason: FinishReason
    raw_finish_reason: str | None = None
    stop_details: StopDetails | None = None


@dataclass(slots=True)
class StreamError:
    """The stream reported an error, or ended before its terminal event."""

    message: str
    error: ProviderError | None = None


StreamEvent = (
    TextDelta
    | ReasoningDelta
    | ToolCallDelta
    | RefusalDelta
    | FallbackSeam
    | UsageUpdate
    | Verdict
    | StreamError
)

_TERMINAL = frozenset({FinishReason.REFUSAL, FinishReason.CONTENT_FILTER})
_ENDS_CUT = frozenset({*_TERMINAL, FinishReason.ERROR})
"""Finish reasons after which streamed text is a fragment (unless a rule below says not)."""


@dataclass(slots=True)
class StreamAccumulator:
    """Folds stream events into an `LLMResponse`, keeping the rules every decoder shares.

    - A later verdict never erases an earlier refusal or filter, and stop details once
      given are kept when a later event carries none.
    - Text before a refusal, filter or error is kept but marked cut off.
    - Memory holds the accumulated content and nothing per event.
    """

    provider: str | None = None
    api: str | None = None
    model: str | None = None
    request_id: str | None = None
    # UTF-8 buffers rather than lists of fragments: memory stays at the size of the
    # content however many deltas carried it.
    _text: bytearray = field(default_factory=bytearray)
    _reasoning: bytearray = field(default_factory=bytearray)
    _refusal: list[str] = field(default_factory=list)
    _tools: dict[int, ToolCall] = field(default_factory=dict)
    _details: list[str] = field(default_factory=list)
    _usage: Usage = field(default_factory=Usage)
    _verdict: Verdict | None = None
    _verdict_index: int | None = None
    _stop_details: StopDetails | None = None
    _error: StreamError | None = None
    _error_after_end: bool = False
    """The first error came after a verdict that said how the answer ended."""
    events_seen: int = 0

    @property
    def verdict(self) -> Verdict | None:
        return self._verdict

    @property
    def verdict_index(self) -> int | None:
        """Index of the wire event that carried the verdict (first one that decided it)."""
        return self._verdict_index

    @property
    def error(self) -> StreamError | None:
        return self._error

    def add_detail(self, detail: str) -> None:
        """Keep a reasoning detail (JSON text) in stream order."""
        self._details.append(detail)

    def apply(self, event: StreamEvent, wire_index: int) -> bool:
        """Fold one event in; True when it set or changed the verdict."""
        if isinstance(event, TextDelta):
            self._text += event.text.encode("utf-8", "surrogatepass")
        elif isinstance(event, ReasoningDelta):
            self._reasoning += event.text.encode("utf-8", "surrogatepass")
        elif isinstance(event, RefusalDelta):
            self._refusal.append(event.text)
        elif isinstance(event, ToolCallDelta):
            call = self._tools.get(event.index)
            if call is None:
                call = self._tools[event.index] = ToolCall()
            if event.id:
                call.id = event.id
            if event.name:
                call.name = event.name
            call.arguments += event.arguments
        elif isinstance(event, FallbackSeam):
            self._details.append(event.fallback.to_detail())
        elif isinstance(event, UsageUpdate):
            self._merge_usage(event.usage, event.carries)
        elif isinstance(event, StreamError):
            if self._error is None:
                self._error = event
                self._error_after_end = self._verdict is not None
        else:
            return self._set_verdict(event, wire_index)
        return False

    def _merge_usage(self, usage: Usage, carries: frozenset[str]) -> None:
        mine = self._usage
        for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens"):
            value = getattr(usage, name)
            if value or name in carries:
                setattr(mine, name, value)
        if usage.iterations:
            mine.iterations = list(usage.iterations)

    def _set_verdict(self, verdict: Verdict, wire_index: int) -> bool:
        if verdict.stop_details is not None:
            if self._stop_details is None:
                self._stop_details = verdict.stop_details
            else:
                self._stop_details = _merge_stop(self._stop_details, verdict.stop_details)
        current = self._verdict
        if current is not None and current.finish_reason in _TERMINAL:
            # A refusal or filter is final; later events only add details and the raw value.
            if current.raw_finish_reason is None and verdict.raw_finish_reason is not None:
                self._verdict = Verdict(current.finish_reason, verdict.raw_finish_reason)
            return False
        if current is not None and verdict.finish_reason is current.finish_reason:
            if verdict.raw_finish_reason and not current.raw_finish_reason:
                self._verdict = Verdict(current.finish_reason, verdict.raw_finish_reason)
            return False
        self._verdict = Verdict(verdict.finish_reason, verdict.raw_finish_reason)
        self._verdict_index = wire_index
        return True

    @property
    def response(self) -> LLMResponse:
        """The response as accumulated so far."""
        verdict = self._verdict
        error = self._error
        finish = verdict.finish_reason if verdict is not None else FinishReason.ERROR
        raw = verdict.raw_finish_reason if verdict is not None else None
        # The error decides the finish only when no refusal or filter verdict came first;
        # then, and only then, its message explains a policy block.
        error_decides = error is not None and (verdict is None or finish not in _TERMINAL)
        if error is not None and error_decides:
            finish = FinishReason.CONTENT_FILTER if _is_policy(error) else FinishReason.ERROR
            raw = raw or (error.error.code if error.error is not None else None)
        refusal_text = "".join(self._refusal)
        text = self._text.decode("utf-8", "surrogatepass")
        content = text or refusal_text or None
        details = list(self._details)
        stop = self._stop_details
        if (
            stop is None
            and error is not None
            and error_decides
            and finish is FinishReason.CONTENT_FILTER
        ):
            stop = StopDetails(explanation=error.message)
        if stop is not None:
            details.insert(0, stop.to_detail())
        # Output a filter masked and let through (`altered`) is whole, not cut off.
        altered = stop is not None and stop.altered is not None
        # A stream that broke off after the provider said how the answer ended (stop,
        # length, tool calls) is still an error, but its text is the whole answer.
        answer_ended = (
            self._error_after_end and verdict is not None and verdict.finish_reason not in _ENDS_CUT
        )
        cut_off = (
            bool(text)
            and finish in _ENDS_CUT
            and not altered
            and not (finish is FinishReason.ERROR and answer_ended)
        )
        if refusal_text and finish not in _TERMINAL:
            # Refusal text makes the stream a refusal whatever finish reason followed it.
            finish = FinishReason.REFUSAL
        counts = self._usage
        usage = Usage(
            counts.input_tokens,
            counts.output_tokens,
            counts.cache_read_tokens,
            counts.cache_creation_tokens,
            list(counts.iterations),
        )
        tools = self._tools
        # Positional, in field order: a short stream pays this once, and keywords cost more.
        return LLMResponse(
            content,
            [tools[i] for i in sorted(tools)] if tools else [],
            self._reasoning.decode("utf-8", "surrogatepass") or None,
            details,
            usage,
            finish,
            raw,
            self.model,
            self.request_id,
            self.provider,
            self.api,
            cut_off,
            _provider_error(error, finish in _TERMINAL),
        )


_HOSTILE = (TypeError, ValueError, RecursionError, OverflowError, KeyError, IndexError)
"""What a reader can raise on a payload of hostile shape (orjson's write errors included)."""

_NOT_JSON = object()


def _lenient(data: str | bytes) -> Any:
    try:
        return loads_lenient(data)
    except ValueError:
        return _NOT_JSON


def _provider_error(error: StreamError | None, blocked: bool) -> ProviderError | None:
    """The error a response reports: a stream that broke off or sent garbage is a
    transport failure, safe to retry, unless the provider classified it otherwise; after a
    refusal or filter verdict it is reported but never retryable (resending is refused
    again)."""
    if error is None:
        return None
    found = error.error or ProviderError(ErrorKind.TRANSIENT, message=error.message)
    return never_retried(found) if blocked else found


def never_retried(error: ProviderError) -> ProviderError:
    """`error`, not retryable: for the error of a refused or filtered response."""
    if not error.retryable:
        return error
    return ProviderError(
        error.kind, error.status, error.code, error.message, error.retry_after, should_retry=False
    )


def _is_policy(error: StreamError) -> bool:
    return error.error is not None and error.error.kind.value == "policy"


def _merge_stop(first: StopDetails, later: StopDetails) -> StopDetails:
    """`first`, with the fields it lacks taken from `later`: null never erases a value."""
    return StopDetails(
        category=first.category if first.category is not None else later.category,
        explanation=first.explanation if first.explanation is not None else later.explanation,
        recommended_model=first.recommended_model
        if first.recommended_model is not None
        else later.recommended_model,
        fallback_credit_token=first.fallback_credit_token
        if first.fallback_credit_token is not None
        else later.fallback_credit_token,
        fallback_has_prefill_claim=first.fallback_has_prefill_claim
        if first.fallback_has_prefill_claim is not None
        else later.fallback_has_prefill_claim,
        categories=first.categories or later.categories,
        altered=first.altered if first.altered is not None else later.altered,
    )


class WireDecoder:
    """Shared driver of a provider's incremental stream decoder.

    A provider module subclasses it with `API` and `decode(name, payload)`, which turns
    one decoded wire event into stream events; the driver parses JSON, numbers the wire
    events, folds everything into the accumulator, and on `close()` reports a stream that
    ended before its terminal event as an error.
    """

    API = "unknown"

    def __init__(self, provider: str) -> None:
        self.acc = StreamAccumulator(provider=provider, api=self.API)
        self.done = False
        """Set by `decode` when the wire format's terminal event arrived."""

    @property
    def response(self) -> LLMResponse:
        return self.acc.response

    def feed(self, name: str | None, data: str | bytes) -> list[StreamEvent]:
        """Decode one framed wire event: its SSE event name (or event-stream type) and data."""
        acc = self.acc
        index = acc.events_seen
        acc.events_seen = index + 1
        if len(data) < 16 and data.strip() in ("[DONE]", b"[DONE]"):
            self.done = True
            return []
        if not self.done:
            # The event's bytes decoded strictly into the format's schema; None leaves them
            # to `decode`, which reads the decoded value through the lenient pass.
            strict = self.read_strict(name, data)
            if strict is not None:
                if len(strict) == 1 and type(strict[0]) is TextDelta:
                    acc._text += strict[0].text.encode("utf-8", "surrogatepass")
                else:
                    for event in strict:
                        acc.apply(event, index)
                return strict
        try:
            payload = orjson.loads(data)
        except orjson.JSONDecodeError:
            payload = _lenient(data)
            if payload is _NOT_JSON:
                events: list[StreamEvent] = [StreamError(f"stream event {index} is not JSON")]
                if self.done:
                    return []  # garbage after the end changes nothing either
                acc.apply(events[0], index)
                return events
        if self.done:
            # The stream already ended: a later event neither flips the verdict nor adds
            # text; a decoder may still take what it allows (Gemini's trailing usage).
            events = self.after_end(name, payload)
        else:
            # Inline, not through a helper: one call fewer on every event.
            try:
                events = self.decode(name, payload)
            except _HOSTILE:
                events = self._decode_tamed(name, payload, index)
        if len(events) == 1 and type(events[0]) is TextDelta:
            # The bulk of any long stream: folded in here, without the dispatch in apply.
            acc._text += events[0].text.encode("utf-8", "surrogatepass")
        else:
            for event in events:
                acc.apply(event, index)
        return events

    def close(self) -> list[StreamEvent]:
        """End of input: flush what the format holds back, then check the stream finished."""
        events = self.finish()
        for event in events:
            self.acc.apply(event, self.acc.events_seen)
        if not self.done and self.acc.error is None:
            missing = StreamError(
                "the stream ended before its terminal event; the response is incomplete"
            )
            self.acc.apply(missing, self.acc.events_seen)
            events.append(missing)
        return events

    def _decode_tamed(self, name: str | None, payload: Any, index: int) -> list[StreamEvent]:
        # Odd values (integers past 64 bits, nesting no writer takes) tripped a reader:
        # the same event with those values tamed, and failing that an error event.
        try:
            return self.decode(name, sanitize_json(payload))
        except _HOSTILE:
            return [StreamError(f"stream event {index} could not be read")]

    def read_strict(self, name: str | None, data: str | bytes) -> list[StreamEvent] | None:
        """The events of an event whose bytes the format's schema decodes strictly, exactly
        as `decode` gives them for its decoded value; None (before changing any state) for
        bytes the strict decode rejects."""
        return None

    def decode(self, name: str | None, payload: Any) -> list[StreamEvent]:
        """The events of one decoded wire event (read through the lenient pass)."""
        raise NotImplementedError

    def after_end(self, name: str | None, payload: Any) -> list[StreamEvent]:
        """Events to keep from an event that came after the terminal one (none by default)."""
        return []

    def finish(self) -> list[StreamEvent]:
        """Events held back until the end of the stream (none by default)."""
        return []
