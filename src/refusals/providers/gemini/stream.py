"""`streamGenerateContent`: each event is a GenerateContentResponse with the next parts,
read through the schema's `Body` (strictly from bytes, or by the lenient pass)."""

from __future__ import annotations

from typing import Any

import msgspec

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
from refusals.model import FinishReason, StopDetails
from refusals.providers._common import FAST_FAILED, JsonObject, error_events
from refusals.providers._lenient import lenient
from refusals.providers.gemini.errors import detect_error, to_error
from refusals.providers.gemini.response import (
    API,
    FINISH_REASONS,
    PROMPT_BLOCKED,
    blocked_ratings,
    call_arguments,
    categories,
    first_candidate,
    is_error_chunk,
    looks_like,
    ratings_detail,
    signature_detail,
    usage_of,
    wire_keys,
)
from refusals.providers.gemini.schema import Body, Candidate, Feedback, UsageMetadata, decode_body

# A proxy may name the events with the SSE default type; Google sends no `event:` lines.
_STREAM_EVENT_NAMES = (None, "message")

_UNBLOCKED = frozenset({FinishReason.STOP, FinishReason.LENGTH})
_BLOCKS = frozenset({FinishReason.CONTENT_FILTER, FinishReason.REFUSAL})
"""Finish reasons that end a stream even after a STOP chunk (`after_end`)."""


def detect_provider(body: JsonObject) -> str | None:
    """`"vertex"` or `"gemini"` for a generateContent response, `"gemini"` for a Google
    error body (`error.status` an upper-case code name); None for anything else."""
    body = wire_keys(body)
    if body.get("error") is not None:
        return detect_error(body)
    if "choices" in body or "output" in body:
        return None
    if not looks_like(body):
        return None
    return "vertex" if "createTime" in body else "gemini"


def detect_stream(name: str | None, payload: Any) -> str | None:
    """`"vertex"` or `"gemini"` when the first event of a stream is a streamGenerateContent
    chunk (or a Google error body), by the shape rules of `detect_provider`; else None."""
    if name not in _STREAM_EVENT_NAMES or not isinstance(payload, dict):
        return None
    return detect_provider(payload)


