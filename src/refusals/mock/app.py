"""The mock provider as one plain ASGI 3 application: routing, scenario choice, the log.

Served over TCP by uvicorn (`MockServer`, `refusals mock-server`) or in-process by
httpx's `ASGITransport`; both run this code. Each request goes: route (which wire format)
→ auth header → body (size limit, JSON) → the wire's reader (`Conversation`) → scenario
choice → plan → the wire's writer → log → send. Nothing a client sends makes it crash:
any failure is answered in the wire's error shape, or a plain 500.

Scenario choice, first match wins: header `x-mock-scenario`; Anthropic's refusal test
string in a user message (→ `refusal`); the model `mock-NAME`; scenario-file rules;
otherwise `answer`.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote

import httpx
import orjson

from refusals.mock.log import (
    MAX_LOGGED_BODY_BYTES,
    OMITTED_BODY,
    RecordedRequest,
    RequestLog,
    without_credentials,
)
from refusals.mock.rules import Rules, load_rules
from refusals.mock.scenarios import (
    DEFAULT_RATE_LIMIT_TIMES,
    SCENARIOS,
    Choice,
    Conversation,
    LiteralAnswer,
    Plan,
    parse_name,
    plan,
)
from refusals.mock.wire import WIRES
from refusals.mock.wire._base import BadRequest, ErrorKind, Reply, Route, Wire, json_reply
from refusals.mock.wire.openai_chat import WIRE_NAMES as CHAT_WIRES
from refusals.serving import Receive, Scope, Send, read_body

MAX_BODY_BYTES = 32 * 1024 * 1024
"""Request bodies above this size are answered 413 without being read further."""

SCENARIO_HEADER = "x-mock-scenario"

_GEMINI = re.compile(
    r"^/(v1|v1beta|v1alpha)/models/([^/:]+):(generateContent|streamGenerateContent)$"
)
_VERTEX = re.compile(
    r"^/(v1|v1beta1)/projects/[^/]+/locations/[^/]+/publishers/google/models/([^/:]+)"
    r":(generateContent|streamGenerateContent)$"
)
_AZURE = re.compile(r"^/openai/deployments/([^/]+)/chat/completions$")
_BEDROCK = re.compile(r"^/model/([^/]+)/(converse|converse-stream)$")
# Each vendor of the registry's own Chat dialect under its name (`/groq/openai/v1/...`);
# Azure's deployment path and OpenAI's `/v1` are routes of their own.
_VENDOR = re.compile(
    "^/("
    + "|".join(re.escape(name) for name in CHAT_WIRES if name not in ("openai-chat", "azure"))
    + ")(/.*)?/chat/completions$"
)
_FIXED = {
    "/v1/messages": ("anthropic", "chat"),
    "/v1/chat/completions": ("openai-chat", "chat"),
    "/v1/responses": ("openai-responses", "responses"),
    "/v2/chat": ("cohere", "chat"),
    "/api/chat": ("ollama", "chat"),
}


class StreamReset(httpx.RemoteProtocolError):
    """Raised by the app to cut a connection mid-response (`reset-mid-stream`).

    In-process, httpx's ASGI transport hands it to the client as the transport error it
    is; `MockServer` catches it and lets uvicorn close the socket.
    """


def route(path: str, query: dict[str, str], headers: dict[str, str] | None = None) -> Route | None:
    """The wire format a POST to `path` speaks, and what the path says; None if no route."""
    found = _route(path, query)
    return replace(found, headers=headers or {}) if found is not None else None


def _route(path: str, query: dict[str, str]) -> Route | None:
    fixed = _FIXED.get(path)
    if fixed is not None:
        return Route(fixed[0], path, query=query, api=fixed[1])
    for pattern, wire in ((_GEMINI, "gemini"), (_VERTEX, "vertex")):
        match = pattern.match(path)
        if match:
            stream = match.group(3) == "streamGenerateContent"
            return Route(wire, path, model=unquote(match.group(2)), stream=stream, query=query)
    match = _AZURE.match(path)
    if match:
        return Route("azure", path, model=unquote(match.group(1)), query=query)
    match = _BEDROCK.match(path)
    if match:
        stream = match.group(2) == "converse-stream"
        return Route("bedrock", path, model=unquote(match.group(1)), stream=stream, query=query)
    match = _VENDOR.match(path)
    if match:
        return Route(match.group(1), path, query=query)
    return None


def model_scenario(model: str) -> Choice | None:
    """The scenario a `mock-NAME` model asks for (the part after any `vendor/` prefix)."""
    name = model.rsplit("/", 1)[-1].lower()
    return parse_name(name[5:]) if name.startswith("mock-") else None


class MockApp:
    """The mock provider, an ASGI 3 callable; `requests` is what it received."""

    def __init__(self, scenarios_file: Path | None = None) -> None:
        self.rules: Rules = load_rules(scenarios_file) if scenarios_file is not None else Rules()
        self._log = RequestLog()
        self._lock = threading.Lock()
        self._serial = 0
        self._limited: dict[str, int] = {}

    # --- the Python surface ---------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        return self._log.items()

    def count(
        self,
        *,
        scenario: str | None = None,
        model: str | None = None,
        wire: str | None = None,
        path: str | None = None,
    ) -> int:
        """How many requests matching every filter given reached the mock."""
        return self._log.count(scenario=scenario, model=model, wire=wire, path=path)

    def reset(self) -> None:
        """Forget every request, and the rate limits already served."""
        with self._lock:
            self._log.clear()
            self._limited.clear()

    # --- ASGI -----------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        await self._http(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.time()
        method = str(scope.get("method", "GET")).upper()
        path = str(scope.get("path", "/"))
        headers = _headers(scope)
        query = dict(parse_qsl(bytes(scope.get("query_string", b"")).decode("latin-1")))
        if path.startswith("/_mock/"):
            await _send(send, self._control(method, path))
            return
        # Routes match the raw path: a Bedrock model ARN holds an encoded "/" (%2F).
        raw_path = scope.get("raw_path")
        routed = bytes(raw_path).decode("latin-1") if raw_path else path
        found = route(routed, query, headers)
        if found is None or method != "POST":
            status = 404 if found is None else 405
            text = f"no mock route for {method} {path}; see docs/mock.md for the paths served"
            reply = json_reply(status, {"error": {"message": text, "type": "not_found"}})
            if found is not None:
                reply.headers["allow"] = "POST"
            await _send(send, reply)
            return
        wire = WIRES[found.wire]
        record = _Record(path=path, method=method, wire=found.wire, time=started)
        try:
            reply = await self._answer(wire, found, headers, receive, record)
        except Exception as exc:  # the mock must answer, whatever went wrong
            reply = wire.error(500, "server_error", f"the mock failed: {type(exc).__name__}")
        record.status = reply.status
        self._log.add(record.freeze())
        await _send(send, reply)

    async def _answer(
        self,
        wire: Wire,
        found: Route,
        headers: dict[str, str],
        receive: Receive,
        record: _Record,
    ) -> Reply:
        record.model = found.model
        if not wire.authorized(headers, found):
            return wire.error(*_auth_error(wire.name))
        raw = await read_body(receive, headers.get("content-length", ""), MAX_BODY_BYTES)
        if raw is None:
            limit = MAX_BODY_BYTES // (1024 * 1024)
            return wire.error(413, "too_large", f"request body exceeds the {limit} MiB limit")
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            return wire.error(400, "invalid", f"the request body is not valid JSON ({exc})")
        # The log keeps bodies up to a bound: a long soak test must not grow without end.
        record.body = (
            without_credentials(body)
            if len(raw) <= MAX_LOGGED_BODY_BYTES
            else {OMITTED_BODY: f"a body of {len(raw)} bytes, over the log's bound"}
        )
        try:
            conv = wire.read(body, found)
        except BadRequest as exc:
            return wire.error(400, "invalid", str(exc))
        record.model = conv.model
        record.stream = conv.stream
        header = headers.get(SCENARIO_HEADER)
        chosen: Choice | LiteralAnswer
        if header is not None:
            named = parse_name(header)
            if named is None:
                return wire.error(400, "invalid", _unknown_scenario(header))
            chosen = named
        else:
            chosen = self._choose(conv)
        if isinstance(chosen, LiteralAnswer):
            record.scenario = "literal"
            return wire.render_literal(chosen, conv)
        record.scenario = chosen.name
        the_plan = self._plan(chosen, conv)
        if the_plan.fault is not None:
            return wire.fault(the_plan)
        try:
            reply = wire.render(the_plan, conv)
        except BadRequest as exc:
            return wire.error(400, "invalid", str(exc))
        if reply.first_byte_delay or reply.event_delay:
            # Slow, never stuck: the delays of one reply stay within a few seconds.
            reply.first_byte_delay = min(reply.first_byte_delay, 2.0)
            reply.event_delay = min(reply.event_delay, 0.5)
        return reply

    def _choose(self, conv: Conversation) -> Choice | LiteralAnswer:
        # Precedence (docs/mock.md): the documented refusal test string, then the user's
        # rules, then a `mock-NAME` model, then the plain answer. (The scenario header,
        # checked before this, overrides them all.)
        if conv.has_magic_refusal():
            return Choice("refusal")
        ruled = self.rules.match(conv)
        if ruled is not None:
            return ruled
        named = model_scenario(conv.model)
        return named if named is not None else Choice("answer")

    def _plan(self, choice: Choice, conv: Conversation) -> Plan:
        with self._lock:
            self._serial += 1
            serial = self._serial
            limited = False
            if choice.name == "rate-limited":
                times = choice.times if choice.times is not None else DEFAULT_RATE_LIMIT_TIMES
                served = self._limited.get(conv.model, 0)
                limited = served < times
                if limited:
                    self._limited[conv.model] = served + 1
        return plan(choice, conv, serial, limited)

    def _control(self, method: str, path: str) -> Reply:
        if path == "/_mock/requests" and method == "GET":
            return json_reply(200, self._log.summary())
        if path == "/_mock/reset" and method == "POST":
            self.reset()
            return json_reply(200, {"reset": True})
        if path == "/_mock/scenarios" and method == "GET":
            return json_reply(200, {"scenarios": SCENARIOS})
        text = f"unknown control endpoint {method} {path}"
        return json_reply(404, {"error": {"message": text, "type": "not_found"}})


class _Record:
    """A request's log entry while it is being answered."""

    def __init__(self, path: str, method: str, wire: str, time: float) -> None:
        self.path = path
        self.method = method
        self.wire = wire
        self.time = time
        self.model: str | None = None
        self.scenario: str | None = None
        self.stream = False
        self.body: Any = None
        self.status = 0

    def freeze(self) -> RecordedRequest:
        return RecordedRequest(
            path=self.path,
            method=self.method,
            wire=self.wire,
            model=self.model,
            scenario=self.scenario,
            stream=self.stream,
            time=self.time,
            body=self.body,
            status=self.status,
        )


