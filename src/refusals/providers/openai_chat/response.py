"""A chat completion as an `LLMResponse`: one mapping from the schema's `Completion`, for
bytes (strict decode) and decoded values (the lenient pass) alike."""

from __future__ import annotations

from typing import Any

import msgspec

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
    INTERRUPTED,
    NOT_PLAIN,
    PLAIN_FINISHES,
    JsonObject,
    Keyed,
    NormalizeError,
    Plain,
    arguments_text,
    key_names,
    keyed,
    require_object,
)
from refusals.providers._lenient import Given, filled, is_null, lenient, raw_value
from refusals.providers.openai_chat.errors import (
    API,
    classify,
    error_value,
    nonblank,
    stop_for,
    unique,
)
from refusals.providers.openai_chat.filters import (
    FilterSignals,
    add_azure_results,
    azure_filter_signals,
    azure_filtered_categories,
    moderation_signals,
    quiet,
)
from refusals.providers.openai_chat.schema import (
    Call,
    ChatUsage,
    Choice,
    Completion,
    ErrorBody,
    ErrorObject,
    Legacy,
    Message,
    Part,
    PlainCompletion,
    decode_completion,
    decode_legacy,
)
from refusals.providers.openai_chat.vendors import served_by, vendor_of

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

# The provider names `normalize` sends here (every chat-compatible vendor's).
PROVIDER_NAMES = frozenset(
    {"openai", "azure", "openrouter", "deepseek", "xai", "groq", "mistral", "ollama"}
)

# Enum members and msgspec.UNSET as plain globals: reading a member off its class costs
# about 80 ns a time (EnumType.__getattr__), which the mapping pays several times.
_UNSET: Any = msgspec.UNSET
_ERROR = FinishReason.ERROR
_REFUSAL = FinishReason.REFUSAL
_CONTENT_FILTER = FinishReason.CONTENT_FILTER
_finish_or_error = dict[str | None, FinishReason](FINISH_REASONS.items()).get
_ERROR_OVERTURNS = frozenset({FinishReason.STOP, FinishReason.TOOL_CALLS})
"""Finish reasons that an error in the body turns into ERROR."""
_NO_MESSAGE = Message()

_READ_FAILED = (*FAST_FAILED, TypeError, ValueError, OverflowError, KeyError, IndexError)
"""What mapping the Raw parts of a strictly decoded body can raise (orjson declines an
integer past 64 bits that msgspec kept raw): the body is then read from its decoded value."""


def parse_response(body: JsonObject, provider: str) -> LLMResponse:
    """A decoded (non-streaming) Chat Completions body as an `LLMResponse`."""
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
    return to_response(lenient(body, Completion), provider)


def _decoded(data: bytes | str, provider: str | None) -> Completion | None:
    """The completion decoded strictly; None for another provider's name or when the
    strict decode rejects the body."""
    if provider is not None and provider not in PROVIDER_NAMES:
        return None
    try:
        return decode_completion(data)
    except FAST_FAILED:
        return None


def _taken(body: Completion, provider: str | None) -> tuple[Completion, str] | None:
    """The completion and its provider, when detection takes it for one (see `_decoded`)."""
    if provider is not None and provider not in PROVIDER_NAMES:
        return None
    choices = body.choices
    if not isinstance(choices, list):
        return None  # an error body or a filter-only body: the decoded value is read
    if provider is None:
        # What detection checks: the `object` hint (without it, other formats are asked
        # first), then the vendor.
        if body.object != "chat.completion":
            return None
        provider = vendor_of(body, choices)
    elif body.object == "response":
        return None  # a Responses object, whatever the vendor (`_module_for`)
    return body, provider


def parse_fast(data: bytes | str, provider: str | None) -> LLMResponse | None:
    """The response of a completion decoded strictly from its bytes; None when the body is
    not one (detection's checks, without a provider) or the strict decode rejects it."""
    body = _decoded(data, provider)
    return completion_response(body, provider) if body is not None else None


def completion_response(body: Completion, provider: str | None) -> LLMResponse | None:
    """`parse_fast` of a completion already decoded strictly (inside an envelope)."""
    taken = _taken(body, provider)
    if taken is None:
        return None
    try:
        return to_response(*taken)
    except _READ_FAILED:
        return None


