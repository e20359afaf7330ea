"""OpenAI Chat Completions, and every vendor that speaks it: full responses and error bodies.

One wire format, many dialects. Where each one says "blocked" or "declined":

- OpenAI: `message.refusal` (the model declined; `finish_reason` is still `stop`),
  `finish_reason: "content_filter"`, and the optional `moderation` object, whose flagged
  categories are recorded but do not by themselves mean a block (the recordings show a
  flagged input answered normally, even under a `block` moderation policy).
- Azure OpenAI: `prompt_filter_results[].content_filter_results` and
  `choices[].content_filter_results`; a category counts only where `filtered` is true,
  and a `content_filter_results.error` means the filter did not run (the text went out
  unfiltered: not a block). A blocked prompt is an HTTP 400 `content_filter` error whose
  `innererror.content_filter_result(s)` names the categories.
- OpenRouter: `native_finish_reason` (the upstream model's own value, kept as the raw
  finish reason), errors with `metadata` (`error_type`, moderation `reasons`), and errors
  inside a 200 body. `error_type: "refusal"` means the upstream model declined: it is read
  as a REFUSAL (never retried, like every policy error), not as a content filter.
- DeepSeek: `finish_reason: "content_filter"`, `insufficient_system_resource`, and the 400
  "Content Exists Risk" error. xAI: a 403 `SAFETY_CHECK_TYPE_*` body. Groq (`x_groq`),
  Mistral (`{"object": "error"}` bodies) and Ollama's `/v1` endpoint speak it plainly.

This module is also the fallback for error bodies of no known shape (provider
`"unknown"`) and for error text that is not JSON: the HTTP status classifies those.

Documentation:

- https://platform.openai.com/docs/api-reference/chat/object
- https://platform.openai.com/docs/guides/structured-outputs#refusals
- https://platform.openai.com/docs/guides/error-codes
- https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter
- https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter-annotations
- https://openrouter.ai/docs/api/reference/errors-and-debugging
- https://openrouter.ai/docs/api/reference/overview (`native_finish_reason`)
- https://api-docs.deepseek.com/quick_start/error_codes
- https://api-docs.deepseek.com/api/create-chat-completion (`finish_reason` values)
- https://docs.x.ai/developers/debugging (status codes; the body is `{"code", "error"}`)
- https://console.groq.com/docs/errors
- https://docs.mistral.ai/api/ (`finish_reason` values, error bodies)
- https://github.com/ollama/ollama/blob/main/docs/openai.md
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
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

API = "chat.completions"

FINISH_REASONS: dict[str, FinishReason] = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "model_length": FinishReason.LENGTH,  # Mistral: the model's context window was reached
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,  # deprecated OpenAI functions
    "content_filter": FinishReason.CONTENT_FILTER,
    "refusal": FinishReason.REFUSAL,  # some compatible gateways pass a refusal through
    "error": FinishReason.ERROR,  # Mistral, OpenRouter
    "insufficient_system_resource": FinishReason.ERROR,  # DeepSeek: generation cut short
}
"""`choices[].finish_reason` → FinishReason; any value not listed (or none) is ERROR."""

POLICY_CODES = frozenset(
    {
        "content_filter",
        "content_policy_violation",
        "moderation_blocked",
        "invalid_prompt",
        "image_content_policy_violation",
        "bio_policy",
        "cyber_policy",
        "responsibleaipolicyviolation",
    }
)
"""Error `code`/`type` values that are a safety or content-policy block."""

AUTH_CODES = frozenset(
    {
        "invalid_api_key",
        "invalid_authentication",
        "authentication_error",
        "permission_denied",
        "permission_error",
        "unauthorized",
        "invalid_organization",
        "account_deactivated",
        "organization_deactivated",
        # Billing: retrying cannot help, so these are not transient even when sent as 429.
        "insufficient_quota",
        "billing_hard_limit_reached",
        "billing_not_active",
        "insufficient_balance",
        "payment_required",
    }
)
"""Error `code`/`type` values that mean bad credentials, no permission, or no money."""

TRANSIENT_CODES = frozenset(
    {
        "rate_limit_exceeded",
        "rate_limit_error",
        "server_error",
        "service_unavailable",
        "overloaded",
        "overloaded_error",
        "engine_overloaded",
        "timeout",
        "internal_error",
        "api_error",
        "vector_store_timeout",
        "tokens",  # Groq: `type` of a tokens-per-minute rate limit
        "requests",  # Groq: `type` of a requests-per-minute rate limit
    }
)
"""Error `code`/`type` values that are safe to retry."""

INVALID_CODES = frozenset(
    {
        "context_length_exceeded",
        "string_above_max_length",
        "invalid_request_error",
        "invalid_value",
        "unsupported_value",
        "unsupported_parameter",
        "model_not_found",
        "invalid_request_message_error",
    }
)
"""Error `code`/`type` values that mean the request itself is wrong."""

# OpenRouter `error.metadata.error_type` values that are a block (`refusal`: the upstream
# model declined and the provider reported it as an error).
OPENROUTER_POLICY_TYPES = frozenset({"content_policy_violation", "refusal"})

# Groq's 498: the flex tier is out of capacity right now.
_GROQ_CAPACITY_STATUS = 498

_MISTRAL_MODELS = ("mistral", "ministral", "codestral", "magistral", "devstral", "pixtral")

_MAX_MESSAGE_CHARS = 1000

_SECRETS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=*-]+"), "Bearer [redacted]"),
    # Keys (`sk-...`, `sk-proj-...`, Groq `gsk_...`, xAI `xai-...`); a final "." is prose.
    (re.compile(r"\b(?:sk|gsk|xai|rk|pk)[-_][A-Za-z0-9_*.-]{5,}[A-Za-z0-9_*-]"), "[redacted]"),
    (
        re.compile(
            r"(?i)\b(x-api-key|api[-_]?key|authorization)(\"?\s*[:=]\s*\"?)(?!bearer\b)[^\s\",;]+"
        ),
        r"\1\2[redacted]",
    ),
    (re.compile(r"(?i)\b(api key id|team):(\s*)[^,\s]+"), r"\1:\2[redacted]"),
    (re.compile(r"(?i)(incorrect api key provided:\s*)\S+?(\.?)(?=\s|$)"), r"\1[redacted]\2"),
    (re.compile(r"(?i)([?&]key=)[A-Za-z0-9._~%-]+"), r"\1[redacted]"),
)

_POLICY_MESSAGE = re.compile(
    r"(?i)flagged as potentially violating|violat\w* (?:our |the )?usage polic|"
    r"content (?:management )?polic|safety system|content violates"
)
_AUTH_MESSAGE = re.compile(
    r"(?i)incorrect api key|invalid api key|api key (?:is )?(?:invalid|missing|disabled)|"
    r"authentication fails|no auth credentials|insufficient balance|\bcredits?\b|spending limit"
)
_XAI_CHECK = re.compile(r"SAFETY_CHECK_TYPE_([A-Za-z0-9_]+)")
_XAI_MODEL = re.compile(r"\bModel:\s*([^,\s]+)")
_HTML_TITLE = re.compile(r"(?is)<title[^>]*>(.*?)</title>")
_HTML_TAG = re.compile(r"<[^>]+>")


# ---------------------------------------------------------------------------------------
# Shape detection


def detect_provider(body: JsonObject) -> str | None:
    """The vendor of a Chat Completions response or error body; None for other shapes."""
    if isinstance(body.get("choices"), list):
        return _response_provider(body)
    if "prompt_filter_results" in body:
        return "azure"
    if is_error(body):
        return _error_provider(body)
    return None


def is_error(body: JsonObject) -> bool:
    """Whether `body` is an error body (OpenAI, Azure, OpenRouter, xAI or Mistral shape)."""
    if "choices" in body or body.get("type") == "error":
        return False
    if body.get("object") == "error":
        return True
    error = body.get("error")
    if isinstance(error, dict):
        # google.rpc.Status (Gemini) spells the status as a name in `error.status`.
        return not isinstance(error.get("status"), str)
    return isinstance(error, str)


def _response_provider(body: JsonObject) -> str:
    choices = [obj(choice) for choice in arr(body.get("choices"))]
    if "prompt_filter_results" in body or any("content_filter_results" in c for c in choices):
        return "azure"
    if isinstance(body.get("provider"), str) or any("native_finish_reason" in c for c in choices):
        return "openrouter"
    if "x_groq" in body:
        return "groq"
    if body.get("system_fingerprint") == "fp_ollama":
        return "ollama"
    model = (string(body.get("model")) or "").lower()
    if model.startswith("deepseek"):
        return "deepseek"
    if model.startswith("grok"):
        return "xai"
    if any(name in model for name in _MISTRAL_MODELS):
        return "mistral"
    return "openai"


def _error_provider(body: JsonObject) -> str | None:
    if body.get("object") == "error":
        return "mistral"
    error = body.get("error")
    if isinstance(error, str):
        # A bare `{"error": "..."}` is also Ollama's native shape: only xAI's is claimed.
        code = body.get("code")
        if isinstance(code, str) or _XAI_CHECK.search(error) or "console.x.ai" in error:
            return "xai"
        return None
    err = obj(error)
    message = _text(err.get("message")) or ""
    if "innererror" in err or "Azure OpenAI" in message:
        return "azure"
    code = err.get("code")
    if "metadata" in err or "user_id" in body or (_is_int(code) and "param" not in err):
        return "openrouter"
    if "Content Exists Risk" in message or "deepseek" in message.lower():
        return "deepseek"
    if "groq" in message.lower():
        return "groq"
    if "console.x.ai" in message:
        return "xai"
    return "openai"


# ---------------------------------------------------------------------------------------
# Full responses


def parse_response(body: JsonObject, provider: str) -> LLMResponse:
    """A full (non-streaming) Chat Completions body as an `LLMResponse`."""
    body = require_object(body, "a Chat Completions response")
    if not any(key in body for key in ("choices", "prompt_filter_results", "error")):
        raise NormalizeError(
            "expected a Chat Completions response with `choices`, got an object with keys: "
            + (", ".join(list(body)[:8]) or "none")
        )
    choice = next((c for c in arr(body.get("choices")) if isinstance(c, dict)), {})
    message = obj(choice.get("message")) or obj(choice.get("delta"))

    text, thinking = _message_text(message.get("content"))
    reasoning = _reasoning(message, thinking)
    refusal = nonblank(message.get("refusal"))
    tool_calls = _tool_calls(message)

    raw = string(choice.get("finish_reason"))
    native = string(choice.get("native_finish_reason"))
    finish = FINISH_REASONS.get(raw, FinishReason.ERROR) if raw is not None else FinishReason.ERROR

    azure = azure_filter_signals(body, choice)
    moderation = moderation_signals(body.get("moderation"))
    stop: StopDetails | None = None
    error: ProviderError | None = None
    in_body_error = obj(body.get("error"))

    content = text
    if finish is FinishReason.CONTENT_FILTER or azure.filtered or moderation.blocked:
        finish = FinishReason.CONTENT_FILTER
        categories = _unique(azure.filtered + moderation.blocked)
        stop = stop_for(categories, None)
    elif refusal is not None:
        finish = FinishReason.REFUSAL
        if content:
            # The refusal came after some output: keep both, and name the refusal itself
            # as the explanation so the notice does not quote the partial answer.
            content = f"{content}\n\n{refusal}"
            stop = StopDetails(explanation=refusal)
        else:
            content = refusal
    elif in_body_error:
        # OpenRouter reports a failure that happened mid-generation inside a 200 body.
        verdict = classify_error({"error": in_body_error}, None)
        error = verdict.error
        if verdict.error.kind is ErrorKind.POLICY:
            finish = FinishReason.REFUSAL if verdict.refusal else FinishReason.CONTENT_FILTER
            stop = verdict.stop
        elif finish in (FinishReason.STOP, FinishReason.TOOL_CALLS):
            finish = FinishReason.ERROR

    details: list[Detail] = [stop.to_detail()] if stop is not None else []
    details.extend(azure.details)
    details.extend(moderation.details)

    terminal = finish in (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER, FinishReason.ERROR)
    has_output = bool(text) or bool(tool_calls)
    return LLMResponse(
        content=content or None,
        tool_calls=tool_calls,
        reasoning=reasoning,
        reasoning_details=details,
        usage=_usage(obj(body.get("usage"))),
        finish_reason=finish,
        raw_finish_reason=native if native is not None else raw,
        model=nonblank(body.get("model")),
        request_id=nonblank(body.get("id")),
        provider=provider,
        api=API,
        cut_off=terminal and has_output,
        error=error,
    )


def _message_text(content: Any) -> tuple[str, list[str]]:
    """The text of `message.content` (a string or a list of parts) and any thinking parts."""
    if isinstance(content, str):
        return content, []
    texts: list[str] = []
    thinking: list[str] = []
    for part in arr(content):
        if isinstance(part, str):
            texts.append(part)
            continue
        item = obj(part)
        kind = string(item.get("type"))
        if kind in ("text", "output_text"):
            texts.append(string(item.get("text")) or "")
        elif kind == "thinking":
            # Mistral reasoning models: {"type": "thinking", "thinking": [{"type": "text", ...}]}
            inner, _ = _message_text(item.get("thinking"))
            if inner:
                thinking.append(inner)
    return "".join(texts), thinking


def _reasoning(message: JsonObject, thinking: list[str]) -> str | None:
    for key in ("reasoning_content", "reasoning"):
        value = nonblank(message.get(key))
        if value is not None:
            return value
    if not thinking:
        # OpenRouter also gives the reasoning as `reasoning_details` text entries.
        for entry in arr(message.get("reasoning_details")):
            text = string(obj(entry).get("text"))
            if text:
                thinking.append(text)
    return "\n\n".join(thinking) or None


def _tool_calls(message: JsonObject) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for entry in arr(message.get("tool_calls")):
        call = obj(entry)
        function = obj(call.get("function"))
        custom = obj(call.get("custom"))
        if function or not custom:
            name, arguments = function.get("name"), function.get("arguments")
        else:
            name, arguments = custom.get("name"), custom.get("input")
        calls.append(
            ToolCall(
                id=string(call.get("id")) or "",
                name=string(name) or "",
                arguments=json_text(arguments),
            )
        )
    legacy = obj(message.get("function_call"))
    if legacy:
        calls.append(
            ToolCall(
                name=string(legacy.get("name")) or "",
                arguments=json_text(legacy.get("arguments")),
            )
        )
    return calls


def _usage(usage: JsonObject) -> Usage:
    prompt_details = obj(usage.get("prompt_tokens_details"))
    return Usage(
        input_tokens=integer(usage.get("prompt_tokens")),
        output_tokens=integer(usage.get("completion_tokens")),
        cache_read_tokens=integer(prompt_details.get("cached_tokens"))
        or integer(usage.get("prompt_cache_hit_tokens")),  # DeepSeek
        cache_creation_tokens=integer(prompt_details.get("cache_write_tokens")),  # OpenRouter
    )


# ---------------------------------------------------------------------------------------
# Azure content filters and OpenAI moderation (shared with openai_responses)


@dataclass
class FilterSignals:
    """What a filter or moderation report says: the categories that blocked, and details."""

    filtered: list[str] = field(default_factory=list)
    details: list[Detail] = field(default_factory=list)


@dataclass
class ModerationSignals:
    """Categories of a moderation result that says it blocked, and one detail per result."""

    blocked: list[str] = field(default_factory=list)
    details: list[Detail] = field(default_factory=list)


def azure_filter_signals(body: JsonObject, choice: JsonObject) -> FilterSignals:
    """Azure `prompt_filter_results` and the choice's `content_filter_results`."""
    signals = FilterSignals()
    for entry in arr(body.get("prompt_filter_results")):
        item = obj(entry)
        extra: JsonObject = {"source": "prompt"}
        index = item.get("prompt_index")
        if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < 2**31:
            extra["prompt_index"] = index
        _add_azure_results(signals, item.get("content_filter_results"), extra)
    _add_azure_results(signals, choice.get("content_filter_results"), {"source": "completion"})
    return signals


