"""LiteLLM: classify every call it makes, and stop a proxied stream at a refusal.

LiteLLM maps Anthropic's `refusal` to `content_filter` and unknown reasons to `stop`, so a
refusal and a filter look alike in its responses. `RefusalLogger`, a `CustomLogger`, reads
each call back from what the provider sent (the raw body LiteLLM logs, or the provider
fields it keeps, or the error body) with `refusals.normalize`, so refusal and content
filter stay distinct and the category and explanation are kept:

```python
import litellm
from refusals.integrations.litellm import RefusalLogger

logger = RefusalLogger(on_verdict=lambda v: print(v.notice))
litellm.callbacks = [logger]
```

LiteLLM's `num_retries` resends a refused or filtered prompt; `http_handler()` gives a client
(`litellm.completion(..., client=http_handler())`) whose requests go through a
`RefusalTransport`, so a refused prompt is sent once whatever LiteLLM retries.

As a LiteLLM proxy callback, its `async_post_call_streaming_iterator_hook` ends a stream at
the chunk that carries a refusal or filter verdict, and its `async_pre_call_hook` rejects a
request identical to one already refused. Install with `refusals[litellm]`.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

try:
    from litellm.integrations.custom_logger import CustomLogger
    from litellm.llms.custom_httpx.http_handler import HTTPHandler
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "refusals.integrations.litellm needs LiteLLM: pip install 'refusals[litellm]'"
    ) from exc

import httpx
import orjson

from refusals.integrations.httpx_transport import RefusalTransport, RefusedRequestError
from refusals.model import ErrorKind, FinishReason, LLMResponse, ProviderError
from refusals.providers import PROVIDERS, NormalizeError, normalize
from refusals.refusal import notice as notice_of

__all__ = [
    "CallVerdict",
    "RefusalLogger",
    "RefusedPromptError",
    "http_handler",
    "response_of_failure",
    "response_of_success",
]

_TERMINAL = (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER)

# LiteLLM's provider names that differ from ours.
_PROVIDER_NAMES = {
    "vertex_ai": "vertex",
    "vertex_ai_beta": "vertex",
    "cohere_chat": "cohere",
    "ollama_chat": "ollama",
    "azure_ai": "azure",
    "text-completion-openai": "openai",
}


def _our_provider(name: object) -> str | None:
    if not isinstance(name, str):
        return None
    mapped = _PROVIDER_NAMES.get(name, name)
    return mapped if mapped in PROVIDERS else None


def _dump(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) else value


def _provider_fields(choice: Mapping[str, Any]) -> Mapping[str, Any]:
    message = choice.get("message") or choice.get("delta") or {}
    fields = message.get("provider_specific_fields") if isinstance(message, Mapping) else None
    return fields if isinstance(fields, Mapping) else {}


def _from_litellm_body(body: Mapping[str, Any], provider: str | None) -> LLMResponse:
    """Classify LiteLLM's own OpenAI-shaped response, undoing its refusal collapse."""
    choices = body.get("choices") or []
    choice = choices[0] if choices and isinstance(choices[0], Mapping) else {}
    fields = _provider_fields(choice)
    if fields.get("stop_reason") == "refusal":
        # An Anthropic refusal LiteLLM reported as content_filter: rebuild its own shape.
        message = choice.get("message") or {}
        text = message.get("content") if isinstance(message, Mapping) else None
        anthropic_body: dict[str, Any] = {
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or "",
            "content": [{"type": "text", "text": text}] if isinstance(text, str) and text else [],
            "stop_reason": "refusal",
        }
        if isinstance(fields.get("stop_details"), Mapping):
            anthropic_body["stop_details"] = dict(fields["stop_details"])
        return normalize(anthropic_body, provider="anthropic")
    chat = {"object": "chat.completion", **body}
    return normalize(chat, provider="openai")


def response_of_success(kwargs: Mapping[str, Any], response_obj: Any) -> LLMResponse:
    """The `LLMResponse` of a successful LiteLLM call, from what the provider sent.

    The raw body LiteLLM logs (`original_response`) is read first; a streamed call has
    none, and is read from LiteLLM's assembled response and the provider fields it keeps.
    """
    provider = _our_provider(kwargs.get("custom_llm_provider"))
    original = kwargs.get("original_response")
    if isinstance(original, str | bytes) and original:
        try:
            return normalize(original, provider=provider)
        except NormalizeError:
            pass  # not a body we know (an SDK object's repr, a stream wrapper): read LiteLLM's
    body = _dump(response_obj)
    if not isinstance(body, Mapping):
        raise NormalizeError(f"cannot read a LiteLLM {type(response_obj).__name__}")
    response = _from_litellm_body(body, provider)
    response.provider = provider or response.provider
    return response


