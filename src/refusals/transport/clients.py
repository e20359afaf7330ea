"""HTTP clients for every provider, chosen by a `PROVIDER:MODEL` string.

`client_for("anthropic:claude-opus-4-8")` returns a `ModelClient` that speaks that
provider's wire format over httpx: Anthropic Messages, OpenAI Chat Completions and
Responses, any OpenAI-compatible server, Azure OpenAI, Gemini and Vertex AI, Bedrock
Converse, and `mock:SCENARIO` (the in-process mock provider). Every call goes through
the one retry policy (`refusals.transport.retry`) and, with `fallbacks`, the one fallback
chain (`refusals.transport.fallback`).

What a call returns is always an `LLMResponse`: an HTTP error, a refusal and a
content-filter stop are values (read by `refusals.normalize`), and a connection that
failed after the retries is an ERROR response with a transient `ProviderError` saying
what happened. Exceptions are for usage errors only (`ClientError`). Keys never appear
in a repr, an `Attempt`, an event or an error message.

Async first; `SyncClient` (or `client.sync()`) runs the same implementation on a private
event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import difflib
import os
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import orjson

from refusals.events import StreamError, StreamEvent, Verdict
from refusals.model import (
    ErrorKind,
    FinishReason,
    LLMResponse,
    ProviderError,
    close_truncated_json,
)
from refusals.providers import NormalizeError, normalize
from refusals.providers._common import redact
from refusals.providers.anthropic import request as anthropic_request
from refusals.providers.bedrock import request as bedrock_request
from refusals.providers.cohere import request as cohere_request
from refusals.providers.gemini import request as gemini_request
from refusals.providers.openai_chat import request as chat_request
from refusals.providers.openai_responses import request as responses_request
from refusals.providers.registry import VENDORS, Wire
from refusals.request import Request
from refusals.transport.auth import (
    MissingCredentials,
    Secret,
    SigV4Signer,
    env_secret,
    optional_env_secret,
)
from refusals.transport.base import (
    TIMEOUT_CODE,
    Attempt,
    ModelClient,
    ModelStream,
    SyncClient,
    report_response,
    shows_output,
)
from refusals.transport.fallback import BlockPolicy, Confirm, FallbackChain
from refusals.transport.retry import RetryPolicy, retry_after
from refusals.transport.streams import StreamDecoder

__all__ = [
    "MODEL_PROVIDERS",
    "ClientError",
    "HTTPClient",
    "SyncClient",
    "client_for",
    "parse_model_string",
]


class CallTimeout(httpx.ReadTimeout):
    """A call that outlived its `timeout` (keep-alives and slow bytes count)."""


def _timeout_code(exc: BaseException | str | None) -> str | None:
    return TIMEOUT_CODE if isinstance(exc, CallTimeout) else None


class ClientError(ValueError):
    """A client cannot be made as asked: a bad model string, a missing key or setting.

    The message is one line naming the problem and the way out (never a key's value).
    """


@dataclass(frozen=True, slots=True)
class _Provider:
    """How one `PROVIDER:` prefix is reached."""

    wire: Wire
    normalize_as: str
    """The provider name `normalize` and `StreamDecoder` read its bodies as."""
    base_url: str | None
    """The default server (None: `base_url` or the environment must give one)."""
    key_env: tuple[str, ...] = ()
    key_optional: bool = False
    base_url_env: tuple[str, ...] = ()


# base_url follows each official SDK: the server root for Anthropic and Gemini, the root
# plus `/v1` (or the vendor's OpenAI-compatible prefix) for OpenAI-compatible servers.
_PROVIDERS: dict[str, _Provider] = {
    row.name: _Provider(
        row.wire,
        row.read_name,
        row.base_url,
        row.key_env,
        row.key_optional,
        row.base_url_env,
    )
    for row in VENDORS
    if row.wire is not None
}
_READ_ONLY = frozenset(row.name for row in VENDORS if row.wire is None)

MODEL_PROVIDERS: tuple[str, ...] = tuple(_PROVIDERS)
"""Every `PROVIDER:` prefix a model string may start with."""

_EXAMPLE = "e.g. anthropic:claude-opus-4-8 or openai:gpt-5.2"
_DEFAULT_AZURE_API_VERSION = "2024-10-21"
_DEFAULT_VERTEX_LOCATION = "us-central1"
_REQUEST_ID_HEADERS = ("request-id", "x-request-id", "x-amzn-requestid", "apim-request-id")
_MAX_ERROR_BODY = 1 << 20
"""Bytes of an error body read at most (error pages can be large)."""
_MOCK_KEY = "mock-key"

_BLOCKED = (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER)


def parse_model_string(model: str) -> tuple[str, str]:
    """`PROVIDER:MODEL` split into the provider prefix and the provider's model name.

    Only the first colon separates them (`ollama:llama3:8b`, Bedrock ARNs). Raises
    `ClientError` for a string without a known provider or without a model.
    """
    provider, sep, name = model.partition(":")
    provider = provider.strip().lower()
    if not sep:
        raise ClientError(
            f"model {model!r} names no provider: write PROVIDER:MODEL, {_EXAMPLE} "
            f"(providers: {', '.join(MODEL_PROVIDERS)})"
        )
    if provider in _READ_ONLY:
        raise ClientError(
            f"{provider} responses can be read (refusals inspect, normalize) but no client "
            f"calls its API yet; expected one of: {', '.join(MODEL_PROVIDERS)}"
        )
    if provider not in _PROVIDERS:
        raise ClientError(
            f"unknown provider {provider!r} in model {model!r}; expected one of: "
            f"{', '.join(MODEL_PROVIDERS)}"
        )
    name = name.strip()
    if not name:
        raise ClientError(f"model {model!r} names no model after {provider!r}: {_EXAMPLE}")
    return provider, name


def _wire_name(provider: str, name: str) -> str:
    """The model name sent: the mock serves scenario `NAME` as model `mock-NAME`."""
    if provider == "mock" and not name.startswith("mock-"):
        return f"mock-{name}"
    return name


def _request_id(headers: Mapping[str, str]) -> str | None:
    for name in _REQUEST_ID_HEADERS:
        value = headers.get(name)
        if value:
            return value
    return None


@dataclass(slots=True)
class _Prepared:
    method: str
    url: str
    headers: dict[str, str]
    content: bytes


class _Call:
    """The attempts of one call, with the clock its retry budget runs on."""

    def __init__(self, client: HTTPClient) -> None:
        self.client = client
        self.attempts: list[Attempt] = []
        self.started = time.monotonic()
        self.count = 0

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def record(
        self,
        started: float,
        status: int | None,
        *,
        request_id: str | None = None,
        error: str | None = None,
    ) -> None:
        attempt = Attempt(
            model=self.client.model,
            status=status,
            seconds=time.monotonic() - started,
            request_id=request_id,
            error=self.client.scrub(error) if error else None,
        )
        self.attempts.append(attempt)
        self.client.record(attempt)

    def mark_retried(self) -> None:
        last = self.attempts[-1]
        retried = dataclasses.replace(last, retried=True)
        self.attempts[-1] = retried
        self.client.replace_last(last, retried)


class HTTPClient:
    """A `ModelClient` for one model of one provider, over httpx.

    Made by `client_for`; `model` is the `PROVIDER:MODEL` string, `model_name` the
    name after the prefix and `wire_name` the name sent, which replaces `Request.model`
    in every body (they differ only for the mock, where `mock:answer` sends `mock-answer`).
    """

    def __init__(
        self,
        provider: str,
        model_name: str,
        *,
        base_url: str,
        secret: Secret | None,
        retry: RetryPolicy,
        timeout: float,
        http_client: httpx.AsyncClient | None = None,
        signer: SigV4Signer | None = None,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        self.provider = provider
        self.model_name = model_name
        self.wire_name = _wire_name(provider, model_name)
        spec = _PROVIDERS[provider]
        self.wire: Wire = spec.wire
        self.normalize_as = spec.normalize_as
        self.base_url = base_url.rstrip("/")
        self.retry = retry
        self.timeout = timeout
        self._secret = secret
        self._signer = signer
        self._settings = dict(settings or {})
        self._http = http_client
        self._owns_http = http_client is None
        self._http_loop: asyncio.AbstractEventLoop | None = None
        self._pool_owner: HTTPClient | None = None
        self._attempts: list[Attempt] = []

    def __repr__(self) -> str:
        return f"HTTPClient(model={self.model!r}, base_url={redact(self.base_url)!r})"

    @property
    def model(self) -> str:
        return f"{self.provider}:{self.model_name}"

    @property
    def attempts(self) -> list[Attempt]:
        return list(self._attempts)

    def begin_turn(self) -> None:
        """A plain client has no per-turn state."""

    def for_model(self, model_name: str) -> HTTPClient:
        """The same provider, endpoint, key and connection pool for another model (used
        to follow a `recommended_model`)."""
        if self.provider == "mock":
            # The mock recommends wire names (`mock-fallback`); users see `mock:fallback`.
            model_name = model_name.removeprefix("mock-") or model_name
        other = HTTPClient(
            self.provider,
            model_name,
            base_url=self.base_url,
            secret=self._secret,
            retry=self.retry,
            timeout=self.timeout,
            http_client=self._http,
            signer=self._signer,
            settings=self._settings,
        )
        # The pool stays this client's: the other borrows whatever pool it has now.
        other._pool_owner = self
        other._owns_http = False
        return other

    def sync(self) -> SyncClient:
        """This client behind a blocking facade."""
        return SyncClient(self)

    def record(self, attempt: Attempt) -> None:
        self._attempts.append(attempt)

    def replace_last(self, old: Attempt, new: Attempt) -> None:
        for index in range(len(self._attempts) - 1, -1, -1):
            if self._attempts[index] is old:
                self._attempts[index] = new
                return

    def scrub(self, text: str) -> str:
        """`text` without this client's credentials (exact values, then key patterns)."""
        if self._secret is not None:
            text = self._secret.scrub(text)
        if self._signer is not None:
            for value in self._signer.secrets():
                text = Secret(value).scrub(text)
        return redact(text)

    async def aclose(self) -> None:
        """Close the connection pool this client opened (not one it was given)."""
        if self._owns_http and self._http is not None:
            await self._http.aclose()
            self._http = None

    # --- the request --------------------------------------------------------------

    def _client(self) -> httpx.AsyncClient:
        if self._pool_owner is not None:
            return self._pool_owner._client()
        if not self._owns_http and self._http is not None:
            return self._http
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        # A pool's connections belong to the event loop that opened them.
        if self._http is None or (loop is not None and loop is not self._http_loop):
            self._http = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 30.0))
            )
            self._http_loop = loop
        return self._http

    def _prepare(self, request: Request, *, stream: bool) -> _Prepared:
        request = request.with_model(self.wire_name)
        headers = {"content-type": "application/json", "accept": "application/json"}
        body: Any
        if self.wire == "anthropic":
            built = anthropic_request.messages_body(request, stream=stream)
            body, url = built.body, anthropic_request.endpoint(self.base_url)
            headers.update(anthropic_request.headers(built))
        elif self.wire == "openai-responses":
            body = responses_request.responses_body(request, stream=stream)
            url = responses_request.endpoint(self.base_url)
        elif self.wire == "openai-chat":
            body = chat_request.chat_body(request, stream=stream, vendor=self.provider)
            azure = self.provider == "azure"
            if azure:
                body.pop("model", None)  # the deployment in the URL names it
            url = chat_request.endpoint(
                self.base_url,
                vendor=self.provider,
                model=self.wire_name,
                api_version=self._settings["api_version"] if azure else None,
            )
        elif self.wire == "gemini":
            body = gemini_request.generate_body(request)
            vertex = self.provider == "vertex"
            url = gemini_request.endpoint(
                self.base_url,
                model=self.wire_name,
                stream=stream,
                project=self._settings["project"] if vertex else None,
                location=self._settings["location"] if vertex else None,
            )
        elif self.wire == "cohere":
            body = cohere_request.chat_body(request, stream=stream)
            url = cohere_request.endpoint(self.base_url)
        else:
            body = bedrock_request.converse_body(request)
            url = bedrock_request.endpoint(self.base_url, model=self.wire_name, stream=stream)
        if stream and self.wire != "bedrock":
            headers["accept"] = "text/event-stream"
        content = orjson.dumps(body)
        headers.update(self._auth_headers())
        if self._signer is not None and self._secret is None:
            headers = self._signer.sign("POST", url, content, headers)
        return _Prepared("POST", url, headers, content)

    def _auth_headers(self) -> dict[str, str]:
        secret = self._secret
        if secret is None:
            return {}
        if self.wire == "anthropic":
            return anthropic_request.auth_headers(secret.value)
        if self.wire == "openai-chat":
            return chat_request.auth_headers(self.provider, secret.value, secret.source)
        if self.wire == "gemini":
            return gemini_request.auth_headers(self.provider, secret.value)
        if self.wire == "cohere":
            return cohere_request.auth_headers(secret.value)
        return {"authorization": f"Bearer {secret.value}"}

    async def _send(self, prepared: _Prepared, *, stream: bool, deadline: float) -> httpx.Response:
        http = self._client()
        built = http.build_request(
            prepared.method, prepared.url, headers=prepared.headers, content=prepared.content
        )
        try:
            async with asyncio.timeout_at(deadline):
                return await http.send(built, stream=stream)
        except TimeoutError:
            raise self._overtime() from None

    def _overtime(self) -> CallTimeout:
        """The error of a call that outlived `timeout` (keep-alives and slow bytes count)."""
        return CallTimeout(f"the call took longer than its {self.timeout:g} s limit (--timeout)")

    # --- reading ------------------------------------------------------------------

    def _read(self, body: bytes, status: int, headers: Mapping[str, str]) -> LLMResponse:
        """An HTTP body read by the provider's parser; a body it cannot read is an error."""
        try:
            result = normalize(
                body, provider=self.normalize_as, status=status, headers=dict(headers)
            )
        except NormalizeError as exc:
            if status < 400:
                # The model ran: a success body it could not finish writing is read for
                # its verdict like a cut connection, and never sent again.
                return self._read_cut(body, status, headers, f"it is not a whole response: {exc}")
            message = f"HTTP {status} with a body that is not a {self.provider} response: {exc}"
            result = LLMResponse(
                finish_reason=FinishReason.ERROR,
                # No status: a garbled error page is transient, like a broken connection.
                error=ProviderError(ErrorKind.TRANSIENT, message=message),
            )
        return result

    def _finish(self, result: LLMResponse, headers: Mapping[str, str] | None) -> LLMResponse:
        """Fill in what the body left out (model, provider, request id); scrub secrets."""
        if result.model is None:
            result.model = self.wire_name
        if result.provider is None:
            result.provider = self.provider
        if result.request_id is None and headers is not None:
            result.request_id = _request_id(headers)
        error = result.error
        if error is not None and error.message:
            message = self.scrub(error.message)
            spec = _PROVIDERS[self.provider]
            if error.kind is ErrorKind.AUTH and spec.key_optional and self._secret is None:
                # A local server needs no key; this one asked for one, which we did not send.
                message += (
                    f" (no key was sent: {self.base_url} wants one; set "
                    f"{' or '.join(spec.key_env)})"
                )
            result.error = dataclasses.replace(error, message=message)
        return result

    def _final(self, result: LLMResponse, headers: Mapping[str, str] | None) -> LLMResponse:
        """`_finish` for the response a call ends with, reported to the observers."""
        finished = self._finish(result, headers)
        report_response(finished)
        return finished

    def _connection_failure(self, exc: BaseException, attempts: int) -> LLMResponse:
        what = type(exc).__name__
        detail = self.scrub(str(exc)) or "no details"
        tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
        message = (
            f"could not reach {self.model} at {self.base_url} ({what}: {detail}) after {tries}"
        )
        return self._final(
            LLMResponse(
                finish_reason=FinishReason.ERROR,
                error=ProviderError(ErrorKind.TRANSIENT, code=_timeout_code(exc), message=message),
            ),
            None,
        )

    # --- calls --------------------------------------------------------------------

    async def complete(self, request: Request) -> LLMResponse:
        """One call, not streamed, retried by the policy on transient failures only.

        A failure is sent again only while no byte of the response body has arrived: a
        body cut short is read for the verdict its bytes carry and reported, never
        resent (it may be a refusal, and the model has been paid for it).
        """
        call = _Call(self)
        while True:
            call.count += 1
            prepared = self._prepare(request, stream=False)
            started = time.monotonic()
            deadline = asyncio.get_running_loop().time() + self.timeout
            try:
                reply = await self._send(prepared, stream=True, deadline=deadline)
                try:
                    body, broke = await _read_body(reply, deadline, self._overtime)
                finally:
                    await reply.aclose()
                if broke is not None and not body:
                    raise broke
            except httpx.TransportError as exc:
                call.record(started, None, error=f"{type(exc).__name__}: {exc}")
                delay = self.retry.decide(exc, call.count, elapsed=call.elapsed)
                if delay is None:
                    return self._connection_failure(exc, call.count)
                call.mark_retried()
                await self.retry.sleep(delay)
                continue
            if broke is not None:
                result = self._read_cut(body, reply.status_code, reply.headers, broke)
            else:
                result = self._read(body, reply.status_code, reply.headers)
            call.record(
                started,
                reply.status_code,
                request_id=_request_id(reply.headers),
                error=result.error.message if result.error is not None else None,
            )
            if result.finish_reason is FinishReason.ERROR and broke is None:
                delay = self.retry.decide(
                    result,
                    call.count,
                    retry_after=retry_after(reply.headers),
                    elapsed=call.elapsed,
                )
                if delay is not None:
                    call.mark_retried()
                    await self.retry.sleep(delay)
                    continue
            return self._final(result, reply.headers)

    def _read_cut(
        self, body: bytes, status: int, headers: Mapping[str, str], broke: BaseException | str
    ) -> LLMResponse:
        """A body cut short (its connection broke, or it ends early): the verdict its whole
        members carry, marked as cut and never retryable."""
        if isinstance(broke, BaseException):
            message = (
                f"the connection to {self.model} broke after {len(body)} bytes of the HTTP "
                f"{status} body ({type(broke).__name__}: {broke}); it was not sent again"
            )
        else:
            message = (
                f"the HTTP {status} body from {self.model} ({len(body)} bytes) could not be "
                f"read, {broke}; it was not sent again"
            )
        error = ProviderError(
            ErrorKind.TRANSIENT,
            status,
            code=_timeout_code(broke),
            message=message,
            should_retry=False,
        )
        closed = close_truncated_json(body)
        result: LLMResponse | None = None
        if closed is not None:
            with contextlib.suppress(NormalizeError):
                result = normalize(
                    closed, provider=self.normalize_as, status=status, headers=dict(headers)
                )
        if result is None or result.finish_reason not in _BLOCKED:
            return LLMResponse(finish_reason=FinishReason.ERROR, error=error)
        result.error = error
        if result.content or result.tool_calls:
            result.cut_off = True
        return result

    def stream(self, request: Request) -> ModelStream:
        """One streamed call; nothing is sent until iteration starts."""
        return HTTPStream(self, request)


