"""The refusal-aware gateway as one ASGI 3 application.

Each request goes: control path? → which upstream (`route`) → body → the prompt's
fingerprint → refused before? (replay the recorded refusal, or route to a fallback
model, per the policy) → forward → the answer, byte for byte, chunk by chunk, read on
the fly by `normalize` or the stream decoder → a refusal or filter is remembered →
one log line. Anything that is not a model call (a model list, a file upload) passes
through untouched and unread.

Nothing here holds a credential longer than the request: headers go upstream as they
came and are never logged.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import aiohttp
import httpx
import orjson
import yarl

from refusals.events import Verdict
from refusals.model import FinishReason, LLMResponse, StopDetails
from refusals.providers import (
    PROVIDERS,
    NormalizeError,
    endpoint_for_path,
    normalize,
    path_with_model,
)
from refusals.providers.fingerprint import conversation_fingerprint, non_streaming_path
from refusals.providers.registry import VENDORS, Vendor
from refusals.proxy.log import VerdictLog
from refusals.proxy.metrics import Metrics
from refusals.proxy.store import Blocked, FingerprintStore
from refusals.scan import record_from_response
from refusals.serving import Receive, Scope, Send, read_body
from refusals.transport.fallback import BlockPolicy, Rule
from refusals.transport.streams import (
    STREAM_MEDIA_TYPES,
    StreamDecoder,
    body_decompressor,
    media_type,
)

__all__ = ["BLOCKED_HEADER", "DEFAULT_WINDOW", "ProxyApp", "Upstream", "parse_upstream"]

DEFAULT_WINDOW = 3600.0
"""Seconds a refused prompt stays blocked."""

MAX_BODY_BYTES = 32 * 1024 * 1024
"""Request bodies above this are answered 413, unread; answers are never bounded."""

MAX_RECORDED_BYTES = 4 * 1024 * 1024
"""A refused answer longer than this is replayed as the provider's error shape instead."""

BLOCKED_HEADER = "x-refusals-resend-blocked"
CUT_WINDOW = 60.0
"""Seconds a request whose answer broke off (bytes but no verdict) is not sent again."""
FALLBACK_HEADER = "x-refusals-fallback-from"
CLAIM_SECONDS = 120.0
"""How long a prompt in flight is held for this process: an identical request in another
process waits for its answer at most this long (a longer stream lets it go after that)."""
_CLAIM_POLL_SECONDS = 0.02
CONTROL_PREFIX = "/_refusals/"

# Hop-by-hop headers (RFC 9110 7.6.1) and those the HTTP client sets itself.
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
# What a replay carries of the recorded headers: request ids and the provider's own.
_KEPT_PREFIXES = ("x-", "request-id", "anthropic-", "openai-", "apim-", "retry-after")
_NOT_KEPT = frozenset({"x-refusals-resend-blocked", "x-envoy-upstream-service-time"})
_READABLE_CODINGS = ("gzip", "x-gzip", "deflate", "identity")

# The upstream a wire goes to when no path prefix names one.
_DEFAULT_UPSTREAM = {
    "anthropic": "anthropic",
    "openai": "openai",
    "openai-responses": "openai",
    "gemini": "gemini",
    "vertex": "vertex",
    "bedrock": "bedrock",
    "azure": "azure",
    "cohere": "cohere",
    "ollama": "ollama",
}


def _family(row: Vendor) -> str:
    """The request format a provider's calls share with others at one upstream: Azure's
    deployment URLs are its own, Vertex speaks Gemini's, OpenAI's two APIs are one."""
    if row.name == "azure":
        return "azure"
    if row.wire in ("openai-chat", "openai-responses"):
        return "openai"
    return str(row.wire)


# Model providers whose fallback models a request of a wire can be routed to (a wire is
# named as a provider: see `wire_for_path`), from the registry.
_FAMILY = {row.name: _family(row) for row in VENDORS if row.wire is not None and row.name != "mock"}


@dataclass(frozen=True, slots=True)
class Upstream:
    """A provider the proxy forwards to: `name` (a provider or any label) and its URL."""

    name: str
    url: str
    """Scheme, host and any path prefix, without a trailing slash."""


