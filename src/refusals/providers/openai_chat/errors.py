"""Error bodies of every Chat-Completions-compatible vendor (and error text that is not
JSON), read through the schema's `ErrorBody` and classified by one set of rules.

Responses error bodies have the same shape and are classified here too; so are errors
inside a 200 body or a stream chunk (OpenRouter), and the bodies of no known shape
(provider `"unknown"`), which the HTTP status classifies.
https://platform.openai.com/docs/guides/error-codes,
https://openrouter.ai/docs/api/reference/errors-and-debugging,
https://api-docs.deepseek.com/quick_start/error_codes, https://docs.x.ai/developers/debugging,
https://console.groq.com/docs/errors, https://docs.mistral.ai/api/
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import msgspec

from refusals.model import (
    Detail,
    ErrorKind,
    FinishReason,
    LLMResponse,
    ProviderError,
    StopDetails,
)
from refusals.providers._common import (
    FAST_FAILED,
    JsonObject,
    error_response,
    may_contain,
    page_text,
    says_blocked,
    status_error_kind,
    string,
)
from refusals.providers._lenient import Given, filled, lenient, raw_value
from refusals.providers.openai_chat.filters import (
    azure_filtered_categories,
    clean_message,
    dump,
    text_of,
)
from refusals.providers.openai_chat.schema import (
    ErrorBody,
    ErrorObject,
    Metadata,
    decode_error_body,
    decode_error_object,
    decode_error_text,
)

API = "chat.completions"

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

_POLICY_MESSAGE = re.compile(
    r"(?i)flagged as potentially violating|violat\w* (?:our |the )?usage polic|"
    r"content (?:management )?polic|safety system|content violates"
)
_AUTH_MESSAGE = re.compile(
    r"(?i)incorrect api key|invalid api key|api key (?:is )?(?:invalid|missing|disabled)|"
    r"authentication fails|no auth credentials|insufficient balance|\bcredits?\b|spending limit"
)
# Words the patterns above cannot match without (see `may_contain`).
_POLICY_MESSAGE_WORDS = ("violat", "content", "safety system")
_AUTH_WORDS = (
    "api key",
    "authentication fails",
    "no auth credentials",
    "insufficient balance",
    "credit",
    "spending limit",
)
XAI_CHECK = re.compile(r"SAFETY_CHECK_TYPE_([A-Za-z0-9_]+)")
_XAI_MODEL = re.compile(r"\bModel:\s*([^,\s]+)")
_NO_METADATA = Metadata()


@dataclass(frozen=True)
class ErrorVerdict:
    """An error body classified: the error, the notice facts, and whether a model declined."""

    error: ProviderError
    stop: StopDetails | None
    refusal: bool = False
    model: str | None = None
    details: tuple[Detail, ...] = ()


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


def parse_error(body: JsonObject | str, status: int | None, provider: str) -> LLMResponse:
    """An HTTP error body (or error text that was not JSON) as an `LLMResponse`."""
    return to_error(classify_error(body, status), provider)


def parse_error_fast(data: bytes | str, status: int | None, provider: str) -> LLMResponse | None:
    """`parse_error` of an error body decoded strictly from its bytes, or None."""
    try:
        body = decode_error_body(data)
    except FAST_FAILED:
        return None
    return to_error(classify(body, status), provider)


def to_error(verdict: ErrorVerdict, provider: str) -> LLMResponse:
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


def classify_error(body: Any, status: int | None) -> ErrorVerdict:
    """Classify a decoded error body (any value; a string is error text, not JSON)."""
    if isinstance(body, str):
        return classify(body, status)
    return classify(lenient(body if isinstance(body, dict) else {}, ErrorBody), status)


def error_value(value: msgspec.Raw | Given) -> ErrorObject | str | None:
    """An `error` kept Raw beside an answer (a 200 body, a chunk): the error object when it
    is a non-empty object, the text when it is a string, else None. Raises what a strict
    decode raises on bytes it does not take."""
    if not value:
        return None
    if isinstance(value, Given):
        given = value.value
        if isinstance(given, str):
            return given
        return filled(value, ErrorObject, decode_error_object)
    if memoryview(value)[0] == 0x22:  # '"'
        text: str = decode_error_text(value)
        return text
    return filled(value, ErrorObject, decode_error_object)


def classify(body: ErrorBody | str, status: int | None) -> ErrorVerdict:
    """The one classification of an error body (or error text) of this family."""
    fields = _fields(body)
    effective = status if status is not None else fields.status
    codes = {c.lower() for c in (fields.code, fields.type) if c}
    message = fields.message

    policy = _policy(fields, codes, effective)
    if policy is not None:
        return policy
    if codes & AUTH_CODES:
        kind = ErrorKind.AUTH
    elif (
        message
        and effective in (None, 400, 401, 402, 403)
        and may_contain(message, _AUTH_WORDS)
        and _AUTH_MESSAGE.search(message)
    ):
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


@dataclass
class _Fields:
    message: str | None = None
    code: str | None = None
    type: str | None = None
    status: int | None = None
    metadata: Metadata = _NO_METADATA
    error: ErrorObject | None = None


def _fields(body: ErrorBody | str) -> _Fields:
    if isinstance(body, str):
        return _Fields(message=clean_message(page_text(body)))
    error = body.error
    if isinstance(error, ErrorObject):
        metadata = error.metadata or _NO_METADATA
        message = text_of(raw_value(error.message))
        raw = text_of(raw_value(metadata.raw))
        if raw and raw != message:
            # OpenRouter: "Provider returned error", with the upstream's own words in `raw`.
            message = f"{message}: {raw}" if message else raw
        return _Fields(
            message=clean_message(message),
            code=_code(error.code),
            type=error.type,
            status=_status(error.status) or _status(error.code),
            metadata=metadata,
            error=error,
        )
    if isinstance(error, str):
        # xAI: {"code": "<gRPC status text>", "error": "<message>"}; Ollama: {"error": "..."}.
        return _Fields(message=clean_message(error), code=string(body.code))
    if body.object == "error":
        # Mistral: {"object": "error", "message": ..., "type": ..., "param": ..., "code": ...}
        message = clean_message(raw_value(body.message))
        return _Fields(message=message, code=_code(body.code), type=body.type)
    return _Fields(
        message=clean_message(raw_value(body.message)) or clean_message(raw_value(body.detail)),
        code=_code(body.code),
        type=body.type,
    )


def _policy(fields: _Fields, codes: set[str], status: int | None) -> ErrorVerdict | None:
    """The verdict when the body is a safety or content-policy block, else None."""
    message = fields.message
    metadata = fields.metadata
    error = fields.error
    inner = error.innererror if error is not None else None
    categories: list[str] = []
    refusal = False
    code = fields.code
    details: list[Detail] = []

    error_type = (metadata.error_type or "").lower()
    reasons = [r for r in metadata.reasons or () if isinstance(r, str) and r]
    inner_code = ((inner.code if inner is not None else None) or "").lower()
    check = XAI_CHECK.search(message or "")

    if inner_code == "responsibleaipolicyviolation" or "content_filter" in codes:
        # Azure: the categories are in innererror.content_filter_result(s).
        side = (error.param if error is not None else None) or "prompt"
        for source in (inner, error):
            if source is None:
                continue
            for given in (source.content_filter_result, source.content_filter_results):
                filtered, kept = azure_filtered_categories(raw_value(given))
                categories.extend(filtered)
                if kept:
                    details.append(
                        dump({"type": "azure_content_filter", "source": side, "results": kept})
                    )
    elif (
        error_type in OPENROUTER_POLICY_TYPES
        or reasons
        or metadata.flagged_input is not msgspec.UNSET
    ):
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
        flagged = metadata.flagged_input
        if isinstance(flagged, str) and flagged:
            facts["flagged_input"] = clean_message(flagged)
        if metadata.provider_name:
            facts["provider_name"] = metadata.provider_name
        if metadata.model_slug:
            facts["model_slug"] = metadata.model_slug
        details.append(dump(facts))
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
        and (
            (may_contain(message, _POLICY_MESSAGE_WORDS) and says_blocked(message, _POLICY_MESSAGE))
            or says_blocked(message)
        )
        and (status is None or status in (400, 403, 422))
        and not codes & AUTH_CODES
    ):
        return None

    return ErrorVerdict(
        error=ProviderError(ErrorKind.POLICY, status, code, fields.message),
        stop=stop_for(unique(categories), message),
        refusal=refusal,
        model=_error_model(fields),
        details=tuple(details),
    )


def _error_model(fields: _Fields) -> str | None:
    slug = fields.metadata.model_slug
    if slug:
        return slug
    found = _XAI_MODEL.search(fields.message or "")
    return found.group(1) if found else None


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


def unique(items: list[str]) -> list[str]:
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
