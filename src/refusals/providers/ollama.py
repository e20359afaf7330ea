"""Ollama's native API (`/api/chat`, `/api/generate`): full responses, streams and HTTP
error bodies.

`/api/chat` answers `{"model", "created_at", "message": {"role", "content", "thinking",
"tool_calls": [{"function": {"name", "arguments": {...}}}]}, "done", "done_reason",
"prompt_eval_count", "eval_count", …}`; `/api/generate` has `response` (and `thinking`)
instead of `message`. Errors are `{"error": "<text>"}`: a string, not an object. Ollama's
OpenAI-compatible endpoints (`/v1/...`) are read by the OpenAI modules instead. A stream
(the default for both endpoints) is one such body per line (NDJSON), each with the next piece
of the answer, the last with `done: true` (see `StreamDecoder`).

Documentation:

- https://github.com/ollama/ollama/blob/main/docs/api.md (responses, `done_reason`,
  loading and unloading a model)
- https://docs.ollama.com/api/errors (error body, statuses, errors in a stream)
- https://docs.ollama.com/capabilities/thinking (`message.thinking`, `thinking`)

Ollama has no refusal or content-filter signal of its own; what matters here is that an
unfinished body (`done: false`) or an unknown `done_reason` is never read as a finished
answer.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from refusals.model import (
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
from refusals.providers import openai_chat
from refusals.providers._common import (
    FAST_FAILED,
    NO_RAW,
    Absent,
    Count,
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

API = "chat"

DONE_REASONS: dict[str, FinishReason] = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    # Answers to an empty request that loads or unloads the model: nothing was asked, so
    # the request finished normally (with no content).
    "load": FinishReason.STOP,
    "unload": FinishReason.STOP,
}
"""`done_reason` → FinishReason; any other value is ERROR. A body with `done: true` and no
`done_reason` (older Ollama versions sent none) is STOP."""

# Error keys besides `error`: a 401 from a remote instance adds the sign-in address.
ERROR_KEYS = frozenset({"error", "signin_url"})
_AUTH_MESSAGE = re.compile(r"unauthori[sz]ed|api key|forbidden", re.IGNORECASE)
_INVALID_MESSAGE = re.compile(
    r"not found|no such model|invalid|missing|must be|does not support|not supported",
    re.IGNORECASE,
)


def detect_provider(body: JsonObject) -> str | None:
    """`"ollama"` for a native chat/generate response or a native error body; else None.

    A native error is `{"error": "<text>"}` (a 401 adds `signin_url`). Bodies with other
    keys are left to the OpenAI-compatible modules (xAI, for one, answers `{"code": "...",
    "error": "..."}`).
    """
    if "choices" in body or "object" in body:
        return None
    if isinstance(body.get("done"), bool) and (
        isinstance(body.get("message"), dict) or isinstance(body.get("response"), str)
    ):
        return "ollama"
    if isinstance(body.get("error"), str) and ERROR_KEYS.issuperset(body):
        return "ollama"
    return None


def looks_like(body: JsonObject) -> bool:
    return detect_provider(body) is not None


def is_error(body: JsonObject) -> bool:
    """Whether `body` is an error body: an `error` and no answer beside it."""
    return (
        isinstance(body.get("error"), str | dict)
        and "message" not in body
        and "response" not in body
    )


def parse_response(body: JsonObject, provider: str) -> LLMResponse:
    """A full (non-streaming) `/api/chat` or `/api/generate` response."""
    if not any(name in body for name in ("message", "response", "done", "done_reason")):
        raise NormalizeError(
            "expected an Ollama /api/chat or /api/generate response (message or response, "
            f"done, done_reason); got keys: {key_names(body)}"
        )
    message = obj(body.get("message"))
    content = string(message.get("content")) if message else string(body.get("response"))
    reasoning = string(message.get("thinking")) if message else string(body.get("thinking"))
    calls = [_tool_call(item) for item in arr(message.get("tool_calls"))]

    raw = string(body.get("done_reason"))
    # A body that says it is not done is a cut stream, not an answer.
    done = body.get("done") is True
    finish = _finish(raw, bool(calls)) if done else FinishReason.ERROR

    content = content or None
    return LLMResponse(
        content=content,
        tool_calls=calls,
        reasoning=reasoning or None,
        usage=_usage(body),
        finish_reason=finish,
        raw_finish_reason=raw,
        model=string(body.get("model")),
        provider=provider,
        api=API,
        cut_off=bool(content or calls) and finish is FinishReason.ERROR,
    )


def _finish(raw: str | None, has_tool_calls: bool) -> FinishReason:
    """How a finished (`done: true`) body ended, from its `done_reason`."""
    finish = FinishReason.STOP if raw is None else DONE_REASONS.get(raw, FinishReason.ERROR)
    if finish is FinishReason.STOP and has_tool_calls:
        finish = FinishReason.TOOL_CALLS
    return finish


def _usage(body: JsonObject) -> Usage:
    return Usage(
        input_tokens=integer(body.get("prompt_eval_count")),
        output_tokens=integer(body.get("eval_count")),
    )


def parse_error(body: JsonObject | str, status: int | None, provider: str) -> LLMResponse:
    """An HTTP error body (`{"error": "..."}`), or the text of a page sent instead."""
    payload: Any = body
    code: str | None = None
    if isinstance(payload, str):
        text: str | None = strip_tags(payload)
    else:
        error = obj(payload).get("error")
        text = string(error)
        if isinstance(error, dict):  # an OpenAI-style body from Ollama's /v1 endpoints
            # OpenAI's policy codes (`invalid_prompt`, `content_filter`) are filters here
            # too; anything else keeps Ollama's own reading of the status.
            if openai_chat.classify_error(payload, status).error.kind is ErrorKind.POLICY:
                return openai_chat.parse_error(payload, status, provider)
            text = string(error.get("message"))
            code = string(error.get("code")) or string(error.get("type"))
    message = bounded_message(text)
    kind = _error_kind(status, message)
    stop = StopDetails(explanation=message) if message else None
    return error_response(
        ProviderError(kind, status, code, message), provider=provider, api=API, stop=stop
    )


# Streams --------------------------------------------------------------------------------

# NDJSON lines have no names; a proxy re-framing them as SSE may use the default type.
_STREAM_EVENT_NAMES = (None, "message")


def detect_stream(name: str | None, payload: Any) -> str | None:
    """`"ollama"` when the first event of a stream is a native `/api/chat` or `/api/generate`
    chunk (`done` and `message` or `response`) or a native error line; None for anything else,
    OpenAI-style chunks (`choices`, `object`) from Ollama's `/v1` endpoints included."""
    if name not in _STREAM_EVENT_NAMES or not isinstance(payload, dict):
        return None
    return detect_provider(payload)


