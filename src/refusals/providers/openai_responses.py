"""OpenAI Responses API (and Azure OpenAI's Responses): full response objects and errors.

A Responses object (`"object": "response"`) says how it ended in `status`, not in a
finish reason. Where it says "blocked" or "declined":

- a `refusal` content part in an `output` message item: the model declined (the object
  is still `completed`); the refusal text becomes the content, as the notice expects;
- `status: "incomplete"` with `incomplete_details.reason: "content_filter"`;
- `status: "failed"` with a policy `error.code` (`invalid_prompt`, `bio_policy`,
  `image_content_policy_violation`, any other `*_policy` / `*policy_violation` code):
  a content-filter stop whose category is the code and whose explanation is the message;
- Azure's `content_filters` array: an entry with `blocked: true` names the categories.

The raw finish reason is the provider's own word for the ending: the incomplete reason,
the failed `error.code`, or else the `status` itself (`completed`, `cancelled`, ...).
HTTP error bodies have the same shape as Chat Completions ones and are classified by the
same rules (`openai_chat.classify_error`).

Documentation:

- https://platform.openai.com/docs/api-reference/responses/object
- https://platform.openai.com/docs/guides/structured-outputs#refusals
- https://platform.openai.com/docs/guides/error-codes
- https://learn.microsoft.com/azure/ai-foundry/openai/how-to/responses
- https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter
"""

from __future__ import annotations

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
    string,
)
from refusals.providers.openai_chat import (
    ErrorVerdict,
    azure_filtered_categories,
    classify_error,
    clean_message,
    finish_error,
    json_text,
    moderation_signals,
    nonblank,
    stop_for,
)

API = "responses"

STATUSES: dict[str, FinishReason] = {
    "completed": FinishReason.STOP,  # TOOL_CALLS when it ends on function calls
    "incomplete": FinishReason.ERROR,  # the reason decides: see INCOMPLETE_REASONS
    "failed": FinishReason.ERROR,  # a policy error code makes it CONTENT_FILTER
    "cancelled": FinishReason.ERROR,
    "in_progress": FinishReason.ERROR,
    "queued": FinishReason.ERROR,
}
"""`status` → FinishReason; any value not listed (or none) is ERROR."""

INCOMPLETE_REASONS: dict[str, FinishReason] = {
    "max_output_tokens": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
}
"""`incomplete_details.reason` → FinishReason; any value not listed is ERROR."""

_TOOL_CALL_ITEMS = ("function_call", "custom_tool_call")


def looks_like(body: JsonObject) -> bool:
    """Whether `body` is a Responses object (not a Chat Completions body or an error)."""
    if body.get("object") == "response":
        return True
    return (
        isinstance(body.get("output"), list)
        and isinstance(body.get("status"), str)
        and "choices" not in body
    )


def detect_provider(body: JsonObject) -> str | None:
    """`azure` for a Responses object with Azure's `content_filters`, else `openai-responses`.

    Error bodies are left to `openai_chat`, which reads the same shape.
    """
    if not looks_like(body):
        return None
    return "azure" if "content_filters" in body else "openai-responses"


def is_error(body: JsonObject) -> bool:
    """A bare error body (`{"error": {...}}`); a `failed` Responses object is a response."""
    if looks_like(body):
        return False
    error = body.get("error")
    return isinstance(error, dict | str)