class HTTPStream:
    """A streamed call of an `HTTPClient` (a `ModelStream`)."""

    def __init__(self, client: HTTPClient, request: Request) -> None:
        self._client = client
        self._request = request
        self._call = _Call(client)
        self._response = LLMResponse(model=client.wire_name, provider=client.provider)
        self._iterator: AsyncIterator[StreamEvent] | None = None
        self._http: httpx.Response | None = None
        self._deadline = 0.0  # the event loop's clock, set for each attempt
        # While a body is being decoded, `response` is read from its decoder, so that a
        # caller who stops at the verdict still gets what arrived.
        self._live: StreamDecoder | None = None

    def __repr__(self) -> str:
        return f"HTTPStream(model={self._client.model!r})"

    @property
    def response(self) -> LLMResponse:
        if self._live is not None:
            return self._client._finish(self._live.response, None)
        return self._response

    @property
    def attempts(self) -> list[Attempt]:
        return list(self._call.attempts)

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        if self._iterator is None:
            self._iterator = self._run()
        return self._iterator

    async def aclose(self) -> None:
        if self._iterator is not None:
            closer = getattr(self._iterator, "aclose", None)
            if closer is not None:
                await closer()
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def _run(self) -> AsyncIterator[StreamEvent]:
        client, call = self._client, self._call
        while True:
            call.count += 1
            prepared = client._prepare(self._request, stream=True)
            started = time.monotonic()
            self._deadline = asyncio.get_running_loop().time() + client.timeout
            try:
                reply = await client._send(prepared, stream=True, deadline=self._deadline)
            except httpx.TransportError as exc:
                call.record(started, None, error=f"{type(exc).__name__}: {exc}")
                delay = client.retry.decide(exc, call.count, elapsed=call.elapsed)
                if delay is None:
                    self._response = client._connection_failure(exc, call.count)
                    yield _error_event(self._response)
                    return
                call.mark_retried()
                await client.retry.sleep(delay)
                continue
            self._http = reply
            try:
                if reply.status_code >= 400:
                    result = await self._read_error(reply, started)
                    if result is None:
                        continue
                    for error_event in _events_of(result):
                        yield error_event
                    return
                retry = False
                # Closed with this generator, so that a caller who stops early (at the
                # verdict) reaches the decoder's own clean-up, which keeps the response.
                async with contextlib.aclosing(self._decode(reply, started)) as decoded:
                    async for event in decoded:
                        if event is None:
                            retry = True
                            break
                        yield event
                if retry:
                    continue
                return
            finally:
                await reply.aclose()
                self._http = None

    async def _read_error(self, reply: httpx.Response, started: float) -> LLMResponse | None:
        """An HTTP error read to a response, or None after waiting to retry it."""
        client, call = self._client, self._call
        body, broke = await _read_body(reply, self._deadline, client._overtime)
        if broke is not None:
            result = client._read_cut(body, reply.status_code, reply.headers, broke)
        else:
            result = client._read(body, reply.status_code, reply.headers)
        call.record(
            started,
            reply.status_code,
            request_id=_request_id(reply.headers),
            error=result.error.message if result.error is not None else None,
        )
        delay = client.retry.decide(
            result, call.count, retry_after=retry_after(reply.headers), elapsed=call.elapsed
        )
        if delay is not None and broke is None:
            call.mark_retried()
            await client.retry.sleep(delay)
            return None
        self._response = client._final(result, reply.headers)
        return self._response

    async def _decode(
        self, reply: httpx.Response, started: float
    ) -> AsyncGenerator[StreamEvent | None, None]:
        """The stream's events; None last when it failed before any output and the policy
        sends it again (after the wait)."""
        client, call = self._client, self._call
        decoder = StreamDecoder(client.normalize_as)
        held: list[StreamEvent] = []
        self._live = decoder
        shown = False
        broke: httpx.TransportError | None = None
        received = 0
        chunks = reply.aiter_bytes()
        try:
            while True:
                # One bound on the whole call: keep-alive pings do not extend it.
                try:
                    async with asyncio.timeout_at(self._deadline):
                        chunk = await anext(chunks)
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    raise client._overtime() from None
                received += len(chunk)
                for decoded in decoder.feed(chunk):
                    event = self._clean(decoded)
                    if shown or shows_output(event):
                        # Events held before the first output are released with it.
                        shown = True
                        for earlier in held:
                            yield earlier
                        held.clear()
                        yield event
                    else:
                        held.append(event)
        except httpx.TransportError as exc:
            broke = exc
        except BaseException:
            # The caller stopped reading (closed at a verdict, or cancelled).
            self._stopped_early(decoder, reply, started)
            raise
        self._live = None
        # A broken connection's last event is read for what its whole members say.
        closing = decoder.close(broken=broke is not None)
        result = decoder.response
        if broke is not None:
            message = (
                f"the connection to {client.model} broke after {received} bytes "
                f"({type(broke).__name__}: {broke})"
            )
            # Never resent once bytes arrived: the caller has the verdict they carried.
            result.error = ProviderError(
                ErrorKind.TRANSIENT,
                code=_timeout_code(broke),
                message=message,
                should_retry=False if received else None,
            )
            result.finish_reason = (
                result.finish_reason
                if result.finish_reason in (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER)
                else FinishReason.ERROR
            )
            if result.content or result.tool_calls:
                result.cut_off = True
            closing = [StreamError(client.scrub(message), result.error)]
        error_text = result.error.message if result.error is not None else None
        call.record(
            started, reply.status_code, request_id=_request_id(reply.headers), error=error_text
        )
        nothing_shown = not shown and not any(shows_output(e) for e in closing)
        # Sent again only while nothing of the body arrived, or when all that arrived is
        # the provider's own error event (Anthropic's `overloaded_error`): a body cut off
        # in transit may have been a refusal, and is never resent.
        resendable = received == 0 or (broke is None and decoder.provider_error)
        if nothing_shown and resendable and result.finish_reason is FinishReason.ERROR:
            outcome: LLMResponse | BaseException = broke if broke is not None else result
            delay = client.retry.decide(outcome, call.count, elapsed=call.elapsed)
            if delay is not None:
                call.mark_retried()
                await client.retry.sleep(delay)
                yield None
                return
        self._response = client._final(result, reply.headers)
        for event in [*held, *closing]:
            yield self._clean(event)

    def _stopped_early(self, decoder: StreamDecoder, reply: httpx.Response, started: float) -> None:
        """Keep what arrived before the caller stopped reading, and record the attempt.

        The decoder is not closed: a stream the caller left is not a broken stream, so its
        response keeps the verdict and stop details read so far with no error added.
        """
        self._live = None
        result = decoder.response
        error = result.error.message if result.error is not None else None
        self._call.record(
            started, reply.status_code, request_id=_request_id(reply.headers), error=error
        )
        self._response = self._client._final(result, reply.headers)

    def _clean(self, event: StreamEvent) -> StreamEvent:
        """A stream error's message without this client's credentials."""
        if isinstance(event, StreamError):
            return StreamError(self._client.scrub(event.message), event.error)
        return event