def _embedded_json(text: str) -> Any:
    # LiteLLM puts the provider's error body in its message: "AnthropicError - {...}".
    start = text.find("{")
    while start != -1:
        try:
            value, _ = json.JSONDecoder().raw_decode(text, start)
            return value
        except ValueError:
            start = text.find("{", start + 1)
    return None


def _guard_error(exception: BaseException | None) -> RefusedRequestError | None:
    """The `RefusedRequestError` a LiteLLM exception wraps (LiteLLM re-raises it as its
    own provider error, the guard's in its context chain), if any."""
    seen: set[int] = set()
    current = exception
    while current is not None and id(current) not in seen:
        if isinstance(current, RefusedRequestError):
            return current
        seen.add(id(current))
        original = getattr(current, "original_exception", None)
        current = (
            original
            if isinstance(original, BaseException)
            else current.__cause__ or current.__context__
        )
    return None


def response_of_failure(kwargs: Mapping[str, Any], exception: BaseException | None) -> LLMResponse:
    """The `LLMResponse` of a failed LiteLLM call, from the provider's error body.

    A policy block (HTTP 400 content filter, LiteLLM's `ContentPolicyViolationError`) is a
    content-filter stop; anything else is an error, retryable or not as the status says.
    """
    guarded = _guard_error(exception)
    if guarded is not None:
        # The transport's guard stopped a resend (`http_handler`): the call was refused,
        # with the refusal the guard recorded, not an error of LiteLLM's wording.
        return guarded.verdict.response
    provider = _our_provider(kwargs.get("custom_llm_provider")) or _our_provider(
        getattr(exception, "llm_provider", None)
    )
    raw_status = getattr(exception, "status_code", None)
    try:
        status = int(raw_status) if raw_status is not None else None
    except (TypeError, ValueError):
        status = None
    status = status or 500
    candidates: list[Any] = []
    http_response = getattr(exception, "response", None)
    text = getattr(http_response, "text", None)
    if isinstance(text, str) and text.strip():
        candidates.append(text)
    body = getattr(exception, "body", None)
    if isinstance(body, Mapping):
        candidates.append({"error": dict(body)})
    message = str(getattr(exception, "message", "") or exception or "")
    embedded = _embedded_json(message)
    if isinstance(embedded, Mapping):
        candidates.append(dict(embedded))
    for candidate in candidates:
        try:
            return normalize(candidate, provider=provider, status=status)
        except NormalizeError:
            continue
    if type(exception).__name__ == "ContentPolicyViolationError":
        error = ProviderError(ErrorKind.POLICY, status=status, message=message[:400] or None)
        return LLMResponse(
            finish_reason=FinishReason.CONTENT_FILTER,
            raw_finish_reason="content_policy_violation",
            provider=provider,
            error=error,
        )
    kind = ErrorKind.TRANSIENT if status >= 500 or status == 429 else ErrorKind.INVALID_REQUEST
    return LLMResponse(
        finish_reason=FinishReason.ERROR,
        provider=provider,
        error=ProviderError(kind, status=status, message=message[:400] or None),
    )


@dataclass(frozen=True, slots=True)
class CallVerdict:
    """One LiteLLM call: the model it asked, and how the provider's response ended."""

    model: str | None
    provider: str | None
    response: LLMResponse
    failed: bool
    """Whether LiteLLM reported the call as a failure (an exception), not a response."""
    call_id: str | None = None

    @property
    def finish_reason(self) -> FinishReason:
        return self.response.finish_reason

    @property
    def blocked(self) -> bool:
        """Refused or filtered: terminal for the prompt that caused it."""
        return self.response.finish_reason in _TERMINAL

    @property
    def notice(self) -> str | None:
        return notice_of(self.response)