def parse_response(body: JsonObject, provider: str) -> LLMResponse:
    """A full Responses object as an `LLMResponse`."""
    body = require_object(body, "an OpenAI Responses object")
    if not (looks_like(body) or "output" in body or "status" in body):
        raise NormalizeError(
            'expected an OpenAI Responses object (`object: "response"` with `output` and '
            "`status`), got an object with keys: " + (", ".join(list(body)[:8]) or "none")
        )

    messages: list[str] = []
    refusals: list[str] = []
    reasoning: list[str] = []
    tool_calls: list[ToolCall] = []
    for entry in arr(body.get("output")):
        item = obj(entry)
        kind = string(item.get("type"))
        if kind == "message":
            texts: list[str] = []
            for part in arr(item.get("content")):
                piece = obj(part)
                part_type = string(piece.get("type"))
                if part_type in ("output_text", "text"):
                    texts.append(string(piece.get("text")) or "")
                elif part_type == "refusal":
                    refusal = string(piece.get("refusal"))
                    if refusal and refusal.strip():
                        refusals.append(refusal)
            if "".join(texts):
                messages.append("".join(texts))
        elif kind in _TOOL_CALL_ITEMS:
            tool_calls.append(_tool_call(item))
        elif kind == "reasoning":
            reasoning.extend(_reasoning_texts(item))

    text = "\n\n".join(messages)
    status = string(body.get("status"))
    incomplete_reason = string(obj(body.get("incomplete_details")).get("reason"))
    failure = obj(body.get("error"))
    failure_code = string(failure.get("code"))

    finish = STATUSES.get(status, FinishReason.ERROR) if status is not None else FinishReason.ERROR
    raw = status
    if status == "incomplete":
        finish = INCOMPLETE_REASONS.get(incomplete_reason or "", FinishReason.ERROR)
        raw = incomplete_reason or status
    elif status == "failed":
        raw = failure_code or status
    elif finish is FinishReason.STOP and tool_calls:
        finish = FinishReason.TOOL_CALLS

    filters, filter_details = _azure_content_filters(body.get("content_filters"))
    moderation = moderation_signals(body.get("moderation"))
    stop: StopDetails | None = None
    error: ProviderError | None = None
    verdict: ErrorVerdict | None = None
    if failure:
        # `failed` responses say why in `error`, with the same codes as HTTP error bodies.
        verdict = classify_error({"error": failure}, None)
        error = verdict.error

    content = text
    if (
        finish is FinishReason.CONTENT_FILTER
        or filters
        or moderation.blocked
        or (verdict is not None and verdict.error.kind is ErrorKind.POLICY)
    ):
        finish = FinishReason.CONTENT_FILTER
        categories = list(dict.fromkeys([*filters, *moderation.blocked]))
        explanation = None
        if verdict is not None and verdict.error.kind is ErrorKind.POLICY:
            # A failed response: the error code is the category, its message the explanation.
            if failure_code and failure_code not in categories:
                categories.insert(0, failure_code)
            explanation = verdict.error.message
        stop = stop_for(categories, explanation)
    elif refusals:
        finish = FinishReason.REFUSAL
        refusal_text = "\n\n".join(refusals)
        if content:
            content = f"{content}\n\n{refusal_text}"
            stop = StopDetails(explanation=refusal_text)
        else:
            content = refusal_text
    elif verdict is not None:
        finish = FinishReason.ERROR
        stop = verdict.stop

    details: list[Detail] = [stop.to_detail()] if stop is not None else []
    details.extend(filter_details)
    details.extend(moderation.details)

    terminal = finish in (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER, FinishReason.ERROR)
    return LLMResponse(
        content=content or None,
        tool_calls=tool_calls,
        reasoning="\n\n".join(reasoning) or None,
        reasoning_details=details,
        usage=_usage(obj(body.get("usage"))),
        finish_reason=finish,
        raw_finish_reason=raw,
        model=nonblank(body.get("model")),
        request_id=nonblank(body.get("id")),
        provider=provider,
        api=API,
        cut_off=terminal and (bool(text) or bool(tool_calls)),
        error=error,
    )


def parse_error(body: JsonObject | str, status: int | None, provider: str) -> LLMResponse:
    """An HTTP error body (same shape and rules as Chat Completions errors)."""
    verdict = classify_error(body, status)
    response = error_response(
        verdict.error, provider=provider, api=API, stop=verdict.stop, model=verdict.model
    )
    return finish_error(response, verdict)


def _tool_call(item: JsonObject) -> ToolCall:
    arguments = item.get("arguments") if "arguments" in item else item.get("input")
    return ToolCall(
        id=string(item.get("call_id")) or string(item.get("id")) or "",
        name=string(item.get("name")) or "",
        arguments=json_text(arguments),
    )


def _reasoning_texts(item: JsonObject) -> list[str]:
    texts: list[str] = []
    for key in ("summary", "content"):
        for part in arr(item.get(key)):
            text = string(obj(part).get("text"))
            if text and text.strip():
                texts.append(text)
    return texts


def _azure_content_filters(filters: Any) -> tuple[list[str], list[Detail]]:
    """Azure `content_filters`: the categories of blocked entries, and one detail per entry.

    In a blocked entry the categories are those marked `filtered: true`, or, when none is,
    those marked `detected: true`. Entries that are not blocked only add a detail, and only
    when something in them was filtered, detected or rated above `safe`.
    """
    categories: list[str] = []
    details: list[Detail] = []
    for entry in arr(filters):
        item = obj(entry)
        blocked = item.get("blocked") is True
        results = obj(item.get("content_filter_results"))
        filtered, kept = azure_filtered_categories(results)
        if blocked:
            detected = [
                name
                for name, value in results.items()
                if obj(value).get("detected") is True and isinstance(name, str)
            ]
            categories.extend(filtered or [d for d in detected if d != "error"])
        filter_error = obj(results.get("error"))
        if not (blocked or kept or filter_error):
            continue
        detail: JsonObject = {"type": "azure_content_filter", "blocked": blocked}
        source = string(item.get("source_type"))
        if source:
            detail["source"] = source
        if kept:
            detail["results"] = kept
        if filter_error:
            detail["error"] = {
                "code": string(filter_error.get("code")),
                "message": clean_message(filter_error.get("message")),
            }
        details.append(orjson.dumps(detail).decode())
    return list(dict.fromkeys(categories)), details


def _usage(usage: JsonObject) -> Usage:
    input_details = obj(usage.get("input_tokens_details"))
    return Usage(
        input_tokens=integer(usage.get("input_tokens")),
        output_tokens=integer(usage.get("output_tokens")),
        cache_read_tokens=integer(input_details.get("cached_tokens")),
        cache_creation_tokens=integer(input_details.get("cache_write_tokens")),
    )
