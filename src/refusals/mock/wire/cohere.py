"""Cohere Chat v2 (`POST /v2/chat`): responses, SSE streams and error bodies.

Shapes follow https://docs.cohere.com/v2/reference/chat and the v2 streaming events
(https://docs.cohere.com/v2/docs/streaming: `message-start` … `message-end`). Cohere has
no refusal signal and names no filter category: the refusal and filter scenarios end with
`ERROR_TOXIC`, its only word for blocked content. Errors are `{"message": ...}`.
"""

from __future__ import annotations

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
    sse,
    stream_flag,
    stream_reply,
    text_pieces,
    token_count,
    whole_reply,
)
from refusals.mock.wire.openai_chat import chat_tools, read_chat_messages

FINISH_REASONS = {
    "stop": "COMPLETE",
    "tool_calls": "TOOL_CALL",
    "length": "MAX_TOKENS",
    "refusal": "ERROR_TOXIC",
    "filter": "ERROR_TOXIC",
}


class CohereWire(Wire):
    name = "cohere"

    def read(self, body: Any, route: Route) -> Conversation:
        body = require_object(body, "a Cohere v2 chat request")
        conv = Conversation(
            wire=self.name, model=require_string(body, "model"), stream=stream_flag(body)
        )
        read_chat_messages(conv, require_list(body, "messages"))
        conv.tools = chat_tools(body.get("tools"))
        return conv

    def error(self, status: int, kind: ErrorKind, message: str) -> Reply:
        return json_reply(status, {"id": "mock-error", "message": message})

    def render(self, plan: Plan, conv: Conversation) -> Reply:
        if plan.finish == "pause":
            raise BadRequest("the pause-turn scenario has no cohere counterpart")
        message: dict[str, Any] = {"role": "assistant"}
        if plan.text:
            message["content"] = [{"type": "text", "text": plan.text}]
        if plan.tool_call is not None:
            message["tool_plan"] = "I will call the tool."
            message["tool_calls"] = [_tool_call(plan)]
        if conv.stream:
            return self._stream(plan, conv)
        body = {
            "id": f"mock-{plan.serial:06d}",
            "finish_reason": FINISH_REASONS[plan.finish],
            "message": message,
            "usage": _usage(plan, conv),
        }
        return whole_reply(body, plan)

    def _stream(self, plan: Plan, conv: Conversation) -> Reply:
        start = {"message": {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": []}}
        events = [_event("message-start", {"id": f"mock-{plan.serial:06d}", "delta": start})]
        if plan.text:
            empty = {"message": {"content": {"type": "text", "text": ""}}}
            events.append(_event("content-start", {"index": 0, "delta": empty}))
            for piece in text_pieces(plan.text):
                delta = {"message": {"content": {"text": piece}}}
                events.append(_event("content-delta", {"index": 0, "delta": delta}))
            events.append(_event("content-end", {"index": 0}))
        if plan.tool_call is not None:
            call = _tool_call(plan)
            arguments = call["function"]["arguments"]
            head = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
            events.append(
                _event("tool-call-start", {"index": 0, "delta": {"message": {"tool_calls": head}}})
            )
            chunk = {"tool_calls": {"function": {"arguments": arguments}}}
            events.append(_event("tool-call-delta", {"index": 0, "delta": {"message": chunk}}))
            events.append(_event("tool-call-end", {"index": 0}))
        end = {"finish_reason": FINISH_REASONS[plan.finish], "usage": _usage(plan, conv)}
        events.append(_event("message-end", {"delta": end}))
        return stream_reply(events, plan, "text/event-stream")


def _event(kind: str, payload: dict[str, Any]) -> bytes:
    return sse({"type": kind, **payload}, kind)


def _tool_call(plan: Plan) -> dict[str, Any]:
    assert plan.tool_call is not None
    call = plan.tool_call
    function = {"name": call.name, "arguments": dumps(call.arguments).decode()}
    return {"id": call.id, "type": "function", "function": function}


def _usage(plan: Plan, conv: Conversation) -> dict[str, Any]:
    tokens = {
        "input_tokens": sum(token_count(text) for text in conv.user_texts) or 1,
        "output_tokens": token_count(plan.text),
    }
    return {"billed_units": dict(tokens), "tokens": tokens}
