"""The Bedrock Converse wire, as msgspec Structs: the only description of Converse bodies
and error bodies (the guardrail trace stays `Raw`, read by `guardrail`). Bytes are decoded
strictly; anything else goes through the shared lenient pass into the same Structs.
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html"""

from __future__ import annotations

from typing import Literal

import msgspec

from refusals.providers._common import (
    FAST_FAILED,
    NO_RAW,
    Absent,
    Count,
    Int,
    Raw,
)

API = "converse"

# msgspec encodes a text payload to UTF-8 before reading it: a lone surrogate in it fails
# there, before any JSON is read (the lenient path reads it as U+FFFD).
DECLINED = (*FAST_FAILED, UnicodeEncodeError)

GUARDRAIL_ACTION = "amazon-bedrock-guardrailAction"
"""Key of InvokeModel's guardrail marker, `INTERVENED` or `NONE`, beside the model's body."""
GUARDRAIL_TRACE = "amazon-bedrock-trace"
INVOCATION_METRICS = "amazon-bedrock-invocationMetrics"
"""Key of the usage counts in the last chunk of an InvokeModelWithResponseStream stream."""


class ReasoningText(msgspec.Struct, gc=False):
    text: str | None = None
    signature: str | None = None


class ReasoningContent(msgspec.Struct, rename="camel", gc=False):
    # Both keys count by presence alone, null included.
    reasoning_text: ReasoningText | msgspec.UnsetType | None = msgspec.UNSET
    # Raw: text on the wire, bytes in a boto3 response (base64-encoded for the detail).
    redacted_content: Raw = NO_RAW


class ToolUse(msgspec.Struct, rename="camel", gc=False):
    tool_use_id: str | None = None
    name: str | None = None
    input: Raw = NO_RAW


class ContentBlock(msgspec.Struct, rename="camel", gc=False):
    text: str | None = None
    citations_content: Raw = NO_RAW
    tool_use: ToolUse | None = None
    reasoning_content: ReasoningContent | None = None


class ConverseMessage(msgspec.Struct, gc=False):
    content: list[ContentBlock] | None = None


class ConverseOutput(msgspec.Struct, gc=False):
    message: ConverseMessage | None = None


class ConverseUsage(msgspec.Struct, rename="camel", gc=False):
    # In the order Bedrock writes them (alphabetical): msgspec tries the next field first.
    cache_read_input_tokens: Count | None = 0
    cache_write_input_tokens: Count | None = 0
    input_tokens: Count | None = 0
    output_tokens: Count | None = 0


class ResponseMetadata(msgspec.Struct, rename="pascal", gc=False):
    request_id: str | None = None


class Converse(msgspec.Struct, rename="camel", gc=False):
    """A Converse response, the only description of its wire (the guardrail trace is
    read by `guardrail_outcome`)."""

    output: ConverseOutput | None = None
    stop_reason: str | msgspec.UnsetType | None = msgspec.UNSET
    usage: ConverseUsage | None = None
    response_metadata: ResponseMetadata | None = msgspec.field(
        default=None, name="ResponseMetadata"
    )
    trace: Raw = NO_RAW
    # Read only to decline what detection would route elsewhere: another format's hints,
    # Gemini's keys (asked before Bedrock's), and the InvokeModel marker keys.
    object: str | None = None
    type: str | None = None
    candidates: Raw = NO_RAW
    prompt_feedback: Raw = NO_RAW
    guardrail_action: Raw = msgspec.field(default=NO_RAW, name=GUARDRAIL_ACTION)
    invocation_metrics: Raw = msgspec.field(default=NO_RAW, name=INVOCATION_METRICS)


decode_converse = msgspec.json.Decoder(Converse).decode


# --- plain answers -----------------------------------------------------------------------
# For counting logs, where most bodies are plain answers: Structs that decode a Converse
# body only when `plain_body` (detection without a provider) could find it one. Every key
# `Converse` declares is declared here as strictly or more (a trace, citations, redacted
# reasoning, a non-plain stopReason, Gemini's keys and the InvokeModel markers are
# `Absent` or narrowed), so a body these decode is one `Converse` decodes; `plain_answer`
# checks what is left (other formats' `object` and `type`, tool inputs).


