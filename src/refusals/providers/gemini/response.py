"""A generateContent response (or stream chunk) as an `LLMResponse`: one mapping from the
schema's `Body`, for bytes (strict decode) and decoded values (the lenient pass) alike.

A block shows up in two places, and neither is an HTTP error:

- the prompt: `promptFeedback.blockReason` (no candidates at all), with the ratings that
  blocked it in `promptFeedback.safetyRatings` and a message in `blockReasonMessage`;
- the output: a candidate's `finishReason` (`SAFETY`, `RECITATION`, `MODEL_ARMOR`, …),
  with `safetyRatings` entries marked `blocked: true` and a message in `finishMessage`.

Category rule (one rule for prompt and output blocks): the categories are those of the
safety ratings marked `blocked: true`, lower-cased with the `HARM_CATEGORY_` prefix
removed (`HARM_CATEGORY_HATE_SPEECH` → `hate_speech`, `HARM_CATEGORY_IMAGE_HATE` →
`image_hate`); when no rating is marked blocked, the category is the block reason or
finish reason itself, lower-cased (`MODEL_ARMOR` → `model_armor`, `SPII` → `spii`). The
blocked ratings' probability and severity are kept in a `safety_ratings` detail.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import orjson

from refusals.model import (
    Detail,
    FinishReason,
    LLMResponse,
    ToolCall,
    Usage,
    new_response,
    new_usage,
    stop_detail_text,
)
from refusals.providers._common import (
    FAST_FAILED,
    INTERRUPTED,
    NOT_PLAIN,
    JsonObject,
    Keyed,
    NormalizeError,
    Plain,
    arguments_text,
    arr,
    key_names,
    keyed,
)
from refusals.providers._lenient import Given, lenient, lenient_list, raw_value
from refusals.providers.gemini.schema import (
    Body,
    Candidate,
    Feedback,
    Part,
    PlainBody,
    PlainCandidate,
    Rating,
    UsageMetadata,
    decode_body,
    decode_ratings,
)

API = "generateContent"

FINISH_REASONS: dict[str, FinishReason] = {
    "STOP": FinishReason.STOP,
    "MAX_TOKENS": FinishReason.LENGTH,
    # Provider-side filters on the output.
    "SAFETY": FinishReason.CONTENT_FILTER,
    "BLOCKLIST": FinishReason.CONTENT_FILTER,
    "PROHIBITED_CONTENT": FinishReason.CONTENT_FILTER,
    "SPII": FinishReason.CONTENT_FILTER,
    "RECITATION": FinishReason.CONTENT_FILTER,
    "IMAGE_SAFETY": FinishReason.CONTENT_FILTER,
    "IMAGE_PROHIBITED_CONTENT": FinishReason.CONTENT_FILTER,
    "IMAGE_RECITATION": FinishReason.CONTENT_FILTER,
    "MODEL_ARMOR": FinishReason.CONTENT_FILTER,
    # Failures: the answer is not finished, and no filter said why.
    "MALFORMED_FUNCTION_CALL": FinishReason.ERROR,
    "UNEXPECTED_TOOL_CALL": FinishReason.ERROR,
    "TOO_MANY_TOOL_CALLS": FinishReason.ERROR,
    "MISSING_THOUGHT_SIGNATURE": FinishReason.ERROR,
    "MALFORMED_RESPONSE": FinishReason.ERROR,
    "FINISH_REASON_UNSPECIFIED": FinishReason.ERROR,
    "OTHER": FinishReason.ERROR,
    "LANGUAGE": FinishReason.ERROR,
    "NO_IMAGE": FinishReason.ERROR,
    "IMAGE_OTHER": FinishReason.ERROR,
}
"""Candidate `finishReason` → FinishReason; any value not listed is ERROR."""

# Every `promptFeedback.blockReason` (SAFETY, OTHER, BLOCKLIST, PROHIBITED_CONTENT,
# IMAGE_SAFETY, MODEL_ARMOR, JAILBREAK, and any later one) means the prompt was blocked.
PROMPT_BLOCKED = FinishReason.CONTENT_FILTER

_HARM_PREFIX = "harm_category_"

_SNAKE_KEYS = frozenset({"usage_metadata", "prompt_feedback", "model_version", "response_id"})
_SNAKE_CANDIDATE_KEYS = frozenset({"finish_reason", "safety_ratings", "finish_message"})
_OPAQUE_KEYS = frozenset({"args", "response", "partial_args"})
"""Values that hold the caller's own data (function arguments and results): kept as given."""


