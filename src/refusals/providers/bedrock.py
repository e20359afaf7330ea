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

A ConverseStream stream (`StreamDecoder`) is AWS event-stream framing whose `:event-type`
header names each event (`messageStart`, `contentBlockStart`, `contentBlockDelta`,
`contentBlockStop`, `messageStop`, `metadata`); modelled exceptions arrive as
`:message-type: exception` messages named by `:exception-type`. Recordings of one decoded
event per line (`{"messageStop": {...}}`) name the event by their single key. The verdict
comes with `messageStop`; the guardrail trace that explains it comes in the `metadata`
event after it.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import Any

import msgspec
import orjson

from refusals.model import (
    Detail,
    ErrorKind,
    FinishReason,
    LLMResponse,
    ProviderError,
    StopDetails,
    ToolCall,
    Usage,
    decode_detail,
    detail_type,
    loads_lenient,
    new_response,
    new_usage,
)
from refusals.providers import anthropic  # Claude on Bedrock speaks Anthropic's format
from refusals.providers._common import (
    FAST_FAILED,
    INTERRUPTED,
    NO_RAW,
    Count,
    Int,
    JsonObject,
    NormalizeError,
    Raw,
    arr,
    bounded_message,
    error_events,
    error_response,
    integer,
    interrupted,
    json_text,
    obj,
    page_text,
    require_object,
    says_blocked,
    status_error_kind,
    string,
    typed_detail,
)
from refusals.providers._common import (
    FINAL as _FINAL,
)
from refusals.providers._lenient import lenient, raw_value
from refusals.stream import (
    ReasoningDelta,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    UsageUpdate,
    Verdict,
    WireDecoder,
)

API = "converse"

STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALLS,
    "guardrail_intervened": FinishReason.CONTENT_FILTER,
    "content_filtered": FinishReason.CONTENT_FILTER,
    "malformed_model_output": FinishReason.ERROR,
    "malformed_tool_use": FinishReason.ERROR,
}
"""Raw `stopReason` → FinishReason. Anything not listed (or absent) is ERROR, never STOP."""

ERROR_TYPES: dict[str, ErrorKind] = {
    "ThrottlingException": ErrorKind.TRANSIENT,  # 429
    "ServiceUnavailableException": ErrorKind.TRANSIENT,  # 503
    "ModelNotReadyException": ErrorKind.TRANSIENT,  # 429
    "ModelTimeoutException": ErrorKind.TRANSIENT,  # 408
    "ModelErrorException": ErrorKind.TRANSIENT,  # 424
    "ModelStreamErrorException": ErrorKind.TRANSIENT,  # 424
    "InternalServerException": ErrorKind.TRANSIENT,  # 500
    # "You can resubmit your request later" (400), says the Converse reference.
    "ServiceQuotaExceededException": ErrorKind.TRANSIENT,
    "AccessDeniedException": ErrorKind.AUTH,  # 403
    "UnrecognizedClientException": ErrorKind.AUTH,  # 403
    "InvalidSignatureException": ErrorKind.AUTH,  # 403
    "IncompleteSignatureException": ErrorKind.AUTH,  # 400
    "MissingAuthenticationTokenException": ErrorKind.AUTH,  # 403
    "ExpiredTokenException": ErrorKind.AUTH,  # 400/403
    "ValidationException": ErrorKind.INVALID_REQUEST,  # 400, unless a filter blocked it
    "ResourceNotFoundException": ErrorKind.INVALID_REQUEST,  # 404
}
"""Exception name (from `__type`, `type` or `Error.Code`) → ErrorKind; unknown names fall
back to the HTTP status. Names are matched without regard to case (event streams spell them
`throttlingException`)."""

_ERROR_NAMES = {name.lower(): name for name in ERROR_TYPES}

MAX_ERROR_MESSAGE_CHARS = 500
"""Upper bound, in code points, on an error message copied from a provider body."""

_BLOCKED = "BLOCKED"
_ANONYMIZED = "ANONYMIZED"

_THROTTLED = re.compile(r"too many requests|rate exceeded|throttl", re.IGNORECASE)

# Findings of an automated reasoning check that contradict the policy. The check reports
# findings but no action of its own, so they only name a block that the stop reason or
# another policy reported; they never turn a response into a block.
_REASONING_VIOLATIONS = ("invalid", "impossible")


def detect_provider(body: JsonObject) -> str | None:
    """`"bedrock"` for a Converse response or an error body naming a Bedrock exception."""
    if isinstance(body.get("output"), dict) and "stopReason" in body:
        return "bedrock"
    if _known_exception(body.get("__type")) is not None:
        return "bedrock"
    if _known_exception(obj(body.get("Error")).get("Code")) is not None:
        return "bedrock"
    return None


def looks_like(body: JsonObject) -> bool:
    return detect_provider(body) is not None


def is_error(body: JsonObject) -> bool:
    """The body is an error body (`{"message": ...}` and kin), even without a status."""
    if "output" in body or "stopReason" in body:
        return False
    return (
        isinstance(body.get("__type"), str)
        or isinstance(body.get("Error"), dict)
        or isinstance(body.get("message"), str)
        or isinstance(body.get("Message"), str)
    )