def azure_filtered_categories(results: Any) -> tuple[list[str], JsonObject]:
    """The categories marked `filtered: true`, and every category worth recording.

    A category is recorded when it was filtered, detected, or rated above `safe`; its
    `filtered`, `severity` and `detected` values are kept as given. `error` is not a
    category: it says the filter did not run.
    """
    filtered: list[str] = []
    kept: JsonObject = {}
    for name, value in obj(results).items():
        if name == "error" or not isinstance(name, str):
            continue
        if name == "custom_blocklists":
            entries = value if isinstance(value, list) else arr(obj(value).get("details"))
            hits = [string(obj(e).get("id")) for e in entries if obj(e).get("filtered") is True]
            if obj(value).get("filtered") is True or hits:
                filtered.append(name)
                kept[name] = {"filtered": True, "ids": [h for h in hits if h]}
            continue
        item = obj(value)
        severity = item.get("severity")
        if item.get("filtered") is True:
            filtered.append(name)
        if (
            item.get("filtered") is True
            or item.get("detected") is True
            or (isinstance(severity, str) and severity != "safe")
        ):
            kept[name] = {
                k: item[k]
                for k in ("filtered", "severity", "detected")
                if isinstance(item.get(k), bool | str)
            }
    return filtered, kept


def _add_azure_results(signals: FilterSignals, results: Any, extra: JsonObject) -> None:
    filtered, kept = azure_filtered_categories(results)
    filter_error = obj(obj(results).get("error"))
    signals.filtered.extend(filtered)
    if not kept and not filter_error:
        return
    detail: JsonObject = {"type": "azure_content_filter", **extra}
    if kept:
        detail["results"] = kept
    if filter_error:
        # The filter did not run (timeout, outage): the text was not filtered, not blocked.
        detail["error"] = {
            "code": string(filter_error.get("code")),
            "message": clean_message(filter_error.get("message")),
        }
    signals.details.append(_dump(detail))


