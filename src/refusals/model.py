"""Provider-neutral response model.

Every provider parser and stream decoder produces an `LLMResponse`; the loop and the
surfaces read nothing else. Provider facts that the notice needs (stop details, fallback
blocks) travel in `reasoning_details` as JSON texts with a `"type"`, exactly as the
reference keeps them, and are read back through typed properties so that no caller
parses those texts by hand.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, NoReturn

import orjson

JsonObject = dict[str, Any]
"""A decoded JSON object."""

Detail = str | Mapping[str, Any]
"""A reasoning detail: a JSON text with a `"type"` field, or the same object decoded."""


class FinishReason(StrEnum):
    """Why a response ended, the same for every provider.

    REFUSAL means the model itself declined; CONTENT_FILTER means a provider-side filter
    blocked the input or the output. An unknown provider value becomes ERROR, never STOP.
    """

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"
    CONTENT_FILTER = "content_filter"
    PAUSE = "pause"
    REFUSAL = "refusal"
    ERROR = "error"


class ErrorKind(StrEnum):
    """What an HTTP error from a provider means for the caller."""

    POLICY = "policy"
    """A safety or content-policy block: terminal, never retried."""
    TRANSIENT = "transient"
    """Rate limits, overload, timeouts and server faults: safe to retry."""
    AUTH = "auth"
    """Bad or missing credentials, or no permission for the model."""
    INVALID_REQUEST = "invalid_request"
    """The request itself is wrong (too long, bad parameter): retrying as is fails again."""


@dataclass(frozen=True, slots=True)
class ProviderError:
    """An HTTP error body classified, with the facts a caller needs to decide what to do."""

    kind: ErrorKind
    status: int | None = None
    code: str | None = None
    message: str | None = None
    retry_after: float | None = None
    """Seconds the provider asked to wait (`retry-after` / `retry-after-ms` headers)."""
    should_retry: bool | None = None
    """The provider's own advice (`x-should-retry` header); None when it gave none."""

    @property
    def retryable(self) -> bool:
        """Whether resending can help: a transient fault the provider did not advise against.

        A header never makes a policy block, bad credentials or a bad request retryable.
        """
        return self.kind is ErrorKind.TRANSIENT and self.should_retry is not False


@dataclass(slots=True)
class Usage:
    """Token counts, and one `iterations` entry per sampling pass (each with a `type`)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    iterations: list[JsonObject] = field(default_factory=list)


@dataclass(slots=True)
class ToolCall:
    """One tool call; `arguments` is the JSON text the model produced (maybe incomplete)."""

    id: str = ""
    name: str = ""
    arguments: str = ""


# StopDetails and Fallback are values, but not frozen: a frozen dataclass's __init__ sets
# each field through object.__setattr__, which doubles the cost of every normalize call.
@dataclass(slots=True)
class StopDetails:
    """Why the provider stopped, as it said so (category, explanation, fallback hints)."""

    category: str | None = None
    explanation: str | None = None
    recommended_model: str | None = None
    fallback_credit_token: str | None = None
    fallback_has_prefill_claim: bool | None = None
    categories: tuple[str, ...] = ()
    altered: str | None = None
    """How a filter changed output it let through (`"anonymized"`, `"masked"`): set when
    the response was delivered with parts altered rather than blocked."""

    def is_empty(self) -> bool:
        """Whether the provider said nothing at all."""
        return (
            self.category is None
            and self.explanation is None
            and self.recommended_model is None
            and self.fallback_credit_token is None
            and self.fallback_has_prefill_claim is None
            and not self.categories
            and self.altered is None
        )

    def to_detail(self) -> str:
        """The `reasoning_details` entry that carries these facts."""
        return stop_detail_text(
            self.category,
            self.explanation,
            self.recommended_model,
            self.fallback_credit_token,
            self.fallback_has_prefill_claim,
            self.categories,
            self.altered,
        )


def stop_detail_text(  # noqa: PLR0917 - positional, in StopDetails' field order
    category: str | None,
    explanation: str | None,
    recommended_model: str | None = None,
    fallback_credit_token: str | None = None,
    fallback_has_prefill_claim: bool | None = None,
    categories: Sequence[str] = (),
    altered: str | None = None,
) -> str:
    """`StopDetails(...).to_detail()` from the facts themselves: the fast paths write a
    refusal's detail without building the StopDetails first."""
    obj: JsonObject = {"type": "stop_details"}
    if category is not None:
        obj["category"] = category
    if explanation is not None:
        obj["explanation"] = explanation
    if recommended_model is not None:
        obj["recommended_model"] = recommended_model
    if fallback_credit_token is not None:
        obj["fallback_credit_token"] = fallback_credit_token
    if fallback_has_prefill_claim is not None:
        obj["fallback_has_prefill_claim"] = fallback_has_prefill_claim
    if categories:
        obj["categories"] = list(categories)
    if altered is not None:
        obj["altered"] = altered
    return orjson.dumps(obj).decode()