def _unknown_scenario(name: str) -> str:
    shown = name[:60].encode("ascii", "replace").decode()
    return (
        f"unknown mock scenario {shown!r} in the {SCENARIO_HEADER} header; "
        "`refusals mock-server --list` lists them"
    )


_AUTH_MESSAGES = {
    "anthropic": "x-api-key header is required",
    "azure": "Access denied: an api-key header or a bearer token is required",
    "gemini": "Method doesn't allow unregistered callers: an x-goog-api-key header is required",
    "vertex": "Request is missing required authentication credential: a bearer token is required",
    "bedrock": "Missing Authentication Token: an AWS SigV4 Authorization header is required",
}


def _auth_error(wire: str) -> tuple[int, ErrorKind, str]:
    message = _AUTH_MESSAGES.get(
        wire, "You didn't provide an API key: send it in an Authorization: Bearer header"
    )
    status = 403 if wire in ("gemini", "bedrock") else 401
    return status, "auth", message


def _headers(scope: Scope) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        headers[bytes(name).decode("latin-1").lower()] = bytes(value).decode("latin-1")
    return headers


async def _send(send: Send, reply: Reply) -> None:
    headers = [(b"content-type", reply.media_type.encode())]
    headers += [(k.encode(), v.encode()) for k, v in reply.headers.items()]
    if reply.events is None and not reply.reset:
        headers.append((b"content-length", str(len(reply.body)).encode()))
    if reply.first_byte_delay:
        await asyncio.sleep(reply.first_byte_delay)
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    if reply.events is None:
        await send({"type": "http.response.body", "body": reply.body, "more_body": reply.reset})
    else:
        for index, event in enumerate(reply.events):
            if index and reply.event_delay:
                await asyncio.sleep(reply.event_delay)
            await send({"type": "http.response.body", "body": event, "more_body": True})
        if not reply.reset:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
    if reply.reset:
        raise StreamReset("the mock closed the connection mid-response (reset-mid-stream)")


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
