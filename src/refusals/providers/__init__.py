"""Provider wire formats: one package (or module) each, behind one entry point, `normalize`.

Each wire format offers what `_protocol.WireFormat` names: `API` (the API it speaks),
`parse_fast(data, provider)` for the bytes of a body, `parse_response(body, provider)`
for a decoded one and `parse_error(body, status, provider)` for an HTTP error body, all
returning an `LLMResponse`, detection, and its stream reader. `normalize` works out the
wire format from `provider`, the URL or the body's shape, and dispatches. The provider
names and how each is read come from `registry`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

import msgspec
import orjson

from refusals.events import WireDecoder, never_retried
from refusals.model import FinishReason, LLMResponse, clean_text, loads_lenient, sanitize_json
from refusals.providers import (
    _headers,
    anthropic,
    bedrock,
    cohere,
    gemini,
    ollama,
    openai_chat,
    openai_responses,
)
from refusals.providers._common import (
    NOT_PLAIN,
    JsonObject,
    Keyed,
    NormalizeError,
    Plain,
    json_text,
    key_names,
    type_name,
)
from refusals.providers._detection import CLAIMED_EARLIER
from refusals.providers._protocol import WireFormat
from refusals.providers._request import Endpoint
from refusals.providers.anthropic import request as _anthropic_request
from refusals.providers.bedrock import request as _bedrock_request
from refusals.providers.cohere import request as _cohere_request
from refusals.providers.gemini import request as _gemini_request
from refusals.providers.ollama import request as _ollama_request
from refusals.providers.openai_chat import request as _chat_request
from refusals.providers.openai_responses import request as _responses_request
from refusals.providers.registry import VENDORS

__all__ = [
    "NOT_PLAIN",
    "PROVIDERS",
    "NormalizeError",
    "Plain",
    "StructReader",
    "decode_payload",
    "detect",
    "endpoint_for_path",
    "head_reader",
    "normalize",
    "path_with_model",
    "plain_verdict",
    "provider_for_url",
    "searched_reader",
    "stream_decoder_for",
    "struct_reader",
]

_FORMATS: dict[str, WireFormat] = {
    "anthropic": anthropic,
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
    "gemini": gemini,
    "bedrock": bedrock,
    "cohere": cohere,
    "ollama": ollama,
}
"""The package of each wire format the registry names (`registry.Format`)."""

PROVIDERS: tuple[str, ...] = tuple(row.name for row in VENDORS if row.reads_as is None)
"""Provider names accepted by `--provider` and `normalize(provider=...)` (see `registry`)."""

_FORMAT_OF: dict[str, WireFormat] = {
    row.name: _FORMATS[row.format] for row in VENDORS if row.reads_as is None
}
"""Provider name → the wire format its bodies are read as."""

# Vendors whose API is OpenAI Chat Completions with their own extensions and errors.
_CHAT_COMPATIBLE = frozenset(name for name, module in _FORMAT_OF.items() if module is openai_chat)

_EXPECTED = (
    "a provider response or error body (Anthropic Messages, OpenAI Chat Completions or "
    "Responses, Azure OpenAI, Gemini/Vertex, Bedrock Converse, Cohere, Ollama, or an "
    "OpenAI-compatible vendor)"
)


def decode_payload(payload: Any) -> Any:
    """A payload as plain JSON values: bytes and text are parsed, SDK objects dumped."""
    if type(payload) is bytes or isinstance(payload, bytearray | memoryview | str):
        try:
            return orjson.loads(payload)
        except orjson.JSONDecodeError as exc:
            if not (payload.strip() if isinstance(payload, str) else bytes(payload).strip()):
                raise NormalizeError(f"the payload is empty; expected {_EXPECTED}") from None
            try:
                # Escaped lone surrogates and bytes that are not UTF-8: the same payload
                # with U+FFFD in their place, so odd text never changes a verdict.
                return loads_lenient(payload)
            except ValueError:
                pass
            raise NormalizeError(f"the payload is not JSON ({exc}); expected {_EXPECTED}") from None
    if isinstance(payload, dict | list) or payload is None:
        return payload
    for method in ("model_dump", "to_dict"):
        dump: Callable[..., Any] | None = getattr(payload, method, None)
        if callable(dump):
            if method != "model_dump":
                return dump()
            if type(payload).__module__.startswith("google.genai"):
                # google-genai's field names are snake_case, its aliases the wire's camelCase.
                return dump(mode="json", by_alias=True, exclude_none=True)
            return dump(mode="json")
    raise NormalizeError(f"cannot read a {type(payload).__name__}; expected {_EXPECTED}")


# Detection order: most specific shapes first (a generic `{"error": {...}}` body is
# OpenAI-style). Typed as the protocol so mypy checks that every module satisfies it.
_DETECTION_ORDER: tuple[WireFormat, ...] = (
    anthropic,
    openai_responses,
    gemini,
    bedrock,
    cohere,
    ollama,
    openai_chat,
)


_CLAIMED_EARLIER = CLAIMED_EARLIER  # see `_detection`


_UNHINTED: tuple[WireFormat, ...] = (cohere, ollama)

# Stream detection order: the most specific shapes first (Azure and OpenRouter chunks are
# OpenAI chat chunks with extras, so the chat module decides between them).
_STREAM_ORDER: tuple[WireFormat, ...] = (
    anthropic,
    openai_responses,
    bedrock,
    gemini,
    cohere,
    ollama,
    openai_chat,
)
_STREAM_CHAT = (openai_responses, openai_chat)
"""A chat vendor's (or an unknown name's) stream: Responses events, else Chat chunks."""
_STREAM_BY_PROVIDER: dict[str, tuple[WireFormat, ...]] = {
    # Ollama streams its own chunks, or Chat Completions chunks from `/v1`.
    name: (ollama, openai_chat) if module is ollama else (module,)
    for name, module in _FORMAT_OF.items()
    if module is not openai_chat
}


def stream_decoder_for(
    name: str | None, payload: Any, provider: str | None = None
) -> tuple[WireDecoder, str] | None:
    """The wire decoder for a stream whose first event is `payload` (decoded JSON, with
    the SSE event `name` if any), and the provider it speaks; None when no format knows
    the event. With `provider`, that provider's formats are asked, and the last of them
    takes the stream when none claims the event."""
    if provider is not None:
        candidates = _STREAM_BY_PROVIDER.get(provider, _STREAM_CHAT)
        for module in candidates:
            if module.detect_stream(name, payload) is not None:
                return module.StreamReader(provider), provider
        return candidates[-1].StreamReader(provider), provider
    for module in _STREAM_ORDER:
        found = module.detect_stream(name, payload)
        if found is not None:
            return module.StreamReader(found), found
    return None


def _module_for(provider: str, body: JsonObject) -> WireFormat:
    module = _FORMAT_OF.get(provider)
    if module is None:
        raise NormalizeError(
            f"unknown provider {provider!r}; expected one of: {', '.join(PROVIDERS)}"
        )
    if module is ollama:
        # Ollama serves Chat Completions too (`/v1/chat/completions`).
        return openai_chat if "choices" in body else ollama
    if module is openai_chat and openai_responses.looks_like(body):
        return openai_responses  # a Responses body under a chat vendor's name (`azure`)
    return module


def detect(body: Any) -> tuple[str, WireFormat]:
    """The provider name and wire-format module a body's shape belongs to."""
    if not isinstance(body, dict):
        raise NormalizeError(f"expected {_EXPECTED}, got {type_name(body)}")
    return _detect(body, _hint(body))