def parse_response(body: JsonObject, provider: str) -> LLMResponse:
    """A full (non-streaming) Converse response as an `LLMResponse`."""
    body = require_object(body, "a Bedrock Converse response")
    if "output" not in body and "stopReason" not in body:
        raise NormalizeError(
            "expected a Bedrock Converse response (an object with output and stopReason)"
        )

    return _to_response(lenient(body, _Converse), provider)


def _cited_texts(citations: Any) -> list[str]:
    """The texts of a `citationsContent` block's parts: cited text is content too."""
    texts = []
    for part in arr(obj(citations).get("content")):
        cited = string(obj(part).get("text"))
        if cited:
            texts.append(cited)
    return texts


def parse_error(body: JsonObject | str, status: int | None, provider: str) -> LLMResponse:
    """An HTTP error body (JSON, or the text of a non-JSON page) as an `LLMResponse`."""
    if isinstance(body, str):
        return _error_of(None, _bounded_message(page_text(body)), None, status, provider)
    body = require_object(body, "a Bedrock error body")
    return _to_error(lenient(body, _ErrorBody), status, provider)


def parse_error_fast(data: bytes | str, status: int | None, provider: str) -> LLMResponse | None:
    """`parse_error` of an error body decoded strictly from its bytes, or None."""
    try:
        body = _decode_error(data)
    except _DECLINED:
        return None
    return _to_error(body, status, provider)


def _to_error(body: _ErrorBody, status: int | None, provider: str) -> LLMResponse:
    """The one mapping of an error body (`__type` or `type`, or boto3's `Error.Code`)."""
    error = body.error
    metadata = body.response_metadata
    name = (
        _exception_name(body.aws_type)
        or _exception_name(body.type)
        or _exception_name(error.code if error is not None else None)
    )
    message = _bounded_message(
        body.message or body.message_upper or (error.message if error is not None else None)
    )
    request_id = metadata.request_id if metadata is not None else None
    if status is None and metadata is not None:
        status = metadata.http_status_code
    return _error_of(name, message, request_id, status, provider)


def _error_of(
    name: str | None, message: str | None, request_id: str | None, status: int | None, provider: str
) -> LLMResponse:
    known = _ERROR_NAMES.get(name.lower()) if name is not None else None
    if known is not None:
        name = known
        kind = ERROR_TYPES[known]
    elif status is not None:
        kind = status_error_kind(status)
    elif message is not None and _THROTTLED.search(message):
        kind = ErrorKind.TRANSIENT
    else:
        kind = status_error_kind(status)
    # "This request has been blocked by our content filters." and similar wordings of a
    # ValidationException: a policy block, not a malformed request.
    if kind is not ErrorKind.TRANSIENT and says_blocked(message):
        kind = ErrorKind.POLICY
    error_obj = ProviderError(kind, status, name, message)
    stop = StopDetails(explanation=message) if message is not None else None
    return error_response(error_obj, provider=provider, api=API, stop=stop, request_id=request_id)


class _ErrorDetails(msgspec.Struct, rename="pascal", gc=False):
    """boto3's `Error`: `{"Code", "Message"}`."""

    code: str | None = None
    message: str | None = None


class _ErrorMetadata(msgspec.Struct, rename="pascal", gc=False):
    request_id: str | None = None
    http_status_code: Int | None = msgspec.field(default=None, name="HTTPStatusCode")


class _ErrorBody(msgspec.Struct, gc=False):
    """An error body: `{"message"}` with `__type` (or the x-amzn-ErrorType header), a
    `type`, or boto3's `{"Error": {...}, "ResponseMetadata": {...}}`."""

    aws_type: str | None = msgspec.field(default=None, name="__type")
    type: str | None = None
    message: str | None = None
    message_upper: str | None = msgspec.field(default=None, name="Message")
    error: _ErrorDetails | None = msgspec.field(default=None, name="Error")
    response_metadata: _ErrorMetadata | None = msgspec.field(default=None, name="ResponseMetadata")


_decode_error = msgspec.json.Decoder(_ErrorBody).decode


# --- InvokeModel: native model bodies -------------------------------------------------

INVOKE_API = "invoke"

GUARDRAIL_ACTION = "amazon-bedrock-guardrailAction"
"""Key of InvokeModel's guardrail marker, `INTERVENED` or `NONE`, beside the model's body."""
GUARDRAIL_TRACE = "amazon-bedrock-trace"
INVOCATION_METRICS = "amazon-bedrock-invocationMetrics"
"""Key of the usage counts in the last chunk of an InvokeModelWithResponseStream stream."""

NATIVE_STOP_REASONS: dict[str, FinishReason] = {
    # Amazon Titan Text `completionReason`
    "FINISH": FinishReason.STOP,
    "LENGTH": FinishReason.LENGTH,
    "CONTENT_FILTERED": FinishReason.CONTENT_FILTER,
    "STOP_CRITERIA_MET": FinishReason.STOP,
    "RAG_QUERY_WHEN_RAG_DISABLED": FinishReason.ERROR,
    # Meta Llama and Mistral `stop_reason`
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
    "model_length": FinishReason.LENGTH,
}
"""Finish values of the native InvokeModel bodies (Titan, Llama, Mistral); anything not
listed is ERROR. https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters.html"""


