"""Amazon Bedrock Converse API: full responses, ConverseStream streams and HTTP error bodies.

Documentation:
- Converse: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html
- ConverseStream: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html
- Guardrail trace: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_GuardrailTraceAssessment.html
- Guardrail assessment: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_GuardrailAssessment.html
- Guardrails with Converse: https://docs.aws.amazon.com/bedrock/latest/userguide/guardrails-use-converse-api.html

A guardrail block is an HTTP 200 response with `stopReason: "guardrail_intervened"`
(`content_filtered` when the model's own filter stopped it). With `trace: "enabled"` the
response also says why: `trace.guardrail.inputAssessment` (guardrail id → assessment) and
`outputAssessments` (guardrail id → list of assessments), whose policies mark each match
with `action: "BLOCKED"` (or `NONE`, `ANONYMIZED`). The blocked matches become the
categories of a `stop_details` reasoning detail and `actionReason` its explanation; the
notice itself is built only by `refusals.refusal`.

Error bodies are `{"message": "..."}` with the exception name in the `x-amzn-ErrorType`
header; an `__type` or `type` field in the body, or a botocore `{"Error": {"Code": ...}}`
dump, names it too. A bare `{"message": ...}` fits many APIs, so shape detection claims
only bodies that name a Bedrock exception.

A ConverseStream stream (`ConverseStreamReader`) is AWS event-stream framing whose `:event-type`
header names each event (`messageStart`, `contentBlockStart`, `contentBlockDelta`,
`contentBlockStop`, `messageStop`, `metadata`); modelled exceptions arrive as
`:message-type: exception` messages named by `:exception-type`. Recordings of one decoded
event per line (`{"messageStop": {...}}`) name the event by their single key. The verdict
comes with `messageStop`; the guardrail trace that explains it comes in the `metadata`
event after it.

The folder holds the format: `schema` (the Converse and error Structs), `response` (the
one mapping of a Converse body), `guardrail` (the trace), `errors`, `invoke` (InvokeModel
bodies), `stream`, and `request` (the Converse body and endpoint).
"""

from __future__ import annotations

from refusals.providers.bedrock.errors import (
    ERROR_TYPES,
    MAX_ERROR_MESSAGE_CHARS,
    is_error,
    parse_error,
    parse_error_fast,
)
from refusals.providers.bedrock.guardrail import (
    ANONYMIZED_ACTION,
)
from refusals.providers.bedrock.invoke import (
    INVOKE_API,
    NATIVE_STOP_REASONS,
    is_invoke_body,
    parse_invoke,
)
from refusals.providers.bedrock.response import (
    STOP_REASONS,
    body_response,
    detect_provider,
    looks_like,
    outcome_key,
    parse_fast,
    parse_plain,
    parse_response,
    plain_answer,
    plain_body,
)
from refusals.providers.bedrock.schema import (
    API,
    GUARDRAIL_ACTION,
    GUARDRAIL_TRACE,
    INVOCATION_METRICS,
)
from refusals.providers.bedrock.stream import (
    STREAM_EVENTS,
    ConverseStreamReader,
    StreamReader,
    detect_stream,
)

__all__ = [
    "ANONYMIZED_ACTION",
    "API",
    "ERROR_TYPES",
    "GUARDRAIL_ACTION",
    "GUARDRAIL_TRACE",
    "INVOCATION_METRICS",
    "INVOKE_API",
    "MAX_ERROR_MESSAGE_CHARS",
    "NATIVE_STOP_REASONS",
    "STOP_REASONS",
    "STREAM_EVENTS",
    "ConverseStreamReader",
    "StreamReader",
    "body_response",
    "detect_provider",
    "detect_stream",
    "is_error",
    "is_invoke_body",
    "looks_like",
    "outcome_key",
    "parse_error",
    "parse_error_fast",
    "parse_fast",
    "parse_invoke",
    "parse_plain",
    "parse_response",
    "plain_answer",
    "plain_body",
]