def _detect(body: JsonObject, hinted: WireFormat | None) -> tuple[str, WireFormat]:
    if hinted is not None:
        name = hinted.detect_provider(body)
        if name is not None:
            return name, hinted
    if _CLAIMED_EARLIER.isdisjoint(body):
        # Cohere and Ollama bodies carry no hint and came last in the search; without any
        # key that an earlier format claims on, those earlier formats all answer None, so
        # asking these two first gives the same answer sooner.
        for late in _UNHINTED:
            provider = late.detect_provider(body)
            if provider is not None:
                return provider, late
    for module in _DETECTION_ORDER:
        provider = module.detect_provider(body)
        if provider is not None:
            return provider, module
    raise NormalizeError(
        f"unrecognised JSON object (keys: {key_names(body)}); expected {_EXPECTED}"
    )


def _hint(body: JsonObject) -> WireFormat | None:
    """The module a body's most telling key points to, checked before the full search."""
    kind = body.get("object")
    if kind == "chat.completion":
        return openai_chat
    if kind == "response":
        return openai_responses
    if body.get("type") in ("message", "error"):
        return anthropic
    if "candidates" in body or "promptFeedback" in body:
        return gemini
    if "stopReason" in body:
        return bedrock
    return None


_HOSTS: tuple[tuple[str, str], ...] = tuple(
    (host, row.read_name) for row in VENDORS for host in row.hosts
)
"""Host (or host suffix) → provider name, for `provider_for_url`."""


