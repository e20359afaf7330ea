"""The per-record classifier: one decoded log line (or document) to one `ScanRecord`.

Every layout ends in `normalize` or the stream decoder, so a scan says exactly what
`refusals inspect` says about the same body. The envelopes around the bodies are read
here: OpenAI Batch output lines, Anthropic Message Batches results, and `exec --json`
event logs (one record per run, from `thread.started` to `thread.completed`).

Each line has two readers. The dict path (`Classifier.classify` on `orjson.loads(line)`)
is the reference. The typed path (`Classifier.read_line`) decodes only the envelope keys
the dict path reads, into `msgspec.Struct` types, and keeps each body as its raw bytes
(`msgspec.Raw`), so `normalize` reads the body with its own typed decode instead of
walking a dict. The typed path answers only for the shapes it knows and only when its
answer is the dict path's; for anything else (a value of another type, a result type it
does not know, a body `normalize` refuses, bytes orjson would refuse) it returns None and
the line takes the dict path, which so writes every bad-record message.
`tests/scan/test_typed.py` compares the two paths record by record.

A scan that only counts (`Classifier.count_line`) asks first for the verdict alone. A
line is first decoded into the formats' plain-answer Structs (`_QuickBatchLine` for a
batch line, the format's own for a bare body, `StructReader.plain_body`), which decode
only plain answers: most lines are counted from that one decode and `plain_answer`, and
a failed batch request from it and the error memo below; the line's first bytes pick the
Structs (`_routes`). A batch line they decline is read with its body raw (`_Envelope`):
an error, or a request that got no answer, is counted once per status and bytes (they
are canned: the same few come again and again); a 2xx body is decoded once by its
format's split readers (`struct_reader(body, provider)`: chat completions, Messages,
Gemini, Converse, Responses), plain answers counted from `plain_completion` and the
like, the others from the response those readers build, once per `outcome_key` (the rest
from a memo). A bare body of such a format is decoded once, into its Struct plus the one
envelope key it does not read. Any other line is read as the typed path reads it.
Refused and filtered responses are tallied by what a summary counts of them
(`BlockedKey`), never made into records.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Final, TypeVar

import msgspec
import orjson
from msgspec import UNSET, Raw, UnsetType

from refusals.model import FinishReason, LLMResponse
from refusals.providers import (
    NOT_PLAIN,
    NormalizeError,
    Plain,
    StructReader,
    anthropic,
    head_reader,
    normalize,
    openai_chat,
    plain_verdict,
    searched_reader,
    struct_reader,
)
from refusals.providers._common import Absent
from refusals.providers.anthropic import message_response, plain_message
from refusals.providers.anthropic.schema import Message, PlainMessage
from refusals.providers.openai_chat import completion_response, plain_completion
from refusals.providers.openai_chat.schema import Completion, PlainCompletion
from refusals.refusal import notice
from refusals.scan._record import ScanRecord, Stage
from refusals.scan._summary import BlockedKey, Tally

JsonObject = dict[str, Any]

LAYOUTS = (
    "auto",
    "json",
    "jsonl",
    "openai-batch",
    "anthropic-batch",
    "stream",
    "exec-events",
    "proxy-log",
)
"""Values of `--format`: `auto` recognises each file's layout (docs/scan.md)."""

MAX_EXPLANATION_CHARS = 400
"""Explanations taken from refusal text are cut to this many characters."""

_BLOCKED = frozenset({FinishReason.REFUSAL, FinishReason.CONTENT_FILTER})
_FINISH_VALUES = frozenset(reason.value for reason in FinishReason)
# `FinishReason.value` is a property, several times slower than a dict lookup here.
_FINISH_TEXT = {reason: reason.value for reason in FinishReason}

# Anthropic Message Batches results carry an errored request's error body but not its
# HTTP status; the error type names it
# (https://docs.anthropic.com/en/api/errors#http-errors).
_ANTHROPIC_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}

# `exec --json` events (docs/exec-events.md); any `item.*` event belongs too.
_EXEC_TYPES = frozenset(
    {"thread.started", "turn.started", "turn.completed", "turn.failed", "thread.completed"}
)
# thread.completed `outcome_code` -> finish reason, for runs without a `refusal` event.
_OUTCOME_FINISH = {
    "success": "stop",
    "refused": "refusal",
    "content_filtered": "content_filter",
    "turn_limit": "length",
    "error": "error",
    "cancelled": "error",
}


class BadRecord(Exception):
    """A line or document that is not a record of any known layout (counted, not fatal)."""


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int:
    return value if type(value) is int else 0


def _bounded(text: str) -> str:
    collapsed = " ".join(text.split())
    if len(collapsed) > MAX_EXPLANATION_CHARS:
        return collapsed[: MAX_EXPLANATION_CHARS - 3] + "..."
    return collapsed


def record_from_response(
    response: LLMResponse,
    *,
    source: str,
    line: int,
    layout: str,
    record_id: str | None = None,
    with_notice: bool = True,
) -> ScanRecord:
    """The scan verdict on one normalized response.

    `with_notice=False` leaves `notice` unset, for a record that is only counted (the
    notice is the costliest part of a refused record, and no count reads it).
    """
    finish = response.finish_reason
    usage = response.usage
    tokens_in = usage.input_tokens if usage is not None else 0
    tokens_out = usage.output_tokens if usage is not None else 0
    if finish not in _BLOCKED:
        # The common case: no stop details, explanation or notice to work out.
        return ScanRecord(
            source,
            line,
            record_id or response.request_id,
            layout,
            response.provider,
            response.model,
            _FINISH_TEXT[finish],
            response.raw_finish_reason,
            None,
            None,
            None,
            None,
            _served_by_fallback(response),
            None,
            tokens_in,
            tokens_out,
        )
    category, explanation, recommended, stage = _blocked_fields(response)
    return ScanRecord(
        source,
        line,
        record_id or response.request_id,
        layout,
        response.provider,
        response.model,
        _FINISH_TEXT[finish],
        response.raw_finish_reason,
        category,
        explanation,
        notice(response) if with_notice else None,
        stage,
        _served_by_fallback(response),
        recommended,
        tokens_in,
        tokens_out,
    )


def _blocked_fields(response: LLMResponse) -> tuple[str | None, str | None, str | None, Stage]:
    """The category, explanation, recommended model and stage of a refused or filtered
    response."""
    category, explanation, recommended = _stop_fields(response)
    # A refusal's content is its message, unless it is an answer the refusal cut off.
    if (
        explanation is None
        and response.finish_reason is FinishReason.REFUSAL
        and response.content
        and not response.cut_off
    ):
        explanation = _bounded(response.content) or None
    if explanation is None and response.error is not None and response.error.message:
        explanation = _bounded(response.error.message) or None
    return category, explanation, recommended, "output" if response.cut_off else "prompt"