def moderation_signals(moderation: Any) -> ModerationSignals:
    """The OpenAI `moderation` object of a chat completion or a Responses object.

    Chat Completions gives `{input|output: {type: "moderation_results", results: [...]}}`;
    Responses gives one result per side. A flagged result is recorded, never a block by
    itself: only a result that says it blocked (`blocked: true` or `action: "block"`, not
    seen in any recording so far) makes the response a content-filter stop. A moderation
    `error` outcome (the moderation did not run) is recorded.
    """
    signals = ModerationSignals()
    for source in ("input", "output"):
        outcome = obj(obj(moderation).get(source))
        if not outcome:
            continue
        if outcome.get("type") == "error":
            signals.details.append(
                _dump(
                    {
                        "type": "moderation",
                        "source": source,
                        "error": {
                            "code": string(outcome.get("code")),
                            "message": clean_message(outcome.get("message")),
                        },
                    }
                )
            )
            continue
        results = outcome.get("results") if "results" in outcome else [outcome]
        for result in arr(results):
            item = obj(result)
            categories = [
                name
                for name, value in obj(item.get("categories")).items()
                if value is True and isinstance(name, str)
            ]
            blocked = _says_blocked(item) or _says_blocked(outcome)
            if not (item.get("flagged") is True or categories or blocked):
                continue
            if blocked:
                signals.blocked.extend(categories)
            detail: JsonObject = {
                "type": "moderation",
                "source": source,
                "flagged": item.get("flagged") is True,
                "categories": categories,
            }
            if blocked:
                detail["blocked"] = True
            model = string(item.get("model")) or string(outcome.get("model"))
            if model:
                detail["model"] = model
            signals.details.append(_dump(detail))
    return signals