def provider_for_url(url: str) -> str | None:
    """The provider whose API a request URL points at, from its host; None for any other
    host (an OpenAI-compatible server is recognised from the body instead).

    Responses endpoints (`/responses`) of OpenAI and Azure are `openai-responses`.
    """
    parts = urlsplit(url if "//" in url else f"//{url}")
    host = (parts.hostname or "").lower()
    for suffix, name in _HOSTS:
        if host == suffix.lstrip(".") or host.endswith(
            suffix if suffix[0] == "." else "." + suffix
        ):
            if name in ("openai", "azure") and parts.path.rstrip("/").endswith("/responses"):
                return "openai-responses" if name == "openai" else name
            if name == "bedrock" and not host.startswith("bedrock"):
                return None
            return name
    return None


_ENDPOINTS: tuple[Endpoint, ...] = (
    *_gemini_request.ENDPOINTS,
    *_bedrock_request.ENDPOINTS,
    *_chat_request.ENDPOINTS,
    *_anthropic_request.ENDPOINTS,
    *_responses_request.ENDPOINTS,
    *_cohere_request.ENDPOINTS,
    *_ollama_request.ENDPOINTS,
)
"""Every format's request paths (each folder's `request.ENDPOINTS`), the ones that end as
another's does first (Azure's deployments before every vendor's `/chat/completions`)."""


def endpoint_for_path(path: str) -> tuple[str, str | None] | None:
    """The provider whose API a request path calls, recognised at its end (after any
    prefix a gateway or vendor adds), and the model the path names (Gemini, Vertex AI,
    Bedrock, an Azure deployment), if any; None for a path no format has. Chat
    Completions paths are `openai`'s, whoever serves them."""
    for endpoint in _ENDPOINTS:
        found = endpoint.pattern.search(path)
        if found is not None:
            model = found.groupdict().get("model")
            return endpoint.provider, unquote(model) if model is not None else None
    return None


def path_with_model(path: str, model: str) -> str:
    """`path` with `model` in place of the model it names (see `endpoint_for_path`);
    `path` as it is when it names none."""
    for endpoint in _ENDPOINTS:
        found = endpoint.pattern.search(path)
        if found is not None:
            if "model" not in endpoint.pattern.groupindex:
                return path
            start, end = found.span("model")
            return path[:start] + model.replace("/", "%2F") + path[end:]
    return path