def wire_keys(body: JsonObject) -> JsonObject:
    """`body` with the wire format's camelCase keys, when it came with google-genai's
    snake_case field names (`model_dump()` of a `GenerateContentResponse`); else `body`."""
    # Cheap checks first: every wire body has one of these camelCase keys.
    if "usageMetadata" in body or "modelVersion" in body or "responseId" in body:
        return body
    if not body.keys() & _SNAKE_KEYS:
        first = next(iter(arr(body.get("candidates"))), None)
        if not (isinstance(first, dict) and first.keys() & _SNAKE_CANDIDATE_KEYS):
            return body
    root: list[Any] = [None]
    # (container the converted value goes into, its key or index, the raw value):
    # iterative, so a deep value costs no recursion. Null fields are left out, as the
    # wire leaves them out.
    stack: list[tuple[Any, Any, Any]] = [(root, 0, body)]
    while stack:
        target, slot, value = stack.pop()
        if isinstance(value, dict):
            out: JsonObject = {}
            for key, child in value.items():
                if child is None:
                    continue
                name = _camel(key) if isinstance(key, str) else key
                out[name] = child
                if not (isinstance(key, str) and key in _OPAQUE_KEYS):
                    stack.append((out, name, child))
            target[slot] = out
        elif isinstance(value, list):
            items: list[Any] = list(value)
            stack.extend((items, index, child) for index, child in enumerate(value))
            target[slot] = items
        else:
            target[slot] = value
    converted: JsonObject = root[0]
    return converted


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def looks_like(body: JsonObject) -> bool:
    """Whether a decoded `body` has the shape of a generateContent response."""
    if isinstance(body.get("candidates"), list) or isinstance(body.get("promptFeedback"), dict):
        return True
    return isinstance(body.get("usageMetadata"), dict) and (
        isinstance(body.get("modelVersion"), str) or isinstance(body.get("responseId"), str)
    )


def is_response(body: Body) -> bool:
    """`looks_like` of a read body."""
    if type(body.candidates) is list or type(body.prompt_feedback) is Feedback:
        return True
    return type(body.usage_metadata) is UsageMetadata and (
        type(body.model_version) is str or type(body.response_id) is str
    )


def is_error_chunk(body: Body) -> bool:
    """Whether a read body is a Google error body (`{"error": {...}}` or a text)."""
    return body.error is not None and not is_response(body)


def parse_response(body: JsonObject, provider: str) -> LLMResponse:
    """A decoded (non-streaming) generateContent response (snake_case keys accepted)."""
    body = wire_keys(body)
    if not looks_like(body):
        raise NormalizeError(
            "expected a Gemini/Vertex AI generateContent response (candidates, "
            f"promptFeedback or usageMetadata); got keys: {key_names(body)}"
        )
    return to_response(lenient(body, Body), provider)


def parse_fast(data: bytes | str, provider: str | None) -> LLMResponse | None:
    """The response of a camelCase body decoded strictly from its bytes; None when the
    body is not one (detection's checks, without a provider) or the decode rejects it.
    A body with none of `usageMetadata`, `modelVersion` and `responseId` may be a
    snake_case dump that `wire_keys` rewrites: it is left to `parse_response`."""
    body = _decoded(data, provider)
    return body_response(body, provider) if body is not None else None


