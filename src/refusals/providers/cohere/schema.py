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


class Chat(msgspec.Struct, gc=False):
    """A v2 (`message`) or v1 (`text`) chat body; v1's `stream-end` carries one whole."""

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
    # Keys that make detection look elsewhere, for a body without a provider name: the
    # ones earlier formats claim a body by (`_CLAIMED_EARLIER` in providers/__init__.py),
    # `choices`, and the ones `bedrock.is_invoke_body` reads.
    type: Raw = NO_RAW
    object: Raw = NO_RAW
    output: Raw = NO_RAW
    candidates: Raw = NO_RAW
    promptFeedback: Raw = NO_RAW
    prompt_feedback: Raw = NO_RAW
    usageMetadata: Raw = NO_RAW
    usage_metadata: Raw = NO_RAW
    stopReason: Raw = NO_RAW
    aws_type: Raw = msgspec.field(default=NO_RAW, name="__type")
    aws_error: Raw = msgspec.field(default=NO_RAW, name="Error")
    choices: Raw = NO_RAW
    guardrail_action: Raw = msgspec.field(default=NO_RAW, name="amazon-bedrock-guardrailAction")
    invocation_metrics: Raw = msgspec.field(default=NO_RAW, name="amazon-bedrock-invocationMetrics")
    results: Raw = NO_RAW
    generation: Raw = NO_RAW
    outputs: Raw = NO_RAW

    def claimed_elsewhere(self) -> bool:
        """Whether a key of another format is there (detection then looks elsewhere)."""
        return bool(
            self.type or self.object or self.output or self.error or self.candidates
            or self.promptFeedback or self.prompt_feedback or self.usageMetadata
            or self.usage_metadata or self.stopReason or self.aws_type or self.aws_error
            or self.choices or self.guardrail_action or self.invocation_metrics
            or self.results or self.generation or self.outputs
        )  # fmt: skip


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