def normalize(
    payload: Any,
    provider: str | None = None,
    status: int | None = None,
    headers: Mapping[str, str] | Mapping[bytes, bytes] | None = None,
    *,
    url: str | None = None,
) -> LLMResponse:
    """Turn a recorded response or HTTP error body into an `LLMResponse`.

    `payload` is bytes, text, a decoded dict, or an official SDK object (anything with
    `model_dump()` or `to_dict()`); an official SDK's HTTP error (`anthropic.APIStatusError`,
    `openai.APIStatusError`, `google.genai.errors.APIError`, botocore's `ClientError`,
    Cohere's `ApiError`, `ollama.ResponseError`), read with the status, body, headers and
    request id it carries; or a list or iterator of stream chunks (SDK stream events or
    their dicts), read as the stream they came from. `provider` names the API (see
    `PROVIDERS`); without it the wire format is recognised from the body's shape.
    `status` is the HTTP status when the body came with one: any status of 400 or more
    reads the body as an error.
    `headers` are the response headers, when known (any mapping; names in any case): the
    facts that travel only there are kept (`x-amzn-errortype`, `retry-after`,
    `x-should-retry`, the request id). `url`, the request's URL, names the provider when
    `provider` does not (see `provider_for_url`); a model name never does.
    Raises `NormalizeError` for anything that is not a known body, and `TypeError` for an
    argument of the wrong type.
    """
    # The common call, answered by a typed fast path without the general set-up below (a
    # few tests more here cost about 0.05x of orjson.loads on a small body); the module
    # that read the last body is asked first, from here.
    if (
        provider is None
        and status is None
        and headers is None
        and url is None
        and (type(payload) is bytes or type(payload) is str)
    ):
        quick = _fast(payload, None)
        if quick is not None and quick.error is None:
            return quick
        if quick is not None:
            return _finish(quick, None)
    if isinstance(payload, BaseException):
        return _from_exception(payload, provider, status, headers, url)
    if _is_chunks(payload):
        try:
            return _from_chunks(payload, provider)
        except NormalizeError:
            raise
        except _HOSTILE as exc:
            raise NormalizeError(
                f"the stream chunks could not be read ({type(exc).__name__}); expected "
                "Anthropic, OpenAI, Gemini, Bedrock, Cohere or Ollama stream chunks"
            ) from None
    plain = status is None and headers is None and url is None
    fast = type(payload) is bytes or type(payload) is str
    if provider is None and plain:
        fast = False  # tried: the dict path below answers
    elif plain and fast and type(provider) is str:
        quick = _fast(payload, provider)
        if quick is not None:
            return quick if quick.error is None else _finish(quick, None)
        fast = False
    if provider is not None or status is not None or headers is not None:
        _check_arguments(provider, status, headers)
    if url is not None:
        if not isinstance(url, str):
            raise TypeError(f"url must be a str or None, got {type(url).__name__}")
        if provider is None:
            provider = provider_for_url(url)
    meta = _headers.read(headers) if headers else None
    if meta is not None and provider is None and meta.bedrock_error is not None:
        provider = "bedrock"
    try:
        result = _normalize(payload, provider, status, meta, fast)
    except NormalizeError:
        raise
    except _HOSTILE:
        # A decoded value of hostile shape (lone surrogates, integers past 64 bits, deep
        # nesting) tripped a reader: read it again with those values tamed.
        try:
            result = _normalize(sanitize_json(decode_payload(payload)), provider, status, meta)
        except NormalizeError:
            raise
        except _HOSTILE as exc:
            raise NormalizeError(
                f"the payload could not be read ({type(exc).__name__}); expected {_EXPECTED}"
            ) from None
    result = _finish(result, meta)
    if type(payload) is not bytes and not isinstance(payload, bytearray | memoryview | str):
        # Decoded values can hold lone surrogates that no JSON parser lets through; the
        # text fields must be printable and encodable (details already went through orjson).
        _clean_fields(result)
    return result


def _finish(result: LLMResponse, meta: _headers.HeaderFacts | None) -> LLMResponse:
    if meta is not None:
        _headers.apply(result, meta)
    if result.error is not None and result.finish_reason in _BLOCKED:
        # A refused or filtered response is never retryable, whatever a header advised.
        result.error = never_retried(result.error)
    return result


def _clean_fields(result: LLMResponse) -> None:
    for name in ("content", "reasoning", "raw_finish_reason", "model", "request_id"):
        value = getattr(result, name)
        if isinstance(value, str):
            setattr(result, name, clean_text(value))
    for call in result.tool_calls:
        call.id, call.name = clean_text(call.id), clean_text(call.name)
        call.arguments = clean_text(call.arguments)
    error = result.error
    if error is not None and error.message is not None:
        result.error = dataclasses.replace(error, message=clean_text(error.message))


_BLOCKED = (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER)
_HOSTILE = (TypeError, ValueError, RecursionError, OverflowError, KeyError, IndexError)


def _check_arguments(provider: Any, status: Any, headers: Any) -> None:
    if provider is not None and not isinstance(provider, str):
        raise TypeError(f"provider must be a str or None, got {type(provider).__name__}")
    if status is not None and (type(status) is not int):
        raise TypeError(f"status must be an int or None, got {type(status).__name__}")
    if headers is not None and not isinstance(headers, Mapping):
        raise TypeError(f"headers must be a mapping or None, got {type(headers).__name__}")


# Typed fast path. Each module's `parse_fast` checks the body's shape itself, exactly as
# detection would, and returns None when the body is not its own or not well typed; so
# the order in which modules are tried changes only the speed. Without a provider, the
# body's first key (with the start of its value, for the keys every format has) names
# the format that sends bodies beginning so, and that module is asked first; after a
# decline, the modules whose telling key the body holds. Looking at the first key costs a
# fraction of one search for a key through the body, and every decode that declines
# costs more than a search.
_HEAD = re.compile(rb'\s*\{\s*"(\w{1,24})"\s*:\s*(?:"([A-Za-z]{1,12}))?')
"""A body's first key, and the letters that start its value when that is a string."""
_HEAD_CHARS = 256