def parse_plain(data: bytes | str, provider: str | None) -> Plain | None:
    """`to_response`'s verdict on a plain answer: one choice, its message of plain text
    and tool calls, and nothing that could refuse, filter or fail it (see `_protocol`)."""
    body = _decoded(data, provider)
    return plain_completion(body, provider) if body is not None else None


def plain_completion(body: Completion, provider: str | None) -> Plain | None:
    """`parse_plain` of a completion already decoded strictly (inside an envelope)."""
    taken = _taken(body, provider)
    if taken is None:
        return None
    body, provider = taken
    choices = body.choices
    assert isinstance(choices, list)  # `_decoded` checked
    if len(choices) != 1 or body.error or body.moderation or prompt_results(body):
        return NOT_PLAIN
    choice = choices[0]
    message = choice.message
    if (
        message is None
        or choice.delta is not None
        or choice.native_finish_reason is not _UNSET
        or choice.content_filter_results
        or message.refusal is not None
        or message.function_call
        or not (message.content is None or type(message.content) is str)
    ):
        return NOT_PLAIN
    finish = _finish_or_error(choice.finish_reason, _ERROR)
    if finish not in PLAIN_FINISHES:
        return NOT_PLAIN
    try:
        for call in message.tool_calls or ():
            _name_and_arguments(call)  # what `to_response` may decline the body on
    except _READ_FAILED:
        return NOT_PLAIN
    model = body.model
    return provider, model if model is not None and model.strip() else None, finish


def plain_answer(body: PlainCompletion, provider: str | None = None) -> Plain | None:
    """`plain_completion(body, None)` of a body `PlainCompletion` decodes: the Struct
    declines every body that is not a plain answer. None for a named provider (only
    detection's verdict is worked out here)."""
    if provider is not None:
        return None
    model = body.model
    finish = body.choices[0].finish_reason
    if body.x_groq is _UNSET and body.system_fingerprint != "fp_ollama":
        # The verdict then depends on the model and the finish alone, of which a log
        # repeats a few: a lookup costs less than the vendor and the strip.
        key = (model, finish)
        verdict = _plain_verdicts.get(key)
        return verdict if verdict is not None else _remember_plain(key, body)
    return _plain_of(body, model, finish)


def _plain_of(body: PlainCompletion, model: str | None, finish: str) -> Plain:
    return (
        served_by(body),
        model if model is not None and model.strip() else None,
        FINISH_REASONS[finish],
    )


_plain_verdicts: dict[tuple[str | None, str], Plain] = {}
_PLAIN_VERDICTS_KEPT = 512


def _remember_plain(key: tuple[str | None, str], body: PlainCompletion) -> Plain:
    verdict = _plain_of(body, *key)
    if len(_plain_verdicts) >= _PLAIN_VERDICTS_KEPT:
        _plain_verdicts.clear()
    _plain_verdicts[key] = verdict
    return verdict


def answer_choice(choices: list[Choice]) -> Choice | None:
    """Choice 0 (the response when `n` > 1), wherever it sits: the first whose `index` is
    0, absent or not an integer; None when there is none."""
    for choice in choices:
        index = choice.index
        if type(index) is not int or index == 0:
            return choice
    return None