async def _read_body(
    reply: httpx.Response,
    deadline: float | None = None,
    overtime: Callable[[], httpx.TransportError] | None = None,
) -> tuple[bytes, httpx.TransportError | None]:
    """The body as far as it arrived (by `deadline`, the event loop's clock), and the
    transport error that cut it, if any.

    An error body is read up to `_MAX_ERROR_BODY` (error pages can be large).
    """
    parts: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout_at(deadline):
            async for chunk in reply.aiter_bytes():
                parts.append(chunk)
                size += len(chunk)
                if reply.status_code >= 400 and size > _MAX_ERROR_BODY:
                    break
    except httpx.TransportError as exc:
        return b"".join(parts), exc
    except TimeoutError:
        late = overtime() if overtime is not None else httpx.ReadTimeout("the body came too late")
        return b"".join(parts), late
    return b"".join(parts), None


def _error_event(response: LLMResponse) -> StreamError:
    message = response.error.message if response.error and response.error.message else "error"
    return StreamError(message, response.error)


def _events_of(response: LLMResponse) -> list[StreamEvent]:
    """The events a whole (HTTP error) response stands for in a stream."""
    events: list[StreamEvent] = []
    if response.error is not None:
        events.append(_error_event(response))
    events.append(
        Verdict(response.finish_reason, response.raw_finish_reason, response.stop_details)
    )
    return events