def parse_upstream(spec: str) -> Upstream:
    """`NAME=URL` (as `--upstream` takes it) → `Upstream`; ValueError says what is wrong."""
    name, sep, url = spec.partition("=")
    name = name.strip().lower()
    url = url.strip().rstrip("/")
    if not sep or not name or not url:
        raise ValueError(
            f"{spec!r} is not NAME=URL (for example anthropic=https://api.anthropic.com)"
        )
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", name):
        raise ValueError(f"upstream name {name!r} must be letters, digits, '.', '_' or '-'")
    parsed = httpx.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"{url!r} is not an http:// or https:// URL")
    return Upstream(name, url)


def wire_for_path(path: str) -> tuple[str, str | None] | None:
    """The wire format a model call to `path` speaks, and the model the path names
    (`providers.endpoint_for_path`: each format's folder lists its paths)."""
    return endpoint_for_path(path)


@dataclass(slots=True)
class _Call:
    """One model call on its way through: where it goes and what it asks."""

    upstream: Upstream
    path: str
    wire: str | None
    body: bytes
    decoded: dict[str, Any] | None
    key: str | None
    started: float
    fallback_from: str | None = None
    provider: str | None = None


@dataclass(slots=True)
class _Answer:
    """What came back from upstream, as far as the proxy read it."""

    status: int = 0
    streamed: bool = False
    media: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)
    first_byte: float | None = None
    response: LLMResponse | None = None
    recorded: bool = False
    complete: bool = False
    overflow: bool = False
    received: int = 0
    entry: Blocked | None = None
    """The refusal as stored, once the answer was one."""