_BY_FIRST_KEY: dict[bytes, WireFormat] = {
    b"choices": openai_chat,
    b"candidates": gemini,
    b"promptFeedback": gemini,
    b"usageMetadata": gemini,
    b"modelVersion": gemini,
    b"createTime": gemini,
    b"responseId": gemini,
    b"metrics": bedrock,
    b"output": bedrock,
    b"stopReason": bedrock,
    b"background": openai_responses,
    b"content": anthropic,
    b"role": anthropic,
    b"stop_reason": anthropic,
    b"response_id": cohere,
    b"generation_id": cohere,
    b"finish_reason": cohere,
    b"created_at": ollama,
    b"done": ollama,
}
_BY_FIRST_VALUE: dict[tuple[bytes, bytes], WireFormat] = {
    (b"id", b"chatcmpl"): openai_chat,
    (b"id", b"cmpl"): openai_chat,
    (b"id", b"gen"): openai_chat,
    (b"id", b"msg"): anthropic,
    (b"id", b"resp"): openai_responses,
    (b"object", b"chat"): openai_chat,
    (b"object", b"response"): openai_responses,
    (b"type", b"message"): anthropic,
    (b"model", b"claude"): anthropic,
}

_TELLING_KEYS: tuple[tuple[bytes, WireFormat], ...] = (
    (b'"chat.completion"', openai_chat),
    (b'"stop_reason"', anthropic),
    (b'"candidates"', gemini),
    (b'"promptFeedback"', gemini),
    (b'"stopReason"', bedrock),
    (b'"response"', openai_responses),
    (b'"done"', ollama),
    (b'"finish_reason"', cohere),
    (b'"generation_id"', cohere),
)
"""A key (or value) each format's bodies hold, in the order they are asked after the
first key's module declines. A key can point at more than one format (Ollama's generate
bodies have a "response" key): a module that declines lets the next key have its turn."""

_FAST_BY_PROVIDER: dict[str, WireFormat] = {
    name: module
    for name, module in _FORMAT_OF.items()
    if module is not ollama  # see `_first`
}


def _by_head(probe: bytes) -> WireFormat | None:
    """The module that sends bodies starting as `probe` does, or None."""
    head = _HEAD.match(probe)
    return _head_module(head) if head is not None else None


def _head_module(head: re.Match[bytes]) -> WireFormat | None:
    """The module a body's first key (and its value's first letters) names, or None."""
    key, value = head.groups()
    if value is not None:
        module = _BY_FIRST_VALUE.get((key, value))
        if module is not None:
            return module
    return _BY_FIRST_KEY.get(key)


@dataclasses.dataclass(frozen=True, slots=True)
class StructReader:
    """A format's typed readers split at the decode, for a caller that decodes its bodies
    itself (inside a log line, with keys of its own): `body` is the Struct the format
    decodes strictly; `plain` and `response` are `parse_plain` and `parse_fast` on a
    decoded one (a subclass that adds fields only reads the same)."""

    body: type[msgspec.Struct]
    plain: Callable[[Any, str | None], Plain | None]
    response: Callable[[Any, str | None], LLMResponse | None]
    # A Struct that decodes only bodies `plain` finds plain answers, and their verdict
    # (`plain`'s, or None when detection would not take the body), for the formats that
    # have one.
    plain_body: type[msgspec.Struct] | None = None
    plain_answer: Callable[[Any, str | None], Plain | None] | None = None
    # `outcome_key` on a decoded body (see `Keyed`), for a caller that memoises the
    # responses of bodies `plain` finds not plain.
    outcome_key: Callable[[Any], Keyed | None] | None = None


_STRUCT_READERS: dict[WireFormat, StructReader] = {
    openai_chat: StructReader(
        openai_chat.schema.Completion,
        openai_chat.plain_completion,
        openai_chat.completion_response,
        openai_chat.schema.PlainCompletion,
        openai_chat.plain_answer,
        openai_chat.outcome_key,
    ),
    anthropic: StructReader(
        anthropic.schema.Message,
        anthropic.plain_message,
        anthropic.message_response,
        anthropic.schema.PlainMessage,
        anthropic.plain_answer,
        anthropic.outcome_key,
    ),
    gemini: StructReader(
        gemini.schema.Body,
        gemini.plain_body,
        gemini.body_response,
        gemini.schema.PlainBody,
        gemini.plain_answer,
        gemini.outcome_key,
    ),
    bedrock: StructReader(
        bedrock.schema.Converse,
        bedrock.plain_body,
        bedrock.body_response,
        bedrock.schema.PlainConverse,
        bedrock.plain_answer,
        bedrock.outcome_key,
    ),
    # Read whole for the plain verdict too (no plain-answer Struct): rare in logs.
    openai_responses: StructReader(
        openai_responses.schema.Response,
        openai_responses.plain_response,
        openai_responses.response_of,
        outcome_key=openai_responses.outcome_key,
    ),
}