def is_invoke_body(body: JsonObject) -> bool:
    """Whether `body` is an InvokeModel response: it carries Bedrock's own keys, or it is a
    native Titan, Llama or Mistral body (Anthropic-on-Bedrock bodies are Messages bodies,
    recognised by the keys Bedrock adds)."""
    if GUARDRAIL_ACTION in body or INVOCATION_METRICS in body:
        return True
    return _native_kind(body) is not None


def _native_kind(body: JsonObject) -> str | None:
    results = body.get("results")
    if isinstance(results, list) and "inputTextTokenCount" in body:
        return "titan"
    if isinstance(body.get("generation"), str) and (
        "generation_token_count" in body or "stop_reason" in body
    ):
        return "llama"
    outputs = body.get("outputs")
    if (
        isinstance(outputs, list)
        and outputs
        and all(isinstance(o, dict) and "text" in o for o in outputs)
    ):
        return "mistral"
    return None


def parse_invoke(body: JsonObject, provider: str) -> LLMResponse:
    """An InvokeModel response body: an Anthropic Messages body or a native Titan, Llama
    or Mistral one, with Bedrock's guardrail marker and trace applied."""
    kind = _native_kind(body)
    if kind is None and anthropic.looks_like(body):
        result = anthropic.parse_response(body, provider)
    else:
        text, raw = _native_output(body, kind)
        finish = NATIVE_STOP_REASONS.get(raw, FinishReason.ERROR) if raw else FinishReason.ERROR
        result = LLMResponse(
            content=text or None,
            finish_reason=finish,
            raw_finish_reason=raw,
            usage=_native_usage(body),
            provider=provider,
            cut_off=interrupted(finish) and bool(text),
        )
    result.api = INVOKE_API
    return _with_guardrail(result, body)


def _native_output(body: JsonObject, kind: str | None) -> tuple[str, str | None]:
    if kind == "titan":
        first = obj(next(iter(arr(body.get("results"))), None))
        return string(first.get("outputText")) or "", string(first.get("completionReason"))
    if kind == "llama":
        return string(body.get("generation")) or "", string(body.get("stop_reason"))
    if kind == "mistral":
        first = obj(next(iter(arr(body.get("outputs"))), None))
        return string(first.get("text")) or "", string(first.get("stop_reason"))
    return "", None


def _native_usage(body: JsonObject) -> Usage:
    metrics = obj(body.get(INVOCATION_METRICS))
    first = obj(next(iter(arr(body.get("results"))), None))
    return Usage(
        input_tokens=integer(body.get("inputTextTokenCount"))
        or integer(body.get("prompt_token_count"))
        or integer(metrics.get("inputTokenCount")),
        output_tokens=integer(first.get("tokenCount"))
        or integer(body.get("generation_token_count"))
        or integer(metrics.get("outputTokenCount")),
    )


def _with_guardrail(result: LLMResponse, body: JsonObject) -> LLMResponse:
    """`result` as a content-filter stop when Bedrock's marker says a guardrail intervened,
    with the categories and `altered` its trace gives."""
    action = string(body.get(GUARDRAIL_ACTION))
    if action is None or action.upper() != "INTERVENED":
        return result
    trace = obj(obj(body.get(GUARDRAIL_TRACE)).get("guardrail"))
    _, stop = _guardrail_outcome(FinishReason.CONTENT_FILTER, trace)
    result.finish_reason = FinishReason.CONTENT_FILTER
    result.raw_finish_reason = action
    details = [
        d for d in result.reasoning_details or () if detail_type(decode_detail(d)) != "stop_details"
    ]
    if stop is not None:
        details.insert(0, stop.to_detail())
    result.reasoning_details = details
    altered = stop is not None and stop.altered is not None
    result.cut_off = bool(result.content or result.tool_calls) and not altered
    return result


def _finish(raw: str | None) -> FinishReason:
    return STOP_REASONS.get(raw, FinishReason.ERROR) if raw is not None else FinishReason.ERROR


def _guardrail_outcome(
    finish: FinishReason, guardrail: JsonObject
) -> tuple[FinishReason, StopDetails | None]:
    """The finish reason once the guardrail trace is read, and the stop details it gives.

    A trace in which a policy blocked something is a filter stop whatever the stop reason
    said (unless that was already an error or a pause); the blocked categories and the
    `actionReason` become the stop details of a filter stop.
    """
    if not guardrail:
        return finish, None  # no trace: nothing to add (the common case)
    blocked = _blocked_categories(guardrail)
    ordinary = (FinishReason.STOP, FinishReason.LENGTH, FinishReason.TOOL_CALLS)
    masked: list[str] = []
    if not blocked:
        masked = _masked_categories(guardrail, outputs_only=finish in ordinary)
    if (blocked or masked) and finish in ordinary:
        # The trace shows a policy blocked or masked the text: a filter stop whatever
        # stopReason says (masked output was delivered, but not as the model wrote it).
        finish = FinishReason.CONTENT_FILTER
    if finish is not FinishReason.CONTENT_FILTER:
        return finish, None
    categories = blocked or masked or _reasoning_categories(guardrail)
    stop = StopDetails(
        category=categories[0] if categories else None,
        explanation=string(guardrail.get("actionReason")),
        categories=tuple(categories) if len(categories) > 1 else (),
        altered=ANONYMIZED_ACTION if masked else None,
    )
    return finish, (None if stop.is_empty() else stop)