class PlainReasoning(msgspec.Struct, rename="camel", gc=False):
    reasoning_text: ReasoningText | msgspec.UnsetType | None = msgspec.UNSET
    redacted_content: Absent = 0


class PlainBlock(msgspec.Struct, rename="camel", gc=False):
    text: str | None = None
    citations_content: Absent = 0
    tool_use: ToolUse | None = None
    reasoning_content: PlainReasoning | None = None


class PlainMessage(msgspec.Struct, gc=False):
    content: list[PlainBlock] | None = None


class PlainOutput(msgspec.Struct, gc=False):
    message: PlainMessage | None = None


PlainStop = Literal[
    "end_turn", "stop_sequence", "max_tokens", "model_context_window_exceeded", "tool_use"
]
"""The `stopReason` values that map to a plain finish (`response.STOP_REASONS`)."""


class PlainConverse(msgspec.Struct, rename="camel", gc=False):
    """A Converse body that is a plain answer."""

    output: PlainOutput
    stop_reason: PlainStop
    usage: ConverseUsage | None = None
    response_metadata: ResponseMetadata | None = msgspec.field(
        default=None, name="ResponseMetadata"
    )
    trace: Absent = 0
    object: str | None = None
    type: str | None = None
    candidates: Absent = 0
    prompt_feedback: Absent = 0
    guardrail_action: Absent = msgspec.field(default=0, name=GUARDRAIL_ACTION)
    invocation_metrics: Absent = msgspec.field(default=0, name=INVOCATION_METRICS)


class ErrorDetails(msgspec.Struct, rename="pascal", gc=False):
    """boto3's `Error`: `{"Code", "Message"}`."""

    code: str | None = None
    message: str | None = None


class ErrorMetadata(msgspec.Struct, rename="pascal", gc=False):
    request_id: str | None = None
    http_status_code: Int | None = msgspec.field(default=None, name="HTTPStatusCode")


class ErrorBody(msgspec.Struct, gc=False):
    """An error body: `{"message"}` with `__type` (or the x-amzn-ErrorType header), a
    `type`, or boto3's `{"Error": {...}, "ResponseMetadata": {...}}`."""

    aws_type: str | None = msgspec.field(default=None, name="__type")
    type: str | None = None
    message: str | None = None
    message_upper: str | None = msgspec.field(default=None, name="Message")
    error: ErrorDetails | None = msgspec.field(default=None, name="Error")
    response_metadata: ErrorMetadata | None = msgspec.field(default=None, name="ResponseMetadata")


decode_error = msgspec.json.Decoder(ErrorBody).decode


# --- stream events ---------------------------------------------------------------------
#
# A ConverseStream event's payload (named by its `:event-type` header), or a recorded
# event `{"<eventType>": {...}}` (`Wrapped`). Read as `stream.ConverseStreamReader` reads
# them: an index that is not an integer is block 0, a delta part that is not an object is
# absent.


class ToolStart(msgspec.Struct, rename="camel", gc=False):
    tool_use_id: str | None = None
    name: str | None = None


class Start(msgspec.Struct, rename="camel", gc=False):
    tool_use: ToolStart | None = None


class BlockStart(msgspec.Struct, rename="camel", gc=False):
    content_block_index: Int | None = None
    start: Start | None = None


class ToolDelta(msgspec.Struct, gc=False):
    input: str | None = None


class ReasoningDelta(msgspec.Struct, rename="camel", gc=False):
    text: str | None = None
    signature: str | None = None
    # Raw: text on the wire, bytes in boto3's decoded events (base64-encoded for the detail).
    redacted_content: Raw = NO_RAW


class Delta(msgspec.Struct, rename="camel", gc=False):
    text: str | None = None
    tool_use: ToolDelta | None = None
    reasoning_content: ReasoningDelta | None = None


class BlockDelta(msgspec.Struct, rename="camel", gc=False):
    content_block_index: Int | None = None
    delta: Delta | None = None


class BlockStop(msgspec.Struct, rename="camel", gc=False):
    content_block_index: Int | None = None


class MessageStop(msgspec.Struct, rename="camel", gc=False):
    stop_reason: str | None = None


class StreamMetadata(msgspec.Struct, gc=False):
    usage: ConverseUsage | None = None
    trace: Raw = NO_RAW  # the guardrail trace, read by `guardrail`