StopFields = tuple[str | None, str | None, str | None]
_NO_STOP: StopFields = (None, None, None)
_stop_memo: dict[tuple[Any, ...], StopFields] = {}
_STOP_MEMO_SIZE = 512


def _stop_fields(response: LLMResponse) -> StopFields:
    """The category, explanation and recommended model of the response's stop details.

    `stop_details` decodes every reasoning detail's JSON text on each call (several
    times an `orjson.loads` of the whole body), while a log's refusals carry a few
    canned details again and again; what it answers depends on those details alone, so
    the answer is kept per details (hashable ones, a bounded number).
    """
    details = response.reasoning_details
    if not details:
        return _NO_STOP
    key = tuple(details)
    try:
        return _stop_memo[key]
    except KeyError:
        pass
    except TypeError:  # a detail given as a dict
        return _read_stop_fields(response)
    fields = _read_stop_fields(response)
    if len(_stop_memo) >= _STOP_MEMO_SIZE:
        _stop_memo.clear()
    _stop_memo[key] = fields
    return fields


def _read_stop_fields(response: LLMResponse) -> StopFields:
    stop = response.stop_details
    if stop is None:
        return _NO_STOP
    category = stop.category or (", ".join(stop.categories) if stop.categories else None)
    return category, stop.explanation, stop.recommended_model


PROXY_VERDICT = "proxy.verdict"
"""The `type` of a `refusals proxy` log line (docs/proxy.md)."""

_PROXY_TEXT = ("provider", "model", "raw_finish_reason", "category", "explanation", "notice")


def proxy_record(obj: JsonObject, *, source: str, line: int) -> ScanRecord:
    """The record of one `refusals proxy` log line: the proxy wrote the verdict with
    `record_from_response`, so the line is read back field by field."""
    if obj.get("type") != PROXY_VERDICT:
        raise BadRecord(f"expected a {PROXY_VERDICT} line, got type {obj.get('type')!r}")
    finish = obj.get("finish_reason")
    if finish not in _FINISH_VALUES:
        raise BadRecord(f"a {PROXY_VERDICT} line with finish_reason {finish!r}")
    for name in _PROXY_TEXT:
        if obj.get(name) is not None and type(obj[name]) is not str:
            raise BadRecord(f"a {PROXY_VERDICT} line whose {name} is not a string")
    stage = obj.get("stage")
    record_id = obj.get("id")
    return ScanRecord(
        source,
        line,
        record_id if type(record_id) is str else None,
        "proxy-log",
        obj.get("provider"),
        obj.get("model"),
        str(finish),
        obj.get("raw_finish_reason"),
        obj.get("category"),
        obj.get("explanation"),
        obj.get("notice"),
        stage if stage in ("prompt", "output") else None,
        obj.get("served_by_fallback") is True,
        obj.get("recommended_model") if type(obj.get("recommended_model")) is str else None,
        _int(obj.get("input_tokens")),
        _int(obj.get("output_tokens")),
    )


def _served_by_fallback(response: LLMResponse) -> bool:
    """`response.served_by_fallback`, without decoding details that cannot name a fallback.

    Most responses carry no usage iterations and no detail whose JSON text contains
    `fallback` (or an escape that could spell it); those were not served by a fallback.
    """
    usage = response.usage
    if usage is not None and usage.iterations:
        return response.served_by_fallback
    for detail in response.reasoning_details or ():
        if not isinstance(detail, str) or "fallback" in detail or "\\u" in detail:
            return response.served_by_fallback
    return False


def _normalize(body: Any, provider: str | None = None, status: int | None = None) -> LLMResponse:
    try:
        return normalize(body, provider=provider, status=status)
    except NormalizeError as exc:
        # The list of every known wire format that follows adds nothing per line.
        raise BadRecord(str(exc).split("; expected ", 1)[0]) from None


def _status_only(provider: str, raw: str | None) -> LLMResponse:
    # A batch request that produced no response at all (cancelled, expired, failed).
    return LLMResponse(finish_reason=FinishReason.ERROR, raw_finish_reason=raw, provider=provider)


def openai_batch_response(obj: JsonObject) -> tuple[LLMResponse, str | None]:
    """The response in one OpenAI Batch output line, and its `custom_id`.

    `{custom_id, response: {status_code, request_id, body}, error}`; `body` is a Chat
    Completions or Responses object, or an error body when `status_code` is 400 or more.
    """
    custom_id = _text(obj.get("custom_id"))
    wrapped = obj.get("response")
    if isinstance(wrapped, dict) and isinstance(wrapped.get("body"), dict | str):
        body = wrapped["body"]
        status = wrapped.get("status_code")
        if type(status) is int and status >= 400:
            response = _normalize(body, provider="openai", status=status)
        else:
            try:
                response = normalize(body)
            except NormalizeError:
                response = _normalize(body, provider="openai")
        if response.request_id is None:
            response.request_id = _text(wrapped.get("request_id"))
        return response, custom_id
    error = obj.get("error")
    if isinstance(error, dict):
        return _status_only("openai", _text(error.get("code")) or "error"), custom_id
    raise BadRecord("an OpenAI Batch line without a response body or an error")


def anthropic_batch_response(obj: JsonObject) -> tuple[LLMResponse, str | None]:
    """The response in one Anthropic Message Batches result line, and its `custom_id`.

    `{custom_id, result: {type: succeeded | errored | canceled | expired, message | error}}`.
    """
    custom_id = _text(obj.get("custom_id"))
    result = obj.get("result")
    kind = result.get("type") if isinstance(result, dict) else None
    if kind == "succeeded" and isinstance(result, dict) and isinstance(result.get("message"), dict):
        return _normalize(result["message"], provider="anthropic"), custom_id
    if kind == "errored" and isinstance(result, dict) and isinstance(result.get("error"), dict):
        error = result["error"]
        status = _anthropic_error_status(error)
        return _normalize(error, provider="anthropic", status=status), custom_id
    if kind in ("canceled", "expired"):
        return _status_only("anthropic", kind), custom_id
    raise BadRecord(f"an Anthropic batch result of unknown type {kind!r}")


def _anthropic_error_status(error: JsonObject) -> int:
    """The HTTP status an Anthropic batch error body stands for (500 when it names none)."""
    inner = error.get("error")
    error_type = inner.get("type") if isinstance(inner, dict) else error.get("type")
    status = _ANTHROPIC_ERROR_STATUS.get(error_type) if isinstance(error_type, str) else None
    return status or 500


# The typed path: the keys of each envelope that the dict path reads, and nothing else.
# Untracked by the GC (they hold strings, numbers and raw text, so never a cycle).
# A raw value keeps its JSON text (`null` included); an absent one is empty.
_ABSENT = Raw()