def _says_blocked(item: JsonObject) -> bool:
    action = string(item.get("action"))
    return item.get("blocked") is True or (
        action is not None and action.lower() in ("block", "blocked")
    )


# ---------------------------------------------------------------------------------------
# HTTP error bodies


@dataclass(frozen=True)
class ErrorVerdict:
    """An error body classified: the error, the notice facts, and whether a model declined."""

    error: ProviderError
    stop: StopDetails | None
    refusal: bool = False
    model: str | None = None
    details: tuple[Detail, ...] = ()


def parse_error(body: JsonObject | str, status: int | None, provider: str) -> LLMResponse:
    """An HTTP error body (or error text that was not JSON) as an `LLMResponse`."""
    verdict = classify_error(body, status)
    response = error_response(
        verdict.error, provider=provider, api=API, stop=verdict.stop, model=verdict.model
    )
    return finish_error(response, verdict)


def finish_error(response: LLMResponse, verdict: ErrorVerdict) -> LLMResponse:
    """Apply what `error_response` cannot know: a declined model, and extra details."""
    if verdict.refusal and verdict.error.kind is ErrorKind.POLICY:
        response.finish_reason = FinishReason.REFUSAL
    if verdict.details:
        response.reasoning_details = [*(response.reasoning_details or []), *verdict.details]
    return response