class Chunk(msgspec.Struct, gc=False):
    """An InvokeModelWithResponseStream chunk: the model's own event, base64 `bytes` (raw
    bytes in boto3's decoded events)."""

    bytes: Raw = NO_RAW


class Opaque(msgspec.Struct, gc=False):
    """An event read for nothing but being an object (`messageStart`, later event types)."""


class Wrapped(msgspec.Struct, rename="camel", forbid_unknown_fields=True, gc=False):
    """A recorded event, `{"<eventType>": {...}}`, with exactly the keys declared here; any
    other key (an exception's name) is left to the decoded value, whose key order decides."""

    message_start: Raw = NO_RAW
    content_block_start: Raw = NO_RAW
    content_block_delta: Raw = NO_RAW
    content_block_stop: Raw = NO_RAW
    message_stop: Raw = NO_RAW
    metadata: Raw = NO_RAW
    chunk: Raw = NO_RAW


STREAM_EVENT_TYPES: dict[str, type[msgspec.Struct]] = {
    "messageStart": Opaque,
    "contentBlockStart": BlockStart,
    "contentBlockDelta": BlockDelta,
    "contentBlockStop": BlockStop,
    "messageStop": MessageStop,
    "metadata": StreamMetadata,
    "chunk": Chunk,
}
"""ConverseStream event types (and InvokeModelWithResponseStream's `chunk`) → Struct."""

STREAM_DECODERS = {
    name: msgspec.json.Decoder(kind).decode for name, kind in STREAM_EVENT_TYPES.items()
}
decode_opaque = msgspec.json.Decoder(Opaque).decode
decode_wrapped = msgspec.json.Decoder(Wrapped).decode


class NativeOutput(msgspec.Struct, gc=False):
    # UNSET: an output counts only when its `text` key is there.
    text: str | msgspec.UnsetType | None = msgspec.UNSET
    stop_reason: str | None = None


class InvokeChunk(msgspec.Struct, rename="camel", gc=False):
    """The JSON inside an InvokeModel stream chunk: a native model's (Titan, Llama,
    Mistral) event, with Bedrock's metrics and guardrail marker in the last one."""

    output_text: str | msgspec.UnsetType | None = msgspec.UNSET  # Titan
    completion_reason: str | None = None
    generation: str | msgspec.UnsetType | None = msgspec.UNSET  # Llama
    stop_reason: str | None = msgspec.field(default=None, name="stop_reason")
    outputs: list[NativeOutput] | None = None  # Mistral
    metrics: InvokeMetrics | None = msgspec.field(default=None, name=INVOCATION_METRICS)
    guardrail_action: str | None = msgspec.field(default=None, name=GUARDRAIL_ACTION)
    guardrail_trace: Raw = msgspec.field(default=NO_RAW, name=GUARDRAIL_TRACE)


class InvokeMetrics(msgspec.Struct, rename="camel", gc=False):
    input_token_count: Count | None = 0
    output_token_count: Count | None = 0


decode_invoke_chunk = msgspec.json.Decoder(InvokeChunk).decode


class TitanResult(msgspec.Struct, rename="camel", gc=False):
    output_text: str | None = None
    completion_reason: str | None = None
    token_count: Count | None = 0


class InvokeBody(msgspec.Struct, rename="camel", gc=False):
    """An InvokeModel body of a native model (Titan, Llama, Mistral), with Bedrock's
    metrics and guardrail marker beside it. Which model it is, detection says
    (`invoke.is_invoke_body`); an Anthropic body is a Messages body."""

    results: list[TitanResult] | None = None  # Titan
    input_text_token_count: Count | None = 0
    generation: str | None = None  # Llama
    stop_reason: str | None = msgspec.field(default=None, name="stop_reason")
    generation_token_count: Count | None = msgspec.field(default=0, name="generation_token_count")
    prompt_token_count: Count | None = msgspec.field(default=0, name="prompt_token_count")
    outputs: list[NativeOutput] | None = None  # Mistral
    metrics: InvokeMetrics | None = msgspec.field(default=None, name=INVOCATION_METRICS)
    guardrail_action: str | None = msgspec.field(default=None, name=GUARDRAIL_ACTION)
    guardrail_trace: Raw = msgspec.field(default=NO_RAW, name=GUARDRAIL_TRACE)