class _Response(msgspec.Struct, gc=False):
    """`response` of an OpenAI Batch output line."""

    status_code: int | None = None
    request_id: str | None = None
    body: Raw = _ABSENT


class _OpenAIError(msgspec.Struct, gc=False):
    """`error` of an OpenAI Batch output line for a request that got no response."""

    code: str | None = None


class _Result(msgspec.Struct, gc=False):
    """`result` of an Anthropic Message Batches result line."""

    type: str | None = None
    message: Raw = _ABSENT
    error: Raw = _ABSENT


class _Envelope(msgspec.Struct, gc=False):
    """The keys of a log line that decide its layout and lead to its body.

    An unset key was absent (the dict path tells absent from null). `response` may be a
    string because Ollama's generate bodies carry their text under that key.
    """

    custom_id: str | UnsetType | None = UNSET
    response: _Response | str | UnsetType | None = UNSET
    error: Raw | UnsetType = UNSET
    result: _Result | UnsetType = UNSET
    type: str | UnsetType = UNSET


class _PlainResponse(msgspec.Struct, gc=False):
    """`response` of an OpenAI Batch output line, its body decoded as a completion."""

    status_code: int | None = None
    body: Completion | None = None


class _PlainResult(msgspec.Struct, gc=False):
    """`result` of an Anthropic batch line, its message decoded as a Messages body."""

    type: str | None = None
    message: Message | None = None


class _PlainEnvelope(msgspec.Struct, gc=False):
    """`_Envelope` with the body decoded in the same pass, for `_plain`: a line whose body
    is not of the expected format fails the decode and is read through `_Envelope`."""

    custom_id: str | UnsetType | None = UNSET
    response: _PlainResponse | str | UnsetType | None = UNSET
    error: Raw | UnsetType = UNSET
    result: _PlainResult | UnsetType = UNSET
    type: str | UnsetType = UNSET


class _QuickResponse(msgspec.Struct, gc=False, kw_only=True):
    """`_PlainResponse` of a 2xx response whose body is a plain answer (fields in the
    wire's key order: an error status fails the decode before its body is read)."""

    status_code: Annotated[int, msgspec.Meta(lt=400)] | None = None
    body: PlainCompletion


class _QuickResult(msgspec.Struct, gc=False):
    """`_PlainResult` of a succeeded request whose message is a plain answer, or of a
    request that failed (its error kept raw, for `_error_key`'s memo)."""

    type: str | None = None
    message: PlainMessage | UnsetType = UNSET
    error: Raw = _ABSENT


class _QuickBatchLine(msgspec.Struct, gc=False):
    """`_PlainEnvelope` of a batch line whose body is a plain answer: the formats' plain
    Structs (`PlainCompletion`, `PlainMessage`) in place of their full ones, so that a
    line this decodes is one `_plain` finds plain, with the verdict `plain_answer` gives.
    A line of any other kind fails the decode (the first thing `count_line` tries)."""

    custom_id: str | None
    response: _QuickResponse | UnsetType | None = UNSET
    result: _QuickResult | UnsetType = UNSET
    error: Raw | UnsetType = UNSET
    type: str | UnsetType = UNSET


_decode_quick_batch = msgspec.json.Decoder(_QuickBatchLine).decode
_BATCH_HEAD: Final = 96
"""Batch lines name their `custom_id` first or after a short `id`: within these bytes."""

_decode_envelope = msgspec.json.Decoder(_Envelope).decode
_decode_plain_envelope = msgspec.json.Decoder(_PlainEnvelope).decode
_E = TypeVar("_E", _Envelope, _PlainEnvelope)
_decode_openai_error = msgspec.json.Decoder(_OpenAIError).decode
_decode_text = msgspec.json.Decoder(str).decode

_TYPED_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
"""What msgspec raises on a line the typed path does not read."""

_U64_LIMIT: Final = 2**64
"""orjson reads integers from here on as floats, and a float status is not a status."""

ORJSON_MAX_DEPTH: Final = 1024
"""orjson refuses JSON nested deeper than this."""
_SHORT_LINE: Final = 2 * ORJSON_MAX_DEPTH
"""Each level of nesting takes two bytes, so a line this short cannot be too deep."""
_DEPTH_MARGIN: Final = 8
"""Frames a caller of `read_line` may be above the classifier's maker (see below)."""


def deep_nesting_refused() -> bool:
    """Whether msgspec, called from here, refuses nesting deeper than orjson allows.

    msgspec's limit follows the interpreter's recursion limit (CPython 3.11) or a fixed
    C limit (3.12 on), so it may be above orjson's. Asked before a file's lines are read:
    a decode called from deeper in the stack has less room left, never more.
    """
    # One level deeper than orjson allows, less a margin for callers a few frames up.
    depth = ORJSON_MAX_DEPTH - _DEPTH_MARGIN
    try:
        _decode_envelope(b'{"error":' + b"[" * depth + b"]" * depth + b"}")
    except _TYPED_ERRORS:
        return True
    return False


def _plausible(line: bytes, deep_refused: bool) -> bool:
    """False when the bytes msgspec skips (unread keys, raw bodies) could make orjson
    refuse the line: bytes that are not UTF-8, or nesting deeper than orjson allows.

    One such case is not looked for, as no cheap test finds it: a number beyond a
    double's range (`1e400`, or 310 digits) in skipped bytes. orjson refuses the line,
    so the dict path reports it as not JSON; the typed path reads its record (normalize
    reads such a body leniently).
    """
    if not line.isascii():
        try:
            line.decode()
        except UnicodeDecodeError:
            return False
    if deep_refused or len(line) <= _SHORT_LINE:
        return True
    return line.count(b"[") + line.count(b"{") <= ORJSON_MAX_DEPTH


TypedRead = tuple[LLMResponse, str | None, str]
"""What the typed path reads from a line: the response, its custom id and the layout."""


def _text_payload(data: bytes) -> str | None:
    """A body that is not an object, as the dict path hands it to `normalize`: a string's
    text; None for any other value or none."""
    return _decode_text(data) if data[:1] == b'"' else None


def _openai_batch_typed(envelope: _Envelope) -> TypedRead | None:
    """`openai_batch_response` on the typed envelope; None to take the dict path."""
    custom_id = envelope.custom_id if type(envelope.custom_id) is str else None
    wrapped = envelope.response
    if type(wrapped) is _Response:
        data = bytes(wrapped.body)
        body = data if data[:1] == b"{" else _text_payload(data)
        if body is not None:
            status = wrapped.status_code
            if status is not None and 400 <= status < _U64_LIMIT:
                response = normalize(body, provider="openai", status=status)
            else:
                try:
                    response = normalize(body)
                except NormalizeError:
                    response = normalize(body, provider="openai")
            if response.request_id is None:
                response.request_id = wrapped.request_id
            return response, custom_id, "openai-batch"
    error = envelope.error
    if type(error) is Raw and bytes(error)[:1] == b"{":
        code = _decode_openai_error(error).code
        return _status_only("openai", code or "error"), custom_id, "openai-batch"
    return None