ANONYMIZED_ACTION = "anonymized"
"""`StopDetails.altered` of a guardrail that masked parts of the output and let it through."""


def _masked_categories(guardrail: JsonObject, *, outputs_only: bool) -> list[str]:
    """The PII types and regexes a policy anonymized (action ANONYMIZED), in trace order;
    with `outputs_only`, only those of the output assessments (the model's text)."""
    found: list[str] = []
    keys = ("outputAssessments", "outputs") if outputs_only else None
    for assessment in _assessments(guardrail, keys):
        sensitive = obj(assessment.get("sensitiveInformationPolicy"))
        for item in _acted(sensitive.get("piiEntities"), _ANONYMIZED):
            name = _lower(item.get("type")) or "pii"
            if name not in found:
                found.append(name)
        for item in _acted(sensitive.get("regexes"), _ANONYMIZED):
            name = string(item.get("name")) or "regex"
            if name not in found:
                found.append(name)
    return found


_TRACE_KEYS = ("inputAssessment", "outputAssessments", "input", "outputs")
"""Converse names the trace's parts `inputAssessment` / `outputAssessments`; InvokeModel's
`amazon-bedrock-trace.guardrail` names them `input` / `outputs`."""


def _assessments(
    guardrail: JsonObject, keys: tuple[str, ...] | None = None
) -> Iterator[JsonObject]:
    """Every guardrail assessment of the trace, input first, in order. A part is a map of
    guardrail id → assessment (or list of assessments), or a list of such maps."""
    for key in keys or _TRACE_KEYS:
        part = guardrail.get(key)
        maps = part if isinstance(part, list) else [part]
        for mapping in maps:
            for value in obj(mapping).values():
                items = value if isinstance(value, list) else [value]
                for item in items:
                    if isinstance(item, dict):
                        yield item


def _blocked_categories(guardrail: JsonObject) -> list[str]:
    """What each policy blocked (action BLOCKED), in trace order, without repeats.

    Enumerated types (content filter types, PII types, managed word lists, grounding
    filters) are lower-cased; names the guardrail's owner chose (denied topics, regex
    filters) are kept as spelled.
    """
    found: list[str] = []

    def add(value: str | None) -> None:
        if value and value not in found:
            found.append(value)

    for assessment in _assessments(guardrail):
        for topic in _blocked(obj(assessment.get("topicPolicy")).get("topics")):
            add(string(topic.get("name")) or "denied_topic")
        for item in _blocked(obj(assessment.get("contentPolicy")).get("filters")):
            add(_lower(item.get("type")) or "content_filter")
        words = obj(assessment.get("wordPolicy"))
        for _ in _blocked(words.get("customWords")):
            add("custom_word")
        for item in _blocked(words.get("managedWordLists")):
            add(_lower(item.get("type")) or "managed_word")
        sensitive = obj(assessment.get("sensitiveInformationPolicy"))
        for item in _blocked(sensitive.get("piiEntities")):
            add(_lower(item.get("type")) or "pii")
        for item in _blocked(sensitive.get("regexes")):
            add(string(item.get("name")) or "regex")
        for item in _blocked(obj(assessment.get("contextualGroundingPolicy")).get("filters")):
            add(_lower(item.get("type")) or "contextual_grounding")
        for _ in _blocked(obj(assessment.get("automatedReasoningPolicy")).get("findings")):
            add("automated_reasoning")
    return found


def _reasoning_categories(guardrail: JsonObject) -> list[str]:
    for assessment in _assessments(guardrail):
        for finding in arr(obj(assessment.get("automatedReasoningPolicy")).get("findings")):
            if isinstance(finding, dict) and any(k in finding for k in _REASONING_VIOLATIONS):
                return ["automated_reasoning"]
    return []


def _blocked(items: Any) -> Iterator[JsonObject]:
    return _acted(items, _BLOCKED)


def _acted(items: Any, wanted: str) -> Iterator[JsonObject]:
    for item in arr(items):
        if isinstance(item, dict):
            action = string(item.get("action"))
            if action is not None and action.upper() == wanted:
                yield item


def _lower(value: Any) -> str | None:
    text = string(value)
    return text.lower() if text else None


def _usage(value: Any) -> Usage:
    usage = obj(value)
    return Usage(
        input_tokens=integer(usage.get("inputTokens")),
        output_tokens=integer(usage.get("outputTokens")),
        cache_read_tokens=integer(usage.get("cacheReadInputTokens")),
        cache_creation_tokens=integer(usage.get("cacheWriteInputTokens")),
    )


