"""Ollama's native chat API (`POST /api/chat`): responses, NDJSON streams, error bodies.

Shapes follow https://github.com/ollama/ollama/blob/main/docs/api.md. Ollama has no auth,
no refusal and no content-filter signal: the refusal scenarios answer the way a local
model declines (its words, `done_reason: "stop"`), and the filter scenarios do not apply
(a 400 says so). A stream is one JSON object per line, the last with `done: true`; it is
the default when the request does not say `"stream": false`. Errors are `{"error": ...}`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from refusals.mock.scenarios import Conversation, Plan
from refusals.mock.wire._base import (
    BadRequest,
    ErrorKind,
    Reply,
    Route,
    Wire,
    dumps,
    json_reply,
    require_list,
    require_object,
    require_string,
    stream_flag,
    stream_reply,
    text_pieces,
    token_count,
    whole_reply,
)
from refusals.mock.wire.openai_chat import chat_tools, read_chat_messages

DONE_REASONS = {"stop": "stop", "tool_calls": "stop", "length": "length", "refusal": "stop"}
CREATED_AT = "2026-01-01T00:00:00.000000Z"
NDJSON = "application/x-ndjson"


class OllamaWire(Wire):
    name = "ollama"
    stream_media_type = NDJSON

    def authorized(self, headers: Mapping[str, str], route: Route) -> bool:
        return True  # a local Ollama asks for no credentials

    def read(self, body: Any, route: Route) -> Conversation:
        body = require_object(body, "an Ollama chat request")
        conv = Conversation(
            wire=self.name, model=require_string(body, "model"), stream=stream_flag(body, True)
        )
        read_chat_messages(conv, require_list(body, "messages"))
        conv.tools = chat_tools(body.get("tools"))
        schema = body.get("format")
        if isinstance(schema, dict):
            conv.output_schema = schema
        return conv

    def error(self, status: int, kind: ErrorKind, message: str) -> Reply:
        return json_reply(status, {"error": message})

    def frame(self, event: Any) -> bytes:
        return dumps(event) + b"\n"

    def render(self, plan: Plan, conv: Conversation) -> Reply:
        if plan.finish == "pause" or plan.filter is not None:
            raise BadRequest(f"the {plan.scenario} scenario has no ollama counterpart")
        text = plan.text
        if plan.finish == "refusal" and plan.refusal is not None:
            text = (text + plan.refusal.message) if text else plan.refusal.message
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if plan.tool_call is not None:
            call = plan.tool_call
            function = {"name": call.name, "arguments": call.arguments}
            message["tool_calls"] = [{"function": function}]
        final = {
            "model": conv.model,
            "created_at": CREATED_AT,
            "message": message,
            "done": True,
            "done_reason": DONE_REASONS[plan.finish],
            "total_duration": 1000,
            "prompt_eval_count": sum(token_count(t) for t in conv.user_texts) or 1,
            "eval_count": token_count(text),
        }
        if not conv.stream:
            return whole_reply(final, plan)
        lines = []
        for piece in text_pieces(text):
            chunk = {"model": conv.model, "created_at": CREATED_AT, "done": False}
            chunk["message"] = {"role": "assistant", "content": piece}
            lines.append(dumps(chunk) + b"\n")
        if plan.tool_call is not None:
            chunk = {"model": conv.model, "created_at": CREATED_AT, "done": False}
            chunk["message"] = {**message, "content": ""}
            lines.append(dumps(chunk) + b"\n")
        final["message"] = {"role": "assistant", "content": ""}
        lines.append(dumps(final) + b"\n")
        return stream_reply(lines, plan, NDJSON)