def struct_reader(payload: bytes, provider: str | None = None) -> StructReader | None:
    """The split readers of the format detection asks first about a body starting as
    `payload` does (or the format `provider` names), when it has them: their answer,
    when not None, is `plain_verdict`'s and (without an error) `normalize`'s on the body
    with that provider."""
    if provider is not None:
        # `_first`'s module for a provider (Ollama's depends on the body: none here).
        module = _FAST_BY_PROVIDER.get(provider)
        return _STRUCT_READERS.get(module) if module is not None else None
    module = _by_head(payload)
    if module is not None:
        return _STRUCT_READERS.get(module)
    return searched_reader(payload)


def searched_reader(payload: bytes) -> StructReader | None:
    """`struct_reader(payload)` for a body whose first key names no format: `_first` asks
    the module of the first telling key the body holds (a loop, not a generator: this
    runs once per bare line of a scan)."""
    for needle, module in _TELLING_KEYS:
        if needle in payload:
            return _STRUCT_READERS.get(module)
    return None


def head_reader(payload: bytes) -> tuple[int, bool, StructReader | None] | None:
    """What a body's first key says of `struct_reader(payload)` (no provider named): how
    many leading bytes decide it (the key, its value's first letters and the bytes the
    match read past them), whether the first key names no format (`searched_reader` answers
    then), and the reader of the format it names. None when the body has no first key
    the match reads."""
    head = _HEAD.match(payload)
    if head is None:
        return None
    # The match read the byte after its end; without a value, a quote there and the
    # byte after that (the value's first letter, looked for).
    length = head.end() + (1 if head.group(2) is not None else 2)
    module = _head_module(head)
    if module is None:
        return length, True, None
    return length, False, _STRUCT_READERS.get(module)


def plain_verdict(payload: bytes | str, provider: str | None = None) -> Plain | None:
    """`(provider, model, finish_reason)` of `normalize(payload, provider)` when that is a
    plain answer (stop, length or tool calls, without an error, details or a fallback),
    without building the response; None when the body must be read whole for its
    verdict. For counting logs, where most records are plain answers."""
    verdict: Plain | None = _first(payload, provider, "parse_plain")
    return verdict if verdict is not None and verdict is not NOT_PLAIN else None


def _fast(payload: bytes | str, provider: str | None) -> LLMResponse | None:
    """The response from a module's typed fast path, or None to take the dict path."""
    response: LLMResponse | None = _first(payload, provider, "parse_fast")
    return response


def _first(payload: bytes | str, provider: str | None, reader: str) -> Any:
    """What the module's `reader` (`parse_fast` or `parse_plain`, typed fast paths whose
    None declines) answers for the module that takes the body; the next module whose
    key the body holds is asked after a decline. By name: a wrapper per reader would add
    a call to every `normalize`."""
    if provider is not None:
        module = _FAST_BY_PROVIDER.get(provider)
        if module is None:
            if provider != "ollama":
                return None
            choices = (
                b'"choices"' in payload if isinstance(payload, bytes) else '"choices"' in payload
            )
            module = openai_chat if choices else ollama
        result = getattr(module, reader)(payload, provider)
        if result is None and module is openai_chat and provider in _CHAT_COMPATIBLE:
            # A Responses body sent with a chat vendor's name (`azure`…): `_module_for`
            # reads it as Responses, and so does that module's fast path.
            result = getattr(openai_responses, reader)(payload, provider)
        return result
    tried: list[WireFormat] = []
    # The first key is within the first bytes of any body but a padded one (which the
    # telling keys still find): text is encoded whole only if that module declines.
    first = _by_head(
        payload
        if isinstance(payload, bytes)
        else payload[:_HEAD_CHARS].encode("utf-8", "surrogatepass")
    )
    if first is not None:
        result = getattr(first, reader)(payload, None)
        if result is not None:
            return result
        tried.append(first)
    probe = payload if isinstance(payload, bytes) else payload.encode("utf-8", "surrogatepass")
    for needle, module in _TELLING_KEYS:
        if module not in tried and needle in probe:
            result = getattr(module, reader)(payload, None)
            if result is not None:
                return result
            tried.append(module)
    return None