def body_response(body: Body, provider: str | None) -> LLMResponse | None:
    """`parse_fast` of a body already decoded strictly (inside a log line)."""
    taken = _taken(body, provider)
    if taken is None:
        return None
    try:
        return to_response(*taken)
    except FAST_FAILED:
        return None


def parse_plain(data: bytes | str, provider: str | None) -> Plain | None:
    """`to_response`'s verdict on a plain answer: no prompt block, a candidate that
    finished with STOP or MAX_TOKENS, no rating marked blocked, no finish message (see
    `_protocol`)."""
    body = _decoded(data, provider)
    return plain_body(body, provider) if body is not None else None


def plain_body(body: Body, provider: str | None) -> Plain | None:
    """`parse_plain` of a body already decoded strictly (inside a log line)."""
    taken = _taken(body, provider)
    if taken is None:
        return None
    body, provider = taken
    feedback = body.prompt_feedback
    if type(feedback) is Feedback and feedback.block_reason is not None:
        return NOT_PLAIN
    candidate = first_candidate(body)
    if candidate is None or candidate.finish_message is not None:
        return NOT_PLAIN
    raw = candidate.finish_reason
    finish = _FINISH_REASON(raw) if raw else None
    if finish not in _UNBLOCKED:
        return NOT_PLAIN
    assert finish is not None
    finish = _plain_finish(candidate, finish)
    if finish is None:
        return NOT_PLAIN
    model = body.model_version
    return provider, model if type(model) is str else None, finish


def _plain_finish(
    candidate: Candidate | PlainCandidate, finish: FinishReason
) -> FinishReason | None:
    """The finish of a candidate that stopped or ran out of tokens (TOOL_CALLS for a stop
    with function calls); None when a rating marked blocked makes it a filter's, or a
    call's arguments are ones `to_response` declines."""
    try:
        if candidate.safety_ratings and blocked_ratings(candidate.safety_ratings):
            return None
        content = candidate.content
        for part in (content.parts if content is not None else None) or ():
            call = part.function_call
            if call is not None:
                # What `to_response` may decline the body on (`call_arguments` decodes
                # the arguments; writing them as text never fails).
                if call.args != _NO_ARGS:
                    raw_value(call.args)
                if finish is _STOP:
                    finish = _TOOL_CALLS
    except FAST_FAILED:
        return None
    return finish


def plain_answer(body: PlainBody, provider: str | None) -> Plain | None:
    """`plain_body(body, None)` of a body `PlainBody` decodes (the Struct declines most
    bodies that are not plain answers); None for a named provider or a body detection
    would not take, NOT_PLAIN for a rating marked blocked or a call the mapping declines."""
    if provider is not None or (
        body.model_version is _UNSET
        and body.response_id is _UNSET
        and body.usage_metadata is _UNSET
    ):
        return None
    candidate = body.candidates[0]
    finish = _plain_finish(candidate, _STOP if candidate.finish_reason == "STOP" else _LENGTH)
    if finish is None:
        return NOT_PLAIN
    model = body.model_version
    return "vertex" if body.create_time else "gemini", model if type(model) is str else None, finish


def _decoded(data: bytes | str, provider: str | None) -> Body | None:
    """The body decoded strictly; None for another provider's name or when the decode
    rejects it."""
    if provider is not None and provider not in ("gemini", "vertex"):
        return None
    try:
        return decode_body(data)
    except FAST_FAILED:
        return None


def _taken(body: Body, provider: str | None) -> tuple[Body, str] | None:
    """The body and its provider, when detection takes it for a generateContent body
    (see `_decoded`)."""
    if provider is not None and provider not in ("gemini", "vertex"):
        return None
    if (
        body.model_version is _UNSET
        and body.response_id is _UNSET
        and body.usage_metadata is _UNSET
    ):
        return None
    if body.error is not None or not is_response(body):
        return None
    if provider is None:
        # Detection's Gemini hint and no other format's key; `detect_provider` then
        # tells Vertex AI by its `createTime`.
        if body.candidates is _UNSET and body.prompt_feedback is _UNSET:
            return None
        if body.object or body.type or body.choices or body.output:
            return None
        if body.guardrail_action or body.invocation_metrics:
            return None
        provider = "vertex" if body.create_time else "gemini"
    return body, provider