@dataclass(slots=True)
class Fallback:
    """A server-side fallback: `from_model` declined and `to_model` was asked instead."""

    from_model: str | None = None
    to_model: str | None = None
    trigger: str | None = None

    def to_detail(self) -> str:
        obj: JsonObject = {
            "type": "fallback",
            "from": {"model": self.from_model},
            "to": {"model": self.to_model},
        }
        if self.trigger is not None:
            obj["trigger"] = {"type": self.trigger}
        return orjson.dumps(obj).decode()


# serde_json, which the reference uses, refuses a document whose arrays and objects nest 128
# deep (its recursion budget starts at 128 and fails on reaching zero): 127 is the deepest it
# accepts. orjson allows more, so deeper details are skipped by hand to give the same answer.
# The depth is read from the text, not the decoded value: a value that a duplicate key later
# replaces is gone from the decoded object, but serde_json has already failed on it.
_SERDE_MAX_DEPTH = 127
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def _nesting_exceeds(text: str, limit: int) -> bool:
    """Whether the valid JSON `text` nests arrays and objects more than `limit` deep."""
    depth = 0
    for match in _JSON_BRACKET.finditer(_JSON_STRING.sub("", text)):
        if match.group() in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


# Numbers: serde_json as the reference builds it (default features: no float_roundtrip, no
# arbitrary_precision) computes a huge literal approximately and reports an error, so the
# whole detail is skipped, where that approximation overflows to infinity. orjson rounds
# correctly, so the two disagree about some literals near f64::MAX either way
# (`1.7976931348623158e308` and `179769313486231570` followed by 291 zeros fail only in
# serde_json, `179769313486231582e291` only in orjson). serde_json also rejects a literal
# whose integer part overflows u64 and whose fraction brings its running exponent back to
# zero (`18446744073709551616.3`). Only a literal with 20 digits in a row or an exponent of
# 100 or more reaches these cases; a text holding one (or something that looks like one,
# inside a string) is parsed by `_serde_loads`, which redoes serde_json's arithmetic. The
# pattern starts with a digit so that the regex engine can skip ahead quickly.
_SERDE_RISKY_NUMBER = re.compile(r"[0-9](?:[0-9]{19}|[eE][+-]?0*[1-9][0-9]{2})")
_U64_MAX = 2**64 - 1
_I32_MAX = 2**31 - 1
_I32_MIN = -(2**31)
_POW10 = tuple(float(f"1e{power}") for power in range(309))
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _serde_f64_from_parts(negative: bool, significand: int, exponent: int) -> float:
    # serde_json's f64_from_parts without float_roundtrip; ValueError where it errors.
    value = float(significand)
    while True:
        if abs(exponent) < len(_POW10):
            if exponent >= 0:
                value *= _POW10[exponent]
                if math.isinf(value):
                    raise ValueError("number out of range")
            else:
                value /= _POW10[-exponent]
            break
        if value == 0.0:
            break
        if exponent >= 0:
            raise ValueError("number out of range")
        value /= 1e308
        exponent += 308
    return -value if negative else value