def _anthropic_batch_typed(envelope: _Envelope) -> TypedRead | None:
    """`anthropic_batch_response` on the typed envelope; None to take the dict path."""
    result = envelope.result
    if type(result) is not _Result:
        return None
    custom_id = envelope.custom_id if type(envelope.custom_id) is str else None
    kind = result.type
    if kind == "succeeded":
        message = bytes(result.message)
        if message[:1] != b"{":
            return None
        return normalize(message, provider="anthropic"), custom_id, "anthropic-batch"
    if kind == "errored":
        error = bytes(result.error)
        if error[:1] != b"{":
            return None
        # Rare, and normalize reads an error body the dict way whatever it is given:
        # decode it here once, to find the status its type stands for.
        body = orjson.loads(error)
        status = _anthropic_error_status(body)
        return normalize(body, provider="anthropic", status=status), custom_id, "anthropic-batch"
    if kind in ("canceled", "expired"):
        return _status_only("anthropic", kind), custom_id, "anthropic-batch"
    return None


_TYPED_READ_ERRORS = (*_TYPED_ERRORS, NormalizeError, orjson.JSONDecodeError)
"""What the typed path's readers raise on a line the dict path must read."""


def _typed(line: bytes, envelope: _Envelope, layout: str) -> TypedRead | None:
    """`Classifier.read_line` once the envelope is read."""
    if layout == "openai-batch":
        return _openai_batch_typed(envelope)
    if layout == "anthropic-batch":
        return _anthropic_batch_typed(envelope)
    return normalize(line), None, layout


def _plain(line: bytes, envelope: _PlainEnvelope, layout: str) -> Plain | None:
    """The verdict of the response in a line whose envelope and body are read, when it is
    a plain answer (`_typed` would give a response of that verdict); None to read the
    line again through `_Envelope` (NOT_PLAIN: the body is not a plain answer)."""
    if layout == "openai-batch":
        wrapped = envelope.response
        if type(wrapped) is not _PlainResponse or wrapped.body is None:
            return None
        status = wrapped.status_code
        if status is not None and status >= 400:
            return NOT_PLAIN
        # `normalize(body)` without a provider: a chat completion's detection, or None
        # when the body may be another format's.
        return plain_completion(wrapped.body, None)
    if layout == "anthropic-batch":
        result = envelope.result
        if type(result) is not _PlainResult or result.type != "succeeded":
            return NOT_PLAIN
        message = result.message
        return plain_message(message, "anthropic") if message is not None else None
    return plain_verdict(line) or NOT_PLAIN


def _plain_raw(line: bytes, envelope: _Envelope, layout: str) -> Plain | None:
    """`_plain` on the envelope that keeps bodies as raw bytes."""
    if layout == "openai-batch":
        wrapped = envelope.response
        if type(wrapped) is not _Response:
            return None
        status = wrapped.status_code
        data = bytes(wrapped.body)
        if data[:1] != b"{" or (status is not None and status >= 400):
            return None
        return plain_verdict(data)
    if layout == "anthropic-batch":
        result = envelope.result
        if type(result) is not _Result or result.type != "succeeded":
            return None
        message = bytes(result.message)
        return plain_verdict(message, "anthropic") if message[:1] == b"{" else None
    return plain_verdict(line)


TallyKey = tuple[str | None, str | None, FinishReason, bool]
BlockedOutcome = tuple[BlockedKey, int, int]
"""A refused or filtered response's `Tally` key, input tokens and output tokens."""
Outcome = TallyKey | BlockedOutcome
"""What one counted response adds to a `Tally`: a plain answer's key (four values) or a
blocked one's (three)."""

_ERROR_MEMO_SIZE: Final = 256
_ERROR_MEMO_BYTES: Final = 4096


def _outcome(response: LLMResponse) -> Outcome:
    finish = response.finish_reason
    usage = response.usage
    if finish in _BLOCKED:
        category, explanation, _, stage = _blocked_fields(response)
        key = (
            response.provider,
            response.model,
            _FINISH_TEXT[finish],
            category,
            stage,
            _served_by_fallback(response),
            explanation,
        )
        if usage is None:
            return key, 0, 0
        return key, usage.input_tokens, usage.output_tokens
    if (usage is None or not usage.iterations) and not response.reasoning_details:
        fallback = False  # `_served_by_fallback`'s first answer, without the call
    else:
        fallback = _served_by_fallback(response)
    return (response.provider, response.model, finish, fallback)


def _count(outcome: Outcome, tally: Tally) -> None:
    if len(outcome) == 3:
        tally.add_blocked(*outcome)
    else:
        tally.add(outcome)


OutcomeMemo = dict[tuple[type[msgspec.Struct], str | None, bytes], TallyKey | BlockedKey]
"""Outcomes of bodies that are not plain answers, by the body's `Keyed` bytes: a refused
or filtered one's `Tally` key without its tokens, or another's key."""

_OUTCOME_MEMO_SIZE: Final = 256
_OUTCOME_MEMO_BYTES: Final = 8192


def _count_decoded(
    reader: StructReader,
    body: Any,
    provider: str | None,
    tally: Tally,
    *,
    memo: OutcomeMemo,
) -> bool:
    """Count a body decoded into `reader.body` as `normalize(body, provider)` reads it:
    True when counted, False when the line must be read the general way (another
    format's body, or one `normalize` finishes further). Raises what the readers raise
    on a body they do not read.

    A body that is not a plain answer is read whole once per `Keyed` bytes (a log repeats
    its refusals, apart from ids and tokens); `memo` keeps the outcome, and is asked
    before the plain verdict."""
    # Asked first: the bytes of a body that was not a plain answer give one that is not
    # (the plain verdict depends on nothing they leave out), and most bodies here are
    # refusals a log repeats.
    keyed = reader.outcome_key(body) if reader.outcome_key is not None else None
    key = None
    if keyed is not None and len(keyed[0]) <= _OUTCOME_MEMO_BYTES:
        key = (type(body), provider, keyed[0])
        known = memo.get(key)
        if known is not None:
            if len(known) == 7:
                tally.add_blocked(known, keyed[1], keyed[2])
            else:
                tally.add(known)
            return True
    plain = reader.plain(body, provider)
    if plain is None:
        return False  # another format's, or not certainly this one's
    if plain is not NOT_PLAIN:
        _count((plain[0], plain[1], plain[2], False), tally)
        return True
    response = reader.response(body, provider)
    # `normalize` finishes a response with an error further: read such a line again.
    if response is None or response.error is not None:
        return False
    outcome = _outcome(response)
    if key is not None:
        if len(memo) >= _OUTCOME_MEMO_SIZE:
            memo.clear()
        memo[key] = outcome[0] if len(outcome) == 3 else outcome
    _count(outcome, tally)
    return True


