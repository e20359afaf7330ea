"""Gemini API and Vertex AI `generateContent`: full responses, streams and HTTP error bodies.

Both services speak the same wire format; a Vertex AI body also carries `createTime`.
A stream (`streamGenerateContent?alt=sse`) is a sequence of the same response bodies, each
holding the next parts of the answer (see `StreamDecoder`).
A block shows up in two places, and neither is an HTTP error:

- the prompt: `promptFeedback.blockReason` (no candidates at all), with the ratings that
  blocked it in `promptFeedback.safetyRatings` and a message in `blockReasonMessage`;
- the output: a candidate's `finishReason` (`SAFETY`, `RECITATION`, `MODEL_ARMOR`, …),
  with `safetyRatings` entries marked `blocked: true` and a message in `finishMessage`.

Documentation:

- https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse
- https://ai.google.dev/api/generate-content#FinishReason
- https://ai.google.dev/api/generate-content#BlockReason
- https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/GenerateContentResponse
- https://googleapis.github.io/js-genai/release_docs/enums/types.FinishReason.html
- https://googleapis.github.io/js-genai/release_docs/enums/types.BlockedReason.html
- https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes
- https://cloud.google.com/apis/design/errors (the `google.rpc.Status` error body)
- https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent and
  https://ai.google.dev/gemini-api/docs/text-generation#streaming-responses (streams)

Category rule (one rule for prompt and output blocks): the categories are those of the
safety ratings marked `blocked: true`, lower-cased with the `HARM_CATEGORY_` prefix
removed (`HARM_CATEGORY_HATE_SPEECH` → `hate_speech`, `HARM_CATEGORY_IMAGE_HATE` →
`image_hate`); when no rating is marked blocked, the category is the block reason or
finish reason itself, lower-cased (`MODEL_ARMOR` → `model_armor`, `SPII` → `spii`). The
blocked ratings' probability and severity are kept in a `safety_ratings` detail.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
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
    stop_detail_text,
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
    error_events,
    error_response,
    integer,
    key_names,
    obj,
    says_blocked,
    status_error_kind,
    string,
    strip_tags,
)
from refusals.providers._lenient import raw_value
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

ERROR_STATUSES: dict[str, ErrorKind] = {
    "RESOURCE_EXHAUSTED": ErrorKind.TRANSIENT,
    "UNAVAILABLE": ErrorKind.TRANSIENT,
    "INTERNAL": ErrorKind.TRANSIENT,
    "DEADLINE_EXCEEDED": ErrorKind.TRANSIENT,
    "ABORTED": ErrorKind.TRANSIENT,
    "UNKNOWN": ErrorKind.TRANSIENT,
    "PERMISSION_DENIED": ErrorKind.AUTH,
    "UNAUTHENTICATED": ErrorKind.AUTH,
    "INVALID_ARGUMENT": ErrorKind.INVALID_REQUEST,
    "FAILED_PRECONDITION": ErrorKind.INVALID_REQUEST,
    "NOT_FOUND": ErrorKind.INVALID_REQUEST,
    "OUT_OF_RANGE": ErrorKind.INVALID_REQUEST,
    "ALREADY_EXISTS": ErrorKind.INVALID_REQUEST,
    "UNIMPLEMENTED": ErrorKind.INVALID_REQUEST,
}
"""`error.status` (google.rpc.Code name) → ErrorKind; others fall back to the HTTP status."""

# `google.rpc.ErrorInfo.reason` values that mean the credentials are wrong, whatever the
# status says (a bad Gemini API key is a 400 INVALID_ARGUMENT).
AUTH_REASONS = frozenset(
    {
        "API_KEY_INVALID",
        "API_KEY_EXPIRED",
        "API_KEY_SERVICE_BLOCKED",
        "API_KEY_HTTP_REFERRER_BLOCKED",
        "API_KEY_IP_ADDRESS_BLOCKED",
        "API_KEY_ANDROID_APP_BLOCKED",
        "API_KEY_IOS_APP_BLOCKED",
        "ACCESS_TOKEN_EXPIRED",
        "ACCESS_TOKEN_SCOPE_INSUFFICIENT",
        "CONSUMER_INVALID",
        "SERVICE_DISABLED",
    }
)

# An error message that states a Responsible-AI / policy block (e.g. Vertex AI's "…violate
# Google's Responsible AI practices"), told apart from a permission or argument error.
_POLICY_MESSAGE = re.compile(
    r"responsible ai|prohibited content|violat\w*\s[^.]{0,80}?(?:polic|guideline)",
    re.IGNORECASE,
)
_GOOGLE_STATUS = re.compile(r"[A-Z][A-Z0-9_]*")
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


def detect_provider(body: JsonObject) -> str | None:
    """`"vertex"` or `"gemini"` for a generateContent response, `"gemini"` for a Google
    error body (`error.status` an upper-case code name); None for anything else."""
    body = wire_keys(body)
    error = body.get("error")
    if error is not None:
        status = obj(error).get("status")
        if isinstance(status, str) and _GOOGLE_STATUS.fullmatch(status):
            return "gemini"
        return None
    if "choices" in body or "output" in body:
        return None
    if not looks_like(body):
        return None
    return "vertex" if "createTime" in body else "gemini"


def looks_like(body: JsonObject) -> bool:
    """Whether `body` has the shape of a generateContent response."""
    if isinstance(body.get("candidates"), list) or isinstance(body.get("promptFeedback"), dict):
        return True
    return isinstance(body.get("usageMetadata"), dict) and (
        isinstance(body.get("modelVersion"), str) or isinstance(body.get("responseId"), str)
    )


def is_error(body: JsonObject) -> bool:
    """Whether `body` is a Google error body (`{"error": {"code", "message", "status"}}`)."""
    return isinstance(body.get("error"), dict | str) and not looks_like(body)


def parse_response(body: JsonObject, provider: str) -> LLMResponse:
    """A full (non-streaming) generateContent response (snake_case keys accepted)."""
    body = wire_keys(body)
    if not looks_like(body):
        raise NormalizeError(
            "expected a Gemini/Vertex AI generateContent response (candidates, "
            f"promptFeedback or usageMetadata); got keys: {key_names(body)}"
        )
    # Candidate 0 is the response, wherever it sits in the list (as a stream reads it).
    candidates = body.get("candidates")
    candidate = candidates[0] if type(candidates) is list and candidates else None
    if type(candidate) is not dict or candidate.get("index", 0) != 0:
        candidate = _first_candidate(candidates)
    content, reasoning, tool_calls, signatures = _read_parts(obj(candidate.get("content")))

    feedback = obj(body.get("promptFeedback"))
    block_reason = string(feedback.get("blockReason"))
    raw: str | None
    if block_reason is not None:
        # The prompt itself was blocked: there is no answer to keep.
        raw = block_reason
        finish = PROMPT_BLOCKED
        ratings = feedback.get("safetyRatings")
        explanation = string(feedback.get("blockReasonMessage"))
        scope = "prompt"
    else:
        raw = string(candidate.get("finishReason"))
        # No finish reason on a full body: the candidate never finished (or is missing).
        finish = FINISH_REASONS.get(raw or "", FinishReason.ERROR)
        ratings = candidate.get("safetyRatings")
        if finish in _UNBLOCKED and _blocked_ratings(ratings):
            # A rating marked blocked is a filter's verdict, whatever the finish says.
            finish = FinishReason.CONTENT_FILTER
        if finish is FinishReason.STOP and tool_calls:
            finish = FinishReason.TOOL_CALLS
        explanation = string(candidate.get("finishMessage"))
        scope = "response"

    details: list[Detail] = []
    if finish is FinishReason.CONTENT_FILTER:
        blocked = _blocked_ratings(ratings)
        details.append(_filter_stop(blocked, raw, explanation).to_detail())
        if blocked:
            details.append(_ratings_detail(scope, blocked))
    elif explanation is not None:
        details.append(StopDetails(explanation=explanation).to_detail())
    details.extend(_signature_detail(sig) for sig in signatures)

    cut_off = bool(content or tool_calls) and finish in INTERRUPTED
    return LLMResponse(
        content=content,
        tool_calls=tool_calls,
        reasoning=reasoning,
        reasoning_details=details,
        usage=_usage(obj(body.get("usageMetadata"))),
        finish_reason=finish,
        raw_finish_reason=raw,
        model=string(body.get("modelVersion")),
        request_id=string(body.get("responseId")),
        provider=provider,
        api=API,
        cut_off=cut_off,
    )


def parse_error(body: JsonObject | str, status: int | None, provider: str) -> LLMResponse:
    """An HTTP error body: `{"error": {"code": 429, "message": …, "status": "RESOURCE_EXHAUSTED",
    "details": [...]}}`, or the text of a page a gateway sent instead."""
    payload: Any = body
    if isinstance(payload, list):  # streaming endpoints wrap the error in an array
        payload = next((item for item in payload if isinstance(item, dict)), {})
    if isinstance(payload, str):
        message = bounded_message(strip_tags(payload))
        error = ProviderError(status_error_kind(status), status, None, message)
        return error_response(error, provider=provider, api=API, stop=_error_stop(message))
    raw_error = obj(payload).get("error")
    error_obj = obj(raw_error)
    message = string(error_obj.get("message"))
    if message is None:
        message = string(raw_error) or string(obj(payload).get("message"))
    # A credential keeps its name: "Consumer 'api_key:[redacted]' has been suspended."
    message = bounded_message(message)
    code_name = string(error_obj.get("status"))
    body_code = integer(error_obj.get("code"))
    http = status if status is not None else (body_code if 100 <= body_code <= 599 else None)

    kind = _error_kind(code_name, http, _error_reasons(error_obj.get("details")), message)
    error = ProviderError(kind, http, code_name, message)
    return error_response(error, provider=provider, api=API, stop=_error_stop(message))


# Streams --------------------------------------------------------------------------------

# A proxy may name the events with the SSE default type; Google sends no `event:` lines.
_STREAM_EVENT_NAMES = (None, "message")


def detect_stream(name: str | None, payload: Any) -> str | None:
    """`"vertex"` or `"gemini"` when the first event of a stream is a streamGenerateContent
    chunk (or a Google error body), by the shape rules of `detect_provider`; else None."""
    if name not in _STREAM_EVENT_NAMES or not isinstance(payload, dict):
        return None
    return detect_provider(payload)


class StreamDecoder(WireDecoder):
    """`streamGenerateContent`: each event is a GenerateContentResponse with the next parts.

    - Parts of candidate 0 become text, thought (`thought: true`) and tool-call deltas; a
      `functionCall` part holds the whole call. Thought signatures are kept as details.
    - The verdict is on the chunk whose candidate has a `finishReason`, or whose
      `promptFeedback` has a `blockReason` (a prompt block, usually the only chunk). The
      mapping, categories and explanation are those of `parse_response`.
    - Gemini sends no terminal sentinel: that chunk completes the stream, and a stream that
      ends without one is incomplete (an error). After it only usage is read, and a
      later block or error (Vertex may put STOP on every chunk): another chunk's text or
      finish reason changes nothing.
    - `{"error": {...}}` in the stream is a `StreamError` with the verdict `parse_error`
      gives the same body, so a Responsible-AI block reported as an error is a content
      filter on that event; after a block, an error adds itself but changes no verdict.
    """

    API = API

    def __init__(self, provider: str) -> None:
        super().__init__(provider)
        self._tool_calls = 0
        self._blocked: list[JsonObject] = []
        self._ratings_kept = False
        self._final: str | None = None  # the finish reason of the final chunk

    def quick(self, name: str | None, data: str | bytes) -> list[StreamEvent] | None:
        """A chunk of text or thoughts (and usage) read through Structs, as `_chunk` reads
        it; None for any other chunk (see `_QuickChunk`)."""
        try:
            chunk = _decode_quick(data)
        except FAST_FAILED:
            return None
        if chunk.model_version:
            self.acc.model = chunk.model_version
        if chunk.response_id:
            self.acc.request_id = chunk.response_id
        events: list[StreamEvent] = []
        usage = chunk.usage_metadata
        if usage is not None:
            counts = new_usage(
                usage.prompt_token_count or 0,
                (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0),
                usage.cached_content_token_count or 0,
                0,
                [],
            )
            events.append(UsageUpdate(counts))
        for candidate in chunk.candidates or ():
            if not candidate.index:  # candidate 0, as `_first_candidate` picks it
                content = candidate.content
                for part in (content.parts if content is not None else None) or ():
                    if part.text:
                        thought = part.thought is True
                        events.append(
                            ReasoningDelta(part.text) if thought else TextDelta(part.text)
                        )
                break
        return events

    def decode(self, name: str | None, payload: Any) -> list[StreamEvent]:
        # A JSON array holds chunks (the `alt=json` form, or an error wrapped in an array).
        items = payload if isinstance(payload, list) else [payload]
        events: list[StreamEvent] = []
        for item in items:
            # An array can hold the final chunk and more after it: those are after the end.
            events += self.after_end(name, item) if self.done else self._chunk(item)
        return events

    def after_end(self, name: str | None, payload: Any) -> list[StreamEvent]:
        # Usage may trail the final chunk. Early Gemini versions repeated the finish reason
        # on every chunk: a chunk that repeats it is read whole (its verdict is the same
        # one), and so is a block or an error; any other chunk after the end adds its
        # usage and nothing else.
        events: list[StreamEvent] = []
        for item in payload if isinstance(payload, list) else [payload]:
            if not isinstance(item, dict):
                continue
            candidate = _first_candidate(item.get("candidates"))
            raw = candidate.get("finishReason")
            repeats = (
                self._final is not None and raw == self._final and "promptFeedback" not in item
            )
            if repeats:
                events += self._chunk(item)
            elif self._blocks_after_the_end(item, raw):
                # Vertex can put STOP on every chunk and the real end on the last one (a
                # RECITATION or SAFETY chunk, or an error body), as the Firebase SDKs'
                # tests show: a block or an error after an unblocked end is the verdict.
                # Its text, if any, came after the end and is not the answer.
                if is_error(item):
                    events += self._chunk(item)
                else:
                    blocked = _blocked_ratings(candidate.get("safetyRatings"))
                    if blocked:
                        self._blocked = blocked
                    events.append(self._verdict(str(raw), string(candidate.get("finishMessage"))))
                if isinstance(item.get("usageMetadata"), dict):
                    events.append(UsageUpdate(_usage(item["usageMetadata"])))
            elif isinstance(item.get("usageMetadata"), dict):
                events.append(UsageUpdate(_usage(item["usageMetadata"])))
        return events

    def _blocks_after_the_end(self, item: JsonObject, raw: Any) -> bool:
        """Whether a chunk after the end is a block or an error that decides the verdict:
        only while the verdict so far is no block (a block is final)."""
        verdict = self.acc.verdict
        if verdict is not None and verdict.finish_reason in _BLOCKS:
            return False
        return is_error(item) or (isinstance(raw, str) and FINISH_REASONS.get(raw) in _BLOCKS)

    def _chunk(self, payload: Any) -> list[StreamEvent]:
        if not isinstance(payload, dict):
            return [StreamError("a Gemini stream event is not a JSON object")]
        if is_error(payload):
            result = parse_error(payload, None, self.acc.provider or "gemini")
            return error_events(result, self.acc.verdict, "the Gemini stream reported an error")
        model = string(payload.get("modelVersion"))
        if model:
            self.acc.model = model
        response_id = string(payload.get("responseId"))
        if response_id:
            self.acc.request_id = response_id
        events: list[StreamEvent] = []
        meta = payload.get("usageMetadata")
        if isinstance(meta, dict):
            events.append(UsageUpdate(_usage(meta)))
        candidate = _first_candidate(payload.get("candidates"))
        events.extend(self._parts(obj(candidate.get("content"))))
        blocked = _blocked_ratings(candidate.get("safetyRatings"))
        if blocked:
            self._blocked = blocked
        feedback = obj(payload.get("promptFeedback"))
        block_reason = string(feedback.get("blockReason"))
        if block_reason is not None:
            prompt_blocked = _blocked_ratings(feedback.get("safetyRatings"))
            stop = _filter_stop(
                prompt_blocked, block_reason, string(feedback.get("blockReasonMessage"))
            )
            self._keep_ratings("prompt", prompt_blocked)
            events.append(Verdict(PROMPT_BLOCKED, block_reason, stop))
            self.done = True
            return events
        raw = candidate.get("finishReason")
        if isinstance(raw, str):
            events.append(self._verdict(raw, string(candidate.get("finishMessage"))))
            self.done = True
            if self._final is None:
                self._final = raw
        return events

    def _parts(self, content: JsonObject) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for item in arr(content.get("parts")):
            part = obj(item)
            signature = string(part.get("thoughtSignature"))
            if signature:
                self.acc.add_detail(_signature_detail(signature))
            call = part.get("functionCall")
            if isinstance(call, dict):
                events.append(
                    ToolCallDelta(
                        self._tool_calls,
                        id=string(call.get("id")) or None,
                        name=string(call.get("name")) or None,
                        arguments=arguments_text(call.get("args")),
                    )
                )
                self._tool_calls += 1
                continue
            text = string(part.get("text"))
            if text:
                events.append(
                    ReasoningDelta(text) if part.get("thought") is True else TextDelta(text)
                )
        return events

    def _verdict(self, raw: str, explanation: str | None) -> Verdict:
        finish = FINISH_REASONS.get(raw, FinishReason.ERROR)
        if finish in _UNBLOCKED and self._blocked:
            finish = FinishReason.CONTENT_FILTER
        if finish is FinishReason.STOP and self._tool_calls:
            finish = FinishReason.TOOL_CALLS
        if finish is FinishReason.CONTENT_FILTER:
            # The blocked ratings come with the finishing chunk; an earlier chunk's stand in.
            self._keep_ratings("response", self._blocked)
            return Verdict(finish, raw, _filter_stop(self._blocked, raw, explanation))
        stop = StopDetails(explanation=explanation) if explanation is not None else None
        return Verdict(finish, raw, stop)

    def _keep_ratings(self, scope: str, blocked: list[JsonObject]) -> None:
        if blocked and not self._ratings_kept:
            self._ratings_kept = True
            self.acc.add_detail(_ratings_detail(scope, blocked))


def _first_candidate(candidates: Any) -> JsonObject:
    """Candidate 0 of a chunk (the one `parse_response` reads); empty when the chunk has none."""
    for item in arr(candidates):
        candidate = obj(item)
        index = candidate.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or index == 0:
            return candidate
    return {}


def _error_kind(
    code_name: str | None, http: int | None, reasons: set[str], message: str | None
) -> ErrorKind:
    if reasons & AUTH_REASONS:
        return ErrorKind.AUTH
    by_status = ERROR_STATUSES.get(code_name) if code_name is not None else None
    if by_status is None:
        by_status = status_error_kind(http)
    if by_status is not ErrorKind.TRANSIENT and says_blocked(message, _POLICY_MESSAGE):
        return ErrorKind.POLICY
    return by_status


def _error_reasons(details: Any) -> set[str]:
    reasons: set[str] = set()
    for detail in arr(details):
        reason = string(obj(detail).get("reason"))
        if reason is not None:
            reasons.add(reason)
    return reasons


def _error_stop(message: str | None) -> StopDetails | None:
    return StopDetails(explanation=message) if message else None


def _read_parts(
    content: JsonObject,
) -> tuple[str | None, str | None, list[ToolCall], list[str]]:
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    signatures: list[str] = []
    for item in arr(content.get("parts")):
        part = obj(item)
        signature = string(part.get("thoughtSignature"))
        if signature:
            signatures.append(signature)
        call = part.get("functionCall")
        if isinstance(call, dict):
            calls.append(
                ToolCall(
                    id=string(call.get("id")) or "",
                    name=string(call.get("name")) or "",
                    arguments=arguments_text(call.get("args")),
                )
            )
            continue
        text = string(part.get("text"))
        if text is None:
            continue
        if part.get("thought") is True:
            thoughts.append(text)
        else:
            texts.append(text)
    return "".join(texts) or None, "".join(thoughts) or None, calls, signatures


def _blocked_ratings(ratings: Any) -> list[JsonObject]:
    blocked: list[JsonObject] = []
    for item in arr(ratings):
        rating = obj(item)
        if rating.get("blocked") is not True:
            continue
        kept: JsonObject = {}
        category = string(rating.get("category"))
        if category is not None:
            kept["category"] = _category_name(category)
        for name in ("probability", "probabilityScore", "severity", "severityScore"):
            value = rating.get(name)
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                kept[name] = value
        blocked.append(kept)
    return blocked


def _filter_stop(
    blocked: list[JsonObject], reason: str | None, explanation: str | None
) -> StopDetails:
    """The stop details of a filter block: the category rule of the module docstring."""
    categories = _categories(blocked, reason)
    return StopDetails(
        category=categories[0] if categories else None,
        explanation=explanation,
        categories=tuple(categories) if len(categories) > 1 else (),
    )


def _ratings_detail(scope: str, blocked: list[JsonObject]) -> str:
    return orjson.dumps({"type": "safety_ratings", "scope": scope, "ratings": blocked}).decode()


def _signature_detail(signature: str) -> str:
    return orjson.dumps({"type": "thought_signature", "signature": signature}).decode()


def _categories(blocked: list[JsonObject], reason: str | None) -> list[str]:
    categories: list[str] = []
    for rating in blocked:
        category = rating.get("category")
        if isinstance(category, str) and category and category not in categories:
            categories.append(category)
    if not categories and reason and not reason.upper().endswith("_UNSPECIFIED"):
        categories.append(reason.lower())
    return categories


def _category_name(category: str) -> str:
    name = category.lower()
    if name.startswith(_HARM_PREFIX):
        name = name[len(_HARM_PREFIX) :]
    return name


def _usage(meta: JsonObject) -> Usage:
    return Usage(
        input_tokens=integer(meta.get("promptTokenCount")),
        # Thinking tokens are billed as output, as they are at the other providers.
        output_tokens=integer(meta.get("candidatesTokenCount"))
        + integer(meta.get("thoughtsTokenCount")),
        cache_read_tokens=integer(meta.get("cachedContentTokenCount")),
    )


# --- typed fast path (see providers/_common.py) ----------------------------------------
#
# Only wire bodies in camelCase: a body with none of `usageMetadata`, `modelVersion` and
# `responseId` may be a snake_case dump that `wire_keys` rewrites, so it is declined (the
# snake_case keys are then never read, and need not be declared). Safety ratings matter
# only when a filter blocked: they are skipped raw and decoded then, and a rating's scores
# are read as orjson reads them. The Structs hold no cycles, so the garbage collector need
# not track them (`gc=False`). Fields are declared in the order both services write their
# keys (alphabetical), as msgspec looks for the next declared field first.


class _FastCall(msgspec.Struct, gc=False):
    id: str | None = None
    name: str | None = None
    args: Raw = NO_RAW


class _FastPart(msgspec.Struct, rename="camel", gc=False):
    function_call: _FastCall | None = None
    text: str | None = None
    thought: bool | None = None
    thought_signature: str | None = None


class _FastContent(msgspec.Struct, gc=False):
    parts: list[_FastPart] | None = None


class _FastRating(msgspec.Struct, rename="camel", gc=False):
    blocked: bool | None = None
    category: str | None = None
    probability: Raw = NO_RAW
    probability_score: Raw = NO_RAW
    severity: Raw = NO_RAW
    severity_score: Raw = NO_RAW


class _FastCandidate(msgspec.Struct, rename="camel", gc=False):
    content: _FastContent | None = None
    finish_message: str | None = None
    finish_reason: str | None = None
    index: Int | None = 0
    safety_ratings: Raw = NO_RAW


class _FastFeedback(msgspec.Struct, rename="camel", gc=False):
    block_reason: str | None = None
    block_reason_message: str | None = None
    safety_ratings: Raw = NO_RAW


class _FastUsage(msgspec.Struct, rename="camel", gc=False):
    cached_content_token_count: Count | None = 0
    candidates_token_count: Count | None = 0
    prompt_token_count: Count | None = 0
    thoughts_token_count: Count | None = 0


class _FastBody(msgspec.Struct, rename="camel", gc=False):
    # UNSET where detection asks whether the key is there at all (null included).
    candidates: list[_FastCandidate] | msgspec.UnsetType | None = msgspec.UNSET
    create_time: Raw = NO_RAW
    model_version: str | msgspec.UnsetType | None = msgspec.UNSET
    prompt_feedback: _FastFeedback | msgspec.UnsetType | None = msgspec.UNSET
    response_id: str | msgspec.UnsetType | None = msgspec.UNSET
    usage_metadata: _FastUsage | msgspec.UnsetType | None = msgspec.UNSET
    # Keys that point detection at another format (`_hint`, `detect_provider`, Bedrock's
    # InvokeModel markers) or make the body an error body: the dict path decides those.
    object: Absent = 0
    type: Absent = 0
    error: Absent = 0
    choices: Absent = 0
    output: Absent = 0
    guardrail_action: Absent = msgspec.field(default=0, name="amazon-bedrock-guardrailAction")
    invocation_metrics: Absent = msgspec.field(default=0, name="amazon-bedrock-invocationMetrics")


# A stream chunk that `StreamDecoder.quick` takes: text and thoughts, usage, model and
# response id. Anything else in it (a finish reason, ratings, a signature, a call, prompt
# feedback, an error) and the full path reads the chunk.


class _QuickPart(msgspec.Struct, rename="camel", gc=False):
    text: str | None = None
    thought: bool | None = None
    thought_signature: Absent = 0
    function_call: Absent = 0


class _QuickContent(msgspec.Struct, gc=False):
    parts: list[_QuickPart] | None = None


class _QuickCandidate(msgspec.Struct, rename="camel", gc=False):
    index: Int | None = 0
    content: _QuickContent | None = None
    finish_reason: Absent = 0
    safety_ratings: Absent = 0


class _QuickChunk(msgspec.Struct, rename="camel", gc=False):
    candidates: list[_QuickCandidate] | None = None
    usage_metadata: _FastUsage | None = None
    model_version: str | None = None
    response_id: str | None = None
    prompt_feedback: Absent = 0
    error: Absent = 0


_decode_body = msgspec.json.Decoder(_FastBody).decode
_decode_quick = msgspec.json.Decoder(_QuickChunk).decode
_decode_ratings = msgspec.json.Decoder(list[_FastRating] | None).decode
_UNSET = msgspec.UNSET
_FINISH_REASON = FINISH_REASONS.get
# Module names for the members: reading one off the enum class costs a lookup each time.
_STOP, _TOOL_CALLS, _ERROR = FinishReason.STOP, FinishReason.TOOL_CALLS, FinishReason.ERROR
_UNBLOCKED = frozenset({FinishReason.STOP, FinishReason.LENGTH})
"""Finishes a rating marked `blocked: true` overrides (the filter decided, not the end)."""
_BLOCKS = frozenset({FinishReason.CONTENT_FILTER, FinishReason.REFUSAL})
"""Finish reasons that end a stream even after a STOP chunk (`after_end`)."""
_FILTERED = FinishReason.CONTENT_FILTER
# The category rule's answer when no rating is blocked, worked out once for the filter
# finish reasons and the documented block reasons (a `.get` is cheaper than the case
# tests); any other reason is worked out per body.
_FILTER_REASONS = [reason for reason, finish in FINISH_REASONS.items() if finish is _FILTERED]
_REASON_CATEGORY = {
    reason: reason.lower() for reason in (*_FILTER_REASONS, "OTHER", "JAILBREAK")
}.get
# A call without arguments, as Gemini sends it: its text needs no decode and dump.
_NO_ARGS = msgspec.Raw(b"{}")


def parse_fast(data: bytes | str, provider: str | None) -> LLMResponse | None:
    """`parse_response` of a well-typed camelCase body read through Structs, or None."""
    if provider is not None and provider not in ("gemini", "vertex"):
        return None
    try:
        body = _decode_body(data)
        candidates = body.candidates
        feedback = body.prompt_feedback
        usage = body.usage_metadata
        model = body.model_version
        request_id = body.response_id
        if model is _UNSET and request_id is _UNSET and usage is _UNSET:
            return None  # maybe snake_case keys (see above)
        # `looks_like`, which parse_response and detection both require; then candidate
        # 0, as `parse_response` picks it.
        candidate: _FastCandidate | None = None
        if type(candidates) is list:
            if candidates:
                candidate = candidates[0]
                if candidate.index:
                    candidate = next((item for item in candidates if not item.index), None)
        elif not (
            type(feedback) is _FastFeedback
            or (type(usage) is _FastUsage and (type(model) is str or type(request_id) is str))
        ):
            return None
        if provider is None:
            # Detection's Gemini hint; `detect_provider` then tells Vertex AI by its key.
            if candidates is _UNSET and feedback is _UNSET:
                return None
            provider = "vertex" if body.create_time else "gemini"

        text: str | None = None
        thought: str | None = None
        tool_calls: list[ToolCall] = []
        signatures: list[str] | None = None
        content = candidate.content if candidate is not None else None
        parts = content.parts if content is not None else None
        if parts:
            # Concatenated as they come: a full body holds a handful of parts.
            for part in parts:
                signature = part.thought_signature
                if signature:
                    if signatures is None:
                        signatures = []
                    signatures.append(signature)
                call = part.function_call
                if call is not None:
                    args = call.args
                    arguments = "{}" if args == _NO_ARGS else arguments_text(raw_value(args))
                    tool_calls.append(ToolCall(call.id or "", call.name or "", arguments))
                    continue
                piece = part.text
                if piece is None:
                    pass
                elif part.thought is True:
                    thought = piece if thought is None else thought + piece
                else:
                    text = piece if text is None else text + piece

        raw: str | None
        ratings: Raw
        if type(feedback) is _FastFeedback and feedback.block_reason is not None:
            raw = feedback.block_reason
            finish = PROMPT_BLOCKED
            ratings = feedback.safety_ratings
            explanation = feedback.block_reason_message
            scope = "prompt"
        elif candidate is not None:
            raw = candidate.finish_reason
            finish = _FINISH_REASON(raw, _ERROR) if raw else _ERROR
            ratings = candidate.safety_ratings
            if (
                ratings
                and finish in _UNBLOCKED
                and b"blocked" in bytes(ratings)
                and _fast_blocked(_decode_ratings(ratings) or ())
            ):
                finish = _FILTERED
            if finish is _STOP and tool_calls:
                finish = _TOOL_CALLS
            explanation = candidate.finish_message
            scope = "response"
        else:
            raw, finish, ratings, explanation, scope = None, _ERROR, NO_RAW, None, "response"

        # The stop details are written straight to their text (`_filter_stop(...)` and
        # `StopDetails(explanation=…)`'s `to_detail()`), with nothing built to be dumped.
        details: list[Detail] = []
        if finish is _FILTERED:
            blocked = _fast_blocked(_decode_ratings(ratings) or ()) if ratings else None
            if blocked:
                details.append(_stop_detail(_categories(blocked, raw), explanation))
                details.append(_ratings_detail(scope, blocked))
            else:
                # No rating blocked: the category is the reason's own (`_categories`).
                category = _REASON_CATEGORY(raw) if raw else None
                if category is None and raw and not raw.upper().endswith("_UNSPECIFIED"):
                    category = raw.lower()
                details.append(stop_detail_text(category, explanation))
        elif explanation is not None:
            details.append(stop_detail_text(None, explanation))
        if signatures is not None:
            details.extend(map(_signature_detail, signatures))

        if type(usage) is _FastUsage:
            counts = new_usage(
                usage.prompt_token_count or 0,
                # Thinking tokens are billed as output (as `_usage` counts them).
                (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0),
                usage.cached_content_token_count or 0,
                0,
                [],
            )
        else:
            counts = new_usage(0, 0, 0, 0, [])
        return new_response(
            text or None,
            tool_calls,
            thought or None,
            details,
            counts,
            finish,
            raw,
            model if type(model) is str else None,
            request_id if type(request_id) is str else None,
            provider,
            API,
            finish in INTERRUPTED and bool(text or tool_calls),
        )
    except FAST_FAILED:
        return None


def _fast_blocked(ratings: Iterable[_FastRating]) -> list[JsonObject]:
    """`_blocked_ratings` of typed ratings."""
    blocked: list[JsonObject] = []
    for rating in ratings:
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
                # orjson gives these exact types; a boolean is not a score.
                if type(value) in _SCORE_TYPES:
                    kept[name] = value
        blocked.append(kept)
    return blocked


_SCORE_TYPES = (str, int, float)


def _stop_detail(categories: Sequence[str], explanation: str | None) -> str:
    """`_filter_stop(...).to_detail()` (or `StopDetails(explanation=…)`'s) from its parts,
    the same JSON text without building the StopDetails on the hot path."""
    return stop_detail_text(
        categories[0] if categories else None,
        explanation,
        None,
        None,
        None,
        categories if len(categories) > 1 else (),
    )