def to_response(body: Completion, provider: str) -> LLMResponse:
    """The one mapping of a chat completion to an `LLMResponse`."""
    given_choices = body.choices
    choices = given_choices if isinstance(given_choices, list) else []
    choice = choices[0] if choices else None
    if choice is not None and choice.index != 0:
        # Choice 0 is not first; with no choice 0 at all, a lone choice under another
        # index is it.
        choice = answer_choice(choices) or choice
    in_body_error = error_value(body.error)  # decoded first: it may raise
    message = _NO_MESSAGE
    if choice is not None:
        given = choice.message
        if given is None or (choice.delta is not None and not given.has_fields()):
            given = choice.delta
        if given is not None:
            message = given

    content_value = message.content
    parts: list[str | Part] | None = None
    thinking: list[str] = []
    if content_value is None:
        text = ""
    elif isinstance(content_value, str):
        text = content_value
    else:
        parts = content_value
        text = parts_text(content_value, thinking)
    reasoning = nonblank(message.reasoning_content) or nonblank(message.reasoning)
    if reasoning is None and (thinking or message.reasoning_details):
        if not thinking:
            # OpenRouter also gives the reasoning as `reasoning_details` text entries.
            thinking = [entry.text for entry in message.reasoning_details or () if entry.text]
        reasoning = "\n\n".join(thinking) or None
    refusal_value = message.refusal
    if type(refusal_value) is list:
        refusal = nonblank(refusal_text(refusal_value))
    else:
        refusal = nonblank(refusal_value)
    if refusal is None and parts is not None:
        # Content given as parts, one of them {"type": "refusal", "refusal": ...}.
        refusal = nonblank("\n\n".join(content_refusals(parts)))
    tool_calls = [
        ToolCall(call.id or "", *_name_and_arguments(call)) for call in message.tool_calls or ()
    ]
    if message.function_call:
        legacy = filled(message.function_call, Legacy, decode_legacy)
        if legacy is not None:
            arguments = arguments_text(raw_value(legacy.arguments), "")
            tool_calls.append(ToolCall("", legacy.name or "", arguments))

    raw = choice.finish_reason if choice is not None else None
    finish = _finish_or_error(raw, _ERROR)
    if choice is not None:
        native = choice.native_finish_reason
        if isinstance(native, str):
            finish = native_finish(native, finish)
            raw = native  # the upstream model's own value is the one kept

    filtered: list[str] = []
    details: list[Detail] = []
    prompt = prompt_results(body)
    results = choice.content_filter_results if choice is not None else None
    if (prompt and not quiet(prompt)) or (results and not quiet(results)):
        azure = azure_filter_signals(
            raw_value(prompt) if prompt else None, raw_value(results) if results else None
        )
        filtered, details = azure.filtered, azure.details
    if len(choices) > 1:
        # With `n` > 1 the answer is choice 0, but a filter that stopped another choice
        # still stopped part of what was asked for: the response is filtered.
        other = other_choices_filtered(choices, choice)
        if other is not None:
            filtered = filtered + other.filtered
            details = details + other.details
            if not other.filtered:
                finish = _CONTENT_FILTER
    blocked: list[str] = []
    if body.moderation:
        moderation = raw_value(body.moderation)
        if moderation is not None:
            signals = moderation_signals(moderation)
            blocked = signals.blocked
            details = details + signals.details

    stop: StopDetails | None = None
    error: ProviderError | None = None
    content = text
    if finish is _CONTENT_FILTER or filtered or blocked:
        finish = _CONTENT_FILTER
        stop = stop_for(unique(filtered + blocked), None)
    elif refusal is not None:
        finish = _REFUSAL
        if content:
            # The refusal came after some output: keep both, and name the refusal itself
            # as the explanation so the notice does not quote the partial answer.
            content = f"{content}\n\n{refusal}"
            stop = StopDetails(explanation=refusal)
        else:
            content = refusal
    elif isinstance(in_body_error, ErrorObject):
        # OpenRouter reports a failure that happened mid-generation inside a 200 body.
        verdict = classify(ErrorBody(error=in_body_error), None)
        error = verdict.error
        if verdict.error.kind is ErrorKind.POLICY:
            finish = _REFUSAL if verdict.refusal else _CONTENT_FILTER
            stop = verdict.stop
        elif finish in _ERROR_OVERTURNS:
            finish = _ERROR
    if stop is not None:
        details.insert(0, stop.to_detail())

    model = body.model
    request_id = body.id
    return new_response(
        content or None,
        tool_calls,
        reasoning,
        details,
        usage_of(body.usage),
        finish,
        raw,
        model if model is not None and model.strip() else None,
        request_id if request_id is not None and request_id.strip() else None,
        provider,
        API,
        finish in INTERRUPTED and bool(text or tool_calls),
        error,
    )


def native_finish(native: str, finish: FinishReason) -> FinishReason:
    """`finish`, unless the upstream's own value says the model declined or a filter
    stopped it (`NATIVE_BLOCKS`): a block is never read as an ordinary stop."""
    block = NATIVE_BLOCKS.get(native.lower())
    if block is not None and finish not in (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER):
        return block
    return finish