def _request_key(data: Mapping[str, Any]) -> bytes | None:
    """What makes a proxied request the same prompt: its model and messages (or input).

    The model is the name the client asked for: the proxy's model group when LiteLLM's
    logging names one, so that the request seen before the call and after it agree.
    """
    prompt = data.get("messages", data.get("input"))
    if prompt is None:
        return None
    logged = data.get("standard_logging_object")
    group = logged.get("model_group") if isinstance(logged, Mapping) else None
    model = group or data.get("model")
    try:
        return orjson.dumps({"model": model, "prompt": prompt}, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return None


class RefusedPromptError(Exception):
    """The LiteLLM proxy was asked again for a prompt that was refused or filtered."""

    def __init__(self, verdict: CallVerdict) -> None:
        self.verdict = verdict
        self.notice = verdict.notice or ""
        super().__init__(
            f"refusals: not sending a request identical to one already refused. {self.notice}"
        )


class RefusalLogger(CustomLogger):
    """A LiteLLM callback classifying every success and failure event, refusals kept apart.

    `verdicts` holds the last `max_verdicts` `CallVerdict`s in order; `on_verdict` is
    called with each. A call that cannot be read (not a provider response) is skipped.
    """

    def __init__(
        self,
        on_verdict: Callable[[CallVerdict], None] | None = None,
        *,
        max_verdicts: int = 1024,
    ) -> None:
        super().__init__()
        self.on_verdict = on_verdict
        self.verdicts: deque[CallVerdict] = deque(maxlen=max_verdicts)
        self._refused: dict[bytes, CallVerdict] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        """Forget every verdict, and every refused prompt the pre-call hook rejects."""
        with self._lock:
            self.verdicts.clear()
            self._refused.clear()

    def _record(self, kwargs: Mapping[str, Any], response: LLMResponse, *, failed: bool) -> None:
        verdict = CallVerdict(
            model=kwargs.get("model") if isinstance(kwargs.get("model"), str) else None,
            provider=response.provider,
            response=response,
            failed=failed,
            call_id=kwargs.get("litellm_call_id")
            if isinstance(kwargs.get("litellm_call_id"), str)
            else None,
        )
        with self._lock:
            self.verdicts.append(verdict)
            if verdict.blocked:
                key = _request_key(kwargs)
                if key is not None:
                    self._refused[key] = verdict
        if self.on_verdict is not None:
            self.on_verdict(verdict)

    def _success(self, kwargs: Mapping[str, Any], response_obj: Any) -> None:
        try:
            response = response_of_success(kwargs, response_obj)
        except NormalizeError:
            return
        self._record(kwargs, response, failed=False)

    def _failure(self, kwargs: Mapping[str, Any]) -> None:
        exception = kwargs.get("exception")
        self._record(kwargs, response_of_failure(kwargs, exception), failed=True)

    def log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._success(kwargs, response_obj)

    def log_failure_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._failure(kwargs)

    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._success(kwargs, response_obj)

    async def async_log_failure_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._failure(kwargs)

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any]:
        """Proxy: reject a request identical to one already refused, before it is sent."""
        key = _request_key(data)
        with self._lock:
            verdict = self._refused.get(key) if key is not None else None
        if verdict is not None:
            raise RefusedPromptError(verdict)
        return data

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: Any, response: Any, request_data: dict[str, Any]
    ) -> AsyncGenerator[Any, None]:
        """Proxy: pass the stream through until the chunk that carries a refusal or filter.

        That chunk is the last one sent: the rest of the stream only adds details, and a
        client reading on might treat the partial text before it as an answer. OpenAI's
        refusal text streams in full first, since it is the model's explanation.
        """
        watch = _StreamWatch()
        async for chunk in response:
            yield chunk
            verdict = watch.feed(chunk)
            if verdict is not None:
                self._record(request_data, verdict, failed=False)
                return


class _StreamWatch:
    """Reads LiteLLM stream chunks until one decides a refusal or filter verdict."""

    def __init__(self) -> None:
        self._refusal: list[str] = []
        self._text: list[str] = []
        self._model: str | None = None

    def feed(self, chunk: Any) -> LLMResponse | None:
        body = _dump(chunk)
        if not isinstance(body, Mapping):
            return None
        self._model = body.get("model") or self._model
        choices = body.get("choices") or []
        choice = choices[0] if choices and isinstance(choices[0], Mapping) else {}
        delta = choice.get("delta") or {}
        if isinstance(delta, Mapping):
            if isinstance(delta.get("refusal"), str):
                self._refusal.append(delta["refusal"])
            if isinstance(delta.get("content"), str):
                self._text.append(delta["content"])
        fields = _provider_fields(choice)
        finish = choice.get("finish_reason")
        if not (finish or fields.get("stop_reason") == "refusal"):
            return None
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self._text) or None,
            "provider_specific_fields": dict(fields),
        }
        if self._refusal:
            message["refusal"] = "".join(self._refusal)
        final = {"index": 0, "finish_reason": finish or "stop", "message": message}
        response = _from_litellm_body({"model": self._model, "choices": [final]}, None)
        return response if response.finish_reason in _TERMINAL else None


def http_handler(transport: RefusalTransport | None = None, *, timeout: float = 600.0) -> Any:
    """A LiteLLM `HTTPHandler` sending through a `RefusalTransport`: pass it as `client=`.

    LiteLLM's own retries (`num_retries`) then never resend a refused or filtered prompt:
    the transport's guard raises instead. Share one `transport` (or its `RefusalGuard`)
    between calls to guard them all.
    """
    inner = transport or RefusalTransport(httpx.HTTPTransport())
    return HTTPHandler(client=httpx.Client(transport=inner, timeout=timeout))