@dataclass
class _ErrorFields:
    message: str | None = None
    code: str | None = None
    type: str | None = None
    status: int | None = None
    metadata: JsonObject = field(default_factory=dict)
    inner: JsonObject = field(default_factory=dict)
    error: JsonObject = field(default_factory=dict)


def classify_error(body: Any, status: int | None) -> ErrorVerdict:
    """Classify an error body of any Chat-Completions-compatible vendor (or plain text)."""
    fields = _error_fields(body)
    effective = status if status is not None else fields.status
    codes = {c.lower() for c in (fields.code, fields.type) if c}
    message = fields.message

    policy = _policy(fields, codes, effective)
    if policy is not None:
        return policy
    if codes & AUTH_CODES:
        kind = ErrorKind.AUTH
    elif message and _AUTH_MESSAGE.search(message) and effective in (None, 400, 401, 402, 403):
        # Not for 429: a rate limit that mentions buying credits is still a rate limit.
        kind = ErrorKind.AUTH
    elif codes & TRANSIENT_CODES or effective == _GROQ_CAPACITY_STATUS:
        kind = ErrorKind.TRANSIENT
    elif effective is not None:
        kind = status_error_kind(effective)
        if kind is ErrorKind.INVALID_REQUEST and codes & TRANSIENT_CODES:
            kind = ErrorKind.TRANSIENT
    elif codes & INVALID_CODES:
        kind = ErrorKind.INVALID_REQUEST
    else:
        kind = status_error_kind(None)
    error = ProviderError(kind, effective, fields.code, message)
    return ErrorVerdict(
        error=error,
        stop=StopDetails(explanation=message) if message else None,
        model=_error_model(fields),
    )