def first_candidate(body: Body) -> Candidate | None:
    """Candidate 0, wherever it sits in the list; None when the body has none."""
    candidates = body.candidates
    if type(candidates) is not list or not candidates:
        return None
    candidate = candidates[0]
    if candidate.index:
        return next((item for item in candidates if not item.index), None)
    return candidate


def to_response(body: Body, provider: str) -> LLMResponse:
    """The one mapping of a generateContent body to an `LLMResponse`."""
    candidate = first_candidate(body)
    feedback = body.prompt_feedback
    text, thought, tool_calls, signatures = read_parts(candidate)

    raw: str | None
    ratings: Any
    if type(feedback) is Feedback and feedback.block_reason is not None:
        # The prompt itself was blocked: there is no answer to keep.
        raw = feedback.block_reason
        finish = PROMPT_BLOCKED
        ratings = feedback.safety_ratings
        explanation = feedback.block_reason_message
        scope = "prompt"
    elif candidate is not None:
        raw = candidate.finish_reason
        # No finish reason on a full body: the candidate never finished.
        finish = _FINISH_REASON(raw, _ERROR) if raw else _ERROR
        ratings = candidate.safety_ratings
        if ratings and finish in _UNBLOCKED and blocked_ratings(ratings):
            # A rating marked blocked is a filter's verdict, whatever the finish says.
            finish = _FILTERED
        if finish is _STOP and tool_calls:
            finish = _TOOL_CALLS
        explanation = candidate.finish_message
        scope = "response"
    else:
        raw, finish, ratings, explanation, scope = None, _ERROR, None, None, "response"

    details: list[Detail] = []
    if finish is _FILTERED:
        blocked = blocked_ratings(ratings) if ratings else []
        details.append(stop_text(categories(blocked, raw), explanation))
        if blocked:
            details.append(ratings_detail(scope, blocked))
    elif explanation is not None:
        details.append(stop_detail_text(None, explanation))
    if signatures:
        details.extend(map(signature_detail, signatures))

    model, request_id = body.model_version, body.response_id
    return new_response(
        text or None,
        tool_calls,
        thought or None,
        details,
        usage_of(body.usage_metadata),
        finish,
        raw,
        model if type(model) is str else None,
        request_id if type(request_id) is str else None,
        provider,
        API,
        finish in INTERRUPTED and bool(text or tool_calls),
    )


def read_parts(
    candidate: Candidate | None,
) -> tuple[str | None, str | None, list[ToolCall], list[str] | None]:
    """A candidate's text, thoughts, calls and thought signatures."""
    text: str | None = None
    thought: str | None = None
    tool_calls: list[ToolCall] = []
    signatures: list[str] | None = None
    content = candidate.content if candidate is not None else None
    parts = content.parts if content is not None else None
    for part in parts or ():
        signature = part.thought_signature
        if signature:
            if signatures is None:
                signatures = []
            signatures.append(signature)
        call = part.function_call
        if call is not None:
            tool_calls.append(ToolCall(call.id or "", call.name or "", call_arguments(part)))
            continue
        piece = part.text
        if piece is None:
            pass
        elif part.thought is True:
            thought = piece if thought is None else thought + piece
        else:
            text = piece if text is None else text + piece
    return text, thought, tool_calls, signatures


def call_arguments(part: Part) -> str:
    args = part.function_call.args if part.function_call is not None else _NO_ARGS
    return "{}" if args == _NO_ARGS else arguments_text(raw_value(args))