def _exception_name(value: Any) -> str | None:
    """`ValidationException` from `com.amazon.coral.validate#ValidationException` or
    `ValidationException:http://internal.amazon.com/...`."""
    text = string(value)
    if text is None:
        return None
    name = text.rsplit("#", 1)[-1].split(":", 1)[0].strip()
    return name or None


def _known_exception(value: Any) -> str | None:
    name = _exception_name(value)
    return _ERROR_NAMES.get(name.lower()) if name is not None else None


def _base64(value: Any) -> str | None:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    return string(value)


def _bounded_message(text: str | None) -> str | None:
    # A credential header goes whole, name and all: "Credential=[redacted]/..., [redacted]".
    return bounded_message(text, limit=MAX_ERROR_MESSAGE_CHARS, keep_names=False)


# --- streams ------------------------------------------------------------------------

STREAM_EVENTS = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
        "chunk",
    }
)
"""ConverseStream event types, and InvokeModelWithResponseStream's `chunk` (the
`:event-type` header, or the key of a decoded event)."""


def detect_stream(name: str | None, payload: Any) -> str | None:
    """`"bedrock"` when the first event of a stream is a ConverseStream event.

    With a name (the event-stream `:event-type` or `:exception-type`), the name must be a
    ConverseStream event with an object payload, or a known Bedrock exception. Without
    one, the payload must be an object whose single key is such an event.
    """
    if name is not None:
        if name in STREAM_EVENTS:
            return "bedrock" if isinstance(payload, dict) else None
        return "bedrock" if _known_exception(name) is not None else None
    if not isinstance(payload, dict) or len(payload) != 1:
        return None
    ((key, value),) = payload.items()
    if key in STREAM_EVENTS and isinstance(value, dict):
        return "bedrock"
    if _known_exception(key) is not None:
        return "bedrock"
    return None


class _Block:
    """What the decoder keeps about one open content block (never its text)."""

    __slots__ = ("kind", "redacted", "signature", "streamed", "thinking", "wrote")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.thinking = False  # reasoning text or a signature arrived
        self.signature: str | None = None
        self.redacted: str | None = None
        self.streamed = False  # a tool's input arrived as deltas
        self.wrote = False  # reasoning text was emitted


