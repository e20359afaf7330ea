"""The Anthropic Messages wire, as msgspec Structs: the only description of it.

Each Struct declares the keys the mapping reads, and no others (a key not declared is
skipped unread: a search result block of tens of KB costs nothing). Bytes are decoded
strictly; values that break a declared type go through the shared lenient pass
(`providers._lenient`), which gives the same Structs.

Documentation: https://docs.claude.com/en/api/messages (bodies),
https://docs.claude.com/en/docs/build-with-claude/streaming (events),
https://docs.claude.com/en/api/errors (error bodies).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from refusals.providers._common import NO_RAW, Absent, Count, Int, Raw


class ModelRef(msgspec.Struct, gc=False):
    model: str | None = None


class Trigger(msgspec.Struct, gc=False):
    type: str | None = None


class Block(msgspec.Struct, gc=False):
    """A content block: text, thinking, redacted_thinking, tool_use, fallback, and the
    server tools' blocks (read for their type only)."""

    type: str | None = None
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    data: str | None = None
    id: str | None = None
    name: str | None = None
    input: Raw = NO_RAW
    # A fallback block's models: `{"model": ...}` or a bare name.
    from_: str | ModelRef | None = msgspec.field(default=None, name="from")
    to: str | ModelRef | None = None
    trigger: Trigger | None = None


class StopFacts(msgspec.Struct, gc=False):
    """`stop_details`: the provider's reasons for a refusal (an open set of categories)."""

    category: str | None = None
    explanation: str | None = None
    recommended_model: str | None = None
    fallback_credit_token: str | None = None
    fallback_has_prefill_claim: bool | None = None


class MessageUsage(msgspec.Struct, gc=False):
    input_tokens: Count | None = 0
    output_tokens: Count | None = 0
    cache_read_input_tokens: Count | None = 0
    cache_creation_input_tokens: Count | None = 0
    iterations: Raw = NO_RAW


class Message(msgspec.Struct, gc=False):
    """A full Messages response. `object`, `status` and the Bedrock InvokeModel keys are
    read only to tell another format's body from a message."""

    type: str | None = None
    object: str | None = None
    id: str | None = None
    model: str | msgspec.UnsetType | None = msgspec.UNSET
    content: list[Block] | None = None
    stop_reason: str | msgspec.UnsetType | None = msgspec.UNSET
    stop_details: StopFacts | None = None
    usage: MessageUsage | None = None
    status: Raw = NO_RAW
    guardrail_action: Raw = msgspec.field(default=NO_RAW, name="amazon-bedrock-guardrailAction")
    invocation_metrics: Raw = msgspec.field(default=NO_RAW, name="amazon-bedrock-invocationMetrics")


class ErrorDetails(msgspec.Struct, gc=False):
    error_code: str | None = None


class ErrorInfo(msgspec.Struct, gc=False):
    type: str | None = None
    message: str | None = None
    details: ErrorDetails | None = None


class ErrorBody(msgspec.Struct, gc=False):
    """`{"type": "error", "error": {"type", "message"}, "request_id"}`."""

    type: str | None = None
    error: ErrorInfo | None = None
    message: str | None = None
    request_id: str | None = None


class Delta(msgspec.Struct, gc=False):
    """A block delta (text, thinking, signature, input JSON) or `message_delta`'s delta
    (the verdict: `stop_reason`, any JSON value, and `stop_details`)."""

    type: str | None = None
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    partial_json: str | None = None
    stop_reason: Raw = NO_RAW
    stop_details: StopFacts | None = None


class DeltaUsage(msgspec.Struct, gc=False):
    """`message_delta` counts: cumulative, so each one given (zero too) replaces."""

    input_tokens: Int | None = None
    output_tokens: Int | None = None
    cache_read_input_tokens: Int | None = None
    cache_creation_input_tokens: Int | None = None
    iterations: Raw = NO_RAW


class StartMessage(msgspec.Struct, gc=False):
    id: str | None = None
    model: str | None = None
    usage: MessageUsage | None = None


class Event(msgspec.Struct, gc=False):
    """One stream event of any type; `type` (or the SSE name) says which fields matter."""

    type: str | None = None
    # Null and absent mean the current block.
    index: Int | None = None
    delta: Delta | None = None
    content_block: Block | None = None
    # `message_start`'s message, or an error event's top-level message text.
    message: StartMessage | str | None = None
    usage: DeltaUsage | None = None
    error: ErrorInfo | None = None
    request_id: str | None = None


decode_message = msgspec.json.Decoder(Message).decode
decode_error = msgspec.json.Decoder(ErrorBody).decode
decode_event = msgspec.json.Decoder(Event).decode


# --- plain answers -----------------------------------------------------------------------
# For counting logs, where most bodies are plain answers: Structs that decode a Messages
# body only when `plain_message` finds it one. Every key `Message` declares is declared
# here as strictly or more (stop details, usage iterations, fallback blocks and the
# Bedrock markers are `Absent` or left out of the types), so a body these decode is one
# `Message` decodes and finds plain but for what `plain_answer` still checks (another
# format's `object`, a tool call's input). Any other body fails the decode and is read
# the usual way.

PlainStop = Literal[
    "end_turn", "stop_sequence", "max_tokens", "model_context_window_exceeded", "tool_use"
]
"""The `stop_reason` values that map to a plain finish (`response.STOP_REASONS`)."""


class PlainBlock(msgspec.Struct, gc=False):
    """A content block of a plain answer (a fallback block is not one)."""

    type: Literal["text", "thinking", "redacted_thinking", "tool_use"] | None = None
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    data: str | None = None
    id: str | None = None
    name: str | None = None
    input: Raw = NO_RAW
    from_: Absent = msgspec.field(default=0, name="from")
    to: Absent = 0
    trigger: Absent = 0


class PlainUsage(msgspec.Struct, gc=False):
    input_tokens: Count | None = 0
    cache_creation_input_tokens: Count | None = 0
    cache_read_input_tokens: Count | None = 0
    output_tokens: Count | None = 0
    iterations: Absent = 0


class PlainMessage(msgspec.Struct, gc=False, kw_only=True):
    """A Messages body that is a plain answer. Its fields (and `PlainUsage`'s) are in the
    API's key order: msgspec looks each key up from the field after the last matched."""

    id: str | None = None
    type: Literal["message"]
    model: str | msgspec.UnsetType | None = msgspec.UNSET
    content: list[PlainBlock] | None = None
    stop_reason: PlainStop
    stop_details: None = None
    object: str | None = None
    usage: PlainUsage | None = None
    status: Raw = NO_RAW
    guardrail_action: Absent = msgspec.field(default=0, name="amazon-bedrock-guardrailAction")
    invocation_metrics: Absent = msgspec.field(default=0, name="amazon-bedrock-invocationMetrics")