def usage_of(usage: UsageMetadata | Any | None) -> Usage:
    if type(usage) is not UsageMetadata:
        return new_usage(0, 0, 0, 0, [])
    return new_usage(
        usage.prompt_token_count or 0,
        # Thinking tokens are billed as output, as they are at the other providers.
        (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0),
        usage.cached_content_token_count or 0,
        0,
        [],
    )


_SOME_USAGE = UsageMetadata()
_SOME_TIME = msgspec.Raw(b'""')


def outcome_key(body: Body) -> Keyed:
    """`Keyed` for a decoded generateContent body: its `responseId` is read as the request
    id and its `usageMetadata` through `usage_of` (beside their types, which detection
    asks), and its `createTime` for being there (Vertex AI's) alone."""
    response_id, usage = body.response_id, body.usage_metadata
    return keyed(
        body,
        usage_of(usage),
        response_id="" if type(response_id) is str else response_id,
        usage_metadata=_SOME_USAGE if type(usage) is UsageMetadata else usage,
        create_time=_SOME_TIME if body.create_time else body.create_time,
    )


def blocked_ratings(ratings: msgspec.Raw | Given | None) -> list[JsonObject]:
    """The ratings marked `blocked: true`, as the `safety_ratings` detail keeps them."""
    if not ratings:
        return []
    if isinstance(ratings, Given):
        read: Sequence[Rating] = lenient_list(ratings.value, Rating)
    elif b"blocked" not in bytes(ratings):
        return []
    else:
        read = decode_ratings(ratings) or ()
    blocked: list[JsonObject] = []
    for rating in read:
        if rating.blocked is not True:
            continue
        kept: JsonObject = {}
        if rating.category is not None:
            kept["category"] = _category_name(rating.category)
        scores = (
            ("probability", rating.probability),
            ("probabilityScore", rating.probability_score),
            ("severity", rating.severity),
            ("severityScore", rating.severity_score),
        )
        for name, score in scores:
            if score:
                value = raw_value(score)
                # A boolean is not a score.
                if isinstance(value, str | int | float) and not isinstance(value, bool):
                    kept[name] = value
        blocked.append(kept)
    return blocked


def categories(blocked: list[JsonObject], reason: str | None) -> list[str]:
    """The category rule of the module docstring."""
    found: list[str] = []
    for rating in blocked:
        category = rating.get("category")
        if isinstance(category, str) and category and category not in found:
            found.append(category)
    if not found and reason and not reason.upper().endswith("_UNSPECIFIED"):
        found.append(reason.lower())
    return found


def stop_text(found: Sequence[str], explanation: str | None) -> str:
    """The stop details of a filter block, as their detail text."""
    return stop_detail_text(
        found[0] if found else None,
        explanation,
        None,
        None,
        None,
        tuple(found) if len(found) > 1 else (),
    )


def ratings_detail(scope: str, blocked: list[JsonObject]) -> str:
    return orjson.dumps({"type": "safety_ratings", "scope": scope, "ratings": blocked}).decode()


def signature_detail(signature: str) -> str:
    return orjson.dumps({"type": "thought_signature", "signature": signature}).decode()


def _category_name(category: str) -> str:
    name = category.lower()
    if name.startswith(_HARM_PREFIX):
        name = name[len(_HARM_PREFIX) :]
    return name


_UNSET: Any = msgspec.UNSET
_FINISH_REASON = FINISH_REASONS.get
# Module names for the members: reading one off the enum class costs a lookup each time.
_STOP, _TOOL_CALLS, _ERROR = FinishReason.STOP, FinishReason.TOOL_CALLS, FinishReason.ERROR
_LENGTH = FinishReason.LENGTH
_FILTERED = FinishReason.CONTENT_FILTER
_UNBLOCKED = frozenset({FinishReason.STOP, FinishReason.LENGTH})
"""Finishes a rating marked `blocked: true` overrides (the filter decided, not the end)."""
# A call without arguments, as Gemini sends it: its text needs no decode and dump.
_NO_ARGS = msgspec.Raw(b"{}")
