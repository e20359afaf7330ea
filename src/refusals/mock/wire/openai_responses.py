"""OpenAI Responses (`POST /v1/responses`): response objects, SSE event streams, errors.

Shapes follow https://platform.openai.com/docs/api-reference/responses and its streaming
events (https://platform.openai.com/docs/api-reference/responses-streaming): a refusal is
a `refusal` content part (`response.refusal.delta` in a stream) of a `completed`
response; an output filter or the token limit is `status: "incomplete"` with
`incomplete_details.reason` (`response.incomplete`); a blocked prompt is the 400
`invalid_prompt` error, or `response.failed` once a stream has started.
"""

from __future__ import annotations

from typing import Any

from refusals.mock.scenarios import Conversation, Plan, Tool
from refusals.mock.wire._base import (
    BadRequest,
    ErrorKind,
    Reply,
    Route,
    Wire,
    dumps,
    json_reply,
    now,
    require_object,
    require_string,
    sse,
    stream_flag,
    stream_reply,
    text_of,
    text_pieces,
    token_count,
    whole_reply,
)
from refusals.mock.wire.openai_chat import PROMPT_FLAGGED, ChatWire


class ResponsesWire(Wire):
    name = "openai-responses"

    def __init__(self) -> None:
        self._errors = ChatWire("openai-chat")

    def read(self, body: Any, route: Route) -> Conversation:
        body = require_object(body, "a Responses request")
        conv = Conversation(
            wire=self.name, model=require_string(body, "model"), stream=stream_flag(body)
        )
        items = body.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        if not isinstance(items, list):
            raise BadRequest("input: field required (a string or an array of items)")
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise BadRequest(f"input[{index}]: expected an object")
            kind = item.get("type", "message")
            if kind == "message" and item.get("role") == "user":
                conv.user_texts.append(text_of(item.get("content")))
            if kind == "function_call_output":
                conv.tool_result = text_of(item.get("output"))
            conv.last_is_tool_result = kind == "function_call_output"
        for tool in body.get("tools") or []:
            if isinstance(tool, dict) and tool.get("type") == "function":
                name, schema = tool.get("name"), tool.get("parameters")
                if isinstance(name, str):
                    conv.tools.append(Tool(name, schema if isinstance(schema, dict) else {}))
        text = body.get("text")
        spec = text.get("format") if isinstance(text, dict) else None
        if isinstance(spec, dict) and spec.get("type") == "json_schema":
            schema = spec.get("schema")
            conv.output_schema = schema if isinstance(schema, dict) else {}
        return conv

    def error(self, status: int, kind: ErrorKind, message: str) -> Reply:
        return self._errors.error(status, kind, message)

    def render(self, plan: Plan, conv: Conversation) -> Reply:
        if plan.finish == "pause":
            raise BadRequest("the pause-turn scenario has no openai-responses counterpart")
        prompt_blocked = plan.filter is not None and plan.filter.where == "prompt"
        if prompt_blocked and not conv.stream:
            error = {"message": PROMPT_FLAGGED, "type": "invalid_request_error", "param": None}
            error["code"] = "invalid_prompt"
            return json_reply(400, {"error": error})
        if conv.stream:
            return self._stream(plan, conv)
        return whole_reply(self._response(plan, conv, _items(plan)), plan)

    def _response(
        self, plan: Plan, conv: Conversation, output: list[dict[str, Any]], status: str = ""
    ) -> dict[str, Any]:
        status = status or _status(plan)
        prompt = sum(token_count(text) for text in conv.user_texts) or 1
        completion = token_count(plan.text)
        incomplete = None
        if status == "incomplete":
            reason = "content_filter" if plan.finish == "filter" else "max_output_tokens"
            incomplete = {"reason": reason}
        error = None
        if status == "failed":
            error = {"code": "invalid_prompt", "message": PROMPT_FLAGGED}
        return {
            "id": f"resp_mock{plan.serial:06d}",
            "object": "response",
            "created_at": now(),
            "status": status,
            "error": error,
            "incomplete_details": incomplete,
            "model": conv.model,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + completion,
            },
        }

    def _stream(self, plan: Plan, conv: Conversation) -> Reply:
        events: list[dict[str, Any]] = []
        prompt_blocked = plan.filter is not None and plan.filter.where == "prompt"
        opening = self._response(plan, conv, [], status="in_progress")
        events.append({"type": "response.created", "response": opening})
        events.append({"type": "response.in_progress", "response": opening})
        if prompt_blocked:
            final = self._response(plan, conv, [], status="failed")
            events.append({"type": "response.failed", "response": final})
            return _framed(events, plan)
        items = _items(plan)
        for index, item in enumerate(items):
            events += _item_events(index, item)
        final = self._response(plan, conv, items)
        terminal = {"completed": "response.completed", "incomplete": "response.incomplete"}
        events.append({"type": terminal[final["status"]], "response": final})
        return _framed(events, plan)


