"""OpenAI Chat Completions, and every vendor that speaks it: responses, streams and errors.

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

Streams (`detect_stream`, `StreamDecoder`) read each chunk the way `parse_response` reads
a message, so that a stream and its full response agree; see `StreamDecoder` for where a
stream says things a full response does not (Azure's asynchronous filter, errors after a
finish, the end of a stream).

This module is also the fallback for error bodies of no known shape (provider
`"unknown"`) and for error text that is not JSON: the HTTP status classifies those.

Documentation:

- https://platform.openai.com/docs/api-reference/chat/object
- https://platform.openai.com/docs/api-reference/chat-streaming
- https://platform.openai.com/docs/guides/structured-outputs#refusals
- https://platform.openai.com/docs/guides/error-codes
- https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter
- https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter-annotations
- https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-streaming
- https://openrouter.ai/docs/api/reference/errors-and-debugging
- https://openrouter.ai/docs/api/reference/overview (`native_finish_reason`)
- https://openrouter.ai/docs/api/reference/streaming (comments, errors during streaming)
- https://api-docs.deepseek.com/quick_start/error_codes
- https://api-docs.deepseek.com/api/create-chat-completion (`finish_reason` values)
- https://docs.x.ai/developers/debugging (status codes; the body is `{"code", "error"}`)
- https://console.groq.com/docs/errors
- https://docs.mistral.ai/api/ (`finish_reason` values, error bodies)
- https://github.com/ollama/ollama/blob/main/docs/openai.md
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Literal

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
    new_response,
    new_usage,
)
from refusals.providers._common import (
    FAST_FAILED,
    INTERRUPTED,
    NO_RAW,
    Absent,
    Count,
    Int,
    JsonObject,
    NormalizeError,
    Raw,
    arguments_text,
    arr,
    bounded_message,
    error_response,
    integer,
    interrupted,
    json_text,
    key_names,
    obj,
    page_text,
    require_object,
    says_blocked,
    status_error_kind,
    string,
)
from refusals.providers._lenient import raw_value
from refusals.stream import (
    ReasoningDelta,
    RefusalDelta,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    UsageUpdate,
    Verdict,
    WireDecoder,
)

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
    # Together (and servers built like it): the model emitted its end-of-sequence token.
    # https://docs.together.ai/reference/chat-completions-1 (`finish_reason`)
    "eos": FinishReason.STOP,
}
"""`choices[].finish_reason` → FinishReason; any value not listed (or none) is ERROR."""

NATIVE_BLOCKS: dict[str, FinishReason] = {
    "refusal": FinishReason.REFUSAL,  # Anthropic
    "content_filter": FinishReason.CONTENT_FILTER,  # OpenAI, Azure, Mistral
    "guardrail_intervened": FinishReason.CONTENT_FILTER,  # Bedrock
    "content_filtered": FinishReason.CONTENT_FILTER,  # Bedrock
    "safety": FinishReason.CONTENT_FILTER,  # Gemini, and the IMAGE_ / other Gemini blocks
    "recitation": FinishReason.CONTENT_FILTER,
    "blocklist": FinishReason.CONTENT_FILTER,
    "prohibited_content": FinishReason.CONTENT_FILTER,
    "spii": FinishReason.CONTENT_FILTER,
    "image_safety": FinishReason.CONTENT_FILTER,
    "image_prohibited_content": FinishReason.CONTENT_FILTER,
    "image_recitation": FinishReason.CONTENT_FILTER,
    "model_armor": FinishReason.CONTENT_FILTER,
    "error_toxic": FinishReason.CONTENT_FILTER,  # Cohere
}
"""OpenRouter `native_finish_reason` values (the upstream provider's own, matched without
regard to case) that are a refusal or a safety stop: they win over the normalised
`finish_reason`, which OpenRouter may give as `stop`."""

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

_MISTRAL_MODEL = re.compile(r"mistral|ministral|codestral|magistral|devstral|pixtral")

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


# ---------------------------------------------------------------------------------------
# Shape detection


def detect_provider(body: JsonObject) -> str | None:
    """The vendor of a Chat Completions response or error body; None for other shapes."""
    if isinstance(body.get("choices"), list):
        return _response_provider(body)
    if "prompt_filter_results" in body or "prompt_annotations" in body:
        return "azure"
    if is_error(body):
        return _error_provider(body)
    return None


def looks_like(body: JsonObject) -> bool:
    """Whether `body` is a Chat Completions response or error body."""
    return detect_provider(body) is not None


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
    if "prompt_filter_results" in body or "prompt_annotations" in body:
        return "azure"
    openrouter = isinstance(body.get("provider"), str)
    for choice in arr(body.get("choices")):
        if isinstance(choice, dict):
            if "content_filter_results" in choice:
                return "azure"
            openrouter = openrouter or "native_finish_reason" in choice
    if openrouter:
        return "openrouter"
    if "x_groq" in body:
        return "groq"
    if body.get("system_fingerprint") == "fp_ollama":
        return "ollama"
    model = body.get("model")
    return _vendor_of_model(model) if type(model) is str else "openai"


@functools.lru_cache(maxsize=512)
def _vendor_of_model(model: str) -> str:
    """The vendor a model name belongs to; cached, since a client sees few distinct names.

    A name with an owner prefix (`mistralai/Mixtral-8x7B`, `deepseek-ai/DeepSeek-V3`) is
    how hosts and routers (Together, Fireworks, Hugging Face) name models they serve
    themselves: the vendor's error and finish dialect does not apply, so it is plain
    OpenAI-compatible. The caller's `provider` (or the URL) names the host.
    """
    name = model.lower()
    if "/" in name:
        return "openai"
    if name.startswith("deepseek"):
        return "deepseek"
    if name.startswith("grok"):
        return "xai"
    if _MISTRAL_MODEL.search(name):
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
    if type(body) is not dict:
        body = require_object(body, "a Chat Completions response")
    if not (
        "choices" in body
        or "prompt_filter_results" in body
        or "prompt_annotations" in body
        or "error" in body
    ):
        raise NormalizeError(
            "expected a Chat Completions response with `choices`, got an object with keys: "
            + key_names(body)
        )
    choices = body.get("choices")
    choice = choices[0] if type(choices) is list and choices else None
    if type(choice) is not dict or choice.get("index", 0) != 0:
        choice = first_choice(choices)  # choice 0 is not first (or the list is odd)
        if not choice and type(choices) is list:
            # No choice 0 at all (a lone choice under another index): the first is it.
            choice = next((c for c in choices if type(c) is dict), {})
    message = obj(choice.get("message")) or obj(choice.get("delta"))

    raw_content = message.get("content")
    text, thinking = _message_text(raw_content)
    reasoning = _reasoning(message, thinking)
    raw_refusal = message.get("refusal")
    refusal = nonblank(raw_refusal if type(raw_refusal) is not list else _parts_text(raw_refusal))
    if refusal is None and type(raw_content) is list:
        # Content given as parts, one of them {"type": "refusal", "refusal": ...}.
        refusal = nonblank("\n\n".join(content_refusals(raw_content)))
    tool_calls = _tool_calls(message)

    raw = string(choice.get("finish_reason"))
    native = string(choice.get("native_finish_reason"))
    finish = FINISH_REASONS.get(raw, FinishReason.ERROR) if raw is not None else FinishReason.ERROR
    if native is not None:
        finish = native_finish(native, finish)

    # Most bodies carry neither Azure filter results nor moderation: skip both readers.
    if (
        "prompt_filter_results" in body
        or "prompt_annotations" in body
        or ("content_filter_results" in choice)
    ):
        azure = azure_filter_signals(body, choice)
        filtered, filter_details = azure.filtered, azure.details
    else:
        filtered, filter_details = [], []
    if type(choices) is list and len(choices) > 1:
        # With `n` > 1 the answer is choice 0, but a filter that stopped another choice
        # still stopped part of what was asked for: the response is filtered.
        other = other_choices_filtered(choices, choice)
        if other is not None:
            filtered = filtered + other.filtered
            filter_details = filter_details + other.details
            if not other.filtered:
                finish = FinishReason.CONTENT_FILTER
    raw_moderation = body.get("moderation")
    if raw_moderation is not None:
        moderation = moderation_signals(raw_moderation)
        blocked, moderation_details = moderation.blocked, moderation.details
    else:
        blocked, moderation_details = [], []
    stop: StopDetails | None = None
    error: ProviderError | None = None
    in_body_error = obj(body.get("error"))

    content = text
    if finish is FinishReason.CONTENT_FILTER or filtered or blocked:
        finish = FinishReason.CONTENT_FILTER
        categories = _unique(filtered + blocked)
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
    details.extend(filter_details)
    details.extend(moderation_details)

    terminal = interrupted(finish)
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


def native_finish(native: str, finish: FinishReason) -> FinishReason:
    """`finish`, unless the upstream's own value says the model declined or a filter
    stopped it (`NATIVE_BLOCKS`): a block is never read as an ordinary stop."""
    block = NATIVE_BLOCKS.get(native.lower())
    if block is not None and finish not in (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER):
        return block
    return finish


def other_choices_filtered(choices: list[Any], answer: JsonObject) -> FilterSignals | None:
    """The filter signals of the choices other than `answer`, or None when none of them
    was filtered (`finish_reason: content_filter` or a category `filtered: true`)."""
    signals: FilterSignals | None = None
    for item in choices:
        if item is answer or type(item) is not dict:
            continue
        results = item.get("content_filter_results")
        categories = azure_filtered_categories(results)[0] if results else []
        if not categories and item.get("finish_reason") != "content_filter":
            continue
        if signals is None:
            signals = FilterSignals()
        extra: JsonObject = {"source": "completion"}
        index = item.get("index")
        if _is_int(index):
            extra["choice_index"] = index
        _add_azure_results(signals, results, extra)
    return signals


def first_choice(choices: Any) -> JsonObject:
    """Choice 0 (the response when `n` > 1), wherever it sits in the list: the first
    object whose `index` is 0 or absent; empty when there is none."""
    for item in arr(choices):
        if isinstance(item, dict):
            index = item.get("index")
            if not _is_int(index) or index == 0:
                return item
    return {}


_PLAIN_CHUNK_KEYS = frozenset(
    {
        "id",
        "object",
        "created",
        "model",
        "system_fingerprint",
        "choices",
        "service_tier",
        "obfuscation",
    }
)
_PLAIN_CHOICE_KEYS = frozenset({"index", "delta", "logprobs", "finish_reason"})
_PLAIN_DELTA_KEYS = frozenset({"content", "role"})


def _plain_text_chunk(payload: JsonObject) -> str | None:
    """The content of a chunk that carries nothing but text for choice 0, else None.

    Such a chunk repeats the model and id of the chunks before it, so the decoder takes
    this path only once an earlier chunk has set them.
    """
    if not payload.keys() <= _PLAIN_CHUNK_KEYS:
        return None
    choices = payload.get("choices")
    if type(choices) is not list or len(choices) != 1:
        return None
    choice = choices[0]
    if (
        type(choice) is not dict
        or not choice.keys() <= _PLAIN_CHOICE_KEYS
        or choice.get("finish_reason") is not None
        or choice.get("index", 0) != 0
    ):
        return None
    delta = choice.get("delta")
    if type(delta) is not dict or not delta.keys() <= _PLAIN_DELTA_KEYS:
        return None
    content = delta.get("content")
    return content if type(content) is str else None


def _message_text(content: Any) -> tuple[str, list[str]]:
    """The text of `message.content` (a string or a list of parts) and any thinking parts."""
    if isinstance(content, str):
        return content, []
    if content is None:
        return "", []
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


def _parts_text(parts: list[Any]) -> str:
    """A refusal given as a list of parts (strings, or `{"type": "refusal" | "text", ...}`
    objects), as one text."""
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            text = part.get("refusal", part.get("text"))
            if isinstance(text, str):
                texts.append(text)
    return "".join(texts)


def content_refusals(content: list[Any]) -> list[str]:
    """The texts of the non-blank `refusal` parts of a content list, in order."""
    found: list[str] = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "refusal":
            text = nonblank(part.get("refusal"))
            if text is not None:
                found.append(text)
    return found


def _reasoning(message: JsonObject, thinking: list[str]) -> str | None:
    if not thinking and not (message.keys() & _REASONING_KEYS):
        return None
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


_REASONING_KEYS = frozenset({"reasoning_content", "reasoning", "reasoning_details"})


def _tool_calls(message: JsonObject) -> list[ToolCall]:
    calls: list[ToolCall] = []
    if "tool_calls" not in message and "function_call" not in message:
        return calls
    for entry in arr(message.get("tool_calls")):
        call = obj(entry)
        name, arguments = _call_parts(call)
        calls.append(
            ToolCall(
                id=string(call.get("id")) or "",
                name=string(name) or "",
                arguments=arguments_text(arguments, ""),
            )
        )
    legacy = obj(message.get("function_call"))
    if legacy:
        calls.append(
            ToolCall(
                name=string(legacy.get("name")) or "",
                arguments=arguments_text(legacy.get("arguments"), ""),
            )
        )
    return calls


def _call_parts(call: JsonObject) -> tuple[Any, Any]:
    """The name and arguments of a `tool_calls` entry: a function's, or a custom tool's
    (whose arguments are its `input`)."""
    function = obj(call.get("function"))
    custom = obj(call.get("custom"))
    if function or not custom:
        return function.get("name"), function.get("arguments")
    return custom.get("name"), custom.get("input")


def _usage(usage: JsonObject) -> Usage:
    if not usage:
        return Usage()
    prompt_details = usage.get("prompt_tokens_details")
    cached = written = 0
    if type(prompt_details) is dict:
        cached = integer(prompt_details.get("cached_tokens"))
        written = integer(prompt_details.get("cache_write_tokens"))  # OpenRouter
    return Usage(
        integer(usage.get("prompt_tokens")),
        integer(usage.get("completion_tokens")),
        cached or integer(usage.get("prompt_cache_hit_tokens")),  # DeepSeek
        written,
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
    """Azure `prompt_filter_results` and the choice's `content_filter_results`.

    Earlier (preview) API versions name the prompt results `prompt_annotations`.
    """
    signals = FilterSignals()
    prompt = body.get("prompt_filter_results")
    if prompt is None:
        prompt = body.get("prompt_annotations")
    for entry in arr(prompt):
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
            filtered.append(azure_category(name))
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


_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@functools.lru_cache(maxsize=256)
def azure_category(name: str) -> str:
    """One spelling for a filter category: `SelfHarm`, `self-harm` and `self harm` (as
    Azure AI Content Safety and some API versions write them) are all `self_harm`."""
    snake = _CAMEL_BOUNDARY.sub("_", name.strip())
    return re.sub(r"[\s-]+", "_", snake).lower()


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
        and (says_blocked(message, _POLICY_MESSAGE) or says_blocked(message))
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
        return _ErrorFields(message=clean_message(page_text(body)))
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
    return bounded_message(value if isinstance(value, str) else _text(value))


def _text(value: Any) -> str | None:
    """A message as text: strings as given, objects and arrays as JSON, anything else None."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return json_text(value)
    return None


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
    return value if type(value) is str and value.strip() else None


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