class GenerateContentStreamReader(WireDecoder):
    """Reader of a `streamGenerateContent` stream.

    - Parts of candidate 0 become text, thought (`thought: true`) and tool-call deltas; a
      `functionCall` part holds the whole call. Thought signatures are kept as details.
    - The verdict is on the chunk whose candidate has a `finishReason`, or whose
      `promptFeedback` has a `blockReason` (a prompt block, usually the only chunk). The
      mapping, categories and explanation are those of a full response.
    - Gemini sends no terminal sentinel: that chunk completes the stream, and a stream that
      ends without one is incomplete (an error). After it only usage is read, and a
      later block or error (Vertex may put STOP on every chunk): another chunk's text or
      finish reason changes nothing.
    - `{"error": {...}}` in the stream is a `StreamError` with the verdict an error body
      gives, so a Responsible-AI block reported as an error is a content filter on that
      event; after a block, an error adds itself but changes no verdict.
    """

    API = API

    def __init__(self, provider: str) -> None:
        super().__init__(provider)
        self._tool_calls = 0
        self._blocked: list[JsonObject] = []
        self._ratings_kept = False
        self._final: str | None = None  # the finish reason of the final chunk

    def read_strict(self, name: str | None, data: str | bytes) -> list[StreamEvent] | None:
        try:
            chunk = decode_body(data)
            # Ratings are decoded before any state changes (they can fail the decode).
            candidate = first_candidate(chunk)
            blocked = blocked_ratings(candidate.safety_ratings) if candidate is not None else []
            feedback = chunk.prompt_feedback
            prompt_blocked = (
                blocked_ratings(feedback.safety_ratings)
                if type(feedback) is Feedback and feedback.block_reason is not None
                else []
            )
            arguments = _arguments(candidate)
        except FAST_FAILED:
            return None  # the driver decodes the JSON, and `decode` reads it leniently
        return self._chunk(chunk, candidate, blocked, prompt_blocked, arguments)

    def decode(self, name: str | None, payload: Any) -> list[StreamEvent]:
        # A JSON array holds chunks (the `alt=json` form, or an error wrapped in an array).
        items = payload if isinstance(payload, list) else [payload]
        events: list[StreamEvent] = []
        for item in items:
            # An array can hold the final chunk and more after it: those are after the end.
            if self.done:
                events += self.after_end(name, item)
            elif not isinstance(item, dict):
                events.append(StreamError("a Gemini stream event is not a JSON object"))
            else:
                events += self._read(lenient(item, Body))
        return events

    def after_end(self, name: str | None, payload: Any) -> list[StreamEvent]:
        # Usage may trail the final chunk. Early Gemini versions repeated the finish reason
        # on every chunk: a chunk that repeats it is read whole (its verdict is the same
        # one), and so is a block or an error; any other chunk after the end adds its
        # usage and nothing else.
        events: list[StreamEvent] = []
        for item in payload if isinstance(payload, list) else [payload]:
            if not isinstance(item, dict):
                continue
            chunk = lenient(item, Body)
            candidate = first_candidate(chunk)
            raw = candidate.finish_reason if candidate is not None else None
            repeats = (
                self._final is not None and raw == self._final and chunk.prompt_feedback is _UNSET
            )
            if repeats:
                events += self._read(chunk)
            elif self._blocks_after_the_end(chunk, raw):
                # Vertex can put STOP on every chunk and the real end on the last one (a
                # RECITATION or SAFETY chunk, or an error body), as the Firebase SDKs'
                # tests show: a block or an error after an unblocked end is the verdict.
                # Its text, if any, came after the end and is not the answer.
                if is_error_chunk(chunk):
                    events += self._read(chunk)
                else:
                    assert candidate is not None and raw is not None
                    blocked = blocked_ratings(candidate.safety_ratings)
                    if blocked:
                        self._blocked = blocked
                    events.append(self._verdict(raw, candidate.finish_message))
                if type(chunk.usage_metadata) is UsageMetadata:
                    events.append(UsageUpdate(usage_of(chunk.usage_metadata)))
            elif type(chunk.usage_metadata) is UsageMetadata:
                events.append(UsageUpdate(usage_of(chunk.usage_metadata)))
        return events

    def _blocks_after_the_end(self, chunk: Body, raw: str | None) -> bool:
        """Whether a chunk after the end is a block or an error that decides the verdict:
        only while the verdict so far is no block (a block is final)."""
        verdict = self.acc.verdict
        if verdict is not None and verdict.finish_reason in _BLOCKS:
            return False
        return is_error_chunk(chunk) or (raw is not None and FINISH_REASONS.get(raw) in _BLOCKS)

    def _read(self, chunk: Body) -> list[StreamEvent]:
        candidate = first_candidate(chunk)
        feedback = chunk.prompt_feedback
        blocked = blocked_ratings(candidate.safety_ratings) if candidate is not None else []
        prompt_blocked = (
            blocked_ratings(feedback.safety_ratings)
            if type(feedback) is Feedback and feedback.block_reason is not None
            else []
        )
        return self._chunk(chunk, candidate, blocked, prompt_blocked, _arguments(candidate))

    def _chunk(
        self,
        chunk: Body,
        candidate: Candidate | None,
        blocked: list[JsonObject],
        prompt_blocked: list[JsonObject],
        arguments: list[str],
    ) -> list[StreamEvent]:
        """The events of a chunk whose ratings and call arguments were decoded already
        (what can fail a strict read comes before any state changes)."""
        if is_error_chunk(chunk):
            result = to_error(chunk, None, self.acc.provider or "gemini")
            return error_events(result, self.acc.verdict, "the Gemini stream reported an error")
        model = chunk.model_version
        if type(model) is str and model:
            self.acc.model = model
        response_id = chunk.response_id
        if type(response_id) is str and response_id:
            self.acc.request_id = response_id
        events: list[StreamEvent] = []
        if type(chunk.usage_metadata) is UsageMetadata:
            events.append(UsageUpdate(usage_of(chunk.usage_metadata)))
        if candidate is not None:
            events.extend(self._parts(candidate, arguments))
        if blocked:
            self._blocked = blocked
        feedback = chunk.prompt_feedback
        if type(feedback) is Feedback and feedback.block_reason is not None:
            block_reason = feedback.block_reason
            found = categories(prompt_blocked, block_reason)
            stop = StopDetails(
                category=found[0] if found else None,
                explanation=feedback.block_reason_message,
                categories=tuple(found) if len(found) > 1 else (),
            )
            self._keep_ratings("prompt", prompt_blocked)
            events.append(Verdict(PROMPT_BLOCKED, block_reason, stop))
            self.done = True
            return events
        raw = candidate.finish_reason if candidate is not None else None
        if raw is not None:
            assert candidate is not None
            events.append(self._verdict(raw, candidate.finish_message))
            self.done = True
            if self._final is None:
                self._final = raw
        return events

    def _parts(self, candidate: Candidate, arguments: list[str]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        calls = iter(arguments)
        content = candidate.content
        for part in (content.parts if content is not None else None) or ():
            signature = part.thought_signature
            if signature:
                self.acc.add_detail(signature_detail(signature))
            call = part.function_call
            if call is not None:
                events.append(
                    ToolCallDelta(
                        self._tool_calls,
                        id=call.id or None,
                        name=call.name or None,
                        arguments=next(calls),
                    )
                )
                self._tool_calls += 1
                continue
            text = part.text
            if text:
                events.append(ReasoningDelta(text) if part.thought is True else TextDelta(text))
        return events

    def _verdict(self, raw: str, explanation: str | None) -> Verdict:
        finish = FINISH_REASONS.get(raw, FinishReason.ERROR)
        if finish in _UNBLOCKED and self._blocked:
            finish = FinishReason.CONTENT_FILTER
        if finish is FinishReason.STOP and self._tool_calls:
            finish = FinishReason.TOOL_CALLS
        if finish is FinishReason.CONTENT_FILTER:
            # The blocked ratings come with the finishing chunk; an earlier chunk's stand in.
            self._keep_ratings("response", self._blocked)
            found = categories(self._blocked, raw)
            blocked = StopDetails(
                category=found[0] if found else None,
                explanation=explanation,
                categories=tuple(found) if len(found) > 1 else (),
            )
            return Verdict(finish, raw, blocked)
        stop = StopDetails(explanation=explanation) if explanation is not None else None
        return Verdict(finish, raw, stop)

    def _keep_ratings(self, scope: str, blocked: list[JsonObject]) -> None:
        if blocked and not self._ratings_kept:
            self._ratings_kept = True
            self.acc.add_detail(ratings_detail(scope, blocked))


def _arguments(candidate: Candidate | None) -> list[str]:
    """The arguments text of each function call of the candidate, in order."""
    content = candidate.content if candidate is not None else None
    parts = (content.parts if content is not None else None) or ()
    return [call_arguments(part) for part in parts if part.function_call is not None]


StreamReader = GenerateContentStreamReader
"""The name every wire format's reader has in `providers._protocol.WireFormat`."""

_UNSET: Any = msgspec.UNSET
