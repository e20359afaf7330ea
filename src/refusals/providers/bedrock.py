"""Amazon Bedrock Converse API: full responses and HTTP error bodies.

Documentation:
- Converse: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html
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
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from typing import Any

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
)
from refusals.providers._common import (
    JsonObject,
    NormalizeError,
    arr,
    error_response,
    integer,
    obj,
    require_object,
    status_error_kind,
    string,
)
from refusals.refusal import truncate_within

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

# "This request has been blocked by our content filters." and similar wordings of a
# ValidationException: a policy block, not a malformed request.
_POLICY_BLOCK = re.compile(
    r"\b(?:blocked|flagged|filtered)\b.{0,60}?\b(?:content[ _-]?filter\w*|guardrails?"
    r"|safety|moderation|(?:content|usage|acceptable[ -]use) polic(?:y|ies))\b",
    re.IGNORECASE | re.DOTALL,
)
_THROTTLED = re.compile(r"too many requests|rate exceeded|throttl", re.IGNORECASE)

_SECRETS = re.compile(
    r"(?:x-api-key|api[-_ ]?key|authorization|x-amz-security-token)[\"']?\s*[:=]\s*[\"']?"
    r"(?:(?:bearer|basic|AWS4-HMAC-SHA256)\s+)?[^\s\"',;}]+"
    r"|\bbearer\s+[A-Za-z0-9._~+/=-]+"
    r"|\bsk-[A-Za-z0-9_-]{6,}"
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    re.IGNORECASE,
)
_REDACTED = "[REDACTED]"
_TAGS = re.compile(r"<[^>]*>")
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)

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

    texts: list[str] = []
    thinking: list[str] = []
    tool_calls: list[ToolCall] = []
    details: list[Detail] = []
    message = obj(obj(body.get("output")).get("message"))
    for block in arr(message.get("content")):
        if not isinstance(block, dict):
            continue
        text = string(block.get("text"))
        if text:
            texts.append(text)
        for part in arr(obj(block.get("citationsContent")).get("content")):
            cited = string(obj(part).get("text"))
            if cited:
                texts.append(cited)
        tool = block.get("toolUse")
        if isinstance(tool, dict):
            tool_calls.append(
                ToolCall(
                    id=string(tool.get("toolUseId")) or "",
                    name=string(tool.get("name")) or "",
                    arguments=_json_text(tool["input"]) if "input" in tool else "",
                )
            )
        reasoning = block.get("reasoningContent")
        if isinstance(reasoning, dict):
            if "reasoningText" in reasoning:
                reasoning_text = obj(reasoning.get("reasoningText"))
                text = string(reasoning_text.get("text"))
                if text:
                    thinking.append(text)
                details.append(
                    _detail("thinking", "signature", string(reasoning_text.get("signature")))
                )
            if "redactedContent" in reasoning:
                details.append(
                    _detail("redacted_thinking", "data", _base64(reasoning["redactedContent"]))
                )

    raw = string(body.get("stopReason"))
    finish = STOP_REASONS.get(raw, FinishReason.ERROR) if raw is not None else FinishReason.ERROR
    guardrail = obj(obj(body.get("trace")).get("guardrail"))
    blocked = _blocked_categories(guardrail)
    if blocked and finish in (FinishReason.STOP, FinishReason.LENGTH, FinishReason.TOOL_CALLS):
        # The trace shows a policy blocked the text: a filter stop whatever stopReason says.
        finish = FinishReason.CONTENT_FILTER
    if finish is FinishReason.CONTENT_FILTER:
        categories = blocked or _reasoning_categories(guardrail)
        stop = StopDetails(
            category=categories[0] if categories else None,
            explanation=string(guardrail.get("actionReason")),
            categories=tuple(categories) if len(categories) > 1 else (),
        )
        if stop != StopDetails():
            details.append(stop.to_detail())

    content = "".join(texts) or None
    reasoning_text_all = "\n\n".join(thinking) or None
    metadata = obj(body.get("ResponseMetadata"))
    return LLMResponse(
        content=content,
        tool_calls=tool_calls,
        reasoning=reasoning_text_all,
        reasoning_details=details,
        usage=_usage(body.get("usage")),
        finish_reason=finish,
        raw_finish_reason=raw,
        model=None,  # Converse does not echo the model id in the body.
        request_id=string(metadata.get("RequestId")),
        provider=provider,
        api=API,
        cut_off=_interrupted(finish) and bool(content or tool_calls or reasoning_text_all),
    )


def parse_error(body: JsonObject | str, status: int | None, provider: str) -> LLMResponse:
    """An HTTP error body (JSON, or the text of a non-JSON page) as an `LLMResponse`."""
    request_id: str | None = None
    if isinstance(body, str):
        name: str | None = None
        message = _bounded_message(_page_text(body))
    else:
        body = require_object(body, "a Bedrock error body")
        error = obj(body.get("Error"))
        metadata = obj(body.get("ResponseMetadata"))
        name = (
            _exception_name(body.get("__type"))
            or _exception_name(body.get("type"))
            or _exception_name(error.get("Code"))
        )
        message = _bounded_message(
            string(body.get("message"))
            or string(body.get("Message"))
            or string(error.get("Message"))
        )
        request_id = string(metadata.get("RequestId"))
        if status is None:
            http_status = metadata.get("HTTPStatusCode")
            if isinstance(http_status, int) and not isinstance(http_status, bool):
                status = http_status

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
    if kind is not ErrorKind.TRANSIENT and _looks_like_policy_block(message):
        kind = ErrorKind.POLICY
    error_obj = ProviderError(kind, status, name, message)
    stop = StopDetails(explanation=message) if message is not None else None
    return error_response(error_obj, provider=provider, api=API, stop=stop, request_id=request_id)


def _assessments(guardrail: JsonObject) -> Iterator[JsonObject]:
    """Every guardrail assessment of the trace, input first, in order."""
    for key in ("inputAssessment", "outputAssessments"):
        for value in obj(guardrail.get(key)).values():
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
    for item in arr(items):
        if isinstance(item, dict):
            action = string(item.get("action"))
            if action is not None and action.upper() == _BLOCKED:
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


def _json_text(value: Any) -> str:
    """Compact JSON text of an already decoded value (tool input), never raising."""
    try:
        return orjson.dumps(value).decode()
    except (orjson.JSONEncodeError, TypeError):
        try:
            return json.dumps(value, default=str, separators=(",", ":"))
        except (ValueError, TypeError, RecursionError):
            return ""


def _bounded_message(text: str | None) -> str | None:
    """A provider's error message made safe to show: redacted, on one line, bounded."""
    if text is None:
        return None
    text = " ".join(_SECRETS.sub(_REDACTED, text).split())
    return truncate_within(text, MAX_ERROR_MESSAGE_CHARS, "...") or None


def _page_text(text: str) -> str:
    """The readable part of a non-JSON error body (an HTML page's title, or its text)."""
    title = _TITLE.search(text)
    if title is not None and title.group(1).strip():
        return title.group(1)
    return _TAGS.sub(" ", text) if "<" in text else text


def _looks_like_policy_block(message: str | None) -> bool:
    return message is not None and _POLICY_BLOCK.search(message) is not None


def _detail(kind: str, name: str, value: str | None) -> str:
    fields: JsonObject = {"type": kind}
    if value is not None:
        fields[name] = value
    return orjson.dumps(fields).decode()


def _interrupted(finish: FinishReason) -> bool:
    return finish in (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER, FinishReason.ERROR)