class StreamDecoder(WireDecoder):
    """Decoder of a ConverseStream stream, one wire event at a time.

    - Text deltas become text; `toolUse` starts and input deltas become tool-call deltas;
      `reasoningContent` deltas become reasoning, and their signature or redacted content
      become reasoning details when the block stops, as in a full response.
    - `messageStop` carries the verdict (`guardrail_intervened` and `content_filtered` are
      content-filter stops) and is emitted right there.
    - The `metadata` event after it carries usage and, with tracing on, the guardrail
      trace: the blocked categories and `actionReason` are merged into the verdict's stop
      details by a second verdict with the same finish reason. A blocked policy in the
      trace turns an ordinary stop into a filter stop, as `parse_response` does.
    - Modelled exceptions (`throttlingException`, `modelStreamErrorException`,
      `validationException`, ...) are stream errors classified by `parse_error`: a
      validation error that says a filter blocked the request is a content filter.

    Completeness: the stream is complete at the `metadata` event that follows
    `messageStop`. Bedrock always sends that event, but the wait for it is bounded by the
    end of the stream: a stream that ends right after `messageStop` is complete too,
    because `messageStop` already carries the verdict and `metadata` only adds usage and
    the trace (a guardrail stop without it has a notice without categories). A stream
    that ends before `messageStop` is incomplete.
    """

    API = API

    def __init__(self, provider: str) -> None:
        super().__init__(provider)
        self._blocks: dict[int, _Block] = {}
        self._reasoning = False  # some reasoning text was emitted
        self._stop: tuple[FinishReason, str | None] | None = None
        self._inner: WireDecoder | None = None  # Claude's events inside InvokeModel chunks

    def decode(self, name: str | None, payload: Any) -> list[StreamEvent]:
        if name is None:
            found = _wrapped_event(payload)
            if found is None:
                if isinstance(payload, dict):
                    return []  # an event type added after this was written
                return [StreamError("a stream event is not a JSON object")]
            name, payload = found
        if _is_exception(name):
            return self._exception(name, payload)
        if not isinstance(payload, dict):
            return [StreamError(f"the {name} stream event is not a JSON object")]
        if name == "contentBlockDelta":
            return self._delta(payload)
        if name == "contentBlockStart":
            return self._start(payload)
        if name == "contentBlockStop":
            index = _block_index(payload)
            block = self._blocks.pop(index, None)
            return self._close(index, block) if block is not None else []
        if name == "messageStop":
            return self._message_stop(payload)
        if name == "metadata":
            return self._metadata(payload)
        if name == "chunk":
            return self._chunk(payload)
        return []  # messageStart carries only the role

    # InvokeModelWithResponseStream: each `chunk` carries the model's own stream event as
    # base64 `bytes`: Anthropic Messages events for Claude, native chunks for the others.

    def _chunk(self, payload: JsonObject) -> list[StreamEvent]:
        inner = _chunk_payload(payload.get("bytes"))
        if inner is None:
            return [StreamError("an InvokeModel stream chunk does not hold a JSON object")]
        events: list[StreamEvent] = []
        if self._inner is None and anthropic.detect_stream(None, inner) is not None:
            self._inner = anthropic.StreamDecoder(self.acc.provider or "bedrock")
            self._inner.acc = self.acc  # one response, whichever decoder reads the event
        if self._inner is not None:
            events += self._inner.decode(None, inner)
            self.done = self.done or self._inner.done
        else:
            events += self._native_chunk(inner)
        metrics = inner.get(INVOCATION_METRICS)
        if isinstance(metrics, dict):
            events.append(
                UsageUpdate(
                    Usage(
                        input_tokens=integer(metrics.get("inputTokenCount")),
                        output_tokens=integer(metrics.get("outputTokenCount")),
                    )
                )
            )
        action = string(inner.get(GUARDRAIL_ACTION))
        if action is not None and action.upper() == "INTERVENED":
            trace = obj(obj(inner.get(GUARDRAIL_TRACE)).get("guardrail"))
            _, stop = _guardrail_outcome(FinishReason.CONTENT_FILTER, trace)
            events.append(Verdict(FinishReason.CONTENT_FILTER, action, stop))
        return events

    def _native_chunk(self, inner: JsonObject) -> list[StreamEvent]:
        # Titan: {"outputText", "completionReason"}; Llama: {"generation", "stop_reason"};
        # Mistral: {"outputs": [{"text", "stop_reason"}]}.
        if "outputText" in inner:
            text, raw = string(inner.get("outputText")), string(inner.get("completionReason"))
        elif "generation" in inner:
            text, raw = string(inner.get("generation")), string(inner.get("stop_reason"))
        else:
            first = obj(next(iter(arr(inner.get("outputs"))), None))
            text, raw = string(first.get("text")), string(first.get("stop_reason"))
        events: list[StreamEvent] = [TextDelta(text)] if text else []
        if raw is not None:
            events.append(Verdict(NATIVE_STOP_REASONS.get(raw, FinishReason.ERROR), raw))
            self.done = True
        return events

    def finish(self) -> list[StreamEvent]:
        # Blocks left open keep their details; a tool call is not completed.
        events = self._close_all(complete=False)
        if self._inner is not None:
            events += self._inner.finish()
        if self._stop is not None:
            # messageStop came but no metadata: the stream is complete all the same.
            self.done = True
        return events

    def _start(self, payload: JsonObject) -> list[StreamEvent]:
        index = _block_index(payload)
        tool = obj(payload.get("start")).get("toolUse")
        if not isinstance(tool, dict):
            return []
        self._blocks[index] = _Block("tool")
        return [
            ToolCallDelta(
                index,
                id=string(tool.get("toolUseId")) or None,
                name=string(tool.get("name")) or None,
            )
        ]

    def _delta(self, payload: JsonObject) -> list[StreamEvent]:
        index = _block_index(payload)
        delta = obj(payload.get("delta"))
        events: list[StreamEvent] = []
        text = string(delta.get("text"))
        if text:
            events.append(TextDelta(text))
        tool = delta.get("toolUse")
        if isinstance(tool, dict):
            block = self._blocks.setdefault(index, _Block("tool"))
            part = string(tool.get("input"))
            if part:
                block.streamed = True
                events.append(ToolCallDelta(index, arguments=part))
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, dict):
            block = self._blocks.setdefault(index, _Block("reasoning"))
            thought = string(reasoning.get("text"))
            if thought is not None:
                block.thinking = True
                if thought:
                    if not block.wrote and self._reasoning:
                        # A full response joins reasoning blocks with a blank line.
                        events.append(ReasoningDelta("\n\n"))
                    block.wrote = self._reasoning = True
                    events.append(ReasoningDelta(thought))
            signature = string(reasoning.get("signature"))
            if signature is not None:
                block.thinking = True
                block.signature = (block.signature or "") + signature
            redacted = _base64(reasoning.get("redactedContent"))
            if redacted is not None:
                block.redacted = (block.redacted or "") + redacted
        # citation deltas: the cited text arrives as text.
        return events

    def _close(self, index: int, block: _Block, complete: bool = True) -> list[StreamEvent]:
        if block.thinking:
            self.acc.add_detail(typed_detail("thinking", "signature", block.signature))
        if block.redacted is not None:
            self.acc.add_detail(typed_detail("redacted_thinking", "data", block.redacted))
        if block.kind == "tool" and complete and not block.streamed:
            # No input deltas: an empty input, which a full response gives as {}.
            return [ToolCallDelta(index, arguments="{}")]
        return []

    def _close_all(self, complete: bool = True) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for index in sorted(self._blocks):
            events += self._close(index, self._blocks[index], complete)
        self._blocks.clear()
        return events

    def _message_stop(self, payload: JsonObject) -> list[StreamEvent]:
        raw = string(payload.get("stopReason"))
        finish = _finish(raw)
        self._stop = (finish, raw)
        return [*self._close_all(), Verdict(finish, raw)]

    def _metadata(self, payload: JsonObject) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        usage = payload.get("usage")
        if isinstance(usage, dict):
            events.append(UsageUpdate(_usage(usage)))
        guardrail = obj(obj(payload.get("trace")).get("guardrail"))
        if self._stop is not None:
            finish, raw = self._stop
            outcome, stop = _guardrail_outcome(finish, guardrail)
            if outcome is not finish or stop is not None:
                events.append(Verdict(outcome, raw, stop))
            self.done = True
        elif guardrail:
            # A trace before any messageStop (out of order): a blocked policy still says
            # a filter stopped the response.
            outcome, stop = _guardrail_outcome(FinishReason.STOP, guardrail)
            if outcome is FinishReason.CONTENT_FILTER:
                events.append(Verdict(outcome, None, stop))
        return events

    def service_error(self, code: str | None, message: str | None) -> list[StreamEvent]:
        """An event-stream message of type `error` (outside the modelled exceptions), whose
        `:error-code` and `:error-message` headers are all it says: a transient fault,
        unless the message says a filter blocked the request. The message is redacted and
        bounded like any error body's; the events are folded in and returned."""
        name = _exception_name(code) or "UnknownError"
        text = _bounded_message(message)
        result = parse_error(
            {"__type": name, "message": text or ""}, None, self.acc.provider or "bedrock"
        )
        kind = ErrorKind.POLICY if says_blocked(text) else ErrorKind.TRANSIENT
        error = ProviderError(kind, None, name, f"{name}: {text}" if text else name)
        events: list[StreamEvent] = [StreamError(error.message or name, error)]
        if kind is ErrorKind.POLICY and (
            self.acc.verdict is None or self.acc.verdict.finish_reason not in _FINAL
        ):
            events.append(Verdict(FinishReason.CONTENT_FILTER, name, result.stop_details))
        for event in events:
            self.acc.apply(event, self.acc.events_seen)
        return events

    def _exception(self, name: str, payload: Any) -> list[StreamEvent]:
        body: JsonObject = dict(payload) if isinstance(payload, dict) else {}
        if isinstance(payload, str):
            body["message"] = payload
        body["__type"] = name
        # Unless a filter was decided, the exception decides the response, with the facts
        # an error body gives.
        result = parse_error(body, None, self.acc.provider or "bedrock")
        code = result.error.code if result.error is not None else None
        return error_events(result, self.acc.verdict, f"the stream reported {code or name}")