def _decoded_response(envelope: _PlainEnvelope, layout: str) -> LLMResponse | None:
    """`_typed`'s response for a batch line whose 2xx body `_plain` found not plain, read
    from the body decoded with the envelope; None to read the line again."""
    if layout == "openai-batch":
        wrapped = envelope.response
        if type(wrapped) is not _PlainResponse or wrapped.body is None:
            return None
        status = wrapped.status_code
        if status is not None and status >= 400:
            return None
        # `normalize(body)`: the chat format takes it, or the body is read again.
        response = completion_response(wrapped.body, None)
    elif layout == "anthropic-batch":
        result = envelope.result
        if type(result) is not _PlainResult or result.message is None:
            return None
        if result.type != "succeeded":
            return None
        response = message_response(result.message, "anthropic")
    else:
        return None
    # `normalize` finishes a response with an error further; such a body is read again.
    return response if response is not None and response.error is None else None


def _batch_body(envelope: _Envelope, layout: str) -> tuple[bytes, str | None] | None:
    """A batch line's 2xx body and the provider `_typed` reads it with (None: detected),
    when it has one: an OpenAI Batch response's object body, or an Anthropic succeeded
    result's message."""
    if layout == "openai-batch":
        wrapped = envelope.response
        if type(wrapped) is not _Response:
            return None
        status = wrapped.status_code
        data = bytes(wrapped.body)
        if data[:1] != b"{" or (status is not None and status >= 400):
            return None
        return data, None
    if layout == "anthropic-batch":
        result = envelope.result
        if type(result) is not _Result or result.type != "succeeded":
            return None
        message = bytes(result.message)
        return (message, "anthropic") if message[:1] == b"{" else None
    return None


_body_decoders: dict[type[msgspec.Struct], Callable[[bytes], Any]] = {}


def _body_decoder(body: type[msgspec.Struct]) -> Callable[[bytes], Any]:
    decode = _body_decoders[body] = msgspec.json.Decoder(body).decode
    return decode


def _error_key(envelope: _Envelope, layout: str) -> tuple[str, int, bytes] | None:
    """What `_typed`'s response depends on for a batch line that failed (its status and
    error body; the request id aside, which no count reads): an error body with its HTTP
    status, or (status -1) an OpenAI line's error without a response, or an Anthropic
    result canceled or expired. None for any other line, or a large body."""
    key: tuple[str, int, bytes] | None = None
    if layout == "openai-batch":
        wrapped = envelope.response
        if type(wrapped) is not _Response:
            # `_openai_batch_typed` reads the line's error alone.
            error = envelope.error
            if type(error) is Raw:
                key = _no_response_key(error)
        else:
            code = wrapped.status_code
            if code is not None and 400 <= code < _U64_LIMIT:
                key = (layout, code, bytes(wrapped.body))
    elif layout == "anthropic-batch":
        result = envelope.result
        if type(result) is _Result:
            key = _failed_result_key(result)
    return key if key is not None and len(key[2]) <= _ERROR_MEMO_BYTES else None


def _no_response_key(error: Raw) -> tuple[str, int, bytes]:
    """`_error_key` of an OpenAI batch line with an error and no response (status -1)."""
    return "openai-batch", -1, bytes(error)


_CANCELED_KEY: Final = ("anthropic-batch", -1, b"canceled")
_EXPIRED_KEY: Final = ("anthropic-batch", -1, b"expired")


def _failed_result_key(result: _Result | _QuickResult) -> tuple[str, int, bytes] | None:
    """`_error_key` of an Anthropic batch result that failed (status 0: the error body's
    type names it; -1: canceled or expired), or None for any other result."""
    kind = result.type
    if kind == "errored":
        return "anthropic-batch", 0, bytes(result.error)
    if kind == "canceled":
        return _CANCELED_KEY
    if kind == "expired":
        return _EXPIRED_KEY
    return None


class ExecRun:
    """One `exec --json` run being read, from `thread.started` on."""

    __slots__ = ("completed", "line", "model", "refusal", "thread_id")

    def __init__(self, line: int, event: JsonObject) -> None:
        self.line = line
        self.thread_id = _text(event.get("thread_id"))
        self.model = _text(event.get("model"))
        self.refusal: JsonObject | None = None
        self.completed: JsonObject | None = None

    def record(self, source: str) -> ScanRecord:
        """The verdict on the run, from its session `refusal` event and `thread.completed`."""
        done = self.completed or {}
        refusal = self.refusal
        raw_usage = done.get("usage")
        usage: JsonObject = raw_usage if isinstance(raw_usage, dict) else {}
        provider, model = _split_model(self.model)
        finish: str
        if refusal is not None:
            kind = refusal.get("kind")
            finish = kind if kind in ("refusal", "content_filter") else "refusal"
            categories = refusal.get("categories")
            category = _text(refusal.get("category")) or (
                ", ".join(c for c in categories if isinstance(c, str))
                if isinstance(categories, list) and categories
                else None
            )
            return ScanRecord(
                source,
                self.line,
                self.thread_id,
                "exec-events",
                _text(refusal.get("provider")) or provider,
                _text(refusal.get("original_model")) or model,
                finish,
                _text(refusal.get("raw_stop_reason")),
                category,
                _text(refusal.get("explanation")),
                _text(refusal.get("notice")),
                "prompt" if not refusal.get("retracted_item_ids") else "output",
                refusal.get("served_by_fallback") is True,
                _text(refusal.get("recommended_model")),
                _int(usage.get("input_tokens")),
                _int(usage.get("output_tokens")),
            )
        stop = _text(done.get("stop_reason"))
        outcome = _text(done.get("outcome_code"))
        raw: str | None
        if self.completed is None:
            finish, raw = "error", "incomplete"
        elif outcome in _OUTCOME_FINISH and outcome != "success":
            finish, raw = _OUTCOME_FINISH[outcome], outcome
        else:
            finish = stop if stop in _FINISH_VALUES else _OUTCOME_FINISH.get(outcome or "", "error")
            raw = stop or outcome
        return ScanRecord(
            source,
            self.line,
            self.thread_id,
            "exec-events",
            provider,
            model,
            finish,
            raw,
            None,
            None,
            None,
            None,
            done.get("served_by_fallback") is True,
            None,
            _int(usage.get("input_tokens")),
            _int(usage.get("output_tokens")),
        )


def _split_model(value: str | None) -> tuple[str | None, str | None]:
    # exec names models PROVIDER:MODEL.
    if value and ":" in value:
        provider, _, model = value.partition(":")
        return provider or None, model or None
    return None, value


