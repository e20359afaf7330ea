"""Ollama's native stream: one chat or generate body per line (NDJSON), read through the
schema's `Body` like a full response."""

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
from refusals.model import ToolCall
from refusals.providers._common import FAST_FAILED, error_events
from refusals.providers._lenient import lenient
from refusals.providers.ollama.errors import is_error, parse_error
from refusals.providers.ollama.response import (
    API,
    finish_of,
    message_of,
    tool_call,
    usage_of,
)
from refusals.providers.ollama.schema import Body, Message, decode_body


class OllamaStreamReader(WireDecoder):
    """Reader of Ollama's native stream.

    Each line's `message.content` (or `response`) and `message.thinking` (or `thinking`) are
    the next text and reasoning; `message.tool_calls` holds whole calls. The line with
    `done: true` carries the verdict (`done_reason`, as in a full body) and the token
    counts, and ends the stream; a stream without one is incomplete (an error). An
    `{"error": "..."}` line, which Ollama sends when the model fails mid-stream, is a
    `StreamError` with the verdict the same error body gives.
    """

    API = API

    def __init__(self, provider: str) -> None:
        super().__init__(provider)
        self._tool_calls = 0

    def read_strict(self, name: str | None, data: str | bytes) -> list[StreamEvent] | None:
        try:
            line = decode_body(data)
            if line.error is not None:
                return None  # maybe an error line: read whole, by `decode`
            message = message_of(line)
            # Decoded here, before any state changes: a call's arguments can fail orjson.
            calls = [tool_call(item) for item in (message.tool_calls or ())] if message else []
        except FAST_FAILED:
            return None
        return self._line(line, message, calls)

    def decode(self, name: str | None, payload: Any) -> list[StreamEvent]:
        if not isinstance(payload, dict):
            return [StreamError("an Ollama stream line is not a JSON object")]
        if is_error(payload):
            result = parse_error(payload, None, self.acc.provider or "ollama")
            return error_events(result, self.acc.verdict, "the Ollama stream reported an error")
        line = lenient(payload, Body)
        message = message_of(line)
        calls = [tool_call(item) for item in (message.tool_calls or ())] if message else []
        return self._line(line, message, calls)

    def _line(
        self, line: Body, message: Message | None, calls: list[ToolCall]
    ) -> list[StreamEvent]:
        if line.model:
            self.acc.model = line.model
        # As in a full body: `/api/chat` lines have a message, `/api/generate` lines not.
        events: list[StreamEvent] = []
        if message is not None:
            thinking, text = message.thinking, message.content
        else:
            response = line.response
            thinking, text = line.thinking, response if type(response) is str else None
        if thinking:
            events.append(ReasoningDelta(thinking))
        if text:
            events.append(TextDelta(text))
        for call in calls:
            events.append(
                ToolCallDelta(
                    self._tool_calls,
                    id=call.id or None,
                    name=call.name or None,
                    arguments=call.arguments,
                )
            )
            self._tool_calls += 1
        if line.done is True:
            events.append(UsageUpdate(usage_of(line)))
            raw = line.done_reason if type(line.done_reason) is str else None
            events.append(Verdict(finish_of(raw, self._tool_calls > 0), raw))
            self.done = True
        return events


StreamReader = OllamaStreamReader
"""The name every wire format's reader has in `providers._protocol.WireFormat`."""