def _chunk_payload(value: Any) -> JsonObject | None:
    """The JSON object a chunk's `bytes` hold (base64 text on the wire, raw bytes in
    boto3's decoded events)."""
    if isinstance(value, str):
        try:
            value = base64.b64decode(value, validate=True)
        except ValueError:
            return None
    if not isinstance(value, bytes | bytearray):
        return None
    try:
        inner = orjson.loads(value)
    except orjson.JSONDecodeError:
        try:
            inner = loads_lenient(value)
        except ValueError:
            return None
    return inner if isinstance(inner, dict) else None


def _is_exception(name: str) -> bool:
    return name.lower().endswith("exception")


def _wrapped_event(payload: Any) -> tuple[str, Any] | None:
    """The event name and body of a decoded event `{"<eventName>": {...}}`."""
    if isinstance(payload, dict):
        for key, value in payload.items():
            if key in STREAM_EVENTS or _is_exception(key):
                return key, value
    return None


def _block_index(payload: JsonObject) -> int:
    index = payload.get("contentBlockIndex")
    if isinstance(index, int) and not isinstance(index, bool):
        return index
    return 0


# --- the Converse schema -----------------------------------------------------------
#
# Converse bodies are read through these Structs only: strictly from bytes, through the
# lenient pass from decoded values. InvokeModel bodies (native ones, or with Bedrock's
# marker keys) and error bodies are read by their own functions above.


class _ReasoningText(msgspec.Struct, gc=False):
    text: str | None = None
    signature: str | None = None


class _ReasoningContent(msgspec.Struct, rename="camel", gc=False):
    # Both keys count by presence alone, null included.
    reasoning_text: _ReasoningText | msgspec.UnsetType | None = msgspec.UNSET
    # Raw: text on the wire, bytes in a boto3 response (base64-encoded for the detail).
    redacted_content: Raw = NO_RAW


class _ToolUse(msgspec.Struct, rename="camel", gc=False):
    tool_use_id: str | None = None
    name: str | None = None
    input: Raw = NO_RAW


class _ContentBlock(msgspec.Struct, rename="camel", gc=False):
    text: str | None = None
    citations_content: Raw = NO_RAW
    tool_use: _ToolUse | None = None
    reasoning_content: _ReasoningContent | None = None


class _ConverseMessage(msgspec.Struct, gc=False):
    content: list[_ContentBlock] | None = None


class _ConverseOutput(msgspec.Struct, gc=False):
    message: _ConverseMessage | None = None


class _ConverseUsage(msgspec.Struct, rename="camel", gc=False):
    # In the order Bedrock writes them (alphabetical): msgspec tries the next field first.
    cache_read_input_tokens: Count | None = 0
    cache_write_input_tokens: Count | None = 0
    input_tokens: Count | None = 0
    output_tokens: Count | None = 0


