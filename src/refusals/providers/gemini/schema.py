"""The Gemini / Vertex AI generateContent wire, as msgspec Structs: the only description
of it. A stream chunk is a response body, so one Struct reads both.

Each Struct declares the keys the mapping reads (a rating's scores stay raw until a filter
blocked), in the order both services write them (alphabetical: msgspec looks for the next
declared field first). Bytes are decoded strictly; anything else goes through the shared
lenient pass (`providers._lenient`) into the same Structs.

Documentation: https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse,
https://cloud.google.com/apis/design/errors (the `google.rpc.Status` error body).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from refusals.providers._common import NO_RAW, Absent, Count, Int, Raw


class FunctionCall(msgspec.Struct, gc=False):
    id: str | None = None
    name: str | None = None
    args: Raw = NO_RAW


class Part(msgspec.Struct, rename="camel", gc=False):
    function_call: FunctionCall | None = None
    text: str | None = None
    thought: bool | None = None
    thought_signature: str | None = None


class Content(msgspec.Struct, gc=False):
    parts: list[Part] | None = None


class Rating(msgspec.Struct, rename="camel", gc=False):
    """A safety rating; its scores are kept as the wire gives them (any JSON type)."""

    blocked: bool | None = None
    category: str | None = None
    probability: Raw = NO_RAW
    probability_score: Raw = NO_RAW
    severity: Raw = NO_RAW
    severity_score: Raw = NO_RAW


class Candidate(msgspec.Struct, rename="camel", gc=False):
    content: Content | None = None
    finish_message: str | None = None
    finish_reason: str | None = None
    # Candidate 0 is the response; a null or non-integer index reads as 0.
    index: Int | None = 0
    # Decoded only when a filter may have blocked (see `response.blocked_ratings`).
    safety_ratings: Raw = NO_RAW


class Feedback(msgspec.Struct, rename="camel", gc=False):
    block_reason: str | None = None
    block_reason_message: str | None = None
    safety_ratings: Raw = NO_RAW


class UsageMetadata(msgspec.Struct, rename="camel", gc=False):
    prompt_token_count: Count | None = 0
    candidates_token_count: Count | None = 0
    thoughts_token_count: Count | None = 0
    cached_content_token_count: Count | None = 0


class ErrorDetail(msgspec.Struct, gc=False):
    reason: str | None = None


class ErrorInfo(msgspec.Struct, gc=False):
    """`google.rpc.Status`: `{"code": 429, "message", "status": "RESOURCE_EXHAUSTED",
    "details": [{"@type", "reason"}]}`."""

    code: Count | None = 0
    details: list[ErrorDetail] | None = None
    message: str | None = None
    status: str | None = None


class Body(msgspec.Struct, rename="camel", gc=False):
    """A generateContent response, a stream chunk, or an error body (`error`)."""

    # UNSET where detection asks whether the key is there at all (null included).
    candidates: list[Candidate] | msgspec.UnsetType | None = msgspec.UNSET
    create_time: Raw = NO_RAW
    error: ErrorInfo | str | None = None
    message: str | None = None
    model_version: str | msgspec.UnsetType | None = msgspec.UNSET
    prompt_feedback: Feedback | msgspec.UnsetType | None = msgspec.UNSET
    response_id: str | msgspec.UnsetType | None = msgspec.UNSET
    usage_metadata: UsageMetadata | msgspec.UnsetType | None = msgspec.UNSET
    # Keys that point detection at another format (`_hint`, `detect_provider`, Bedrock's
    # InvokeModel markers): a body without a provider name that has one is not read here.
    object: Raw = NO_RAW
    type: Raw = NO_RAW
    choices: Raw = NO_RAW
    output: Raw = NO_RAW
    guardrail_action: Raw = msgspec.field(default=NO_RAW, name="amazon-bedrock-guardrailAction")
    invocation_metrics: Raw = msgspec.field(default=NO_RAW, name="amazon-bedrock-invocationMetrics")


decode_body = msgspec.json.Decoder(Body).decode
decode_ratings = msgspec.json.Decoder(list[Rating] | None).decode


# --- plain answers -----------------------------------------------------------------------
# For counting logs, where most bodies are plain answers: Structs that decode a body only
# when `plain_body` (detection without a provider) could find it one. Every key `Body`
# declares is declared here as strictly or more (a blocked prompt, a finish message,
# another candidate first, an error and other formats' keys are `Absent` or narrowed), so
# a body these decode is one `Body` decodes; `plain_answer` checks what is left (the keys
# detection needs, ratings marked blocked, function calls). Any other body fails the
# decode and is read the usual way.


class PlainCandidate(msgspec.Struct, rename="camel", gc=False, kw_only=True):
    content: Content | None = None
    finish_reason: Literal["STOP", "MAX_TOKENS"]
    finish_message: None = None
    index: Literal[0] | None = 0
    safety_ratings: Raw = NO_RAW


class PlainFeedback(msgspec.Struct, rename="camel", gc=False):
    block_reason: None = None
    block_reason_message: str | None = None
    safety_ratings: Raw = NO_RAW


class PlainBody(msgspec.Struct, rename="camel", gc=False):
    """A generateContent body whose first candidate may be a plain answer. Fields in the
    API's key order, as in `PlainCandidate`: msgspec looks each key up from the field
    after the last one matched."""

    candidates: Annotated[list[PlainCandidate], msgspec.Meta(min_length=1, max_length=1)]
    prompt_feedback: PlainFeedback | msgspec.UnsetType | None = msgspec.UNSET
    usage_metadata: UsageMetadata | msgspec.UnsetType | None = msgspec.UNSET
    model_version: str | msgspec.UnsetType | None = msgspec.UNSET
    create_time: Raw = NO_RAW
    response_id: str | msgspec.UnsetType | None = msgspec.UNSET
    error: None = None
    message: str | None = None
    object: Absent = 0
    type: Absent = 0
    choices: Absent = 0
    output: Absent = 0
    guardrail_action: Absent = msgspec.field(default=0, name="amazon-bedrock-guardrailAction")
    invocation_metrics: Absent = msgspec.field(default=0, name="amazon-bedrock-invocationMetrics")