def _dict_path_type(kind: object) -> bool:
    """Whether a line's top-level `type` makes it an exec event or a proxy line (see
    `Classifier._shape`): exec events are stateful, proxy lines hold their verdict, so
    the dict path reads both."""
    return type(kind) is str and (
        kind in _EXEC_TYPES
        or kind in ("refusal", "fallback")
        or kind.startswith("item.")
        or kind == PROXY_VERDICT
    )


_line_decoders: dict[type[msgspec.Struct], Callable[[bytes], Any]] = {}


def _with_custom_id(body: type[msgspec.Struct], kind: Any, default: Any) -> Callable[[bytes], Any]:
    """A decoder of a bare body's line into `body` plus `custom_id` (as `kind`), the one
    envelope key the formats' Structs do not read (each of them reads `type`)."""
    decode = _line_decoders.get(body)
    if decode is None:
        line = msgspec.defstruct(
            body.__name__ + "Line",
            [("custom_id", kind, msgspec.field(default=default, name="custom_id"))],
            bases=(body,),
            gc=False,
        )
        decode = _line_decoders[body] = msgspec.json.Decoder(line).decode
    return decode


def _line_decoder(reader: StructReader) -> Callable[[bytes], Any]:
    """The line's decoder into the format's Struct, `custom_id` kept raw."""
    return _with_custom_id(reader.body, Raw, _ABSENT)


def _quick_decoder(plain_body: type[msgspec.Struct]) -> Callable[[bytes], Any]:
    """The line's decoder into the format's plain-answer Struct, declining a line with a
    `custom_id` (a batch line, whatever else it holds)."""
    return _with_custom_id(plain_body, Absent, 0)


_HEAD_BYTES: Final = 16
_HEADS_KEPT: Final = 256
_heads: dict[bytes, StructReader | None] = {}
"""`struct_reader` by a line's first bytes, when they decide it (`_head_key`: 16 bytes, or
an id's first letters): a log's bare bodies of one format start alike (`{"id":"msg_01`,
`{"candidates":`), and a slice and a lookup cost a third of the first key's match.
None: the telling keys decide (`searched_reader`)."""


_MISSING: Final = object()
_ID_HEAD: Final = b'{"id":"'
_SPACED_ID_HEAD: Final = b'{"id": "'
"""How bodies that start with an id start (compact, or as Python's `json.dumps` writes)."""
_ID_LETTERS: Final = 12
"""How many of an id's first letters `head_reader` reads at most."""
_LETTERS: Final = bytes(range(ord("A"), ord("Z") + 1)) + bytes(range(ord("a"), ord("z") + 1))
_NOT_A_LETTER: Final = b"\x00"
"""Ends an id's key in `_heads`: JSON text holds no NUL byte."""


def _head_key(line: bytes, head: bytes) -> bytes:
    """The key `_heads` keeps `line`'s reader by: its first 16 bytes, or for a body that
    starts with an id (most do), the bytes through the id's first letters. An id is random
    past those (`{"id":"msg_01XFD...`), and `head_reader` reads one byte more, which
    decides nothing unless it is a letter too."""
    if line.startswith(_ID_HEAD):
        start = len(_ID_HEAD)
    elif line.startswith(_SPACED_ID_HEAD):
        start = len(_SPACED_ID_HEAD)
    else:
        return head
    letters = line[start : start + _ID_LETTERS]
    return line[: start + len(letters) - len(letters.lstrip(_LETTERS))] + _NOT_A_LETTER


def _decide(line: bytes) -> tuple[StructReader | None, object]:
    """`struct_reader(line)`, through `_heads`, and what `_heads` keeps for the line: its
    reader, None when the telling keys decide, `_MISSING` when its first bytes do not."""
    head = line[:_HEAD_BYTES]
    key = _head_key(line, head)
    kept = _heads.get(key, _MISSING)
    if kept is not _MISSING:
        return (searched_reader(line) if kept is None else kept), kept  # type: ignore[return-value]
    found = head_reader(line)
    if found is None:
        return struct_reader(line), _MISSING
    length, searched, reader = found
    answer = searched_reader(line) if searched else reader
    # An id's key holds what the match read (12 letters and more read past 16 bytes).
    if (
        not (searched or reader is not None)
        or length > _HEAD_BYTES
        or (key is not head and length != len(key))
    ):
        return answer, _MISSING
    if len(_heads) >= _HEADS_KEPT:
        _heads.clear()
    _heads[key] = reader
    return answer, reader


def _bare_reader(line: bytes) -> StructReader | None:
    """`struct_reader(line)`, through `_heads`."""
    return _decide(line)[0]


_Route = tuple[Callable[[bytes], Any], Callable[[Any, str | None], Plain | None]]
_BATCH: Final = object()
_SEARCHED: Final = object()
_DECLINED: Final = object()
_routes: dict[bytes, Any] = {}
"""`count_plain`'s decode by a line's first bytes: `_BATCH` for a batch line, the bare
body's plain decoder and verdict (a `_Route`) when `_heads` keeps its reader,
`_SEARCHED` when the telling keys decide it, `_DECLINED` for a format without plain
readers. A hint, dropped by `count_rest` when a line under the head is of the other
kind: a batch line's decoder declines a bare body, and the other way round. A lookup
costs less than the search for `custom_id` and `_bare_reader`'s call."""


_seen: dict[bytes, None] = {}
"""Heads `_route` has met once."""


def _quick_route(reader: StructReader | None) -> Any:
    """A bare body's `_Route`; `_DECLINED` for a format without plain readers."""
    if reader is None or reader.plain_body is None or reader.plain_answer is None:
        return _DECLINED
    return _quick_decoder(reader.plain_body), reader.plain_answer


def _searched_route(line: bytes) -> Any:
    """`_quick_route` of the reader the telling keys give."""
    return _quick_route(searched_reader(line))


def _route(line: bytes, head: bytes) -> Any:
    """The route of `line` (never `_SEARCHED`), kept as `_routes[head]` when its head
    decides it and has come before."""
    if line.find(b'"custom_id"', 0, _BATCH_HEAD) >= 0:
        _keep_route(head, _BATCH)
        return _BATCH
    reader, kept = _decide(line)
    found = _quick_route(reader)  # this line's: the telling keys were searched already
    if kept is _MISSING:
        # The first bytes do not decide the reader: asked again for the next line.
        return found
    if head not in _seen:
        # Kept from a head's second line on: the letters of an id often follow the first
        # key, so that most heads come once (and would evict the others).
        if len(_seen) >= _HEADS_KEPT:
            _seen.clear()
        _seen[head] = None
        return found
    _keep_route(head, _SEARCHED if kept is None else found)
    return found


def _keep_route(head: bytes, route: Any) -> None:
    if len(_routes) >= _HEADS_KEPT:
        _routes.clear()
    _routes[head] = route