def _serde_number(token: str) -> float | int:
    """The number serde_json parses from the JSON number `token`; ValueError where it errors."""
    if not token.isascii():
        raise ValueError("not a JSON number")
    negative = token.startswith("-")
    mantissa, has_exponent, exponent_text = token.removeprefix("-").lower().partition("e")
    integer_text, has_fraction, fraction_text = mantissa.partition(".")
    significand = 0
    exponent = 0
    long_integer = False
    for char in integer_text:
        digit = ord(char) - 48
        # Once the integer overflows u64, it and every later integer digit only count.
        if long_integer or significand * 10 + digit > _U64_MAX:
            long_integer = True
            exponent += 1
        else:
            significand = significand * 10 + digit
    if not has_fraction and not has_exponent:
        if not long_integer:
            return -significand if negative else significand
        return _serde_f64_from_parts(negative, significand, exponent)
    if has_fraction:
        for char in fraction_text:
            digit = ord(char) - 48
            if significand * 10 + digit > _U64_MAX:
                break  # the remaining fraction digits are ignored
            significand = significand * 10 + digit
            exponent -= 1
        else:
            # serde_json's "at least one digit after the point" check looks at the running
            # exponent, which a long integer part has pushed above zero.
            if exponent == 0:
                raise ValueError("invalid number")
    if has_exponent:
        positive_exponent = not exponent_text.startswith("-")
        power = 0
        for char in exponent_text.lstrip("+-"):
            power = power * 10 + ord(char) - 48
            if power > _I32_MAX:
                if significand != 0 and positive_exponent:
                    raise ValueError("number out of range")
                return -0.0 if negative else 0.0
        exponent = exponent + power if positive_exponent else exponent - power
        exponent = min(max(exponent, _I32_MIN), _I32_MAX)
    return _serde_f64_from_parts(negative, significand, exponent)


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _has_lone_surrogate(value: Any) -> bool:
    # Objects are checked by `_checked_object` as they are built; this covers strings and
    # the arrays around them.
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _checked_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Sees every member, including those a later duplicate key replaces (serde_json has
    # already failed on a lone surrogate there); the last duplicate wins, as in serde_json.
    for key, value in pairs:
        if _SURROGATE.search(key) or _has_lone_surrogate(value):
            raise ValueError("lone surrogate")
    return dict(pairs)


def _serde_loads(text: str) -> Any:
    """`serde_json::from_str::<Value>` for a text whose numbers need serde_json's arithmetic.

    The stdlib parser is as strict as serde_json in everything else (whitespace, control
    characters, trailing commas, duplicate keys) once NaN and Infinity are refused and lone
    surrogates, which it lets through, are rejected. None where serde_json fails.
    """
    try:
        value = json.loads(
            text,
            parse_int=_serde_number,
            parse_float=_serde_number,
            parse_constant=_reject_constant,
            object_pairs_hook=_checked_object,
        )
    except (ValueError, RecursionError):
        return None
    if _has_lone_surrogate(value):
        return None
    return value


MAX_JSON_DEPTH = 200
"""Nesting kept by `sanitize_json`; deeper arrays and objects become null."""

_I64_MIN = -(2**63)


def sanitize_json(value: Any) -> Any:
    """A copy of a decoded JSON value that every reader and writer here can handle.

    Lone surrogates (in keys and strings) become U+FFFD, integers beyond 64 bits become
    floats, and containers nested deeper than `MAX_JSON_DEPTH` become null. Iterative, so
    any depth is safe. Used only after a first read failed: the common case pays nothing.
    """
    root: list[Any] = [None]
    # (container the cleaned value goes into, its key or index, the raw value, depth)
    stack: list[tuple[Any, Any, Any, int]] = [(root, 0, value, 0)]
    while stack:
        target, slot, item, depth = stack.pop()
        if isinstance(item, str):
            target[slot] = clean_text(item)
        elif isinstance(item, bool) or item is None or isinstance(item, float):
            target[slot] = item
        elif isinstance(item, int):
            target[slot] = item if _I64_MIN <= item <= _U64_MAX else float(min(item, 2**1000))
        elif isinstance(item, Mapping | list | tuple):
            if depth >= MAX_JSON_DEPTH:
                target[slot] = None
                continue
            if isinstance(item, Mapping):
                cleaned: dict[str, Any] = {}
                target[slot] = cleaned
                for key, child in item.items():
                    name = clean_text(key) if isinstance(key, str) else str(key)
                    cleaned[name] = None
                    stack.append((cleaned, name, child, depth + 1))
            else:
                items: list[Any] = [None] * len(item)
                target[slot] = items
                for index, child in enumerate(item):
                    stack.append((items, index, child, depth + 1))
        else:
            target[slot] = str(item)
    return root[0]


def clean_text(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (the same object when it has none)."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def loads_lenient(data: str | bytes | bytearray | memoryview) -> Any:
    """Parse JSON that orjson refused only for its text: escaped lone surrogates
    (`"\\ud83d"`) or bytes that are not UTF-8. Raises ValueError when it is not JSON.

    The result goes through `sanitize_json`, so provider text with odd Unicode reads as
    the same payload with U+FFFD in place of what could not be kept.
    """
    if isinstance(data, bytes | bytearray | memoryview):
        text = bytes(data).decode("utf-8", "replace")
    else:
        text = data
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError("JSON nested too deep") from None
    return sanitize_json(value)


# A string (closed or not) or one structural byte; everything else between them is
# numbers, literals, colons and blanks, which never decide where a prefix may end.
_JSON_TOKEN = re.compile(rb'"(?:[^"\\]|\\[\s\S])*(")?|[{}\[\],]')
_CLOSERS = {ord("{"): b"}", ord("["): b"]"}


def close_truncated_json(data: bytes) -> bytes | None:
    """The longest prefix of JSON text cut off in transit that closes into valid JSON,
    closed; None when no object or array was opened.

    A connection that broke inside a refusal body still carries its verdict: this keeps
    every member and element that arrived whole (a value cut mid-way is dropped, never
    guessed), so `normalize` reads what the provider said and nothing it did not.
    """
    stack: list[int] = []
    best: tuple[int, tuple[int, ...]] | None = None
    key_next = False  # in an object, after `{` or `,`: the next string is a key
    for match in _JSON_TOKEN.finditer(data):
        token = match.group()
        first = token[0]
        if first == 0x22:  # a string
            if match.group(1) is None:
                break  # cut inside a string: nothing after this is whole
            if key_next:
                key_next = False
            else:  # a whole value: a member or an element ends here
                best = (match.end(), tuple(stack))
        elif first in _CLOSERS:
            stack.append(first)
            key_next = first == 0x7B
            best = (match.end(), tuple(stack))
        elif first == 0x2C:  # a comma: everything before it is whole
            key_next = bool(stack) and stack[-1] == 0x7B
            best = (match.start(), tuple(stack))
        else:
            if not stack:
                return None
            stack.pop()
            key_next = False
            if not stack:
                return data[: match.end()]
            best = (match.end(), tuple(stack))
    if best is None:
        return None
    end, opened = best
    return data[:end] + b"".join(_CLOSERS[opener] for opener in reversed(opened))


def decode_detail(detail: Any) -> Any:
    """Decode one reasoning detail as the reference does; None when serde_json would fail.

    Strings are parsed as strict RFC 8259 JSON (no NaN, comments or lone surrogates) with
    serde_json's limits (nesting depth, number range); mappings are taken as decoded.
    """
    if isinstance(detail, Mapping):
        return detail
    if isinstance(detail, bytes):
        try:
            detail = detail.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if not isinstance(detail, str):
        return None
    if _SERDE_RISKY_NUMBER.search(detail):
        value = _serde_loads(detail)
    else:
        try:
            value = orjson.loads(detail)
        except (orjson.JSONDecodeError, UnicodeEncodeError):
            return None
    nesting = detail.count("[") + detail.count("{")
    if nesting > _SERDE_MAX_DEPTH and _nesting_exceeds(detail, _SERDE_MAX_DEPTH):
        return None
    return value


_SHARED_MAX_CHARS = 4096
"""Detail texts up to this long are decoded once and shared (stop details, fallbacks);
longer ones (thinking signatures) are decoded each time, not kept."""


@functools.lru_cache(maxsize=2048)
def _decode_shared(detail: str) -> Any:
    return decode_detail(detail)


def shared_details(details: Sequence[Detail] | None) -> Iterator[Any]:
    """The details that are strict JSON, decoded, in order, as `decode_detail` reads them;
    a text seen before is not decoded again. The values are shared between callers:
    read them, never change them (`LLMResponse.decoded_details` gives fresh ones)."""
    for detail in details or ():
        if type(detail) is str and len(detail) <= _SHARED_MAX_CHARS:
            value = _decode_shared(detail)
        else:
            value = decode_detail(detail)
        if value is not None:
            yield value


_StopFacts = tuple[
    str | None, str | None, str | None, str | None, bool | None, tuple[str, ...], str | None
]


def _stop_facts(value: Any) -> _StopFacts | None:
    """The fields of a decoded `stop_details` detail, in StopDetails' order; None for any
    other detail."""
    if detail_type(value) != "stop_details":
        return None
    prefill = value.get("fallback_has_prefill_claim")
    raw_categories = value.get("categories")
    categories: Sequence[Any] = raw_categories if isinstance(raw_categories, list) else ()
    return (
        _str_field(value, "category"),
        _str_field(value, "explanation"),
        _str_field(value, "recommended_model"),
        _str_field(value, "fallback_credit_token"),
        prefill if isinstance(prefill, bool) else None,
        tuple(c for c in categories if isinstance(c, str)),
        _str_field(value, "altered"),
    )


@functools.lru_cache(maxsize=2048)
def _stop_facts_of_text(detail: str) -> _StopFacts | None:
    return _stop_facts(_decode_shared(detail))


def detail_type(value: Any) -> str | None:
    """The `"type"` of a decoded detail, or None when it is not an object with a string type."""
    if isinstance(value, Mapping):
        kind = value.get("type")
        if isinstance(kind, str):
            return kind
    return None


MAX_REPR_CHARS = 4000
"""Upper bound, in characters, on `repr()` of an `LLMResponse`."""

_MAX_FIELD_REPR_CHARS = 400


def truncate_repr(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters, with a note of how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [cut: {len(text) - limit} more characters]"


def _bounded_repr(value: Any) -> str:
    if isinstance(value, str) and len(value) > _MAX_FIELD_REPR_CHARS:
        # Only the shown part is rendered, so a huge text costs nothing to describe.
        head = repr(value[:_MAX_FIELD_REPR_CHARS])
        return f"{head}... [cut: {len(value) - _MAX_FIELD_REPR_CHARS} more characters]"
    if isinstance(value, list) and len(value) > 8:
        shown = ", ".join(_bounded_repr(item) for item in value[:8])
        return truncate_repr(f"[{shown}, ... [cut: {len(value) - 8} more items]]", 1500)
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        # Nesting too deep to render (or an integer too long to print).
        return f"<{type(value).__name__}: too deep or too large to show>"
    return truncate_repr(text, _MAX_FIELD_REPR_CHARS)


def _str_field(obj: Any, name: str) -> str | None:
    value = obj.get(name) if isinstance(obj, Mapping) else None
    return value if isinstance(value, str) else None


def _model_of(obj: Any) -> str | None:
    if isinstance(obj, Mapping):
        return _str_field(obj, "model")
    return obj if isinstance(obj, str) else None


@dataclass(slots=True)
class LLMResponse:
    """One model response, whatever the provider; every field not given is empty."""

    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    reasoning: str | None = None
    reasoning_details: Sequence[Detail] | None = field(default_factory=list)
    usage: Usage | None = field(default_factory=Usage)
    finish_reason: FinishReason = FinishReason.STOP
    raw_finish_reason: str | None = None
    model: str | None = None
    request_id: str | None = None
    provider: str | None = None
    api: str | None = None
    cut_off: bool = False
    """Partial output that a refusal, filter or error interrupted: not a finished answer."""
    error: ProviderError | None = None

    def __repr__(self) -> str:
        # A response can hold megabytes of content or details: its repr (in logs, test
        # failures, tracebacks) shows the start of each field and says what was cut.
        parts = [f"{item.name}={_bounded_repr(getattr(self, item.name))}" for item in fields(self)]
        return truncate_repr(f"LLMResponse({', '.join(parts)})", MAX_REPR_CHARS)

    def decoded_details(self) -> Iterator[Any]:
        """The reasoning details that are strict JSON, decoded, in order."""
        for detail in self.reasoning_details or ():
            value = decode_detail(detail)
            if value is not None:
                yield value

    @property
    def stop_details(self) -> StopDetails | None:
        """The first `stop_details` detail, typed; None when the provider gave none."""
        for detail in self.reasoning_details or ():
            if type(detail) is str and len(detail) <= _SHARED_MAX_CHARS:
                facts = _stop_facts_of_text(detail)
            else:
                facts = _stop_facts(decode_detail(detail))
            if facts is not None:
                return StopDetails(*facts)
        return None

    @property
    def fallbacks(self) -> list[Fallback]:
        """Every `fallback` detail, in order."""
        found = []
        for value in shared_details(self.reasoning_details):
            if detail_type(value) == "fallback":
                trigger = value.get("trigger")
                found.append(
                    Fallback(
                        from_model=_model_of(value.get("from")),
                        to_model=_model_of(value.get("to")),
                        trigger=_str_field(trigger, "type") if trigger is not None else None,
                    )
                )
        return found

    @property
    def fallback_iterations(self) -> list[JsonObject]:
        """Usage iterations of type `fallback_message`: passes served by a fallback model."""
        iterations = self.usage.iterations if self.usage is not None else None
        return [it for it in iterations or () if detail_type(it) == "fallback_message"]

    @property
    def served_by_fallback(self) -> bool:
        """Whether a fallback model ran for this response (a fallback block or iteration)."""
        return bool(self.fallbacks) or bool(self.fallback_iterations)

    @property
    def declined_models(self) -> list[str]:
        """Models that declined before a fallback took over, in order, without repeats."""
        models: list[str] = []
        for fallback in self.fallbacks:
            if fallback.from_model and fallback.from_model not in models:
                models.append(fallback.from_model)
        if not models and self.fallback_iterations:
            iterations = self.usage.iterations if self.usage is not None else []
            for it in iterations:
                if detail_type(it) == "fallback_message":
                    break
                model = _str_field(it, "model")
                if model and model not in models:
                    models.append(model)
        return models

    @property
    def fallback_model(self) -> str | None:
        """The model that served the response after a fallback, if one ran."""
        for it in reversed(self.fallback_iterations):
            model = _str_field(it, "model")
            if model:
                return model
        for fallback in reversed(self.fallbacks):
            if fallback.to_model:
                return fallback.to_model
        return None


# The fast paths build one response per body. On CPython 3.11 calling a dataclass runs its
# generated __init__ through the type's slot, which costs about 40% more than a plain
# function that sets the same slots; tests/core/test_new_response.py checks both agree.
_new = object.__new__


def new_response(  # noqa: PLR0917 - positional, in field order, like the dataclass call it replaces
    content: str | None,
    tool_calls: list[ToolCall],
    reasoning: str | None,
    reasoning_details: Sequence[Detail] | None,
    usage: Usage | None,
    finish_reason: FinishReason,
    raw_finish_reason: str | None,
    model: str | None,
    request_id: str | None,
    provider: str | None,
    api: str | None,
    cut_off: bool,
    error: ProviderError | None = None,
) -> LLMResponse:
    """`LLMResponse(...)` with every field given, in field order, for hot paths."""
    response: LLMResponse = _new(LLMResponse)
    response.content = content
    response.tool_calls = tool_calls
    response.reasoning = reasoning
    response.reasoning_details = reasoning_details
    response.usage = usage
    response.finish_reason = finish_reason
    response.raw_finish_reason = raw_finish_reason
    response.model = model
    response.request_id = request_id
    response.provider = provider
    response.api = api
    response.cut_off = cut_off
    response.error = error
    return response


def new_usage(
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int,
    cache_creation_tokens: int,
    iterations: list[JsonObject],
) -> Usage:
    """`Usage(...)` with every field given, in field order, for hot paths."""
    usage: Usage = _new(Usage)
    usage.input_tokens = input_tokens
    usage.output_tokens = output_tokens
    usage.cache_read_tokens = cache_read_tokens
    usage.cache_creation_tokens = cache_creation_tokens
    usage.iterations = iterations
    return usage