class _Metadata(msgspec.Struct, rename="pascal", gc=False):
    request_id: str | None = None


class _Converse(msgspec.Struct, rename="camel", gc=False):
    """A Converse response, the only description of its wire (the guardrail trace is
    read by `_guardrail_outcome`)."""

    output: _ConverseOutput | None = None
    stop_reason: str | msgspec.UnsetType | None = msgspec.UNSET
    usage: _ConverseUsage | None = None
    response_metadata: _Metadata | None = msgspec.field(default=None, name="ResponseMetadata")
    trace: Raw = NO_RAW
    # Read only to decline what detection would route elsewhere: another format's hints,
    # Gemini's keys (asked before Bedrock's), and the InvokeModel marker keys.
    object: str | None = None
    type: str | None = None
    candidates: Raw = NO_RAW
    prompt_feedback: Raw = NO_RAW
    guardrail_action: Raw = msgspec.field(default=NO_RAW, name=GUARDRAIL_ACTION)
    invocation_metrics: Raw = msgspec.field(default=NO_RAW, name=INVOCATION_METRICS)


_decode_converse = msgspec.json.Decoder(_Converse).decode
_UNSET: Any = msgspec.UNSET
# Reading an enum member off its class costs about as much as a function call.
_ERROR = FinishReason.ERROR

# msgspec encodes a text payload to UTF-8 before reading it: a lone surrogate in it fails
# there, before any JSON is read (the lenient path reads it as U+FFFD).
_DECLINED = (*FAST_FAILED, UnicodeEncodeError)


def parse_fast(data: bytes | str, provider: str | None) -> LLMResponse | None:
    """The response of a Converse body decoded strictly from its bytes; None when the body
    is not one (detection's checks, without a provider) or the decode rejects it."""
    if provider is not None and provider != "bedrock":
        return None
    try:
        body = _decode_converse(data)
        # A stopReason always gives a hint, so `is_invoke_body` is never asked; the marker
        # keys make an InvokeModel body whatever the hint.
        if body.stop_reason is _UNSET or body.guardrail_action or body.invocation_metrics:
            return None
        if body.candidates or body.prompt_feedback:
            return None  # Gemini's keys: detection (or `_module_for`) may look elsewhere
        if provider is None:
            # What detection checks: no hint of a format asked before Bedrock, and
            # `detect_provider`'s output object beside the stopReason.
            if body.output is None:
                return None
            if body.object is not None and body.object in ("chat.completion", "response"):
                return None
            if body.type is not None and body.type in ("message", "error"):
                return None
            provider = "bedrock"
        return _to_response(body, provider)
    except _DECLINED:
        return None


def _to_response(body: _Converse, provider: str) -> LLMResponse:
    """The one mapping of a Converse body to an `LLMResponse`."""
    texts: list[str] = []
    thinking: list[str] = []
    tool_calls: list[ToolCall] = []
    details: list[Detail] = []
    output = body.output
    message = output.message if output is not None else None
    for block in (message.content if message is not None else None) or ():
        text = block.text
        if text:
            texts.append(text)
        if block.citations_content:
            texts += _cited_texts(raw_value(block.citations_content))
        tool = block.tool_use
        if tool is not None:
            arguments = json_text(raw_value(tool.input)) if tool.input else ""
            tool_calls.append(ToolCall(tool.tool_use_id or "", tool.name or "", arguments))
        reasoning = block.reasoning_content
        if reasoning is not None:
            given = reasoning.reasoning_text
            if isinstance(given, _ReasoningText):
                if given.text:
                    thinking.append(given.text)
                details.append(typed_detail("thinking", "signature", given.signature))
            elif given is None:  # present, but null (or not an object): no text, no signature
                details.append(typed_detail("thinking", "signature", None))
            if reasoning.redacted_content:
                redacted = _base64(raw_value(reasoning.redacted_content))
                details.append(typed_detail("redacted_thinking", "data", redacted))

    raw = body.stop_reason if type(body.stop_reason) is str else None
    guardrail = obj(obj(raw_value(body.trace)).get("guardrail")) if body.trace else {}
    finish, stop = _guardrail_outcome(_finish(raw), guardrail)
    if stop is not None:
        details.append(stop.to_detail())

    content = "".join(texts) or None
    reasoning_text = "\n\n".join(thinking) if thinking else None
    usage = body.usage
    if usage is None:
        counts = Usage()
    else:
        counts = new_usage(
            usage.input_tokens or 0,
            usage.output_tokens or 0,
            usage.cache_read_input_tokens or 0,
            usage.cache_write_input_tokens or 0,
            [],
        )
    metadata = body.response_metadata
    return new_response(
        content,
        tool_calls,
        reasoning_text,
        details,
        counts,
        finish,
        raw,
        None,  # Converse does not echo the model id in the body.
        metadata.request_id if metadata is not None else None,
        provider,
        API,
        finish in INTERRUPTED
        and bool(content or tool_calls or reasoning_text)
        and not (stop is not None and stop.altered),
    )
