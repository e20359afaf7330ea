"""Provider-neutral response model.

Every provider parser and stream decoder produces an `LLMResponse`; the loop and the
surfaces read nothing else. Provider facts that the notice needs (stop details, fallback
blocks) travel in `reasoning_details` as JSON texts with a `"type"`, exactly as the
reference keeps them, and are read back through typed properties so that no caller
parses those texts by hand.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

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

    @property
    def retryable(self) -> bool:
        return self.kind is ErrorKind.TRANSIENT


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


@dataclass(frozen=True, slots=True)
class StopDetails:
    """Why the provider stopped, as it said so (category, explanation, fallback hints)."""

    category: str | None = None
    explanation: str | None = None
    recommended_model: str | None = None
    fallback_credit_token: str | None = None
    fallback_has_prefill_claim: bool | None = None
    categories: tuple[str, ...] = ()

    def to_detail(self) -> str:
        """The `reasoning_details` entry that carries these facts."""
        obj: JsonObject = {"type": "stop_details"}
        for name in (
            "category",
            "explanation",
            "recommended_model",
            "fallback_credit_token",
            "fallback_has_prefill_claim",
        ):
            value = getattr(self, name)
            if value is not None:
                obj[name] = value
        if self.categories:
            obj["categories"] = list(self.categories)
        return orjson.dumps(obj).decode()


@dataclass(frozen=True, slots=True)
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


# serde_json, which the reference uses, refuses documents nested deeper than this; orjson
# allows more, so deeper details are skipped by hand to give the same answer.
_SERDE_RECURSION_LIMIT = 128


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def decode_detail(detail: Any) -> Any:
    """Decode one reasoning detail as the reference does; None when it is not strict JSON.

    Strings are parsed as strict RFC 8259 JSON (no NaN, comments or lone surrogates);
    mappings are taken as already decoded.
    """
    if isinstance(detail, Mapping):
        return detail
    if not isinstance(detail, str | bytes):
        return None
    try:
        value = orjson.loads(detail)
    except (orjson.JSONDecodeError, UnicodeEncodeError):
        return None
    text = detail if isinstance(detail, str) else detail.decode("utf-8", "replace")
    nesting = text.count("[") + text.count("{")
    if nesting > _SERDE_RECURSION_LIMIT and _depth_exceeds(value, _SERDE_RECURSION_LIMIT):
        return None
    return value


def detail_type(value: Any) -> str | None:
    """The `"type"` of a decoded detail, or None when it is not an object with a string type."""
    if isinstance(value, Mapping):
        kind = value.get("type")
        if isinstance(kind, str):
            return kind
    return None


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

    def decoded_details(self) -> Iterator[Any]:
        """The reasoning details that are strict JSON, decoded, in order."""
        for detail in self.reasoning_details or ():
            value = decode_detail(detail)
            if value is not None:
                yield value

    @property
    def stop_details(self) -> StopDetails | None:
        """The first `stop_details` detail, typed; None when the provider gave none."""
        for value in self.decoded_details():
            if detail_type(value) == "stop_details":
                prefill = value.get("fallback_has_prefill_claim")
                raw_categories = value.get("categories")
                categories: Sequence[Any] = (
                    raw_categories if isinstance(raw_categories, list) else ()
                )
                return StopDetails(
                    category=_str_field(value, "category"),
                    explanation=_str_field(value, "explanation"),
                    recommended_model=_str_field(value, "recommended_model"),
                    fallback_credit_token=_str_field(value, "fallback_credit_token"),
                    fallback_has_prefill_claim=prefill if isinstance(prefill, bool) else None,
                    categories=tuple(c for c in categories if isinstance(c, str)),
                )
        return None

    @property
    def fallbacks(self) -> list[Fallback]:
        """Every `fallback` detail, in order."""
        found = []
        for value in self.decoded_details():
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