class StreamDecoder(WireDecoder):
    """Ollama's native stream: one chat or generate body per line.

    Each line's `message.content` (or `response`) and `message.thinking` (or `thinking`) are
    the next text and reasoning; `message.tool_calls` holds whole calls. The line with
    `done: true` carries the verdict (`done_reason`, as in `parse_response`) and the token
    counts, and ends the stream; a stream without one is incomplete (an error). An
    `{"error": "..."}` line, which Ollama sends when the model fails mid-stream, is a
    `StreamError` with the verdict `parse_error` gives the same body.
    """

    API = API

    def __init__(self, provider: str) -> None:
        super().__init__(provider)
        self._tool_calls = 0

    def decode(self, name: str | None, payload: Any) -> list[StreamEvent]:
        if not isinstance(payload, dict):
            return [StreamError("an Ollama stream line is not a JSON object")]
        if is_error(payload):
            result = parse_error(payload, None, self.acc.provider or "ollama")
            return error_events(result, self.acc.verdict, "the Ollama stream reported an error")
        model = string(payload.get("model"))
        if model:
            self.acc.model = model
        message = obj(payload.get("message"))
        # As in `parse_response`: `/api/chat` lines have a message, `/api/generate` lines not.
        holder, text_key = (message, "content") if message else (payload, "response")
        events: list[StreamEvent] = []
        thinking = string(holder.get("thinking"))
        if thinking:
            events.append(ReasoningDelta(thinking))
        text = string(holder.get(text_key))
        if text:
            events.append(TextDelta(text))
        for item in arr(message.get("tool_calls")):
            call = _tool_call(item)
            events.append(
                ToolCallDelta(
                    self._tool_calls,
                    id=call.id or None,
                    name=call.name or None,
                    arguments=call.arguments,
                )
            )
            self._tool_calls += 1
        if payload.get("done") is True:
            events.append(UsageUpdate(_usage(payload)))
            raw = string(payload.get("done_reason"))
            events.append(Verdict(_finish(raw, self._tool_calls > 0), raw))
            self.done = True
        return events


def _error_kind(status: int | None, message: str | None) -> ErrorKind:
    if status is not None or message is None:
        # 404 (model not found) is an invalid request; 500 is a server fault, retryable.
        return status_error_kind(status)
    # No status: an error line in a 200 stream, where the model failed while running
    # ("an error was encountered while running the model"), a server fault like a 500,
    # unless the message says the request or the credentials are wrong.
    if _AUTH_MESSAGE.search(message):
        return ErrorKind.AUTH
    if _INVALID_MESSAGE.search(message):
        return ErrorKind.INVALID_REQUEST
    return ErrorKind.TRANSIENT


