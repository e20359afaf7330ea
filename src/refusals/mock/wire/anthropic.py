"""Anthropic Messages (`POST /v1/messages`): bodies, SSE streams and error bodies.

Shapes follow https://docs.claude.com/en/api/messages and the streaming guide
(https://docs.claude.com/en/docs/build-with-claude/streaming): a refusal is an HTTP 200
message with `stop_reason: "refusal"` and `stop_details`; a server-side fallback (the
request's `fallbacks`, beta `server-side-fallback-2026-07-01`) is a `fallback` content
block plus `fallback_message` usage iterations; an output filter is the 400 "Output
blocked by content filtering policy" (an `error` event once a stream has started).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from refusals.mock.scenarios import FALLBACK_MODEL, Conversation, Plan, Tool
from refusals.mock.wire._base import (
    BadRequest,
    ErrorKind,
    Reply,
    Route,
    Wire,
    bearer,
    dumps,
    json_reply,
    require_list,
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

STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "pause": "pause_turn",
    "refusal": "refusal",
}

ERROR_TYPES: dict[str, str] = {
    "auth": "authentication_error",
    "invalid": "invalid_request_error",
    "not_found": "not_found_error",
    "too_large": "request_too_large",
    "rate_limited": "rate_limit_error",
    "overloaded": "overloaded_error",
    "server_error": "api_error",
}

OUTPUT_BLOCKED = "Output blocked by content filtering policy"
"""Anthropic's own wording, for a blocked prompt as well: it has no other."""


class AnthropicWire(Wire):
    name = "anthropic"
    overloaded_status = 529

    def authorized(self, headers: Mapping[str, str], route: Route) -> bool:
        return bool(headers.get("x-api-key", "").strip()) or bearer(headers)

    def read(self, body: Any, route: Route) -> Conversation:
        body = require_object(body, "an Anthropic Messages request")
        conv = Conversation(
            wire=self.name, model=require_string(body, "model"), stream=stream_flag(body)
        )
        for index, message in enumerate(require_list(body, "messages")):
            if not isinstance(message, dict):
                raise BadRequest(f"messages.{index}: expected an object")
            content = message.get("content")
            if message.get("role") != "user":
                conv.last_is_tool_result = False
                continue
            blocks = content if isinstance(content, list) else [content]
            texts = [text_of(b) for b in blocks if isinstance(b, str) or _is(b, "text")]
            results = [b for b in blocks if _is(b, "tool_result")]
            if texts:
                conv.user_texts.append("".join(texts))
            conv.last_is_tool_result = bool(results)
            if results and isinstance(results[-1], dict):
                conv.tool_result = text_of(results[-1].get("content"))
        for tool in body.get("tools") or []:
            # Server tools (web search…) have a type and no input schema: not ours to call.
            if _is_client_tool(tool):
                schema = tool.get("input_schema")
                conv.tools.append(Tool(tool["name"], schema if isinstance(schema, dict) else {}))
        conv.fallbacks = _fallbacks(body.get("fallbacks"))
        # Structured output: `output_config.format` (and the beta's `output_format`).
        config = body.get("output_config")
        form = config.get("format") if isinstance(config, dict) else body.get("output_format")
        if isinstance(form, dict) and form.get("type") == "json_schema":
            schema = form.get("schema")
            conv.output_schema = schema if isinstance(schema, dict) else {}
        return conv

    def error(self, status: int, kind: ErrorKind, message: str) -> Reply:
        body = {
            "type": "error",
            "error": {"type": ERROR_TYPES[kind], "message": message},
            "request_id": "req_mock",
        }
        return json_reply(status, body, {"request-id": "req_mock"})

    def render(self, plan: Plan, conv: Conversation) -> Reply:
        if plan.filter is not None and (plan.filter.where == "prompt" or not conv.stream):
            return self.error(400, "invalid", OUTPUT_BLOCKED)
        if conv.stream:
            return self._stream(plan, conv)
        return whole_reply(self._message(plan, conv), plan, {"request-id": _id("req", plan)})

    def _message(self, plan: Plan, conv: Conversation) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if plan.fallback is not None:
            content.append(_fallback_block(plan))
        if plan.text:
            content.append({"type": "text", "text": plan.text})
        if plan.tool_call is not None:
            call = plan.tool_call
            content.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
            )
        return {
            "id": _id("msg", plan),
            "type": "message",
            "role": "assistant",
            "model": conv.model,
            "content": content,
            "stop_reason": STOP_REASONS.get(plan.finish),
            "stop_sequence": None,
            "stop_details": _stop_details(plan),
            "usage": _usage(plan, conv),
        }

    def _stream(self, plan: Plan, conv: Conversation) -> Reply:
        start = self._message(plan, conv)
        start.update(content=[], stop_reason=None, stop_details=None)
        start["usage"] = {"input_tokens": _input_tokens(conv), "output_tokens": 1}
        events = [_event({"type": "message_start", "message": start}), _event({"type": "ping"})]
        index = 0
        if plan.fallback is not None:
            events += _block(index, _fallback_block(plan), [])
            index += 1
        if plan.text:
            deltas = [{"type": "text_delta", "text": p} for p in text_pieces(plan.text)]
            events += _block(index, {"type": "text", "text": ""}, deltas)
            index += 1
        if plan.tool_call is not None:
            call = plan.tool_call
            arguments = dumps(call.arguments).decode()
            half = len(arguments) // 2
            deltas = [
                {"type": "input_json_delta", "partial_json": part}
                for part in (arguments[:half], arguments[half:])
            ]
            block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
            events += _block(index, block, deltas)
        if plan.filter is not None:
            error = {"type": "invalid_request_error", "message": OUTPUT_BLOCKED}
            events.append(_event({"type": "error", "error": error}))
            return stream_reply(events, plan, self.stream_media_type)
        delta = {
            "type": "message_delta",
            "delta": {
                "stop_reason": STOP_REASONS[plan.finish],
                "stop_sequence": None,
                "stop_details": _stop_details(plan),
            },
            "usage": _usage(plan, conv),
        }
        events += [_event(delta), _event({"type": "message_stop"})]
        return stream_reply(events, plan, self.stream_media_type)