def _normalize(
    payload: Any,
    provider: str | None,
    status: int | None,
    meta: _headers.HeaderFacts | None,
    fast: bool = True,
) -> LLMResponse:
    is_http_error = status is not None and status >= 400
    if fast and not is_http_error and (type(payload) is bytes or type(payload) is str):
        quick = _fast(payload, provider)
        if quick is not None:
            return quick
    try:
        body = decode_payload(payload)
    except NormalizeError:
        if is_http_error and isinstance(payload, bytes | str):
            # Gateways answer some errors with HTML or plain text; the status still speaks.
            text = payload if isinstance(payload, str) else payload.decode("utf-8", "replace")
            return _text_error(text, provider, status)
        raise
    if is_http_error and not isinstance(body, dict | list):
        # A JSON string or number as an error body: its text, as sent, is the message.
        if isinstance(payload, bytes | str):
            text = payload if isinstance(payload, str) else payload.decode("utf-8", "replace")
        else:
            text = json_text(body)
        return _text_error(text, provider, status)
    if isinstance(body, list) and provider is None:
        # Google's streaming endpoints wrap an error body in an array; so do some proxies.
        unwrapped = _error_in_array(body)
        if unwrapped is not None:
            body = unwrapped
    hinted = _hint(body) if type(body) is dict else None
    if type(body) is dict and not is_http_error and _is_invoke(body, provider, hinted):
        # InvokeModel: a native model body, with Bedrock's guardrail marker beside it.
        return bedrock.parse_invoke(body, "bedrock")
    if provider is not None:
        provider = provider.lower()
        is_error_list = isinstance(body, list) and (is_http_error or _error_in_array(body))
        if not isinstance(body, dict) and not is_error_list:
            raise NormalizeError(f"expected a JSON object for {provider}, got {type_name(body)}")
        module = _module_for(provider, body if isinstance(body, dict) else {})
        if isinstance(body, list):
            body = _error_in_array(body) or {}
    elif is_http_error and isinstance(body, dict):
        try:
            provider, module = _detect(body, hinted)
        except NormalizeError:
            # An error body of no known shape: the status alone still classifies it.
            provider, module = "unknown", openai_chat
    else:
        provider, module = _detect(body, hinted) if type(body) is dict else detect(body)
    if is_http_error or module.is_error(body):
        named = meta is not None and meta.bedrock_error is not None
        if named and module.API == bedrock.API and isinstance(body, dict) and "__type" not in body:
            # Bedrock names the exception only in the x-amzn-ErrorType header.
            body = {**body, "__type": meta.bedrock_error if meta is not None else None}
        elif fast and type(body) is dict and (type(payload) is bytes or type(payload) is str):
            # A format whose schema has its error body reads the bytes strictly (the
            # lenient pass reads what that rejects).
            read_error = getattr(module, "parse_error_fast", None)
            read: LLMResponse | None = (
                read_error(payload, status, provider) if read_error is not None else None
            )
            if read is not None:
                return read
        result: LLMResponse = module.parse_error(body, status, provider)
    else:
        result = module.parse_response(body, provider)
    return result


def _is_invoke(body: JsonObject, provider: str | None, hinted: WireFormat | None) -> bool:
    if provider is not None and provider.lower() != "bedrock":
        return False
    if bedrock.GUARDRAIL_ACTION in body or bedrock.INVOCATION_METRICS in body:
        return True
    # Native bodies (Titan, Llama, Mistral) have none of the keys other formats hint with.
    return hinted is None and bedrock.is_invoke_body(body)


def _text_error(text: str, provider: str | None, status: int | None) -> LLMResponse:
    name = (provider or "unknown").lower()
    module = _module_for(name, {}) if provider else openai_chat
    result: LLMResponse = module.parse_error(text, status, name)
    return result


def _error_in_array(body: list[Any]) -> JsonObject | None:
    """The error body a JSON array holds as its first element, else None."""
    if body and isinstance(body[0], dict) and isinstance(body[0].get("error"), dict | str):
        first: JsonObject = body[0]
        return first
    return None