def other_choices_filtered(choices: list[Choice], answer: Choice | None) -> FilterSignals | None:
    """The filter signals of the choices other than `answer`, or None when none of them
    was filtered (`finish_reason: content_filter` or a category `filtered: true`)."""
    signals: FilterSignals | None = None
    for item in choices:
        if item is answer:
            continue
        given = item.content_filter_results
        if item.finish_reason != "content_filter" and (not given or quiet(given)):
            continue
        results = raw_value(given) if given else None
        categories = azure_filtered_categories(results)[0] if results else []
        if not categories and item.finish_reason != "content_filter":
            continue
        if signals is None:
            signals = FilterSignals()
        extra: JsonObject = {"source": "completion"}
        index = item.index
        if isinstance(index, int) and not isinstance(index, bool):
            extra["choice_index"] = index
        add_azure_results(signals, results, extra)
    return signals


def parts_text(parts: list[str | Part], thinking: list[str]) -> str:
    """The text of content given as parts; Mistral's `thinking` parts go to `thinking`."""
    texts: list[str] = []
    for part in parts:
        if type(part) is str:
            texts.append(part)
            continue
        assert isinstance(part, Part)
        kind = part.type
        if kind in ("text", "output_text"):
            texts.append(part.text or "")
        elif kind == "thinking":
            # {"type": "thinking", "thinking": [{"type": "text", "text": ...}]}
            inner = part.thinking
            if type(inner) is str:
                inside = inner
            elif inner:
                inside = parts_text(inner, [])  # type: ignore[arg-type]
            else:
                inside = ""
            if inside:
                thinking.append(inside)
    return "".join(texts)


def refusal_text(parts: list[str | Part]) -> str:
    """A refusal given as a list of parts (strings, or refusal or text parts), as one text."""
    texts: list[str] = []
    for part in parts:
        if type(part) is str:
            texts.append(part)
        else:
            assert isinstance(part, Part)
            text = part.text if part.refusal is msgspec.UNSET else part.refusal
            if isinstance(text, str):
                texts.append(text)
    return "".join(texts)


def content_refusals(parts: list[str | Part]) -> list[str]:
    """The texts of the non-blank `refusal` parts of a content list, in order."""
    found: list[str] = []
    for part in parts:
        if type(part) is not str and part.type == "refusal":  # type: ignore[union-attr]
            text = nonblank(part.refusal)  # type: ignore[union-attr]
            if text is not None:
                found.append(text)
    return found


def call_parts(call: Call) -> tuple[str | None, Any]:
    """The name and arguments of a `tool_calls` entry: a function's, or a custom tool's
    (whose arguments are its `input`)."""
    function, custom = call.function, call.custom
    if custom is not None and (
        function is None or (function.name is None and not function.arguments)
    ):
        return custom.name, raw_value(custom.input)
    if function is None:
        return None, None
    return function.name, raw_value(function.arguments)


def _name_and_arguments(call: Call) -> tuple[str, str]:
    name, arguments = call_parts(call)
    return name or "", arguments_text(arguments, "")


def usage_of(usage: ChatUsage | None) -> Usage:
    if usage is None:
        return Usage()
    details = usage.prompt_tokens_details
    if details is None:
        cached = usage.prompt_cache_hit_tokens or 0  # DeepSeek
        written = 0
    else:
        cached = details.cached_tokens or usage.prompt_cache_hit_tokens or 0
        written = details.cache_write_tokens or 0  # OpenRouter
    return new_usage(usage.prompt_tokens or 0, usage.completion_tokens or 0, cached, written, [])


def outcome_key(body: Completion) -> Keyed:
    """`Keyed` for a decoded completion: `to_response` reads its `id` as the request id
    and its `usage` through `usage_of` alone (`created` is not declared)."""
    return keyed(body, usage_of(body.usage), id=None, usage=None)


def prompt_results(body: Completion) -> msgspec.Raw | Given:
    """Azure's prompt filter results, under the name earlier (preview) API versions gave
    them (`prompt_annotations`) when `prompt_filter_results` is absent or null."""
    prompt = body.prompt_filter_results
    if not prompt or is_null(prompt):
        return body.prompt_annotations
    return prompt