class ProxyApp:
    """The gateway, an ASGI 3 callable.

    - `upstreams`: where model calls go (`Upstream`s); a path whose first segment names
      one goes there (the segment dropped); otherwise the path's wire format picks the
      upstream of that provider's name, or the only upstream there is.
    - `store`: the memory of refused prompts (`SQLiteStore`, `RedisStore`).
    - `window`: seconds a refused prompt stays blocked.
    - `policy`, `fallback_models`: what to do with a resend, per category (as in
      `refusals.toml`); without a policy every resend is answered with the refusal.
    - `log`: the verdict log, one JSON line per model call.
    """

    def __init__(
        self,
        upstreams: list[Upstream],
        store: FingerprintStore,
        *,
        window: float = DEFAULT_WINDOW,
        policy: BlockPolicy | None = None,
        fallback_models: tuple[str, ...] = (),
        log: VerdictLog | None = None,
        timeout: float = 600.0,
        metrics: Metrics | None = None,
    ) -> None:
        if not upstreams:
            raise ValueError("the proxy needs at least one upstream")
        self.upstreams = {u.name: u for u in upstreams}
        self.store = store
        self.window = window
        self.policy = policy
        self.fallback_models = fallback_models
        self.log = log
        self.metrics = metrics if metrics is not None else Metrics()
        self._timeout = aiohttp.ClientTimeout(
            total=None, connect=min(timeout, 10.0), sock_read=timeout
        )
        self._client: aiohttp.ClientSession | None = None
        self._inflight: dict[str, asyncio.Event] = {}
        # Names this app's claims in the shared store (other workers, other replicas).
        self._owner = f"{os.getpid()}:{uuid.uuid4().hex}"
        # Requests whose answer broke off after bytes arrived, with no verdict: the model
        # ran and may have refused, so they are not sent again for a while (this process).
        self._cut: dict[str, tuple[float, int]] = {}

    # --- ASGI -----------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path = str(scope.get("path", "/"))
        if path.startswith(CONTROL_PREFIX) or path == "/metrics":
            await self._control(scope, send, path)
            return
        await self._http(scope, receive, send)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
        await self.store.close()
        if self.log is not None:
            self.log.close()

    def _session(self) -> aiohttp.ClientSession:
        # Made on the serving loop's first call: a session belongs to one event loop.
        if self._client is None:
            self._client = aiohttp.ClientSession(
                timeout=self._timeout,
                connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
                # The body goes as it came, coded or not, and no header is added.
                auto_decompress=False,
                skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
                trust_env=False,
            )
        return self._client

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _control(self, scope: Scope, send: Send, path: str) -> None:
        if path == "/metrics":
            text = self.metrics.exposition()
            if text is None:
                await _json(
                    send,
                    404,
                    _error("metrics need prometheus-client: pip install 'refusals[metrics]'"),
                )
                return
            await _plain(send, 200, text, "text/plain; version=0.0.4; charset=utf-8")
            return
        if path == CONTROL_PREFIX + "health":
            health = {"ok": True, "upstreams": sorted(self.upstreams), "pid": os.getpid()}
            await _json(send, 200, health)
        elif path == CONTROL_PREFIX + "stats":
            await _json(send, 200, self.metrics.stats())
        else:
            await _json(
                send, 404, _error(f"unknown proxy endpoint {path}; try {CONTROL_PREFIX}stats")
            )

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        method = str(scope.get("method", "GET")).upper()
        raw_path = scope.get("raw_path")
        path = bytes(raw_path).decode("latin-1") if raw_path else str(scope.get("path", "/"))
        query = bytes(scope.get("query_string", b"")).decode("latin-1")
        headers = [
            (bytes(k).decode("latin-1").lower(), bytes(v).decode("latin-1"))
            for k, v in scope.get("headers", [])
        ]
        picked = self._route(path)
        if picked is None:
            known = ", ".join(sorted(self.upstreams))
            message = (
                f"no upstream for {path}: start the path with an upstream's name "
                f"(/NAME/...; configured: {known}) or add --upstream NAME=URL"
            )
            await _json(send, 502, _error(message))
            return
        upstream, upstream_path = picked
        declared = next((v for k, v in headers if k == "content-length"), "")
        body = await read_body(receive, declared, MAX_BODY_BYTES)
        if body is None:
            limit = MAX_BODY_BYTES // (1024 * 1024)
            await _json(send, 413, _error(f"request body exceeds the proxy's {limit} MiB limit"))
            return
        call = self._call(
            method=method,
            upstream=upstream,
            path=upstream_path,
            headers=headers,
            body=body,
            started=started,
        )
        if call.key is None:
            await self._forward(send, method=method, call=call, query=query, headers=headers)
            return
        key = call.key
        waited = self._inflight.get(key)
        if waited is not None:
            # The same prompt is on its way upstream now: its answer decides this one.
            await waited.wait()
        claimed = await self._claim(key)
        try:
            await self._send_keyed(send, method=method, call=call, query=query, headers=headers)
        finally:
            if claimed:
                await self.store.release(key, self._owner)

    async def _claim(self, key: str) -> bool:
        """Claims `key` in the shared store before it is sent; while another process holds
        it, waits for that answer (True once claimed; False when a refusal was recorded
        meanwhile or the other claim outlived `CLAIM_SECONDS`)."""
        deadline = time.monotonic() + CLAIM_SECONDS
        while not await self.store.claim(key, self._owner, CLAIM_SECONDS):
            if await self.store.get(key) is not None or time.monotonic() > deadline:
                return False
            await asyncio.sleep(_CLAIM_POLL_SECONDS)
        return True

    async def _send_keyed(
        self, send: Send, *, method: str, call: _Call, query: str, headers: list[tuple[str, str]]
    ) -> None:
        """A call with a fingerprint: replayed, rerouted or forwarded."""
        assert call.key is not None
        blocked = await self.store.get(call.key)
        cut = self._cut.get(call.key)
        if blocked is None and cut is not None:
            if cut[0] > time.monotonic():
                await self._refuse_cut(send, call, cut[1])
                return
            del self._cut[call.key]
        if blocked is not None:
            rerouted = self._reroute(call, blocked)
            if rerouted is None:
                await self._replay(send, call, blocked, headers)
                return
            again = await self.store.get(rerouted.key) if rerouted.key else None
            if again is not None:
                await self._replay(send, rerouted, again, headers)
                return
            call = rerouted
        event = asyncio.Event()
        assert call.key is not None
        self._inflight[call.key] = event
        try:
            await self._forward(send, method=method, call=call, query=query, headers=headers)
        finally:
            event.set()
            if self._inflight.get(call.key) is event:
                del self._inflight[call.key]

    def _route(self, path: str) -> tuple[Upstream, str] | None:
        head, _, rest = path.lstrip("/").partition("/")
        named = self.upstreams.get(head.lower())
        if named is not None:
            return named, "/" + rest
        found = wire_for_path(path)
        if found is not None:
            name = _DEFAULT_UPSTREAM.get(found[0])
            if name is not None and name in self.upstreams:
                return self.upstreams[name], path
        if len(self.upstreams) == 1:
            return next(iter(self.upstreams.values())), path
        return None

    def _call(
        self,
        *,
        method: str,
        upstream: Upstream,
        path: str,
        headers: list[tuple[str, str]],
        body: bytes,
        started: float,
    ) -> _Call:
        found = wire_for_path(path) if method == "POST" else None
        decoded: dict[str, Any] | None = None
        key = None
        wire = found[0] if found is not None else None
        if wire is not None:
            try:
                value = orjson.loads(body)
            except orjson.JSONDecodeError:
                value = None
            if isinstance(value, dict):
                decoded = value
                digest = conversation_fingerprint(value, non_streaming_path(path))
                if digest is not None:
                    key = f"{upstream.name}:{wire}:{digest}"
        call = _Call(upstream, path, wire, body, decoded, key, started)
        call.provider = _provider(upstream, wire)
        return call

    # --- a resend -------------------------------------------------------------------

    def _reroute(self, call: _Call, blocked: Blocked) -> _Call | None:
        """The call sent to a fallback model instead, when the policy says so; else None."""
        if self.policy is None or call.decoded is None or call.wire is None:
            return None
        finish = FinishReason(blocked.finish_reason)
        rule = self.policy.rule_for(finish, StopDetails(category=blocked.category))
        target = self._fallback_model(rule, call)
        if target is None:
            return None
        model = _model_of(call)
        body, path = call.decoded, call.path
        if "model" in body:
            body = {**body, "model": target}
        else:
            path = path_with_model(path, target)
            if path == call.path:
                return None
        raw = orjson.dumps(body)
        digest = conversation_fingerprint(body, non_streaming_path(path))
        key = f"{call.upstream.name}:{call.wire}:{digest}" if digest is not None else None
        rerouted = _Call(call.upstream, path, call.wire, raw, body, key, call.started, model)
        rerouted.provider = call.provider
        return rerouted

    def _may_reroute(self, call: _Call) -> bool:
        """Whether a refusal of this call could go to a fallback model (one hop: a
        fallback's own refusal is answered as it is)."""
        return (
            self.policy is not None
            and call.decoded is not None
            and call.wire is not None
            and call.fallback_from is None
        )

    def _fallback_model(self, rule: Rule, call: _Call) -> str | None:
        if rule.action != "fallback":
            return None  # `stop`, and `ask` (there is nobody to ask at a gateway)
        candidates = [rule.model] if rule.model is not None else list(self.fallback_models)
        for candidate in candidates:
            provider, _, model = candidate.partition(":")
            if model and _routable(provider, call) and model != _model_of(call):
                return model
        return None

    async def _replay(
        self, send: Send, call: _Call, blocked: Blocked, request_headers: list[tuple[str, str]]
    ) -> None:
        streamed = _asks_stream(call)
        headers = [(k, v) for k, v in blocked.headers]
        headers.append((BLOCKED_HEADER, "true"))
        headers.append(("x-refusals-finish-reason", blocked.finish_reason))
        if streamed == blocked.streamed and blocked.body:
            status, body, media = blocked.status, blocked.body, blocked.media_type
        else:
            # Asked the other way (streamed after a whole body, or the reverse): the
            # refusal in the provider's error shape, which no SDK retries.
            status, body, media = 400, *_error_body(call, blocked)
        headers.append(("content-type", media))
        await _start(send, status, headers, len(body))
        await send({"type": "http.response.body", "body": body, "more_body": False})
        saved = blocked.input_tokens + blocked.output_tokens
        self.metrics.blocked(call.upstream.name, blocked, saved)
        self._write_log(
            call,
            status=status,
            streamed=streamed,
            finish=blocked.finish_reason,
            fields={
                "provider": call.provider,
                "model": blocked.model,
                "raw_finish_reason": None,
                "category": blocked.category,
                "explanation": blocked.explanation,
                "notice": blocked.notice,
                "stage": "prompt",
                "served_by_fallback": False,
                "recommended_model": None,
                "input_tokens": 0,
                "output_tokens": 0,
                "request_id": blocked.request_id,
            },
            resend_blocked=True,
            tokens_saved=saved,
            ttfb=None,
        )

    # --- forwarding -----------------------------------------------------------------

    async def _forward(
        self,
        send: Send,
        *,
        method: str,
        call: _Call,
        query: str,
        headers: list[tuple[str, str]],
    ) -> None:
        url = call.upstream.url + call.path + (f"?{query}" if query else "")
        outgoing = _outgoing_headers(headers, inspect=call.key is not None)
        session = self._session()
        try:
            response = await session.request(
                method,
                yarl.URL(url, encoded=True),  # as sent: a Bedrock ARN's %2F stays encoded
                data=call.body or None,
                headers=outgoing,
                allow_redirects=False,
            )
        except TimeoutError:
            await _json(send, 504, _error(f"upstream {call.upstream.name} did not answer in time"))
            return
        except aiohttp.ClientError as exc:
            message = f"cannot reach upstream {call.upstream.name} ({type(exc).__name__})"
            await _json(send, 502, _error(message))
            return
        answer = _Answer(status=response.status)
        answer.media = media_type(response.headers)
        answer.streamed = answer.media in STREAM_MEDIA_TYPES or (
            answer.media == "application/json" and call.path.endswith(":streamGenerateContent")
        )
        answer.headers = [
            (k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in response.raw_headers
        ]
        inspect = call.key is not None
        decompress = body_decompressor(response.headers) if inspect else None
        if decompress is False:
            inspect = False
        decoder = StreamDecoder(call.provider) if inspect and answer.streamed else None
        out_headers = [(k, v) for k, v in answer.headers if k not in _HOP or k == "content-length"]
        if call.fallback_from is not None:
            out_headers.append((FALLBACK_HEADER, call.fallback_from))
        start = {
            "type": "http.response.start",
            "status": answer.status,
            "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in out_headers],
        }
        broken = False
        # A whole body's last chunk is held until its verdict is stored and logged: once
        # a client has its answer, a resend right after it is already blocked. (A stream
        # ends with the chunked terminator, sent after the verdict all the same.)
        hold = inspect and not answer.streamed
        # When the policy may send a refusal to a fallback model, a whole body is held
        # entire: a refused one is then never shown, the fallback's answer is.
        whole = hold and self._may_reroute(call)
        if not whole:
            await send(start)
        held = b""
        parts: list[bytes] = []  # the whole body, when it is held entire
        try:
            async for chunk in response.content.iter_any():
                if answer.first_byte is None:
                    answer.first_byte = time.perf_counter()
                answer.received += len(chunk)
                if whole:
                    parts.append(chunk)
                elif hold:
                    if held:
                        await send({"type": "http.response.body", "body": held, "more_body": True})
                    held = chunk
                else:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                if inspect:
                    data = decompress.decompress(chunk) if decompress else chunk
                    await self._observe(call, answer, decoder, data)
            if inspect and decompress:
                await self._observe(call, answer, decoder, decompress.flush())
            answer.complete = True
        except (aiohttp.ClientError, TimeoutError):
            broken = True  # the upstream broke off: so does the client's response
        except OSError:
            broken = True  # the client went away
        finally:
            response.release()
        if inspect:
            await self._conclude(call, answer, decoder)
        if whole and not broken and answer.entry is not None:
            rerouted = self._reroute(call, answer.entry)
            if rerouted is not None:
                await self._forward(
                    send, method=method, call=rerouted, query=query, headers=headers
                )
                return
        if whole:
            await send(start)
            held = b"".join(parts)
        if broken:
            if held:
                await send({"type": "http.response.body", "body": held, "more_body": True})
            return
        await send({"type": "http.response.body", "body": held, "more_body": False})

    async def _observe(
        self, call: _Call, answer: _Answer, decoder: StreamDecoder | None, data: bytes
    ) -> None:
        if not data:
            return
        if len(answer.body) + len(data) <= MAX_RECORDED_BYTES:
            answer.body += data
        else:
            answer.overflow = True
        if decoder is None:
            return
        try:
            events = decoder.feed(data)
        except Exception:
            return  # a stream we cannot read is forwarded all the same
        for event in events:
            if (
                isinstance(event, Verdict)
                and event.finish_reason in _BLOCKED
                and not answer.recorded
            ):
                # Remember it now: a client may stop reading here and resend at once.
                answer.recorded = True
                await self._remember(call, answer, decoder.response)

    async def _conclude(self, call: _Call, answer: _Answer, decoder: StreamDecoder | None) -> None:
        response: LLMResponse | None
        try:
            if decoder is not None:
                decoder.close(broken=not answer.complete)
                response = decoder.response
            elif answer.overflow or not answer.complete:
                response = None
            else:
                response = normalize(
                    bytes(answer.body),
                    call.provider,
                    status=answer.status,
                    headers=dict(answer.headers),
                )
        except NormalizeError:
            response = None  # not a model answer (a health check, an HTML error page)
        except Exception:
            response = None
        blocked_now = response is not None and response.finish_reason in _BLOCKED
        if not answer.complete and answer.first_byte is not None and not blocked_now:
            assert call.key is not None
            self._cut[call.key] = (time.monotonic() + CUT_WINDOW, answer.received)
        if response is None:
            self.metrics.unclassified(call.upstream.name)
            return
        blocked = response.finish_reason in _BLOCKED
        if blocked:
            await self._remember(call, answer, response)
        record = record_from_response(response, source="", line=0, layout="proxy-log")
        fields = {
            "provider": record.provider or call.provider,
            "model": record.model or _model_of(call),
            "raw_finish_reason": record.raw_finish_reason,
            "category": record.category,
            "explanation": record.explanation,
            "notice": record.notice,
            "stage": record.stage,
            "served_by_fallback": record.served_by_fallback or call.fallback_from is not None,
            "recommended_model": record.recommended_model,
            "input_tokens": record.input_tokens,
            "output_tokens": record.output_tokens,
            "request_id": response.request_id,
        }
        self.metrics.answered(call.upstream.name, fields, record.finish_reason, call.fallback_from)
        ttfb = (answer.first_byte - call.started) if answer.first_byte is not None else None
        self._write_log(
            call,
            status=answer.status,
            streamed=answer.streamed,
            finish=record.finish_reason,
            fields=fields,
            resend_blocked=False,
            tokens_saved=0,
            ttfb=ttfb,
        )

    async def _refuse_cut(self, send: Send, call: _Call, received: int) -> None:
        message = (
            f"refusals proxy: not sending this request again: the answer to the same request "
            f"broke off after {received} bytes less than {CUT_WINDOW:g} s ago, and the model, "
            "which ran, may have refused it; change the prompt, or send it after that"
        )
        body, media = _wire_error(call, message)
        headers = [("content-type", media), (BLOCKED_HEADER, "cut")]
        await _start(send, 400, headers, len(body))
        await send({"type": "http.response.body", "body": body, "more_body": False})

    async def _remember(self, call: _Call, answer: _Answer, response: LLMResponse) -> None:
        assert call.key is not None
        record = record_from_response(response, source="", line=0, layout="proxy-log")
        kept = [
            (k, v) for k, v in answer.headers if k.startswith(_KEPT_PREFIXES) and k not in _NOT_KEPT
        ]
        entry = Blocked(
            key=call.key,
            upstream=call.upstream.name,
            wire=call.wire or "",
            model=record.model or _model_of(call),
            finish_reason=record.finish_reason,
            category=record.category,
            explanation=record.explanation,
            request_id=response.request_id,
            notice=record.notice,
            status=answer.status,
            streamed=answer.streamed,
            media_type=answer.media or "application/json",
            body=b"" if answer.overflow else bytes(answer.body),
            headers=kept,
            input_tokens=record.input_tokens,
            output_tokens=record.output_tokens,
            recorded_at=time.time(),
        )
        answer.entry = entry
        try:
            await self.store.put(entry, self.window)
        except Exception as exc:
            self.metrics.store_error(type(exc).__name__)

    def _write_log(
        self,
        call: _Call,
        *,
        status: int,
        streamed: bool,
        finish: str,
        fields: dict[str, Any],
        resend_blocked: bool,
        tokens_saved: int,
        ttfb: float | None,
    ) -> None:
        if self.log is None:
            return
        now = time.perf_counter()
        kind = finish if finish in ("refusal", "content_filter") else None
        record: dict[str, Any] = {
            "type": "proxy.verdict",
            "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "upstream": call.upstream.name,
            "path": call.path,
            "status": status,
            "streamed": streamed,
            "finish_reason": finish,
            "kind": kind,
            **fields,
            "id": fields.get("request_id"),
            "latency_ms": round((now - call.started) * 1000, 3),
            "ttfb_ms": round(ttfb * 1000, 3) if ttfb is not None else None,
            "resend_blocked": resend_blocked,
            "tokens_saved": tokens_saved,
            "fallback_from": call.fallback_from,
            "fingerprint": call.key.rpartition(":")[2][:16] if call.key else None,
        }
        try:
            self.log.write(record)
        except OSError as exc:
            self.metrics.log_error(exc.strerror or type(exc).__name__)


_BLOCKED = frozenset({FinishReason.REFUSAL, FinishReason.CONTENT_FILTER})


def _provider(upstream: Upstream, wire: str | None) -> str | None:
    """The provider name `normalize` is told: the upstream's, when it is one."""
    if upstream.name in PROVIDERS:
        if upstream.name == "openai" and wire == "openai-responses":
            return "openai-responses"
        return upstream.name
    return wire if wire in PROVIDERS else None


def _routable(provider: str, call: _Call) -> bool:
    if provider in (call.upstream.name, "mock"):
        return True
    family = _FAMILY.get(provider)
    return family is not None and family == _FAMILY.get(call.wire or "")


def _model_of(call: _Call) -> str | None:
    if call.decoded is not None and isinstance(call.decoded.get("model"), str):
        return str(call.decoded["model"])
    found = wire_for_path(call.path)
    return found[1] if found is not None else None


def _asks_stream(call: _Call) -> bool:
    if non_streaming_path(call.path) != call.path:
        return True  # the path names the streaming variant (Gemini, Bedrock)
    return bool(call.decoded is not None and call.decoded.get("stream") is True)


def _error_body(call: _Call, blocked: Blocked) -> tuple[bytes, str]:
    """The recorded refusal worded as the wire's own 400 error body."""
    message = blocked.notice or f"this prompt was {blocked.finish_reason.replace('_', ' ')}"
    return _wire_error(call, message)


def _wire_error(call: _Call, message: str) -> tuple[bytes, str]:
    """A 400 error body with `message`, in the shape of the call's wire format."""
    from refusals.mock.wire import WIRES  # noqa: PLC0415 - the writers, only for this case

    wire = (
        WIRES.get(call.wire or "")
        or WIRES.get(_WRITER.get(call.wire or "", ""))
        or WIRES["openai-chat"]
    )
    reply = wire.error(400, "invalid", message)
    return reply.body, reply.media_type


_WRITER = {"openai": "openai-chat", "vertex": "gemini"}


def _outgoing_headers(headers: list[tuple[str, str]], *, inspect: bool) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for name, value in headers:
        if name in _HOP:
            continue
        if name == "accept-encoding" and inspect:
            # Only codings the proxy can read, so that every model answer is classified.
            codings = [
                c.strip()
                for c in value.split(",")
                if c.split(";")[0].strip().lower() in _READABLE_CODINGS
            ]
            out.append((name, ", ".join(codings) or "identity"))
            continue
        out.append((name, value))
    return out


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": f"refusals proxy: {message}", "type": "refusals_proxy_error"}}


async def _start(send: Send, status: int, headers: list[tuple[str, str]], length: int) -> None:
    encoded = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    encoded.append((b"content-length", str(length).encode()))
    await send({"type": "http.response.start", "status": status, "headers": encoded})


async def _json(send: Send, status: int, payload: Mapping[str, Any]) -> None:
    body = orjson.dumps(payload)
    await _start(send, status, [("content-type", "application/json")], len(body))
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _plain(send: Send, status: int, text: str, media: str) -> None:
    body = text.encode()
    await _start(send, status, [("content-type", media)], len(body))
    await send({"type": "http.response.body", "body": body, "more_body": False})