def _dump(detail: JsonObject) -> str:
    return orjson.dumps(detail).decode()


# ---------------------------------------------------------------------------------------
# Streams

_STREAM_EVENT_NAMES = (None, "message", "error")
"""SSE event names of a Chat Completions stream: none at all; `message`, the SSE default,
which some proxies write out; `error`, the name LM Studio and some gateways give an error."""

_LEGACY_CALL = 2**31
"""Tool-call index of a legacy `function_call`: after every `tool_calls` entry, where
`parse_response` puts it."""

_SEVERITY = {"safe": 0, "low": 1, "medium": 2, "high": 3}

_CUT_SHORT = (FinishReason.LENGTH, FinishReason.PAUSE)
"""Finish reasons that an error reported after them does not turn into an error (as in
`parse_response`): the output was cut short and the error says why."""


def detect_stream(name: str | None, payload: Any) -> str | None:
    """The vendor when the first event of a stream is a Chat Completions chunk.

    A chunk has `choices` (Azure's first chunk has none but `prompt_filter_results`) or
    `object: "chat.completion.chunk"`; the vendor is read from it as from a full response.
    A stream may also open with an error body (OpenAI, Azure, OpenRouter, Mistral, xAI
    shapes; not Ollama's native `{"error": "..."}` nor a typed `error` event of another
    format).
    """
    if name not in _STREAM_EVENT_NAMES or not isinstance(payload, dict):
        return None
    if isinstance(payload.get("choices"), list) or payload.get("object") == "chat.completion.chunk":
        return _response_provider(payload)
    if "prompt_filter_results" in payload or "prompt_annotations" in payload:
        return "azure"
    if is_error(payload):
        return _error_provider(payload)
    return None