def _is_chunks(payload: Any) -> bool:
    """Whether `payload` is a sequence of stream chunks (not a body, nor an error array)."""
    if isinstance(payload, list | tuple):
        if not payload or isinstance(payload[0], str | bytes | int | float | bool):
            return False
        return not (isinstance(payload, list) and _error_in_array(payload) is not None)
    # An iterator or generator of chunks (what an SDK stream is), never a mapping or text.
    return (
        hasattr(payload, "__next__")
        and hasattr(payload, "__iter__")
        and not isinstance(payload, Mapping | str | bytes | bytearray | memoryview)
    )


def _from_chunks(chunks: Any, provider: str | None) -> LLMResponse:
    """The verdict of a stream given as its decoded chunks: each chunk is dumped to JSON
    and fed to the wire decoder the first one selects, as the wire's bytes would be."""
    if provider is not None:
        _check_arguments(provider, None, None)
        provider = provider.lower()
    decoder: WireDecoder | None = None
    for index, chunk in enumerate(chunks):
        event = decode_payload(chunk)
        if not isinstance(event, dict):
            raise NormalizeError(
                f"chunk {index} of the stream is a {type_name(event)}, not an event object"
            )
        try:
            data = orjson.dumps(event, option=orjson.OPT_NON_STR_KEYS)
        except (TypeError, orjson.JSONEncodeError):
            # Values no JSON holds (integers past 64 bits, lone surrogates): tamed first.
            event = sanitize_json(event)
            data = orjson.dumps(event, option=orjson.OPT_NON_STR_KEYS)
        if decoder is None:
            found = stream_decoder_for(None, event, provider)
            if found is None:
                raise NormalizeError(
                    "the first chunk is no known stream event (keys: "
                    f"{key_names(event)}); expected Anthropic, OpenAI, Gemini, Bedrock, "
                    "Cohere or Ollama stream chunks"
                )
            decoder = found[0]
        decoder.feed(None, data)
    if decoder is None:
        raise NormalizeError("the stream has no chunks; expected a list of stream events")
    decoder.close()
    return decoder.response


def _from_exception(
    error: BaseException,
    provider: str | None,
    status: int | None,
    headers: Any,
    url: str | None,
) -> LLMResponse:
    """The verdict of an official SDK's HTTP error, from the response it carries."""
    body: Any = None
    found_status: Any = None
    found_headers: Any = None
    found_url: str | None = None
    response = getattr(error, "response", None)
    if isinstance(response, Mapping) and isinstance(response.get("Error"), Mapping):
        # botocore's ClientError: the parsed error and the response's metadata.
        details = response["Error"]
        meta = response.get("ResponseMetadata") or {}
        found_status = meta.get("HTTPStatusCode")
        found_headers = dict(meta.get("HTTPHeaders") or {})
        if details.get("Code") and not any(k.lower() == "x-amzn-errortype" for k in found_headers):
            found_headers["x-amzn-errortype"] = str(details["Code"])
        body = {"message": details.get("Message") or "", "__type": details.get("Code")}
        provider = provider or "bedrock"
    elif response is not None and hasattr(response, "status_code"):
        # httpx / httpx2 / requests responses (the Stainless SDKs, google-genai).
        found_status = response.status_code
        found_headers = getattr(response, "headers", None)
        try:
            body = response.content
        except Exception:  # a streamed response never read: the parsed body instead
            body = None
        request = getattr(response, "request", None)
        request_url = getattr(request, "url", None) if request is not None else None
        found_url = str(request_url) if request_url is not None else None
    if not body:
        for name in ("body", "details"):
            value = getattr(error, name, None)
            if value is not None:
                body = value
                break
    if not body and isinstance(getattr(error, "error", None), str):
        body = {"error": error.error}  # type: ignore[attr-defined]  # ollama.ResponseError
    if found_status is None:
        for name in ("status_code", "code"):
            value = getattr(error, name, None)
            if type(value) is int and value >= 100:
                found_status = value
                break
    if found_headers is None:
        found_headers = getattr(error, "headers", None)
    if body is None or body == b"":
        raise NormalizeError(
            f"the {type(error).__name__} carries no response body to read; pass the "
            "response body (and status=) instead"
        )
    if isinstance(body, str) and not body.lstrip().startswith(("{", "[")):
        body = {"error": {"message": body}}
    plain_headers = dict(found_headers.items()) if hasattr(found_headers, "items") else None
    return normalize(
        body,
        provider,
        status=status if status is not None else found_status,
        headers=headers if headers is not None else plain_headers,
        url=url if url is not None else found_url,
    )