def _policy(fields: _ErrorFields, codes: set[str], status: int | None) -> ErrorVerdict | None:
    """The verdict when the body is a safety or content-policy block, else None."""
    message = fields.message
    metadata = fields.metadata
    categories: list[str] = []
    refusal = False
    code = fields.code
    details: list[Detail] = []

    error_type = (string(metadata.get("error_type")) or "").lower()
    reasons = [r for r in arr(metadata.get("reasons")) if isinstance(r, str) and r]
    inner_code = (string(fields.inner.get("code")) or "").lower()
    check = _XAI_CHECK.search(message or "")

    if inner_code == "responsibleaipolicyviolation" or "content_filter" in codes:
        # Azure: the categories are in innererror.content_filter_result(s).
        side = string(fields.error.get("param")) or "prompt"
        for source in (fields.inner, fields.error):
            for key in ("content_filter_result", "content_filter_results"):
                filtered, kept = azure_filtered_categories(source.get(key))
                categories.extend(filtered)
                if kept:
                    details.append(
                        _dump({"type": "azure_content_filter", "source": side, "results": kept})
                    )
    elif error_type in OPENROUTER_POLICY_TYPES or reasons or "flagged_input" in metadata:
        refusal = error_type == "refusal"
        categories.extend(reasons)
        code = error_type or code
        # Who declined and why, as OpenRouter reports it (`flagged_input` is at most 100
        # characters of the user's own text).
        facts: JsonObject = {"type": "openrouter_error"}
        if error_type:
            facts["error_type"] = error_type
        if reasons:
            facts["reasons"] = reasons
        for key in ("flagged_input", "provider_name", "model_slug"):
            value = string(metadata.get(key))
            if value:
                facts[key] = clean_message(value) if key == "flagged_input" else value
        details.append(_dump(facts))
    elif check is not None:
        # xAI: "... Failed check: SAFETY_CHECK_TYPE_BIO" → category "bio".
        categories.append(check.group(1).lower())
        code = check.group(0)
        message = _first_sentence(message) or message
    elif message and "Content Exists Risk" in message:
        pass  # DeepSeek: no category is given.
    elif codes & POLICY_CODES or any(
        c.endswith("_policy") or "policy_violation" in c for c in codes
    ):
        if code and code.lower() not in ("content_filter", "content_policy_violation"):
            categories.append(code)
    elif not (
        message
        and _POLICY_MESSAGE.search(message)
        and (status is None or status in (400, 403, 422))
        and not codes & AUTH_CODES
    ):
        return None

    error = ProviderError(ErrorKind.POLICY, status, code, fields.message)
    return ErrorVerdict(
        error=error,
        stop=stop_for(_unique(categories), message),
        refusal=refusal,
        model=_error_model(fields),
        details=tuple(details),
    )


