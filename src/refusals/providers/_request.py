"""Pieces the request builders of several wire formats share (pure: no I/O, no keys).

`Request.extra` is merged last, so a caller can set any option the builders do not model;
they never drop what a caller put there.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from refusals.model import ToolCall
from refusals.request import JsonObject, Message, Request

__all__ = [
    "Endpoint",
    "function_calls",
    "function_tools",
    "merge_extra",
    "tool_arguments",
    "wire_runs",
]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A request path of a provider's API, as `endpoint()` builds it, recognised at the
    end of a URL path (a gateway or vendor may put a prefix before it)."""

    provider: str
    """The registry name a call to the path speaks for (Chat Completions: `openai`)."""
    pattern: re.Pattern[str]
    """Searched in the path; a `model` group names the model when the path does."""


def tool_arguments(text: str) -> Any:
    """A tool call's arguments as JSON; malformed text (a cut-off call) becomes {}."""
    if not text.strip():
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {"value": value}


def function_tools(request: Request) -> list[JsonObject]:
    """The request's tools as Chat Completions function tools (Cohere takes the same)."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in request.tools
    ]


def function_calls(calls: list[ToolCall]) -> list[JsonObject]:
    """An assistant turn's tool calls as Chat Completions `tool_calls` (Cohere's too)."""
    return [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments or "{}"},
        }
        for call in calls
    ]


def merge_extra(body: JsonObject, request: Request) -> JsonObject:
    body.update(request.extra)
    return body


def wire_runs(messages: list[Message]) -> Iterator[tuple[str, list[Message]]]:
    """Consecutive messages grouped by the role they take on the wire (tool results are
    user turns for Anthropic, Gemini and Bedrock, which require alternating roles)."""
    role: str | None = None
    group: list[Message] = []
    for message in messages:
        wire_role = "assistant" if message.role == "assistant" else "user"
        if wire_role != role and group:
            yield role or "user", group
            group = []
        role = wire_role
        group.append(message)
    if group:
        yield role or "user", group


OUTPUT_SCHEMA_NAME = "output"
"""The name OpenAI's structured output requires for the schema."""


def strict_schema(schema: JsonObject) -> bool:
    """OpenAI's strict mode (the answer always follows the schema) accepts only schemas
    that close their objects: asked for when the schema's top object does."""
    return schema.get("additionalProperties") is False