# --- making clients ---------------------------------------------------------------


def _mock_http_client() -> httpx.AsyncClient:
    try:
        from refusals.mock import MockApp  # noqa: PLC0415 - the mock loads only when used
    except ImportError as exc:
        raise ClientError(f"the mock provider is not available ({exc})") from None
    transport = httpx.ASGITransport(app=MockApp())
    return httpx.AsyncClient(transport=transport, base_url="http://mock.invalid")


def _check_mock_scenario(model: str, name: str) -> None:
    """A `mock:` model names a scenario: a typo is an error, not a silent answer."""
    from refusals.mock.scenarios import (  # noqa: PLC0415 - the mock loads only when used
        FALLBACK_MODEL,
        SCENARIOS,
        parse_name,
    )

    scenario = name.removeprefix("mock-")
    known = [*SCENARIOS, FALLBACK_MODEL.removeprefix("mock-")]
    if parse_name(scenario) is not None or scenario in known:
        return
    close = difflib.get_close_matches(scenario.lower(), known, n=1)
    hint = f"; did you mean mock:{close[0]}?" if close else ""
    raise ClientError(
        f"unknown mock scenario {scenario[:60]!r} in {model[:80]!r}{hint} "
        "(`refusals mock-server --list` lists them)"
    )


def _first_env(names: Sequence[str]) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def _make_client(
    model: str,
    *,
    base_url: str | None,
    api_key: str | None,
    retry: RetryPolicy,
    timeout: float,
    http_client: httpx.AsyncClient | None,
) -> HTTPClient:
    provider, name = parse_model_string(model)
    spec = _PROVIDERS[provider]
    settings: dict[str, str] = {}
    signer: SigV4Signer | None = None
    secret: Secret | None = None
    url = base_url or _first_env(spec.base_url_env) or spec.base_url
    try:
        if provider == "mock":
            _check_mock_scenario(model, name)
            secret = Secret(api_key or _MOCK_KEY)
            if http_client is None:
                http_client = _mock_http_client()
        elif provider == "azure":
            secret = optional_env_secret(api_key, ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN"))
            if secret is None:
                raise MissingCredentials(
                    "no API key for azure: set AZURE_OPENAI_API_KEY or AZURE_OPENAI_AD_TOKEN "
                    "(or pass api_key=...)"
                )
            settings["api_version"] = os.environ.get(
                "OPENAI_API_VERSION", _DEFAULT_AZURE_API_VERSION
            )
            if url is None:
                raise ClientError(
                    "azure needs its endpoint: set AZURE_OPENAI_ENDPOINT "
                    "(https://RESOURCE.openai.azure.com) or pass base_url=..."
                )
        elif provider == "vertex":
            project = _first_env(("GOOGLE_CLOUD_PROJECT",))
            if project is None:
                raise ClientError("vertex needs a project: set GOOGLE_CLOUD_PROJECT")
            location = _first_env(("GOOGLE_CLOUD_LOCATION",)) or _DEFAULT_VERTEX_LOCATION
            settings.update(project=project, location=location)
            secret = env_secret(api_key, spec.key_env, what="vertex (an OAuth access token)")
            if url is None:
                host = "aiplatform.googleapis.com"
                url = f"https://{host}" if location == "global" else f"https://{location}-{host}"
        elif provider == "bedrock":
            region = _first_env(("AWS_REGION", "AWS_DEFAULT_REGION"))
            if region is None:
                raise ClientError("bedrock needs a region: set AWS_REGION (e.g. us-east-1)")
            secret = optional_env_secret(api_key, spec.key_env)
            if secret is None:
                signer = SigV4Signer(region)
            url = url or f"https://bedrock-runtime.{region}.amazonaws.com"
        elif spec.key_optional:
            secret = optional_env_secret(api_key, spec.key_env)
        else:
            secret = env_secret(api_key, spec.key_env, what=provider)
    except MissingCredentials as exc:
        raise ClientError(str(exc)) from None
    if url is None:
        names = " or ".join(spec.base_url_env) or "base_url"
        raise ClientError(
            f"{provider} needs the server's URL: pass base_url=... (the root plus /v1, "
            f"e.g. http://localhost:8000/v1) or set {names}"
        )
    if not url.startswith(("http://", "https://")):
        raise ClientError(f"base_url {url!r} is not an http:// or https:// URL")
    return HTTPClient(
        provider,
        name,
        base_url=url,
        secret=secret,
        retry=retry,
        timeout=timeout,
        http_client=http_client,
        signer=signer,
        settings=settings,
    )


def client_for(
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    retry: RetryPolicy | None = None,
    fallbacks: Sequence[str | ModelClient] = (),
    fallback_scope: Literal["turn", "session"] = "turn",
    timeout: float = 600.0,
    http_client: httpx.AsyncClient | None = None,
    max_hops: int | None = None,
    policy: BlockPolicy | None = None,
    confirm: Confirm | None = None,
) -> HTTPClient | FallbackChain:
    """The client for `PROVIDER:MODEL`; with `fallbacks`, a fallback chain over them.

    `policy` says per category what a decline leads to (see `BlockPolicy`); the models
    its rules name join the chain, asked only when their rule applies. `confirm` is
    asked before the hop of an `ask` rule.

    `timeout` bounds each attempt of a call as a whole (connecting, the first byte, and
    every byte after it: a stream of keep-alive pings ends there too).

    A fallback given as a model string of the same provider shares `base_url`,
    `api_key` and `http_client` with the primary; one of another provider reads its own
    environment. Raises `ClientError` (one line) for a bad model string or a missing key.
    """
    if timeout <= 0:
        raise ClientError(f"timeout must be positive seconds, got {timeout!r}")
    if fallback_scope not in ("turn", "session"):
        raise ClientError(f"fallback_scope must be 'turn' or 'session', got {fallback_scope!r}")
    if max_hops is not None and max_hops < 0:
        raise ClientError(f"max_hops cannot be negative, got {max_hops!r}")
    retries = retry if retry is not None else RetryPolicy()
    primary = _make_client(
        model,
        base_url=base_url,
        api_key=api_key,
        retry=retries,
        timeout=timeout,
        http_client=http_client,
    )
    ordered = 1 + len(fallbacks)
    named = [m for m in (policy.models if policy is not None else ()) if m != model]
    named = [m for m in named if m not in fallbacks]
    if not fallbacks and not named:
        return primary
    chain: list[ModelClient] = [primary]
    for entry in [*fallbacks, *named]:
        if not isinstance(entry, str):
            chain.append(entry)
            continue
        same = parse_model_string(entry)[0] == primary.provider
        chain.append(
            _make_client(
                entry,
                base_url=base_url if same else None,
                api_key=api_key if same else None,
                retry=retries,
                timeout=timeout,
                http_client=primary._http if same else None,
            )
        )
    return FallbackChain(
        chain,
        scope=fallback_scope,
        max_hops=max_hops,
        policy=policy,
        ordered=ordered,
        confirm=confirm,
    )