class StreamDecoder(WireDecoder):
    """Decoder of a Chat Completions stream (OpenAI and every compatible vendor).

    Each chunk's first choice (`index` 0) is read like `parse_response` reads a message, so
    that the stream and the full response agree:

    - `delta.content` is text (a list of parts too: Mistral `thinking` parts are
      reasoning); `delta.reasoning_content` / `reasoning` / `reasoning_details` reasoning;
      `delta.tool_calls` pieces (by `index`, else by `id`) and the legacy
      `delta.function_call` are tool calls.
    - The first non-blank `delta.refusal` is the verdict: a refusal, from that chunk on,
      whatever `finish_reason` ("stop") follows; the raw finish reason is kept as given.
      Refusal text that follows answer text is appended to the text after a blank line,
      and becomes the explanation, as `parse_response` does with a message that has both.
    - `finish_reason` (OpenRouter's `native_finish_reason` is the raw value) is the
      verdict of its chunk; an unknown value is an error, never a stop.
    - Azure: the prompt results of the first chunk and the `content_filter_results` of
      every chunk are gathered; the first category marked `filtered: true`, or a
      `content_filter` finish, makes the stream a content-filter stop on that chunk. In the
      asynchronous filter mode (chunks with `content_filter_offsets`) annotations follow
      the text they judge and can follow the model's `stop`: a later flagged annotation
      still turns the stream into a content-filter stop.
    - OpenAI `moderation` chunks are recorded; only a moderation result that says it
      blocked is a content-filter stop (see `moderation_signals`).
    - A chunk that is an error body (no `choices`) is read like an HTTP error body
      (`parse_error`): a policy error mid-stream is a content filter. An `error` inside a
      chunk with `choices` (OpenRouter) is read like an error inside a 200 body: a policy
      error blocks; any other error turns a `stop` or `tool_calls` finish (or none) into
      an error, but not a `length` finish that it follows, which it only explains.
      OpenRouter's recorded "Token limit reached" after `finish_reason: "length"` is
      therefore a length stop, as the same body read whole is.
    - The stream ends with `[DONE]` (the driver sees it). Every vendor sends it, but
      recordings (one JSON chunk per line) drop it, so a stream that ends after its
      choice's `finish_reason` is complete too; except under Azure's asynchronous filter,
      whose verdict may still follow the finish: there only `[DONE]` completes it.
      A stream that ends before either is incomplete (an error, unless a refusal or a
      filter was already seen).
    """

    API = API

    def __init__(self, provider: str) -> None:
        super().__init__(provider)
        self._raw: str | None = None
        self._finish: FinishReason | None = None
        self._text = False
        self._refusal: list[str] = []
        self._blank_refusal = ""
        self._refusal_in_text = False
        self._refusal_stop_sent = False
        self._categories: list[str] = []
        self._filter_complete = False
        self._async_filter = False
        self._completion_results: JsonObject = {}
        self._prompt_details: list[Detail] = []
        self._moderation_details: list[Detail] = []
        self._other_details: list[Detail] = []
        self._tool_ids: dict[str, int] = {}
        self._tool_names: dict[int, str] = {}
        self._last_tool: int | None = None
        self._max_tool = -1

    def quick(self, name: str | None, data: str | bytes) -> list[StreamEvent] | None:
        """The plain text chunk of `decode` (see `_plain_text_chunk`) read through Structs
        that take nothing else; None for any other chunk."""
        if self.acc.request_id is None:
            return None
        try:
            text = _decode_plain_chunk(data).choices[0].delta.content
        except FAST_FAILED:
            return None
        if text:
            self._text = True
            return [TextDelta(text)]
        return []

    def decode(self, name: str | None, payload: Any) -> list[StreamEvent]:
        if not isinstance(payload, dict):
            return [StreamError("a Chat Completions stream event is not a JSON object")]
        text = _plain_text_chunk(payload) if self.acc.request_id is not None else None
        if text is not None:
            # Nearly every chunk of a long answer: one choice, a content delta, nothing
            # else to read. Same result as the full path below, without its lookups.
            if text:
                self._text = True
                return [TextDelta(text)]
            return []
        model = nonblank(payload.get("model"))
        if model is not None:
            self.acc.model = model
        request_id = nonblank(payload.get("id"))
        if request_id is not None:
            self.acc.request_id = request_id
        if is_error(payload) or (name == "error" and "choices" not in payload):
            return self._error_body(payload)
        events: list[StreamEvent] = []
        self._prompt_filters(payload, events)
        choices = payload.get("choices")
        choice = first_choice(choices)
        if choice:
            # n > 1: the other choices are not the response (as in parse_response)...
            self._choice(choice, events)
        if type(choices) is list and (len(choices) > 1 or not choice):
            # ...but a filter that stopped one of them filtered the response.
            other = other_choices_filtered(choices, choice)
            if other is not None:
                self._other_details.extend(other.details)
                self._flag(other.filtered)
                events += self._filter_verdict(complete=False)
        usage = payload.get("usage")
        if not isinstance(usage, dict):
            usage = obj(payload.get("x_groq")).get("usage")  # Groq's last chunk
        if isinstance(usage, dict):
            events.append(UsageUpdate(_usage(usage)))
        if payload.get("moderation") is not None:
            signals = moderation_signals(payload.get("moderation"))
            self._moderation_details.extend(signals.details)
            if self._flag(signals.blocked):
                events += self._filter_verdict(complete=False)
        error = payload.get("error")
        if (isinstance(error, dict) and error) or (isinstance(error, str) and error.strip()):
            events += self._in_body_error(error)
        return events

    def finish(self) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        stop = self._refusal_stop()
        if stop is not None:
            events.append(Verdict(FinishReason.REFUSAL, self._raw, stop))
        if len(self._categories) > 1 and not self._filter_complete:
            events += self._filter_verdict(complete=True)
        # Details in the order parse_response gives them: prompt, completion, moderation.
        for detail in self._prompt_details:
            self.acc.add_detail(_detail_text(detail))
        if self._completion_results:
            signals = FilterSignals()
            _add_azure_results(signals, self._completion_results, {"source": "completion"})
            for detail in signals.details:
                self.acc.add_detail(_detail_text(detail))
        for detail in self._other_details:
            self.acc.add_detail(_detail_text(detail))
        for detail in self._moderation_details:
            self.acc.add_detail(_detail_text(detail))
        if self._finish is not None and not self._async_filter:
            self.done = True
        return events

    # -- one chunk ---------------------------------------------------------------------

    def _prompt_filters(self, payload: JsonObject, events: list[StreamEvent]) -> None:
        entries = payload.get("prompt_filter_results")
        if entries is None:
            entries = payload.get("prompt_annotations")
        if not isinstance(entries, list) or not entries:
            return
        signals = azure_filter_signals({"prompt_filter_results": entries}, {})
        self._prompt_details.extend(signals.details)
        if self._flag(signals.filtered):
            events += self._filter_verdict(complete=False)

    def _choice(self, choice: JsonObject, events: list[StreamEvent]) -> None:
        delta = obj(choice.get("delta")) or obj(choice.get("message"))
        if delta:
            self._delta(delta, events)
        if "content_filter_offsets" in choice:
            self._async_filter = True
        flagged = False
        results = choice.get("content_filter_results")
        if isinstance(results, dict) and results:
            self._merge_results(results)
            flagged = self._flag(azure_filtered_categories(results)[0])
        raw = string(choice.get("finish_reason"))
        if raw is None:
            if flagged:
                events += self._filter_verdict(complete=False)
            return
        native = string(choice.get("native_finish_reason"))
        self._raw = native if native is not None else raw
        self._finish = FINISH_REASONS.get(raw, FinishReason.ERROR)
        if native is not None:
            self._finish = native_finish(native, self._finish)
        if self._finish is FinishReason.CONTENT_FILTER or self._categories:
            events += self._filter_verdict(complete=self._finish is FinishReason.CONTENT_FILTER)
        elif self._refusal:
            events.append(Verdict(FinishReason.REFUSAL, self._raw, self._refusal_stop()))
        else:
            events.append(Verdict(self._finish, self._raw))

    def _delta(self, delta: JsonObject, events: list[StreamEvent]) -> None:
        reasoning = None
        for key in ("reasoning_content", "reasoning"):
            reasoning = string(delta.get(key))
            if reasoning:
                break
        if reasoning:
            events.append(ReasoningDelta(reasoning))
        else:
            # OpenRouter also gives the reasoning as `reasoning_details` text entries.
            for entry in arr(delta.get("reasoning_details")):
                text = string(obj(entry).get("text"))
                if text:
                    events.append(ReasoningDelta(text))
        content = delta.get("content")
        text, thinking = _message_text(content)
        events.extend(ReasoningDelta(piece) for piece in thinking)
        if text:
            self._text = True
            events.append(TextDelta(text))
        raw_refusal = delta.get("refusal")
        refusal = string(raw_refusal) if type(raw_refusal) is not list else _parts_text(raw_refusal)
        if not refusal and type(content) is list:
            refusal = "\n\n".join(content_refusals(content))
        if refusal:
            self._refusal_piece(refusal, events)
        for entry in arr(delta.get("tool_calls")):
            call = obj(entry)
            name, arguments = _call_parts(call)
            index = self._tool_index(call)
            events.append(self._tool_delta(index, string(call.get("id")), name, arguments))
        legacy = obj(delta.get("function_call"))
        if legacy:
            events.append(
                self._tool_delta(_LEGACY_CALL, None, legacy.get("name"), legacy.get("arguments"))
            )

    def _refusal_piece(self, piece: str, events: list[StreamEvent]) -> None:
        if self._categories or self._finish is FinishReason.CONTENT_FILTER:
            return  # a filter stop keeps the text only, as parse_response does
        if not self._refusal:
            piece = self._blank_refusal + piece
            if not piece.strip():
                self._blank_refusal = piece  # a blank refusal is none (parse_response)
                return
            self._blank_refusal = ""
            self._refusal_in_text = self._text
            self._refusal.append(piece)
            events.append(TextDelta("\n\n" + piece) if self._text else RefusalDelta(piece))
            events.append(Verdict(FinishReason.REFUSAL, self._raw))
            return
        self._refusal.append(piece)
        events.append(TextDelta(piece) if self._refusal_in_text else RefusalDelta(piece))

    def _refusal_stop(self) -> StopDetails | None:
        """The explanation of a refusal that followed answer text, given once."""
        if not self._refusal_in_text or self._refusal_stop_sent:
            return None
        self._refusal_stop_sent = True
        return StopDetails(explanation="".join(self._refusal))

    def _tool_index(self, call: JsonObject) -> int:
        """The call a tool-call piece belongs to: its `index`, else its `id`, else the last."""
        index = call.get("index")
        call_id = string(call.get("id"))
        if isinstance(index, int) and not isinstance(index, bool):
            if call_id:
                self._tool_ids.setdefault(call_id, index)
        elif call_id:
            known = self._tool_ids.get(call_id)
            index = known if known is not None else self._max_tool + 1
            self._tool_ids[call_id] = index
        elif self._last_tool is not None:
            index = self._last_tool
        else:
            index = self._max_tool + 1
        self._last_tool = index
        self._max_tool = max(self._max_tool, index)
        return index

    def _tool_delta(
        self, index: int, call_id: str | None, name: Any, arguments: Any
    ) -> ToolCallDelta:
        # A name can come in pieces (local servers split it); one repeated whole is kept once.
        piece = string(name) or ""
        known = self._tool_names.get(index, "")
        full = known if piece == known else known + piece
        if full:
            self._tool_names[index] = full
        return ToolCallDelta(
            index, id=call_id or None, name=full or None, arguments=arguments_text(arguments, "")
        )

    def _merge_results(self, results: JsonObject) -> None:
        """Fold one chunk's `content_filter_results` into the whole completion's."""
        merged = self._completion_results
        for name, value in results.items():
            if name == "error":
                if obj(value) and "error" not in merged:
                    merged[name] = value
            elif name == "custom_blocklists":
                if name not in merged or azure_filtered_categories({name: value})[0]:
                    merged[name] = value
            else:
                item, seen = obj(value), obj(merged.get(name))
                entry: JsonObject = dict(seen)
                for flag in ("filtered", "detected"):
                    if isinstance(item.get(flag), bool):
                        entry[flag] = seen.get(flag) is True or item[flag]
                severity = item.get("severity")
                if isinstance(severity, str) and _SEVERITY.get(severity, 4) >= _SEVERITY.get(
                    string(seen.get("severity")) or "", -1
                ):
                    entry["severity"] = severity
                merged[name] = entry

    def _flag(self, categories: list[str]) -> bool:
        """Record filtered categories; True when one of them is new."""
        new = [c for c in categories if c and c not in self._categories]
        self._categories.extend(new)
        return bool(new)

    def _filter_verdict(self, *, complete: bool) -> list[StreamEvent]:
        """The content-filter verdict, naming the categories filtered so far.

        Until the filter's last word (`complete`), only the first category is given: the
        accumulator keeps the first list it is given, and later annotations may add more.
        """
        if self._refusal:
            return []  # a refusal came first and is final
        if complete:
            self._filter_complete = True
            stop = stop_for(list(self._categories), None)
        else:
            stop = stop_for(self._categories[:1], None)
        return [Verdict(FinishReason.CONTENT_FILTER, self._raw, stop)]

    # -- errors ------------------------------------------------------------------------

    def _error_body(self, payload: JsonObject) -> list[StreamEvent]:
        """A chunk that is an error body: read as `parse_error` reads an HTTP error body."""
        result = parse_error(payload, None, self.acc.provider or "openai")
        keep_error_details(self, result)
        error = result.error
        message = (error.message if error is not None else None) or "the stream reported an error"
        return [
            Verdict(result.finish_reason, result.raw_finish_reason, result.stop_details),
            StreamError(message, error),
        ]

    def _in_body_error(self, error: Any) -> list[StreamEvent]:
        """An `error` beside `choices`: read as `parse_response` reads one in a 200 body."""
        if self._refusal or self._categories or self._finish is FinishReason.CONTENT_FILTER:
            return []
        verdict = classify_error({"error": error}, None)
        message = verdict.error.message or "the stream reported an error"
        if verdict.error.kind is ErrorKind.POLICY:
            finish = FinishReason.REFUSAL if verdict.refusal else FinishReason.CONTENT_FILTER
            return [Verdict(finish, self._raw, verdict.stop), StreamError(message, verdict.error)]
        if self._finish in _CUT_SHORT:
            return []
        return [Verdict(FinishReason.ERROR, self._raw), StreamError(message, verdict.error)]


