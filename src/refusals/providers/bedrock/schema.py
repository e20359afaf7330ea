"""The Bedrock Converse wire, as msgspec Structs: the only description of Converse bodies
and error bodies (the guardrail trace stays `Raw`, read by `guardrail`). Bytes are decoded
strictly; anything else goes through the shared lenient pass into the same Structs.
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html"""

from __future__ import annotations

import msgspec

from refusals.providers._common import (
    FAST_FAILED,
    NO_RAW,
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
