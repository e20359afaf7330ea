"""The Cohere Chat wire, v1 and v2, as msgspec Structs: the only description of it.

Bytes are decoded strictly; anything else goes through the shared lenient pass
(`providers._lenient`) into the same Structs. Documentation:
https://docs.cohere.com/v2/reference/chat, https://docs.cohere.com/v1/reference/chat,
https://docs.cohere.com/v2/docs/streaming, https://docs.cohere.com/reference/chat-stream-v1
"""

from __future__ import annotations

from typing import Any

import msgspec

from refusals.providers._common import NO_RAW, Count, Int, Raw
from refusals.providers._detection import ElsewhereKeys


class Tokens(msgspec.Struct, gc=False):
    input_tokens: Count | None = 0
    output_tokens: Count | None = 0


class Usage(msgspec.Struct, gc=False):
    """v2 `usage` and v1 `meta`: `tokens` counts what the model processed, `billed_units`
    what was billed; either is read only when it is a non-empty object."""

    billed_units: Raw = NO_RAW
    tokens: Raw = NO_RAW
    cached_tokens: Count | None = 0


class Part(msgspec.Struct, gc=False):
    # Any JSON value: a part with no type (or null) is text, one of another type is neither.
    type: Any = None
    text: str | None = None
    thinking: str | None = None


class Function(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: Raw = NO_RAW


class CallV2(msgspec.Struct, gc=False):
    id: str | None = None
    function: Function | None = None


class CallV1(msgspec.Struct, gc=False):
    name: str | None = None
    parameters: Raw = NO_RAW


class Message(msgspec.Struct, gc=False):
    role: str | None = None
    content: str | list[Part] | None = None
    tool_plan: str | None = None
    tool_calls: list[CallV2] | None = None


class Chat(ElsewhereKeys, gc=False):
    """A v2 (`message`) or v1 (`text`) chat body; v1's `stream-end` carries one whole.
    The keys of other formats (`ElsewhereKeys`) make detection look elsewhere."""

    id: str | None = None
    response_id: str | None = None
    text: str | msgspec.UnsetType | None = msgspec.UNSET
    generation_id: str | msgspec.UnsetType | None = msgspec.UNSET
    # A v2 body's message, or an error body's text.
    message: Message | str | None = None
    finish_reason: str | msgspec.UnsetType | None = msgspec.UNSET
    model: str | None = None
    # Raw: read only when a non-empty object (`{}` adds no usage to a stream).
    meta: Raw = NO_RAW
    usage: Raw = NO_RAW
    tool_calls: list[CallV1] | None = None
    error: Raw = NO_RAW

    def claimed_elsewhere(self) -> bool:
        """Whether a key of another format is there (detection then looks elsewhere),
        `error` included (Gemini claims a body by it before Cohere is asked)."""
        return bool(self.error) or ElsewhereKeys.claimed_elsewhere(self)


class DeltaContent(msgspec.Struct, gc=False):
    text: str | None = None
    thinking: str | None = None


class StreamFunction(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | None = None


class DeltaCall(msgspec.Struct, gc=False):
    id: str | None = None
    function: StreamFunction | None = None


class DeltaMessage(msgspec.Struct, gc=False):
    content: DeltaContent | None = None
    tool_plan: str | None = None
    tool_calls: DeltaCall | None = None


class Delta(msgspec.Struct, gc=False):
    message: DeltaMessage | None = None
    finish_reason: str | None = None
    usage: Raw = NO_RAW
    error: str | None = None


class ToolCallDelta(msgspec.Struct, gc=False):
    """v1 `tool_call_delta`."""

    name: str | None = None
    parameters: str | None = None
    index: Int | None = None


class Event(msgspec.Struct, gc=False):
    """A v2 event (`type`), a v1 event (`event_type`), or an error body (`message`)."""

    type: str | None = None
    event_type: str | None = None
    id: str | None = None
    index: Int | None = None
    delta: Delta | None = None
    generation_id: str | None = None
    text: str | None = None
    tool_call_delta: ToolCallDelta | None = None
    tool_calls: list[CallV1] | None = None
    response: Chat | None = None
    finish_reason: str | None = None


decode_chat = msgspec.json.Decoder(Chat).decode
decode_message = msgspec.json.Decoder(Message).decode
decode_tokens = msgspec.json.Decoder(Tokens).decode
decode_usage = msgspec.json.Decoder(Usage).decode
decode_event = msgspec.json.Decoder(Event).decode