def keep_error_details(decoder: WireDecoder, result: LLMResponse) -> None:
    """Keep the details an error body's response has besides its stop details (which
    travel in the verdict), e.g. Azure's filter results or OpenRouter's moderation facts."""
    for detail in result.reasoning_details or ():
        if detail_type(decode_detail(detail)) != "stop_details":
            decoder.acc.add_detail(_detail_text(detail))


def _detail_text(detail: Detail) -> str:
    return detail if isinstance(detail, str) else json_text(dict(detail))


# --- typed fast path (see providers/_common.py) ----------------------------------------
#
# The common body (one choice, text or tool calls, usage, Azure filter results that flag
# nothing, OpenAI moderation) is read through Structs; the parts that are rare or come in
# many shapes (an error in the body, legacy function calls, content parts, reasoning
# details) are kept as Raw and read by the dict reader's own helpers. Azure filter results
# that flag or annotate something are read by the dict reader whole (`parse_response` of
# the orjson body: the detection is done). What it cannot mirror cheaply (a choice with a
# `delta`, a custom tool call), it leaves to the dict path.
#
# gc=False: decoded Structs hold no cycles, and untracked ones are quicker to allocate.
# Fields come in the order OpenAI writes them, which msgspec matches keys against first.


class _FastFunction(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | None = None


class _FastToolCall(msgspec.Struct, gc=False):
    id: str | None = None
    function: _FastFunction | None = None
    custom: Absent = 0  # `function or not custom`: an empty `function` cannot be told


class _FastMessage(msgspec.Struct, gc=False):
    content: str | list[Raw] | None = None
    tool_calls: list[_FastToolCall] | None = None
    refusal: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    reasoning_details: Raw = NO_RAW
    function_call: Raw = NO_RAW


class _FastFilter(msgspec.Struct, gc=False):
    """One category of Azure filter results, as `azure_filtered_categories` reads it."""

    filtered: bool | str | None = None
    severity: str | bool | None = None
    detected: bool | str | None = None


# `content_filter_results`: a category's value read as an object, or (a list, null) as
# nothing. `error` and `custom_blocklists` decode too, but send the body to the dict reader.
_FastFilters = dict[str, _FastFilter | list[Raw] | None]


class _FastPromptFilter(msgspec.Struct, gc=False):
    prompt_index: Raw = NO_RAW  # read only into details: by then the dict reader reads
    content_filter_results: _FastFilters | None = None


class _FastModerationResult(msgspec.Struct, gc=False):
    flagged: bool | None = None
    categories: dict[str, bool | None] | None = None
    blocked: bool | None = None
    action: str | None = None
    model: str | None = None


class _FastModerationOutcome(_FastModerationResult, gc=False):
    """`moderation.input` or `.output`: a list of results, an error, or itself a result."""

    type: str | None = None
    code: Raw = NO_RAW
    message: Raw = NO_RAW
    results: list[_FastModerationResult] | msgspec.UnsetType | None = msgspec.UNSET


class _FastModeration(msgspec.Struct, gc=False):
    input: _FastModerationOutcome | None = None
    output: _FastModerationOutcome | None = None


class _FastChoice(msgspec.Struct, gc=False):
    index: Int | None = 0
    message: _FastMessage | None = None
    finish_reason: str | None = None
    # Present at all (null included) makes the body OpenRouter's.
    native_finish_reason: str | msgspec.UnsetType | None = msgspec.UNSET
    content_filter_results: _FastFilters | msgspec.UnsetType | None = msgspec.UNSET
    # `message or delta`: an empty message cannot be told from none here.
    delta: Absent = 0


class _FastPromptDetails(msgspec.Struct, gc=False):
    cached_tokens: Count | None = 0
    cache_write_tokens: Count | None = 0


class _FastUsage(msgspec.Struct, gc=False):
    prompt_tokens: Count | None = 0
    completion_tokens: Count | None = 0
    prompt_tokens_details: _FastPromptDetails | None = None
    prompt_cache_hit_tokens: Count | None = 0


class _FastCompletion(msgspec.Struct, gc=False):
    id: str | None = None
    object: str | None = None
    model: str | None = None
    choices: list[_FastChoice] | None = None
    usage: _FastUsage | None = None
    system_fingerprint: str | None = None
    moderation: _FastModeration | None = None
    prompt_filter_results: list[_FastPromptFilter] | msgspec.UnsetType | None = msgspec.UNSET
    prompt_annotations: list[_FastPromptFilter] | msgspec.UnsetType | None = msgspec.UNSET
    provider: str | None = None
    error: Raw = NO_RAW
    x_groq: Raw = NO_RAW
    # Bedrock InvokeModel's markers, which detection checks (with a provider given too, the
    # dict path reads such a body alike).
    guardrail_action: Absent = msgspec.field(default=0, name="amazon-bedrock-guardrailAction")
    invocation_metrics: Absent = msgspec.field(default=0, name="amazon-bedrock-invocationMetrics")


_decode_completion = msgspec.json.Decoder(_FastCompletion).decode
_NO_CHOICE = _FastChoice()
_NO_MESSAGE = _FastMessage()

# Enum members and msgspec.UNSET as plain globals: reading a member off its class costs
# about 80 ns a time (EnumType.__getattr__), which the hot path pays several times.
_UNSET = msgspec.UNSET
_ERROR = FinishReason.ERROR
_REFUSAL = FinishReason.REFUSAL
_CONTENT_FILTER = FinishReason.CONTENT_FILTER
_FINISH_OR_ERROR: dict[str | None, FinishReason] = dict(FINISH_REASONS.items())
"""`FINISH_REASONS` where None (no finish reason) is absent too: one lookup gives ERROR."""
_finish_or_error = _FINISH_OR_ERROR.get
_ERROR_OVERTURNS = frozenset({FinishReason.STOP, FinishReason.TOOL_CALLS})
"""Finish reasons that an error in the body turns into ERROR (as in `parse_response`)."""

# The provider names `normalize` sends to this module's fast path (`_FAST_BY_PROVIDER`).
_FAST_PROVIDERS = frozenset(
    {"openai", "azure", "openrouter", "deepseek", "xai", "groq", "mistral", "ollama"}
)

# A value the dict helpers read on Raw parts could trip them as it trips the dict path,
# which then reads the body again, tamed (see `normalize`): leave such bodies to it.
_MAPPING_FAILED = (*FAST_FAILED, TypeError, ValueError, OverflowError, KeyError, IndexError)


def parse_fast(data: bytes | str, provider: str | None) -> LLMResponse | None:
    """`parse_response` of a well-typed Chat Completions body read through Structs, or None.

    The common body is mapped here in one function (each helper call costs about 50 ns,
    a tenth of the mapping); helpers read only the parts few bodies have."""
    if provider is not None and provider not in _FAST_PROVIDERS:
        return None
    try:
        body = _decode_completion(data)
    except FAST_FAILED:
        return None
    choices = body.choices
    if choices is None:
        return None
    prompt_filters = (
        body.prompt_filter_results is not _UNSET or body.prompt_annotations is not _UNSET
    )
    if provider is None:
        # What detection checks: the `object` hint (without it, other formats are asked
        # first); a Bedrock InvokeModel marker is declined by the decode.
        if body.object != "chat.completion":
            return None
        # Then `_response_provider`, in line.
        if prompt_filters:
            provider = "azure"
        else:
            # The markers of any choice count; a loop costs more than the mapping's usual
            # choice does, so the one choice is read directly.
            marked = choices[0] if len(choices) == 1 else _marked_choice(choices)
            if marked.content_filter_results is not _UNSET:
                provider = "azure"
            elif body.provider is not None or marked.native_finish_reason is not _UNSET:
                provider = "openrouter"
            elif body.x_groq:
                provider = "groq"
            elif body.system_fingerprint == "fp_ollama":
                provider = "ollama"
            else:
                model = body.model
                provider = (
                    "openai"
                    if model is None
                    else _MODEL_VENDORS.get(model) or _remember_vendor(model)
                )
    elif body.object == "response":
        return None  # a Responses object, whatever the vendor (`_module_for`)
    # Choice 0, as `first_choice` finds it: every entry decoded as an object, and the
    # only `index` values that are not integers are null.
    choice = choices[0] if choices else _NO_CHOICE
    if choice.index:
        choice = next((c for c in choices if c.index is None or c.index == 0), choice)
    if len(choices) > 1 and any(
        c is not choice
        and (c.finish_reason == "content_filter" or c.content_filter_results is not _UNSET)
        for c in choices
    ):
        # Another choice was (or may have been) filtered: `other_choices_filtered`.
        return parse_response(orjson.loads(data), provider)
    try:
        if (
            prompt_filters or choice.content_filter_results is not _UNSET
        ) and _azure_flags_something(body, choice):
            return parse_response(orjson.loads(data), provider)

        # From here on, `parse_response` of the Structs (`nonblank` inlined). Azure filter
        # results here flag nothing (see `_azure_flags_something`).
        message = choice.message or _NO_MESSAGE
        text = message.content
        parts: list[Any] | None = None
        thinking: list[str] | None = None
        if text is None:
            text = ""
        elif not isinstance(text, str):
            parts = [raw_value(part) for part in text]
            text, thinking = _message_text(parts)
        reasoning = message.reasoning_content
        if reasoning is None or not reasoning.strip():
            reasoning = message.reasoning
            if reasoning is None or not reasoning.strip():
                reasoning = None
                if thinking or message.reasoning_details:
                    reasoning = _fast_thinking(thinking or [], message.reasoning_details)
        refusal = message.refusal
        if refusal is not None and not refusal.strip():
            refusal = None
        if parts is not None and refusal is None:
            refusal = nonblank("\n\n".join(content_refusals(parts)))

        tool_calls: list[ToolCall] = []
        calls = message.tool_calls
        if calls:
            for call in calls:
                function = call.function
                if function is None:
                    tool_calls.append(ToolCall(call.id or "", "", ""))
                else:
                    name, arguments = function.name or "", function.arguments or ""
                    tool_calls.append(ToolCall(call.id or "", name, arguments))
        if message.function_call:
            tool_calls += _tool_calls({"function_call": raw_value(message.function_call)})

        raw = choice.finish_reason
        finish = _finish_or_error(raw, _ERROR)
        native = choice.native_finish_reason
        if native is not _UNSET and native is not None:
            finish = native_finish(native, finish)
            raw = native  # the upstream model's own value is the one kept

        details: list[Detail] = []
        blocked: list[str] | None = None
        moderation = body.moderation
        if moderation is not None:
            blocked = []
            _fast_moderation(moderation, blocked, details)
        error: ProviderError | None = None
        content = text
        if finish is _CONTENT_FILTER or blocked:
            finish = _CONTENT_FILTER
            stop = stop_for(_unique(blocked), None) if blocked else None
            if stop is not None:
                details.insert(0, stop.to_detail())
        elif refusal is not None:
            finish = _REFUSAL
            if content:
                content = f"{content}\n\n{refusal}"
                details.insert(0, StopDetails(explanation=refusal).to_detail())
            else:
                content = refusal
        elif body.error:
            finish, stop, error = _fast_in_body_error(body.error, finish)
            if stop is not None:
                details.insert(0, stop.to_detail())

        usage = body.usage
        if usage is None:
            counts = Usage()
        else:
            prompt_details = usage.prompt_tokens_details
            if prompt_details is None:
                cached = usage.prompt_cache_hit_tokens or 0
                written = 0
            else:
                cached = prompt_details.cached_tokens or usage.prompt_cache_hit_tokens or 0
                written = prompt_details.cache_write_tokens or 0
            counts = new_usage(
                usage.prompt_tokens or 0, usage.completion_tokens or 0, cached, written, []
            )
        model = body.model
        request_id = body.id
        return new_response(
            content or None,
            tool_calls,
            reasoning,
            details,
            counts,
            finish,
            raw,
            model if model is not None and model.strip() else None,
            request_id if request_id is not None and request_id.strip() else None,
            provider,
            API,
            finish in INTERRUPTED and bool(text or tool_calls),
            error,
        )
    except _MAPPING_FAILED:
        return None


def _marked_choice(choices: list[_FastChoice]) -> _FastChoice:
    """A choice with Azure's marker if any has one, else one with OpenRouter's, else none."""
    for choice in choices:
        if choice.content_filter_results is not _UNSET:
            return choice
    for choice in choices:
        if choice.native_finish_reason is not _UNSET:
            return choice
    return _NO_CHOICE


def _remember_vendor(model: str) -> str:
    """`_vendor_of_model`, remembered in `_MODEL_VENDORS` (about 45 ns less than its lru_cache)."""
    vendor = _vendor_of_model(model)
    if len(_MODEL_VENDORS) < _MODEL_VENDORS_KEPT:
        _MODEL_VENDORS[model] = vendor
    return vendor


# Bounded like the lru_cache (a client sees few distinct names), but never evicting.
_MODEL_VENDORS: dict[str, str] = {}
_MODEL_VENDORS_KEPT = 512


def _fast_thinking(thinking: list[str], reasoning_details: Raw) -> str | None:
    """`_reasoning`'s answer from thinking parts or OpenRouter `reasoning_details`."""
    if not thinking and reasoning_details:
        _add_reasoning_details(thinking, raw_value(reasoning_details))
    return "\n\n".join(thinking) if thinking else None


def _fast_in_body_error(
    value: Raw, finish: FinishReason
) -> tuple[FinishReason, StopDetails | None, ProviderError | None]:
    """`parse_response`'s reading of an `error` beside `choices` (OpenRouter)."""
    in_body_error = obj(raw_value(value))
    if not in_body_error:
        return finish, None, None
    verdict = classify_error({"error": in_body_error}, None)
    if verdict.error.kind is ErrorKind.POLICY:
        return _REFUSAL if verdict.refusal else _CONTENT_FILTER, verdict.stop, verdict.error
    return _ERROR if finish in _ERROR_OVERTURNS else finish, None, verdict.error


def _azure_flags_something(body: _FastCompletion, choice: _FastChoice) -> bool:
    """Whether the filter results `azure_filter_signals` reads give it anything to say: a
    category filtered, detected or rated above `safe`, a filter error, or a blocklist."""
    prompt = body.prompt_filter_results
    if not isinstance(prompt, list):
        prompt = body.prompt_annotations
    if isinstance(prompt, list):
        for entry in prompt:
            if entry.content_filter_results and _flags_something(entry.content_filter_results):
                return True
    results = choice.content_filter_results
    return isinstance(results, dict) and _flags_something(results)


def _flags_something(results: _FastFilters) -> bool:
    for name, item in results.items():
        if name in ("error", "custom_blocklists"):
            return True
        if not isinstance(item, _FastFilter):
            continue  # null or a list: `obj` of it is empty
        severity = item.severity
        if (
            item.filtered is True
            or item.detected is True
            or (isinstance(severity, str) and severity != "safe")
        ):
            return True
    return False


def _fast_moderation(
    moderation: _FastModeration, blocked: list[str], details: list[Detail]
) -> None:
    """`moderation_signals` of the Structs, into `blocked` and `details`."""
    for source, outcome in (("input", moderation.input), ("output", moderation.output)):
        if outcome is None:
            continue
        if outcome.type == "error":
            error = {
                "code": string(raw_value(outcome.code)),
                "message": clean_message(raw_value(outcome.message)),
            }
            details.append(_dump({"type": "moderation", "source": source, "error": error}))
            continue
        results = outcome.results
        if results is _UNSET:
            results = [outcome]
        outcome_blocks = _fast_says_blocked(outcome)
        for item in results or ():
            categories = [name for name, value in (item.categories or {}).items() if value is True]
            says_blocked = outcome_blocks or _fast_says_blocked(item)
            flagged = item.flagged is True
            if not (flagged or categories or says_blocked):
                continue
            if says_blocked:
                blocked.extend(categories)
            detail: JsonObject = {
                "type": "moderation",
                "source": source,
                "flagged": flagged,
                "categories": categories,
            }
            if says_blocked:
                detail["blocked"] = True
            model = item.model or outcome.model
            if model:
                detail["model"] = model
            details.append(_dump(detail))


def _fast_says_blocked(item: _FastModerationResult) -> bool:
    action = item.action
    return item.blocked is True or (action is not None and action.lower() in ("block", "blocked"))


def _add_reasoning_details(thinking: list[str], entries: Any) -> None:
    """`_reasoning`'s reading of OpenRouter `reasoning_details` text entries."""
    for entry in arr(entries):
        text = string(obj(entry).get("text"))
        if text:
            thinking.append(text)


# A plain text chunk, exactly as `_plain_text_chunk` takes it: only the keys it allows
# (any other key is an error, so the chunk goes to `decode`), one choice, index 0, no
# finish reason, a string `content`. The values it does not read may be anything: Any
# (about 10% quicker here than Raw, and dropped unread). Fields in wire order (kw_only
# lets the required ones sit where the wire has them).


class _PlainDelta(msgspec.Struct, forbid_unknown_fields=True, gc=False, kw_only=True):
    role: Any = None
    content: str


class _PlainChoice(msgspec.Struct, forbid_unknown_fields=True, gc=False, kw_only=True):
    index: Literal[0] = 0
    delta: _PlainDelta
    logprobs: Any = None
    finish_reason: None = None


class _PlainChunk(msgspec.Struct, forbid_unknown_fields=True, gc=False, kw_only=True):
    id: Any = None
    object: Any = None
    created: Any = None
    model: Any = None
    system_fingerprint: Any = None
    choices: tuple[_PlainChoice]
    service_tier: Any = None
    obfuscation: Any = None


_decode_plain_chunk = msgspec.json.Decoder(_PlainChunk).decode
