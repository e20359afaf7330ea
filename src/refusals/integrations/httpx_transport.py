"""An httpx transport that classifies every provider response and never resends a refusal.

Official SDKs built on httpx (OpenAI, Anthropic, ...) accept an `http_client=`; giving it a
client whose transport is a `RefusalTransport` puts `refusals` under every call they make:

- every provider response passing through is classified with `refusals.normalize` (full
  bodies) or `refusals.StreamDecoder` (streams, teed chunk by chunk as the SDK reads them,
  never buffered whole); the result, a `ResponseVerdict`, is stored in
  `response.extensions["refusals.verdict"]` and handed to `on_verdict`;
- a `RefusalGuard` remembers each request that was refused or filtered, and a request
  identical to one of them (same method, host, path and JSON body, volatile fields aside)
  is never sent: `RefusedRequestError` is raised instead, naming the refusal by its notice.
  No SDK retry, user loop or agent can resend a refused prompt through this transport.

It works with `httpx` and with `httpx2` (which newer SDKs use): the wrapped transport's
own library decides which stream types the responses carry. Classification never breaks
the call it observes: a body that is no provider response gets no verdict.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
import orjson

from refusals.events import Verdict
from refusals.model import (
    ErrorKind,
    FinishReason,
    LLMResponse,
    ProviderError,
    close_truncated_json,
)
from refusals.providers import NormalizeError, normalize
from refusals.providers.fingerprint import conversation_fingerprint, non_streaming_path
from refusals.refusal import notice as notice_of
from refusals.transport.streams import (
    STREAM_MEDIA_TYPES,
    StreamDecoder,
    body_decompressor,
    media_type,
)

__all__ = [
    "VERDICT_EXTENSION",
    "VOLATILE_FIELDS",
    "RefusalGuard",
    "RefusalTransport",
    "RefusedRequestError",
    "RequestIdentity",
    "ResponseVerdict",
    "request_identity",
]

VERDICT_EXTENSION = "refusals.verdict"
"""Key of the `ResponseVerdict` in `response.extensions` once the body has been read."""

VOLATILE_FIELDS: frozenset[str] = frozenset({"stream", "stream_options", "metadata"})
"""Top-level body fields left out of a request's identity: asking for the same prompt
streamed or not, or with other bookkeeping, is still the same prompt."""


MAX_BODY_BYTES = 64 * 1024 * 1024
"""A full body larger than this is passed through unclassified rather than copied."""

_TERMINAL = frozenset({FinishReason.REFUSAL, FinishReason.CONTENT_FILTER})

_log = logging.getLogger("refusals.integrations.httpx")


@dataclass(frozen=True, slots=True)
class RequestIdentity:
    """What makes two requests the same prompt: method, host, path and canonical JSON body."""

    method: str
    host: str
    path: str
    body_digest: str
    """The conversation's fingerprint (`conversation_fingerprint`: model and messages,
    normalised), or for a body that holds none the SHA-256 of its canonical JSON without
    the volatile fields."""

    def __str__(self) -> str:
        return f"{self.method} {self.host}{self.path}"


def request_identity(
    method: str,
    url: object,
    body: bytes,
    *,
    volatile: Iterable[str] = VOLATILE_FIELDS,
) -> RequestIdentity | None:
    """The identity of a request with a JSON body; None for any other body.

    The query string is left out (it carries API keys and `alt=sse` in some APIs), and a
    streaming path (`:streamGenerateContent`, `/converse-stream`) counts as its
    non-streaming twin.
    """
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if isinstance(decoded, dict):
        dropped = frozenset(volatile)
        decoded = {key: value for key, value in decoded.items() if key not in dropped}
    parsed = httpx.URL(str(url))
    path = non_streaming_path(parsed.path)
    # The conversation, not the raw JSON: the same prompt with another max_tokens, or as
    # a list of text parts, is the same prompt.
    digest = conversation_fingerprint(decoded, path)
    if digest is None:
        canonical = orjson.dumps(decoded, option=orjson.OPT_SORT_KEYS)
        digest = hashlib.sha256(canonical).hexdigest()
    return RequestIdentity(
        method=method.upper(),
        host=parsed.netloc.decode("ascii", "replace"),
        path=path,
        body_digest=digest,
    )


@dataclass(frozen=True, slots=True)
class ResponseVerdict:
    """What one provider response passing through the transport turned out to be."""

    response: LLMResponse
    status_code: int
    streamed: bool
    request: RequestIdentity | None
    """The request it answered; None when that request had no JSON body."""
    complete: bool
    """Whether the whole body was read (False: closed early, after a refusal or filter)."""

    @property
    def finish_reason(self) -> FinishReason:
        return self.response.finish_reason

    @property
    def blocked(self) -> bool:
        """Whether the request was refused or filtered: terminal, never to be resent."""
        return self.response.finish_reason in _TERMINAL

    @property
    def notice(self) -> str | None:
        """The refusal or content-filter notice (`refusals.notice`), else None."""
        return notice_of(self.response)


class RefusedRequestError(Exception):
    """A request identical to one already refused or filtered was not sent.

    When the OpenAI or Anthropic SDK is loaded, the instance raised is also an instance of
    that SDK's base error (`openai.OpenAIError`, `anthropic.AnthropicError`), which those
    SDKs pass through as it is: no retry, no "Connection error." wrapper.
    """

    def __init__(self, verdict: ResponseVerdict) -> None:
        self.verdict = verdict
        self.notice: str = verdict.notice or ""
        where = f" ({verdict.request})" if verdict.request is not None else ""
        if not verdict.blocked:
            # An SDK retry of a request whose answer was cut off in transit.
            error = verdict.response.error
            super().__init__(
                f"refusals: not retrying a request whose answer was cut off{where}: "
                f"{error.message if error is not None else 'the body broke off'}. The model "
                "ran and may have refused; send it again yourself if it was not a refusal."
            )
            return
        super().__init__(
            f"refusals: not sending a request identical to one already "
            f"{'refused' if verdict.finish_reason is FinishReason.REFUSAL else 'filtered'}"
            f"{where}. {self.notice}"
        )


_SDK_BASE_ERRORS = (("openai", "OpenAIError"), ("anthropic", "AnthropicError"))


@functools.cache
def _error_type(bases: tuple[type[Exception], ...]) -> type[RefusedRequestError]:
    if not bases:
        return RefusedRequestError
    made: type[RefusedRequestError] = type(
        "RefusedRequestError", (RefusedRequestError, *bases), {"__module__": __name__}
    )
    return made


def _refused_error(verdict: ResponseVerdict) -> RefusedRequestError:
    # The SDKs wrap and retry any exception their transport raises that is not their own;
    # an error that is also theirs reaches the caller at once. They are looked up only if
    # already imported: this module never imports an SDK.
    bases: list[type[Exception]] = []
    for module_name, name in _SDK_BASE_ERRORS:
        module = sys.modules.get(module_name)
        base = getattr(module, name, None) if module is not None else None
        if isinstance(base, type) and issubclass(base, Exception):
            bases.append(base)
    return _error_type(tuple(bases))(verdict)


class RefusalGuard:
    """Remembers refused and filtered requests, and stops an identical one from being sent.

    Thread-safe; share one between transports to guard several clients at once. Holds
    at most `max_entries` requests, forgetting the oldest first.
    """

    def __init__(self, max_entries: int = 4096, *, cut_window: float = 60.0) -> None:
        self.max_entries = max_entries
        self.cut_window = cut_window
        """Seconds after an answer broke off in transit during which the same request is
        taken for a retry (LiteLLM's, a loop's) and refused; an SDK's marked retry is
        refused whenever it comes."""
        self._refused: OrderedDict[RequestIdentity, ResponseVerdict] = OrderedDict()
        # Requests whose answer broke off after some bytes, and when.
        self._cut: OrderedDict[RequestIdentity, tuple[ResponseVerdict, float]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._refused)

    def __bool__(self) -> bool:
        # A guard with nothing recorded yet is still a guard: `guard or default` keeps it.
        return True

    def refused(self, identity: RequestIdentity) -> ResponseVerdict | None:
        """The verdict that refused this request, or None when it may be sent."""
        with self._lock:
            return self._refused.get(identity)

    def check(self, identity: RequestIdentity | None, *, retry: bool = False) -> None:
        """Raise `RefusedRequestError` when this request was already refused or filtered,
        or when it is a `retry` (an SDK's) of one whose answer was cut off in transit."""
        if identity is None:
            return
        verdict = self.refused(identity)
        if verdict is None:
            with self._lock:
                cut = self._cut.get(identity)
            if cut is not None and (retry or time.monotonic() - cut[1] < self.cut_window):
                verdict = cut[0]
        if verdict is not None:
            raise _refused_error(verdict)

    def record_cut(self, verdict: ResponseVerdict) -> None:
        """Remember a request whose answer broke off after its first bytes."""
        if verdict.request is None:
            return
        with self._lock:
            self._cut[verdict.request] = (verdict, time.monotonic())
            self._cut.move_to_end(verdict.request)
            while len(self._cut) > self.max_entries:
                self._cut.popitem(last=False)

    def record(self, verdict: ResponseVerdict) -> None:
        """Remember a refused or filtered request; other verdicts are ignored."""
        if not verdict.blocked or verdict.request is None:
            return
        with self._lock:
            self._refused[verdict.request] = verdict
            self._refused.move_to_end(verdict.request)
            while len(self._refused) > self.max_entries:
                self._refused.popitem(last=False)

    def forget(self, identity: RequestIdentity) -> None:
        """Allow this request again (for example after the user changed models)."""
        with self._lock:
            self._refused.pop(identity, None)
            self._cut.pop(identity, None)

    def clear(self) -> None:
        with self._lock:
            self._refused.clear()
            self._cut.clear()


OnVerdict = Callable[[ResponseVerdict], None]


class _Observer:
    """Classifies one response body as it is read, and reports its verdict once."""

    def __init__(
        self,
        *,
        provider: str | None,
        identity: RequestIdentity | None,
        status: int,
        streamed: bool,
        decompress: Any,
        extensions: dict[str, Any],
        guard: RefusalGuard | None,
        on_verdict: OnVerdict | None,
    ) -> None:
        self._provider = provider
        self._identity = identity
        self._status = status
        self._streamed = streamed
        self._decompress = decompress
        self._extensions = extensions
        self._guard = guard
        self._on_verdict = on_verdict
        self._decoder = StreamDecoder(provider) if streamed else None
        self._body = bytearray()
        self._terminal_seen = False
        self._failed = False
        self._done = False
        self._received = 0

    @property
    def received(self) -> int:
        """Bytes of the body that arrived."""
        return self._received

    def count(self, size: int) -> None:
        self._received += size

    def feed(self, chunk: bytes, *, counted: bool = False) -> None:
        if not counted:
            self._received += len(chunk)
        if self._done or self._failed:
            return
        try:
            data = self._decompress.decompress(chunk) if self._decompress else chunk
            if self._decoder is None:
                if len(self._body) + len(data) > MAX_BODY_BYTES:
                    self._failed = True
                    self._body = bytearray()
                else:
                    self._body += data
                return
            for event in self._decoder.feed(data):
                if isinstance(event, Verdict) and event.finish_reason in _TERMINAL:
                    self._on_terminal()
        except Exception as exc:
            # A fault of ours must not break the caller's request: stop classifying.
            _log.warning("refusals: could not classify a response (%s)", type(exc).__name__)
            self._failed = True

    def _on_terminal(self) -> None:
        if self._terminal_seen or self._decoder is None:
            return
        self._terminal_seen = True
        # Guard at once: a consumer may stop reading here and resend before the body ends.
        verdict = self._verdict(self._decoder.response, complete=False)
        self._extensions[VERDICT_EXTENSION] = verdict
        if self._guard is not None:
            self._guard.record(verdict)

    def finish(self, *, complete: bool) -> None:
        """End of body (`complete`) or closed early; reports the verdict at most once."""
        if self._done:
            return
        self._done = True
        verdict = None if self._failed else self._final(complete)
        if verdict is None:
            return
        self._extensions[VERDICT_EXTENSION] = verdict
        if self._guard is not None:
            self._guard.record(verdict)
        if self._on_verdict is not None:
            self._on_verdict(verdict)

    def broken(self, exc: BaseException) -> None:
        """The body broke off in transit: what arrived is read for its verdict, and a
        request that received bytes is marked so that an SDK's retry is refused."""
        if self._done:
            return
        self._done = True
        if self._received == 0:
            return
        response: LLMResponse | None = None
        try:
            if self._decoder is not None:
                self._decoder.close(broken=True)
                response = self._decoder.response
            elif not self._failed:
                closed = close_truncated_json(bytes(self._body))
                if closed is not None:
                    response = normalize(closed, self._provider, status=self._status)
        except Exception:  # a cut body that reads as nothing is still a cut body
            response = None
        if response is not None and response.finish_reason in _TERMINAL:
            verdict = self._verdict(response, complete=False)
            self._extensions[VERDICT_EXTENSION] = verdict
            if self._guard is not None:
                self._guard.record(verdict)
            if self._on_verdict is not None:
                self._on_verdict(verdict)
            return
        message = (
            f"the connection broke after {self._received} bytes of the HTTP {self._status} "
            f"body ({type(exc).__name__})"
        )
        cut = LLMResponse(
            finish_reason=FinishReason.ERROR,
            error=ProviderError(
                ErrorKind.TRANSIENT, self._status, message=message, should_retry=False
            ),
        )
        if self._guard is not None:
            self._guard.record_cut(self._verdict(cut, complete=False))

    def _final(self, complete: bool) -> ResponseVerdict | None:
        try:
            if self._decoder is not None:
                if complete:
                    if self._decompress:
                        self._decoder.feed(self._decompress.flush())
                    self._decoder.close()
                elif not self._terminal_seen:
                    return None  # closed before anything was decided
                return self._verdict(self._decoder.response, complete=complete)
            if not complete:
                return None
            if self._decompress:
                self._body += self._decompress.flush()
            response = normalize(bytes(self._body), self._provider, status=self._status)
        except NormalizeError:
            return None  # not a provider response (a model list, a file, a health check)
        except Exception as exc:
            _log.warning("refusals: could not classify a response (%s)", type(exc).__name__)
            return None
        return self._verdict(response, complete=True)

    def _verdict(self, response: LLMResponse, *, complete: bool) -> ResponseVerdict:
        return ResponseVerdict(
            response=response,
            status_code=self._status,
            streamed=self._streamed,
            request=self._identity,
            complete=complete,
        )


class _TeeStream:
    """Passes the body through unchanged, feeding each chunk to the observer on the way."""

    def __init__(self, inner: Any, observer: _Observer) -> None:
        self._inner = inner
        self._observer = observer

    def __iter__(self) -> Iterator[bytes]:
        try:
            for chunk in self._inner:
                self._observer.feed(chunk)
                yield chunk
        except Exception as exc:
            self._observer.broken(exc)
            raise
        self._observer.finish(complete=True)

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._observer.finish(complete=False)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                self._observer.feed(chunk)
                yield chunk
        except Exception as exc:
            self._observer.broken(exc)
            raise
        self._observer.finish(complete=True)

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._observer.finish(complete=False)


@functools.cache
def _tee_type(sync_base: type, async_base: type) -> type[_TeeStream]:
    # The client asserts that a response stream is its own library's byte stream type.
    made: type[_TeeStream] = type("RefusalTeeStream", (_TeeStream, sync_base, async_base), {})
    return made


class _Replay:
    """A body already read, handed to the client as its own library's byte stream."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def __iter__(self) -> Iterator[bytes]:
        yield self._data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._data

    def close(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


@functools.cache
def _replay_type(sync_base: type, async_base: type) -> type[_Replay]:
    made: type[_Replay] = type("RefusalReplayStream", (_Replay, sync_base, async_base), {})
    return made


def _stream_bases(response: Any) -> tuple[type, type] | None:
    library = sys.modules.get(type(response).__module__.partition(".")[0])
    sync_base = getattr(library, "SyncByteStream", None)
    async_base = getattr(library, "AsyncByteStream", None)
    if isinstance(sync_base, type) and isinstance(async_base, type):
        return sync_base, async_base
    return None


if TYPE_CHECKING:
    import httpx2

    # For type checkers, a transport of both libraries (its methods take and return Any).
    class _TransportBase(
        httpx.BaseTransport,
        httpx.AsyncBaseTransport,
        httpx2.BaseTransport,
        httpx2.AsyncBaseTransport,
    ):
        def handle_request(self, request: Any) -> Any: ...
        async def handle_async_request(self, request: Any) -> Any: ...

else:
    # At run time no httpx base class: Anthropic's SDK rejects any httpx object near its
    # httpx2 client, and httpx2 clients only need the methods.
    _TransportBase = object


MAX_ERROR_BODY_BYTES = 1 << 20
"""An error body is read by the transport itself, up to this size."""


def _is_sdk_retry(request: Any) -> bool:
    """Whether the SDK says this is a retry (the Stainless SDKs, OpenAI's and Anthropic's,
    count their attempts in `x-stainless-retry-count`)."""
    value = request.headers.get("x-stainless-retry-count")
    return value is not None and str(value).strip() not in ("", "0")


@dataclass(slots=True)
class _Pending:
    """An error response whose body the transport reads (bounded) before handing it on."""

    response: Any
    observer: _Observer
    bases: tuple[type, type]

    def read(self) -> Any:
        stream = self.response.stream
        parts: list[bytes] = []
        try:
            for chunk in stream:
                parts.append(chunk)
                self.observer.count(len(chunk))
                if self.observer.received > MAX_ERROR_BODY_BYTES:
                    break
        except Exception as exc:
            self.observer.broken(exc)
            raise
        finally:
            stream.close()
        return self._replay(b"".join(parts))

    async def aread(self) -> Any:
        stream = self.response.stream
        parts: list[bytes] = []
        try:
            async for chunk in stream:
                parts.append(chunk)
                self.observer.count(len(chunk))
                if self.observer.received > MAX_ERROR_BODY_BYTES:
                    break
        except Exception as exc:
            self.observer.broken(exc)
            raise
        finally:
            await stream.aclose()
        return self._replay(b"".join(parts))

    def _replay(self, data: bytes) -> Any:
        self.observer.feed(data, counted=True)
        self.observer.finish(complete=True)
        self.response.stream = _replay_type(*self.bases)(data)
        return self.response


class RefusalTransport(_TransportBase):
    """Wraps an httpx or httpx2 transport (sync or async) to classify and guard every call.

    - `provider`: the wire format (`"anthropic"`, `"openai"`, ...; see
      `refusals.providers.PROVIDERS`); None recognises it from each body.
    - `on_verdict`: called once per classified response, when its body has been read (or
      closed after a refusal or filter), with its `ResponseVerdict`.
    - `guard`: True (a guard of its own), False (none), or a `RefusalGuard` to share.
    - `volatile_fields`: top-level body fields ignored by the request identity.
    """

    def __init__(
        self,
        inner: Any,
        *,
        provider: str | None = None,
        on_verdict: OnVerdict | None = None,
        guard: RefusalGuard | bool = True,
        volatile_fields: Iterable[str] = VOLATILE_FIELDS,
    ) -> None:
        if not (hasattr(inner, "handle_request") or hasattr(inner, "handle_async_request")):
            raise TypeError(
                "RefusalTransport wraps an httpx transport (httpx.HTTPTransport(), "
                f"httpx.AsyncHTTPTransport(), or httpx2's), not a {type(inner).__name__}"
            )
        self.inner = inner
        self.provider = provider
        self.on_verdict = on_verdict
        if isinstance(guard, RefusalGuard):
            self.guard: RefusalGuard | None = guard
        else:
            self.guard = RefusalGuard() if guard else None
        self.volatile_fields = frozenset(volatile_fields)

    def identity(self, request: Any) -> RequestIdentity | None:
        """The identity this transport gives `request` (its body must have been read)."""
        content_type = media_type(request.headers)
        if content_type and content_type != "application/json" and "+json" not in content_type:
            return None
        return request_identity(
            request.method, request.url, request.content, volatile=self.volatile_fields
        )

    def handle_request(self, request: Any) -> Any:
        if not hasattr(self.inner, "handle_request"):
            raise TypeError("this RefusalTransport wraps an async transport; use an AsyncClient")
        request.read()
        identity = self.identity(request)
        if self.guard is not None:
            self.guard.check(identity, retry=_is_sdk_retry(request))
        response = self.inner.handle_request(request)
        observed = self._observe(request, identity, response)
        if isinstance(observed, _Pending):
            # An error status: read now, so the verdict holds even if the SDK never reads
            # the body (a streamed call retried on `x-should-retry` closes it unread).
            return observed.read()
        return observed

    async def handle_async_request(self, request: Any) -> Any:
        if not hasattr(self.inner, "handle_async_request"):
            raise TypeError("this RefusalTransport wraps a sync transport; use a Client")
        await request.aread()
        identity = self.identity(request)
        if self.guard is not None:
            self.guard.check(identity, retry=_is_sdk_retry(request))
        response = await self.inner.handle_async_request(request)
        observed = self._observe(request, identity, response)
        if isinstance(observed, _Pending):
            return await observed.aread()
        return observed

    def _observe(self, request: Any, identity: RequestIdentity | None, response: Any) -> Any:
        media = media_type(response.headers)
        status = int(response.status_code)
        streamed = media in STREAM_MEDIA_TYPES or (
            media == "application/json" and request.url.path.endswith(":streamGenerateContent")
        )
        is_json = media == "application/json" or media.endswith("+json")
        if not (streamed or is_json or status >= 400):
            return response
        decompress = body_decompressor(response.headers)
        bases = _stream_bases(response)
        if decompress is False or bases is None:
            return response
        observer = _Observer(
            provider=self.provider,
            identity=identity,
            status=status,
            streamed=streamed and status < 400,
            decompress=decompress,
            extensions=response.extensions,
            guard=self.guard,
            on_verdict=self.on_verdict,
        )
        if status >= 400:
            return _Pending(response, observer, bases)
        response.stream = _tee_type(*bases)(response.stream, observer)
        return response

    def close(self) -> None:
        self.inner.close()

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __enter__(self) -> RefusalTransport:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> RefusalTransport:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