_error_outcomes: dict[tuple[str, int, bytes], Outcome] = {}
"""What each error body counts as, by its layout, status and bytes (see `_error_key`):
error bodies are canned (no ids, no usage). Kept for the process, as `_body_outcomes`
is: each part of a file has a `Classifier` of its own, and with a memo of its own it
would read its first line of each kind whole again (a few ms per part)."""

_body_outcomes: OutcomeMemo = {}
"""`_count_decoded`'s memo of the outcomes of bodies that are not plain answers, for
every `Classifier` of the process (what a body counts as depends on its bytes alone)."""


class Classifier:
    """Classifies the lines of one file (or one part of it), in order.

    `layout` is the file's layout (`jsonl`, `openai-batch`, `anthropic-batch`,
    `exec-events`, `json`); with `forced` every line must be of that layout, else each
    line is recognised by its shape, so mixed files work. `typed=False` turns the typed
    path off (`read_line` always answers None), leaving the dict path alone.
    """

    __slots__ = (
        "_deep_refused",
        "_errors",
        "_outcomes",
        "_quick",
        "_run",
        "forced",
        "layout",
        "source",
        "typed",
    )

    def __init__(
        self, source: str, layout: str, *, forced: bool = False, typed: bool = True
    ) -> None:
        self.source = source
        self.layout = layout
        self.forced = forced
        # Exec runs span lines, so their events always take the dict path.
        self.typed = typed and layout not in ("exec-events", "proxy-log")
        self._quick = self.typed and not forced
        self._run: ExecRun | None = None
        self._deep_refused = deep_nesting_refused()
        self._errors = _error_outcomes
        self._outcomes = _body_outcomes

    def _envelope(self, line: bytes, decode: Callable[[bytes], _E]) -> tuple[_E, str] | None:
        """The typed envelope of a raw line and its layout (`openai-batch`,
        `anthropic-batch`, or the file's own for a bare body), or None when the line
        must take the dict path. Raises what msgspec raises on a line it does not read.
        """
        if not self.typed:
            return None
        # Most lines are ASCII and short: nothing in them can trouble orjson unseen.
        if (not line.isascii() or len(line) > _SHORT_LINE) and not _plausible(
            line, self._deep_refused
        ):
            return None
        envelope = decode(line)
        layout = self.layout
        if self.forced:
            # A file of exec events is read the dict way throughout (see `__init__`).
            return envelope, layout
        # `Classifier._shape`, on the typed envelope.
        if envelope.custom_id is not UNSET:
            if envelope.result is not UNSET:
                return envelope, "anthropic-batch"
            if envelope.response is not UNSET or envelope.error is not UNSET:
                return envelope, "openai-batch"
        if _dict_path_type(envelope.type):
            return None
        return envelope, "json" if layout == "json" else "jsonl"

    def read_line(self, line: bytes) -> TypedRead | None:
        """The typed path: the response in a raw line, its custom id and its layout, or
        None when the line must take the dict path (`classify(orjson.loads(line), n)`).

        Call it from the frame that made the classifier or a deeper one (see
        `deep_nesting_refused`).
        """
        try:
            found = self._envelope(line, _decode_envelope)
            return _typed(line, *found) if found is not None else None
        except _TYPED_READ_ERRORS:
            return None

    def count_line(self, line: bytes, tally: Tally) -> bool:
        """The typed path for a scan that keeps no records: count the line's response
        as `Summary.add(record_from_response(...))` would, and answer True; or answer
        False when the line must take the dict path.

        Most responses are plain answers, counted in `tally` from their verdict alone
        (`Tally.add_to` a summary at the end); the others are read whole, and the blocked
        ones are tallied by their category, stage, fallback and explanation, their tokens
        summed (no record, and no notice, which no count reads).
        """
        return self.count_plain(line, tally) or self.count_rest(line, tally)

    def count_plain(self, line: bytes, tally: Tally) -> bool:
        """`count_line`'s first step, for most lines: True when the line is a plain answer
        counted from one decode into the formats' plain-answer Structs (`_QuickBatchLine`
        for a batch line, `StructReader.plain_body` beside an absent `custom_id` for a
        bare body); False when `count_rest` must read it (it may be a plain answer all
        the same).

        The line's first bytes pick the decode (`_routes`). A scan may defer the lines
        this declines and read them together, in order: a loop over the common lines
        alone stays in the processor's caches. One function, not a call per step: it
        runs once per line."""
        if not self._quick:
            return False
        if (not line.isascii() or len(line) > _SHORT_LINE) and not _plausible(
            line, self._deep_refused
        ):
            return False
        head = line[:_HEAD_BYTES]
        route: Any = _routes.get(head)
        if route is None:
            route = _route(line, head)
        try:
            if route is _BATCH:
                quick = _decode_quick_batch(line)
                # `Classifier._shape`: a `result` makes the line an Anthropic batch result.
                result = quick.result
                if result is not UNSET:
                    message = result.message
                    if message is UNSET:
                        return self._count_failed(_failed_result_key(result), tally)
                    if result.type != "succeeded":
                        return False
                    verdict = anthropic.plain_answer(message, "anthropic")
                else:
                    wrapped = quick.response
                    if wrapped is None:
                        # No response: the line's error says what failed.
                        error = quick.error
                        if type(error) is not Raw:
                            return False
                        return self._count_failed(_no_response_key(error), tally)
                    if wrapped is UNSET:
                        return False
                    verdict = openai_chat.plain_answer(wrapped.body)
            elif route is _DECLINED:
                return False
            else:
                if route is _SEARCHED:
                    route = _searched_route(line)
                    if route is _DECLINED:
                        return False
                decode, answer = route
                quick = decode(line)
                kind = quick.type
                if type(kind) is str and _dict_path_type(kind):
                    return False
                verdict = answer(quick, None)
        except _TYPED_ERRORS:
            # Most often a line that is not a plain answer; else a batch line under a
            # bare body's head or the other way round, whose route `count_rest` drops.
            return False
        if verdict is None or verdict is NOT_PLAIN:
            return False
        counts = tally.plain
        known = counts.get(verdict)
        if known is None:
            tally.add_new_plain(verdict)
        else:
            counts[verdict] = known + 1
        return True

    def _count_failed(self, key: tuple[str, int, bytes] | None, tally: Tally) -> bool:
        """`count_plain` for a batch line whose request failed: counted from the memo of
        `_error_key`s when the line's key is in it (the first line of each key takes the
        long way, where the memo is filled)."""
        known = self._errors.get(key) if key is not None else None
        if known is None:
            return False
        _count(known, tally)
        return True

    def count_rest(self, line: bytes, tally: Tally) -> bool:
        """`count_line` for a line `count_plain` declined."""
        batch = self._quick and line.find(b'"custom_id"', 0, _BATCH_HEAD) >= 0
        head = line[:_HEAD_BYTES]
        route = _routes.get(head)
        if route is not None and (route is _BATCH) is not batch:
            # A batch line under a bare body's head, or the other way round: the next
            # line with this head has its route asked again (another thread's scan may
            # have dropped it already).
            _routes.pop(head, None)
        if batch:
            # Not a plain answer, or not one the plain Structs take: the envelope is read
            # with its body raw. An error body (most are repeats) is looked up; a 2xx
            # body (a refusal, a filter) is read by its format's split readers.
            try:
                raw = self._envelope(line, _decode_envelope)
            except _TYPED_READ_ERRORS:
                return False  # nor would the envelope decoded with its body be read
            if raw is None:
                return False
            key = _error_key(*raw)
            if key is not None:
                known = self._errors.get(key)
                if known is None:
                    return self._count_whole(line, tally, NOT_PLAIN, raw)
                _count(known, tally)
                return True
            body = _batch_body(*raw)
            if body is None:
                return self._count_whole(line, tally, None, raw)
            reader = _bare_reader(body[0]) if body[1] is None else struct_reader(*body)
            if reader is None:
                # A format without split readers (Cohere, Ollama: rare in batches): its
                # response read whole says whether it is a plain answer.
                return self._count_whole(line, tally, NOT_PLAIN, raw)
            if self._count_body(body[0], body[1], reader, tally):
                return True
            return self._count_whole(line, tally, None, raw)
        if not self.forced:
            reader = _bare_reader(line)
            if reader is not None and self._count_bare(line, reader, tally):
                return True
        plain: Plain | None = None
        decoded: tuple[_PlainEnvelope, str] | None = None
        try:
            decoded = self._envelope(line, _decode_plain_envelope)
            if decoded is None:
                return False  # the dict path's line
            plain = _plain(line, *decoded)
        except _TYPED_READ_ERRORS:
            pass
        if plain is not None and plain is not NOT_PLAIN:
            tally.add((plain[0], plain[1], plain[2], False))
            return True
        if plain is NOT_PLAIN and decoded is not None:
            response = _decoded_response(*decoded)
            if response is not None:
                _count(_outcome(response), tally)
                return True
        return self._count_whole(line, tally, plain)

    def _count_whole(
        self,
        line: bytes,
        tally: Tally,
        plain: Plain | None,
        envelope: tuple[_Envelope, str] | None = None,
    ) -> bool:
        """`count_line` from the envelope with raw bodies (`envelope`, when decoded): the
        plain verdict of a body not yet asked (`plain` None), a known error body, or the
        response read whole."""
        key: tuple[str, int, bytes] | None = None
        try:
            if envelope is None:
                envelope = self._envelope(line, _decode_envelope)
                if envelope is None:
                    return False
            if plain is None:
                plain = _plain_raw(line, *envelope)
                if plain is not None and plain is not NOT_PLAIN:
                    _count((plain[0], plain[1], plain[2], False), tally)
                    return True
            key = _error_key(*envelope)
            if key is not None:
                known = self._errors.get(key)
                if known is not None:
                    _count(known, tally)
                    return True
            found = _typed(line, *envelope)
        except _TYPED_READ_ERRORS:
            return False
        if found is None:
            return False
        outcome = _outcome(found[0])
        if key is not None:
            errors = self._errors
            if len(errors) >= _ERROR_MEMO_SIZE:
                errors.clear()
            errors[key] = outcome
        _count(outcome, tally)
        return True

    def _count_body(
        self,
        data: bytes,
        provider: str | None,
        reader: StructReader,
        tally: Tally,
    ) -> bool:
        """`count_rest` for a batch line's 2xx body (`data`, read as `_typed` reads it:
        with `provider`, or none), decoded once: True when counted, False to read the line
        the general way."""
        try:
            body = (_body_decoders.get(reader.body) or _body_decoder(reader.body))(data)
            return _count_decoded(reader, body, provider, tally, memo=self._outcomes)
        except _TYPED_READ_ERRORS:
            return False

    def _count_bare(self, line: bytes, reader: StructReader, tally: Tally) -> bool:
        """`count_rest` for a line that is a bare body of a format with split readers,
        decoded once: True when counted, False to read the line the general way."""
        if not self.typed or (
            (not line.isascii() or len(line) > _SHORT_LINE)
            and not _plausible(line, self._deep_refused)
        ):
            return False
        try:
            body = _line_decoder(reader)(line)
            if bytes(body.custom_id):
                return False  # a batch line after all (its key escaped): see `_envelope`
            kind = body.type
            if type(kind) is Raw:
                kind = _text_payload(bytes(kind))
            if _dict_path_type(kind):
                return False
            return _count_decoded(reader, body, None, tally, memo=self._outcomes)
        except _TYPED_READ_ERRORS:
            return False

    def classify(self, obj: Any, line: int) -> ScanRecord | None:
        """The dict path: the record a decoded line completes (None for an event inside
        a run)."""
        if type(obj) is not dict:
            raise BadRecord(f"expected a JSON object, got {type(obj).__name__}")
        layout = self.layout if self.forced else self._shape(obj)
        if layout == "openai-batch":
            response, custom_id = openai_batch_response(obj)
        elif layout == "anthropic-batch":
            response, custom_id = anthropic_batch_response(obj)
        elif layout == "exec-events":
            return self._exec_event(obj, line)
        elif layout == "proxy-log":
            return proxy_record(obj, source=self.source, line=line)
        else:
            response, custom_id = _normalize(obj), None
        return record_from_response(
            response, source=self.source, line=line, layout=layout, record_id=custom_id
        )

    def _shape(self, obj: JsonObject) -> str:
        if "custom_id" in obj:
            if "result" in obj:
                return "anthropic-batch"
            if "response" in obj or "error" in obj:
                return "openai-batch"
        kind = obj.get("type")
        if kind == PROXY_VERDICT:
            return "proxy-log"
        if type(kind) is str and (
            kind in _EXEC_TYPES or kind in ("refusal", "fallback") or kind.startswith("item.")
        ):
            return "exec-events"
        return "json" if self.layout == "json" else "jsonl"

    def _exec_event(self, event: JsonObject, line: int) -> ScanRecord | None:
        kind = event.get("type")
        if kind == "thread.started":
            previous = self.finish()
            self._run = ExecRun(line, event)
            return previous
        run = self._run
        if run is None:
            if kind in ("refusal", "thread.completed"):  # `kind` may be any JSON value
                raise BadRecord(f"a {kind} event before any thread.started")
            return None  # events of a run whose start is in an earlier part of the log
        if kind == "refusal" and event.get("scope", "session") == "session":
            run.refusal = event
        elif kind == "thread.completed":
            run.completed = event
            self._run = None
            return run.record(self.source)
        return None

    def finish(self) -> ScanRecord | None:
        """The record of a run the log ended inside (it never completed), if any."""
        run, self._run = self._run, None
        return run.record(self.source) if run is not None else None