def _tool_call(item: Any) -> ToolCall:
    call = obj(item)
    function = obj(call.get("function"))
    arguments = function.get("arguments")
    return ToolCall(
        id=string(call.get("id")) or "",
        name=string(function.get("name")) or "",
        arguments=arguments_text(arguments),
    )


# --- typed fast path (see providers/_common.py) ----------------------------------------


class _FastMessage(msgspec.Struct, gc=False):
    # `parse_response` reads the message only when it is a non-empty object; `role` is
    # declared to tell one from an empty object (see `parse_fast`).
    role: Raw = NO_RAW
    content: str | None = None
    thinking: str | None = None
    tool_calls: Raw = NO_RAW


class _FastBody(msgspec.Struct, gc=False):
    model: str | None = None
    message: _FastMessage | None = None
    response: str | None = None
    thinking: str | None = None
    done_reason: str | None = None
    done: bool | None = None
    prompt_eval_count: Count | None = 0
    eval_count: Count | None = 0
    # Keys that make detection look elsewhere: the ones earlier formats claim a body by
    # (`_CLAIMED_EARLIER` in providers/__init__.py, `error` among them), `choices` (an
    # OpenAI-style body, see `_module_for`), the ones `bedrock.is_invoke_body` reads (every
    # native InvokeModel kind needs `results`, `generation` or `outputs`), and the ones
    # without which `cohere.detect_provider`, asked first, says None.
    type: Absent = 0
    object: Absent = 0
    output: Absent = 0
    error: Absent = 0
    candidates: Absent = 0
    promptFeedback: Absent = 0
    prompt_feedback: Absent = 0
    usageMetadata: Absent = 0
    usage_metadata: Absent = 0
    stopReason: Absent = 0
    aws_type: Absent = msgspec.field(default=0, name="__type")
    aws_error: Absent = msgspec.field(default=0, name="Error")
    choices: Absent = 0
    guardrail_action: Absent = msgspec.field(default=0, name="amazon-bedrock-guardrailAction")
    invocation_metrics: Absent = msgspec.field(default=0, name="amazon-bedrock-invocationMetrics")
    results: Absent = 0
    generation: Absent = 0
    outputs: Absent = 0
    finish_reason: Absent = 0
    generation_id: Absent = 0


_decode_body = msgspec.json.Decoder(_FastBody).decode

# `_finish` of every known value (and of none), without and with tool calls.
_FINISHES: dict[str | None, tuple[FinishReason, FinishReason]] = {
    raw: (_finish(raw, False), _finish(raw, True)) for raw in (None, *DONE_REASONS)
}
_UNKNOWN_FINISH = (FinishReason.ERROR, FinishReason.ERROR)
_UNFINISHED = FinishReason.ERROR  # a global, read faster than an enum member on every body


def parse_fast(data: bytes | str, provider: str | None) -> LLMResponse | None:
    """`parse_response` of a well-typed `/api/chat` or `/api/generate` body read through
    Structs, or None.

    The Structs reject every key detection would look elsewhere for, and an error body
    (`error`) with them.
    """
    if provider is not None and provider != "ollama":
        return None
    try:
        body = _decode_body(data)
        message = body.message
        if provider is None:
            # `detect_provider`, on what the Structs let through.
            if body.done is None or (message is None and body.response is None):
                return None
        elif message is None and (body.response, body.done, body.done_reason) == (None,) * 3:
            return None  # `parse_response` raises unless one of these keys is there
        # `parse_response` reads the message when it is a non-empty object, else `response`:
        # any declared key present makes it non-empty.
        if message is None:
            content, reasoning, calls = body.response, body.thinking, []
        elif message.role or message.tool_calls or message.content is not None:
            content, reasoning = message.content, message.thinking
            calls = (
                [_tool_call(item) for item in arr(raw_value(message.tool_calls))]
                if message.tool_calls
                else []
            )
        elif message.thinking is not None:
            content, reasoning, calls = None, message.thinking, []
        else:
            # An empty message (the dict reader then reads `response`) or one with only
            # keys not declared here (it reads no `response`): the Structs cannot tell.
            return None
    except FAST_FAILED:
        # The Structs rejected the body, or orjson the tool calls, read as the dict reader
        # reads them.
        return None
    raw = body.done_reason
    if body.done is True:
        plain, with_calls = _FINISHES.get(raw, _UNKNOWN_FINISH)
        finish = with_calls if calls else plain
    else:
        finish = _UNFINISHED  # a body that says it is not done is a cut stream
    content = content or None
    return new_response(
        content,
        calls,
        reasoning or None,
        [],
        # As `integer` reads the counts: `Count` rejects negative ones, null and absent are 0.
        new_usage(body.prompt_eval_count or 0, body.eval_count or 0, 0, 0, []),
        finish,
        raw,
        body.model,
        None,
        provider or "ollama",
        API,
        finish is _UNFINISHED and bool(content or calls),
    )