def _status(plan: Plan) -> str:
    return "incomplete" if plan.finish in ("filter", "length") else "completed"


def _items(plan: Plan) -> list[dict[str, Any]]:
    """The output items a plan says."""
    items: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    if plan.text:
        parts.append({"type": "output_text", "text": plan.text, "annotations": []})
    if plan.finish == "refusal" and plan.refusal is not None:
        parts.append({"type": "refusal", "refusal": plan.refusal.message})
    if parts:
        items.append(
            {
                "id": f"msg_mock{plan.serial:06d}",
                "type": "message",
                "status": "incomplete" if _status(plan) == "incomplete" else "completed",
                "role": "assistant",
                "content": parts,
            }
        )
    if plan.tool_call is not None:
        call = plan.tool_call
        items.append(
            {
                "id": f"fc_mock{plan.serial:06d}",
                "type": "function_call",
                "status": "completed",
                "call_id": call.id,
                "name": call.name,
                "arguments": dumps(call.arguments).decode(),
            }
        )
    return items


def _item_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    base = {"item_id": item["id"], "output_index": index}
    events: list[dict[str, Any]] = []
    if item["type"] == "function_call":
        opened = {**item, "arguments": "", "status": "in_progress"}
        events.append({"type": "response.output_item.added", "output_index": index, "item": opened})
        arguments = item["arguments"]
        half = len(arguments) // 2
        for part in (arguments[:half], arguments[half:]):
            events.append({"type": "response.function_call_arguments.delta", **base, "delta": part})
        events.append(
            {"type": "response.function_call_arguments.done", **base, "arguments": arguments}
        )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        return events
    opened = {**item, "content": [], "status": "in_progress"}
    events.append({"type": "response.output_item.added", "output_index": index, "item": opened})
    for number, part in enumerate(item["content"]):
        where = {**base, "content_index": number}
        if part["type"] == "output_text":
            empty: dict[str, Any] = {"type": "output_text", "text": "", "annotations": []}
            events.append({"type": "response.content_part.added", **where, "part": empty})
            for piece in text_pieces(part["text"]):
                delta = {"type": "response.output_text.delta", **where, "delta": piece}
                events.append({**delta, "logprobs": []})
            done = {"type": "response.output_text.done", **where, "text": part["text"]}
            events.append({**done, "logprobs": []})
        else:
            empty = {"type": "refusal", "refusal": ""}
            events.append({"type": "response.content_part.added", **where, "part": empty})
            for piece in text_pieces(part["refusal"]):
                events.append({"type": "response.refusal.delta", **where, "delta": piece})
            events.append({"type": "response.refusal.done", **where, "refusal": part["refusal"]})
        events.append({"type": "response.content_part.done", **where, "part": part})
    events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return events


def _framed(events: list[dict[str, Any]], plan: Plan) -> Reply:
    framed = []
    for number, event in enumerate(events):
        event["sequence_number"] = number
        framed.append(sse(event, event["type"]))
    return stream_reply(framed, plan, "text/event-stream")
