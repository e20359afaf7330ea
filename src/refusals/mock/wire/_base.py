"""What every wire writer shares: the reply it hands the app, request checks, framing.

A writer (one module per wire format) reads a request body into a `Conversation`,
renders a `Plan` as a `Reply` (a whole body, or a list of stream events in its framing),
and words errors in its provider's shape. The app does the I/O; writers do none.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from refusals.mock.scenarios import Conversation, LiteralAnswer, Plan

ErrorKind = Literal[
    "auth", "invalid", "not_found", "too_large", "rate_limited", "overloaded", "server_error"
]
"""What went wrong, as the app tells a writer; each writer picks its provider's words."""


class BadRequest(ValueError):
    """The request body is not what the wire format expects; the message says what."""


@dataclass(slots=True)
class Reply:
    """One HTTP answer: a whole body, or stream events sent one by one."""

    status: int = 200
    body: bytes = b""
    media_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    events: list[bytes] | None = None
    terminal: int = 1
    """How many trailing events complete the stream (what `truncated-stream` drops)."""
    first_byte_delay: float = 0.0
    event_delay: float = 0.0
    reset: bool = False
    """Close the connection after the events instead of ending the response."""


@dataclass(frozen=True, slots=True)
class Route:
    """Where a request went: the wire format and what its path says."""

    wire: str
    path: str
    model: str | None = None
    """The model named by the path (Azure deployment, Gemini/Vertex/Bedrock model)."""
    stream: bool | None = None
    """Whether the path itself asks for a stream (Gemini, Bedrock)."""
    query: Mapping[str, str] = field(default_factory=dict)
    api: str = "chat"
    """Which API of the wire: `chat`, `responses`."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """The request headers, names lower-cased (for switches such as Azure's async filter)."""


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def json_reply(status: int, body: Any, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status=status, body=dumps(body), headers=dict(headers or {}))


def sse(data: Any, event: str | None = None) -> bytes:
    """One Server-Sent Event; `data` is JSON-encoded unless it is already bytes."""
    payload = data if isinstance(data, bytes) else dumps(data)
    head = b"event: " + event.encode() + b"\n" if event else b""
    return head + b"data: " + payload + b"\n\n"


def stream_reply(events: list[bytes], plan: Plan, media_type: str, terminal: int = 1) -> Reply:
    """A stream of `events`, broken or slowed as the plan says."""
    reply = Reply(
        events=events,
        media_type=media_type,
        terminal=terminal,
        first_byte_delay=plan.first_byte_delay,
        event_delay=plan.event_delay,
    )
    if media_type == "text/event-stream":
        reply.headers["cache-control"] = "no-cache"
    if plan.stream_break == "truncated":
        reply.events = events[: max(len(events) - terminal, 1)]
    elif plan.stream_break == "reset":
        reply.events = events[: max((len(events) - terminal) // 2, 1)]
        reply.reset = True
    return reply


def whole_reply(body: Any, plan: Plan, headers: dict[str, str] | None = None) -> Reply:
    reply = json_reply(200, body, headers)
    reply.first_byte_delay = plan.first_byte_delay
    if plan.stream_break is not None:
        # A whole body has no events to break: it is cut in the middle instead.
        reply.body = reply.body[: len(reply.body) // 2]
        reply.reset = plan.stream_break == "reset"
    return reply


def text_pieces(text: str, pieces: int = 3) -> list[str]:
    """`text` cut at word boundaries into about `pieces` deltas, none empty."""
    if not text:
        return []
    words = text.split(" ")
    size = max(len(words) // pieces, 1)
    parts = [" ".join(words[i : i + size]) for i in range(0, len(words), size)]
    return [part + (" " if i < len(parts) - 1 else "") for i, part in enumerate(parts)]


def token_count(text: str) -> int:
    """A stand-in token count: one per word, at least one."""
    return max(len(text.split()), 1)


def now() -> int:
    return int(time.time())


def require_object(body: Any, what: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise BadRequest(f"the request body must be a JSON object ({what})")
    return body


def require_string(body: Mapping[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{name}: field required (a non-empty string)")
    return value


def require_list(body: Mapping[str, Any], name: str) -> list[Any]:
    value = body.get(name)
    if not isinstance(value, list):
        raise BadRequest(f"{name}: field required (an array)")
    return value


def text_of(content: Any) -> str:
    """The text of a message content: a string, or the text of its text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return "".join(texts)
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return str(content["text"])
    return "" if content is None else dumps(content).decode()


def bearer(headers: Mapping[str, str]) -> bool:
    value = headers.get("authorization", "")
    return value[:7].lower() == "bearer " and bool(value[7:].strip())


def literal_body(literal: LiteralAnswer) -> Reply:
    return json_reply(literal.status, literal.body if literal.body is not None else {})


def stream_flag(body: Mapping[str, Any], default: bool = False) -> bool:
    value = body.get("stream", default)
    if not isinstance(value, bool):
        raise BadRequest("stream: expected a boolean")
    return value


FAULT_MESSAGES: dict[str, str] = {
    "rate_limited": "Rate limit reached for this model (mock scenario rate-limited).",
    "overloaded": "The model is overloaded; try again later (mock scenario overloaded).",
    "server_error": "Internal server error (mock scenario server-error).",
}


class Wire:
    """One wire format's writer; a module subclasses it once."""

    name = "wire"
    stream_media_type = "text/event-stream"
    overloaded_status = 503

    def authorized(self, headers: Mapping[str, str], route: Route) -> bool:
        return bearer(headers)

    def read(self, body: Any, route: Route) -> Conversation:
        raise NotImplementedError

    def error(self, status: int, kind: ErrorKind, message: str) -> Reply:
        raise NotImplementedError

    def render(self, plan: Plan, conv: Conversation) -> Reply:
        raise NotImplementedError

    def frame(self, event: Any) -> bytes:
        """One literal event of a scenario file, in this wire's stream framing."""
        if isinstance(event, dict) and set(event) <= {"event", "data"} and "data" in event:
            name = event.get("event")
            return sse(event["data"], name if isinstance(name, str) else None)
        return sse(event)

    def render_literal(self, literal: LiteralAnswer, conv: Conversation) -> Reply:
        if literal.events is not None:
            events = [self.frame(event) for event in literal.events]
            return Reply(status=literal.status, events=events, media_type=self.stream_media_type)
        return literal_body(literal)

    def fault(self, plan: Plan) -> Reply:
        """The error reply of a fault plan (rate limit, overload, server error)."""
        assert plan.fault is not None
        kind = plan.fault.kind
        status = {"rate_limited": 429, "overloaded": self.overloaded_status}.get(kind, 500)
        reply = self.error(status, kind, FAULT_MESSAGES[kind])
        if plan.fault.retry_after_ms is not None:
            ms = plan.fault.retry_after_ms
            reply.headers["retry-after"] = str(max((ms + 999) // 1000, 1))
            reply.headers["retry-after-ms"] = str(ms)
        return reply