def _is_client_tool(tool: Any) -> bool:
    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
        return False
    return "input_schema" in tool or tool.get("type", "custom") == "custom"


def _is(block: Any, kind: str) -> bool:
    return isinstance(block, dict) and block.get("type") == kind


def _fallbacks(value: Any) -> list[str]:
    if value == "default":
        return [FALLBACK_MODEL]
    models: list[str] = []
    for entry in value if isinstance(value, list) else []:
        model = entry.get("model") if isinstance(entry, dict) else entry
        if isinstance(model, str) and model:
            models.append(model)
    return models


def _id(prefix: str, plan: Plan) -> str:
    return f"{prefix}_mock_{plan.serial:06d}"


def _event(payload: dict[str, Any]) -> bytes:
    return sse(payload, payload["type"])


def _block(index: int, block: dict[str, Any], deltas: list[dict[str, Any]]) -> list[bytes]:
    events = [_event({"type": "content_block_start", "index": index, "content_block": block})]
    events += [_event({"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
    events.append(_event({"type": "content_block_stop", "index": index}))
    return events


def _fallback_block(plan: Plan) -> dict[str, Any]:
    assert plan.fallback is not None
    return {
        "type": "fallback",
        "from": {"model": plan.fallback.from_model},
        "to": {"model": plan.fallback.to_model},
        "trigger": {"type": "refusal", "category": None},
    }


def _stop_details(plan: Plan) -> dict[str, Any] | None:
    facts = plan.refusal
    if facts is None or plan.finish != "refusal":
        return None
    details: dict[str, Any] = {
        "type": "refusal",
        "category": facts.category,
        "explanation": facts.explanation,
    }
    if facts.recommended_model is not None:
        details["recommended_model"] = facts.recommended_model
    if facts.fallback_credit_token is not None:
        details["fallback_credit_token"] = facts.fallback_credit_token
    if facts.fallback_has_prefill_claim is not None:
        details["fallback_has_prefill_claim"] = facts.fallback_has_prefill_claim
    return details


def _input_tokens(conv: Conversation) -> int:
    return sum(token_count(text) for text in conv.user_texts) or 1


def _usage(plan: Plan, conv: Conversation) -> dict[str, Any]:
    tokens = {
        "input_tokens": _input_tokens(conv),
        "output_tokens": token_count(plan.text),
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    usage: dict[str, Any] = dict(tokens)
    if plan.fallback is not None:
        declined = {**tokens, "output_tokens": 0}
        usage["iterations"] = [
            {"type": "message", "model": plan.fallback.from_model, **declined},
            {"type": "fallback_message", "model": plan.fallback.to_model, **tokens},
        ]
    return usage
