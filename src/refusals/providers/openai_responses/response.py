"""A Responses object as an `LLMResponse`: one mapping from the schema's `Response`, for
bytes (strict decode) and decoded values (the lenient pass) alike. Azure's
`content_filters` and OpenAI's `moderation` of a decoded value are read by the helpers
Chat Completions shares."""

from __future__ import annotations

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
    new_response,
    new_usage,
)
from refusals.providers._common import (
    FAST_FAILED,
    JsonObject,
    Keyed,
    NormalizeError,
    Plain,
    Raw,
    arguments_text,
    arr,
    count,
    interrupted,
    key_names,
    keyed,
    obj,
    plain_of,
    require_object,
    string,
)
from refusals.providers._lenient import Given, lenient, raw_value
from refusals.providers.openai_chat import (
    ErrorVerdict,
    ModerationSignals,
    azure_category,
    azure_filtered_categories,
    classify_error,
    clean_message,
    moderation_signals,
    stop_for,
)
from refusals.providers.openai_chat.filters import quiet
from refusals.providers.openai_responses.schema import (
    Item,
    Response,
    ResponseUsage,
    decode_response,
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

TOOL_CALL_ITEMS = ("function_call", "custom_tool_call")
_UNSET: Any = msgspec.UNSET


def looks_like(body: JsonObject) -> bool:
    """Whether `body` is a Responses object (not a Chat Completions body or an error)."""
    if body.get("object") == "response":
        return True
    return (
        isinstance(body.get("output"), list)
        and isinstance(body.get("status"), str)
        and "choices" not in body
    )


def parse_response(body: JsonObject, provider: str) -> LLMResponse:
    """A full Responses object as an `LLMResponse`."""
    body = require_object(body, "an OpenAI Responses object")
    if not (looks_like(body) or "output" in body or "status" in body):
        raise NormalizeError(
            'expected an OpenAI Responses object (`object: "response"` with `output` and '
            "`status`), got an object with keys: " + key_names(body)
        )

    return to_response(lenient(body, Response), provider)


def _response(
    messages: list[str],
    refusals: list[str],
    reasoning: list[str],
    tool_calls: list[ToolCall],
    *,
    status: str | None,
    incomplete_reason: str | None,
    failure: JsonObject,
    filtered: tuple[list[str], list[Detail]],
    moderation: ModerationSignals,
    usage: Usage,
    model: str | None,
    request_id: str | None,
    provider: str,
) -> LLMResponse:
    """The response from what a Responses object says (see `to_response`)."""
    text = "\n\n".join(messages)
    failure_code = string(failure.get("code"))

    finish = STATUSES.get(status, FinishReason.ERROR) if status is not None else FinishReason.ERROR
    raw = status
    if status == "incomplete" or incomplete_reason == "content_filter":
        # A filter's reason stands whatever the status says (a gateway may report a
        # filtered response as `completed` with the reason still set).
        finish = INCOMPLETE_REASONS.get(incomplete_reason or "", FinishReason.ERROR)
        raw = incomplete_reason or status
    elif status == "failed":
        raw = failure_code or status
    elif finish is FinishReason.STOP and tool_calls:
        finish = FinishReason.TOOL_CALLS

    filters, filter_details = filtered
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

    terminal = interrupted(finish)
    return new_response(
        content or None,
        tool_calls,
        "\n\n".join(reasoning) or None,
        details,
        usage,
        finish,
        raw,
        model,
        request_id,
        provider,
        API,
        terminal and (bool(text) or bool(tool_calls)),
        error,
    )


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
                azure_category(name)
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


def item_call(item: Item) -> ToolCall:
    """A `function_call` or `custom_tool_call` item as a tool call."""
    arguments = item.arguments if item.arguments else item.input
    return ToolCall(
        item.call_id or item.id or "", item.name or "", arguments_text(raw_value(arguments), "")
    )


# The names `normalize` sends a Responses object to this module under (`_module_for`): its
# own, and every chat-compatible vendor's when the body looks like a Responses object.
PROVIDER_NAMES = frozenset(
    {"openai-responses", "openai", "azure", "openrouter", "deepseek", "xai", "groq", "mistral"}
)


_NULL = msgspec.Raw(b"null")
_NO_FILTERS: tuple[list[str], list[Detail]] = ([], [])
_NO_MODERATION = ModerationSignals()
"""Read only: `_response` copies what it takes from these."""


def parse_fast(data: bytes | str, provider: str | None) -> LLMResponse | None:
    """`parse_response` of a well-typed Responses object read through Structs, or None."""
    if provider is not None and provider not in PROVIDER_NAMES:
        return None
    try:
        body = decode_response(data)
    except FAST_FAILED:
        return None
    return response_of(body, provider)


def response_of(body: Response, provider: str | None) -> LLMResponse | None:
    """`parse_fast` of a Responses object already decoded strictly (inside an envelope)."""
    if provider is not None and provider not in PROVIDER_NAMES:
        return None
    try:
        if provider is None:
            # What detection checks: `object: "response"` is the hint (no other format's
            # is looked at), no Bedrock InvokeModel marker, and `detect_provider` then says
            # azure exactly when the key `content_filters` is present.
            if body.object != "response" or body.guardrail_action or body.invocation_metrics:
                return None
            provider = "azure" if body.content_filters else "openai-responses"
        elif body.object != "response" and (
            body.output is None or body.status is None or body.choices
        ):
            # Not `looks_like`: an error body, a Chat Completions body, or one the dict
            # reader rejects.
            return None
        return to_response(body, provider)
    except FAST_FAILED:
        return None


def parse_plain(data: bytes | str, provider: str | None) -> Plain | None:
    """`parse_fast`'s verdict (see `_protocol`): rare in logs, so read whole."""
    return plain_of(parse_fast(data, provider))


def plain_response(body: Response, provider: str | None) -> Plain | None:
    """`parse_plain` of a Responses object already decoded strictly: read whole."""
    return plain_of(response_of(body, provider))


def to_response(body: Response, provider: str) -> LLMResponse:
    """The one mapping of a Responses object (read strictly from bytes, or by the lenient
    pass from a decoded value) to an `LLMResponse`."""
    messages: list[str] = []
    refusals: list[str] = []
    reasoning: list[str] = []
    tool_calls: list[ToolCall] = []
    for item in body.output or ():
        kind = item.type
        if kind == "message":
            texts: list[str] = []
            for part in item.content or ():
                part_type = part.type
                if part_type in ("output_text", "text"):
                    texts.append(part.text or "")
                elif part_type == "refusal":
                    refusal = part.refusal
                    if refusal and refusal.strip():
                        refusals.append(refusal)
            text = "".join(texts)
            if text:
                messages.append(text)
        elif kind in TOOL_CALL_ITEMS:
            tool_calls.append(item_call(item))
        elif kind == "reasoning":
            for parts in (item.summary, item.content):
                for part in parts or ():
                    piece = part.text
                    if piece and piece.strip():
                        reasoning.append(piece)

    incomplete = body.incomplete_details
    model = body.model
    request_id = body.id
    return _response(
        messages,
        refusals,
        reasoning,
        tool_calls,
        status=body.status,
        incomplete_reason=incomplete.reason if incomplete is not None else None,
        # `error` is null in all but failed responses: {} as `obj` reads null, not decoded.
        failure=obj(raw_value(body.error)) if body.error and body.error != _NULL else {},
        filtered=_filters_of(body.content_filters) if body.content_filters else _NO_FILTERS,
        moderation=moderation_signals(raw_value(body.moderation))
        if body.moderation
        else _NO_MODERATION,
        usage=usage_of(body.usage),
        model=model if model is not None and model.strip() else None,
        request_id=request_id if request_id is not None and request_id.strip() else None,
        provider=provider,
    )


def usage_of(usage: ResponseUsage | None) -> Usage:
    if usage is None:
        return Usage()
    details = usage.input_tokens_details
    return new_usage(
        count(usage.input_tokens),
        count(usage.output_tokens),
        count(details.cached_tokens) if details is not None else 0,
        count(details.cache_write_tokens) if details is not None else 0,
        [],
    )


def outcome_key(body: Response) -> Keyed:
    """`Keyed` for a decoded Responses object: `to_response` reads its `id` as the request
    id and its `usage` through `usage_of` alone."""
    return keyed(body, usage_of(body.usage), id=None, usage=None)


def _filters_of(value: Raw | Given) -> tuple[list[str], list[Detail]]:
    """`_azure_content_filters` of a raw `content_filters` value; a report that certainly
    says nothing (`filters.quiet`, the common case) is not decoded."""
    if quiet(value):
        return _NO_FILTERS
    return _azure_content_filters(raw_value(value))