def _error_fields(body: Any) -> _ErrorFields:
    if isinstance(body, str):
        return _ErrorFields(message=_text_message(body))
    body = obj(body)
    error = body.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        body_status = error.get("status")
        metadata = obj(error.get("metadata"))
        message = _text(error.get("message"))
        raw = _text(metadata.get("raw"))
        if raw and raw != message:
            # OpenRouter: "Provider returned error", with the upstream's own words in `raw`.
            message = f"{message}: {raw}" if message else raw
        return _ErrorFields(
            message=clean_message(message),
            code=_code(code),
            type=string(error.get("type")),
            status=_status(body_status) or _status(code),
            metadata=metadata,
            inner=obj(error.get("innererror")),
            error=error,
        )
    if isinstance(error, str):
        # xAI: {"code": "<gRPC status text>", "error": "<message>"}; Ollama: {"error": "..."}.
        return _ErrorFields(message=clean_message(error), code=string(body.get("code")))
    if body.get("object") == "error":
        # Mistral: {"object": "error", "message": ..., "type": ..., "param": ..., "code": ...}
        return _ErrorFields(
            message=clean_message(body.get("message")),
            code=_code(body.get("code")),
            type=string(body.get("type")),
        )
    return _ErrorFields(
        message=clean_message(body.get("message")) or clean_message(body.get("detail")),
        code=_code(body.get("code")),
        type=string(body.get("type")),
    )


def _error_model(fields: _ErrorFields) -> str | None:
    slug = string(fields.metadata.get("model_slug"))
    if slug:
        return slug
    found = _XAI_MODEL.search(fields.message or "")
    return found.group(1) if found else None


# ---------------------------------------------------------------------------------------
# Small readers


def clean_message(value: Any) -> str | None:
    """A provider message made safe to show: secrets redacted, whitespace collapsed, bounded.

    Non-string messages (Mistral sends validation errors as objects) are shown as JSON.
    """
    if value is None:
        return None
    text = value if isinstance(value, str) else _text(value)
    if not text:
        return None
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    text = " ".join(text.split())
    return truncate_within(text, _MAX_MESSAGE_CHARS, "...") or None


def _text_message(text: str) -> str | None:
    """The readable part of a non-JSON error body (an HTML page keeps its title)."""
    title = _HTML_TITLE.search(text)
    if title is not None:
        text = title.group(1)
    elif "<" in text and ">" in text:
        text = _HTML_TAG.sub(" ", text)
    return clean_message(text)


def _text(value: Any) -> str | None:
    """A message as text: strings as given, objects and arrays as JSON, anything else None."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return _json(value)
    return None


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # big integers, non-string keys: only from hand-built dicts
        return str(value)


def _first_sentence(message: str | None) -> str | None:
    if not message:
        return None
    head, sep, _ = message.partition(". ")
    return head + "." if sep else None


def stop_for(categories: list[str], explanation: str | None) -> StopDetails | None:
    """The notice facts for these categories and explanation; None when there are none."""
    if not categories and not explanation:
        return None
    return StopDetails(
        category=categories[0] if categories else None,
        explanation=explanation,
        categories=tuple(categories) if len(categories) > 1 else (),
    )


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(item for item in items if item))


def nonblank(value: Any) -> str | None:
    """`value` when it is a string with something besides whitespace, else None."""
    text = string(value)
    return text if text is not None and text.strip() else None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _code(value: Any) -> str | None:
    if isinstance(value, str):
        return value or None
    # OpenRouter's numeric `code` is the HTTP status, read by `_status`, not a code.
    return str(value) if _is_int(value) and _status(value) is None else None


def _status(value: Any) -> int | None:
    if _is_int(value) and 100 <= value <= 599:
        return int(value)
    if isinstance(value, str) and value.isdigit() and 100 <= int(value) <= 599:
        return int(value)
    return None


def json_text(value: Any) -> str:
    """Tool-call arguments as JSON text: strings as given, anything else serialised."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return _json(value)


def _dump(detail: JsonObject) -> str:
    return orjson.dumps(detail).decode()
