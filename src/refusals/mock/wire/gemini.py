"""Gemini API and Vertex AI `generateContent` / `streamGenerateContent`.

Shapes follow https://ai.google.dev/api/generate-content: a blocked prompt is
`promptFeedback.blockReason` with no candidates; a blocked answer is a candidate whose
`finishReason` is `SAFETY` (the ratings that blocked it marked `blocked: true`). Gemini
has no refusal of its own: the `refusal` scenarios end with `PROHIBITED_CONTENT`, its
own word for a declined request, which reads as a content filter. Streams are
`?alt=sse` Server-Sent Events, or without it one JSON array sent piece by piece.
Errors are `google.rpc.Status` bodies (https://cloud.google.com/apis/design/errors).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from refusals.mock.scenarios import Conversation, LiteralAnswer, Plan, Tool
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
    sse,
    stream_reply,
    text_of,
    text_pieces,
    token_count,
    whole_reply,
)

FINISH_REASONS = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "length": "MAX_TOKENS",
    "refusal": "PROHIBITED_CONTENT",
    "filter": "SAFETY",
}

STATUSES: dict[str, str] = {
    "auth": "PERMISSION_DENIED",
    "invalid": "INVALID_ARGUMENT",
    "not_found": "NOT_FOUND",
    "too_large": "INVALID_ARGUMENT",
    "rate_limited": "RESOURCE_EXHAUSTED",
    "overloaded": "UNAVAILABLE",
    "server_error": "INTERNAL",
}

HARM_CATEGORIES = {
    "violence": "HARM_CATEGORY_DANGEROUS_CONTENT",
    "hate": "HARM_CATEGORY_HATE_SPEECH",
    "sexual": "HARM_CATEGORY_SEXUALLY_EXPLICIT",
    "harassment": "HARM_CATEGORY_HARASSMENT",
}


class GeminiWire(Wire):
    def __init__(self, name: str) -> None:
        self.name = name

    def authorized(self, headers: Mapping[str, str], route: Route) -> bool:
        has_key = bool(headers.get("x-goog-api-key", "").strip() or route.query.get("key"))
        return has_key or bearer(headers)

    def read(self, body: Any, route: Route) -> Conversation:
        body = require_object(body, "a generateContent request")
        conv = Conversation(wire=self.name, model=route.model or "", stream=bool(route.stream))
        if route.query.get("alt") == "sse":
            conv.options["alt"] = "sse"
        for index, content in enumerate(require_list(body, "contents")):
            if not isinstance(content, dict):
                raise BadRequest(f"contents[{index}]: expected an object")
            parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
            results = [_field(p, "functionResponse") for p in parts]
            results = [r for r in results if r is not None]
            if content.get("role", "user") == "user":
                texts = [p["text"] for p in parts if isinstance(p.get("text"), str)]
                if texts:
                    conv.user_texts.append("".join(texts))
            conv.last_is_tool_result = bool(results)
            if results and isinstance(results[-1], dict):
                conv.tool_result = text_of(results[-1].get("response"))
        for tool in body.get("tools") or []:
            declarations = _field(tool, "functionDeclarations")
            for declaration in declarations if isinstance(declarations, list) else []:
                if isinstance(declaration, dict) and isinstance(declaration.get("name"), str):
                    schema = _field(declaration, "parametersJsonSchema", "parameters")
                    schema = schema if isinstance(schema, dict) else {}
                    conv.tools.append(Tool(declaration["name"], _lower_types(schema)))
        config = _field(body, "generationConfig")
        if isinstance(config, dict):
            schema = _field(config, "responseJsonSchema", "responseSchema")
            if isinstance(schema, dict):
                conv.output_schema = _lower_types(schema)
        return conv

    def error(self, status: int, kind: ErrorKind, message: str) -> Reply:
        name = "UNAUTHENTICATED" if kind == "auth" and status == 401 else STATUSES[kind]
        return json_reply(status, {"error": {"code": status, "message": message, "status": name}})

    def render(self, plan: Plan, conv: Conversation) -> Reply:
        if plan.finish == "pause":
            raise BadRequest(f"the pause-turn scenario has no {self.name} counterpart")
        chunks = self._chunks(plan, conv)
        if not conv.stream:
            return whole_reply(_merge(chunks), plan)
        return self._framed([dumps(chunk) for chunk in chunks], plan, conv)

    def render_literal(self, literal: LiteralAnswer, conv: Conversation) -> Reply:
        if literal.events is None:
            return super().render_literal(literal, conv)
        plan = Plan(scenario="literal", model=conv.model)
        reply = self._framed([dumps(event) for event in literal.events], plan, conv)
        reply.status = literal.status
        return reply

    def _framed(self, payloads: list[bytes], plan: Plan, conv: Conversation) -> Reply:
        if conv.options.get("alt") == "sse":
            events = [sse(payload).replace(b"\n\n", b"\r\n\r\n") for payload in payloads]
            return stream_reply(events, plan, "text/event-stream")
        # The JSON-array form: one array, sent an element at a time.
        events = [(b"[" if i == 0 else b",\r\n") + p for i, p in enumerate(payloads)]
        events.append(b"]")
        return stream_reply(events, plan, "application/json", terminal=2)

    def _chunks(self, plan: Plan, conv: Conversation) -> list[dict[str, Any]]:
        usage = _usage(plan, conv)
        envelope: dict[str, Any] = {"modelVersion": conv.model}
        envelope["responseId"] = f"mock{plan.serial:06d}"
        if self.name == "vertex":
            envelope["createTime"] = "2026-01-01T00:00:00.000000Z"
        if plan.filter is not None and plan.filter.where == "prompt":
            feedback = {
                "blockReason": "SAFETY",
                "safetyRatings": [_blocked_rating(plan.filter.category)],
                "blockReasonMessage": plan.filter.explanation,
            }
            return [{"promptFeedback": feedback, "usageMetadata": usage, **envelope}]
        pieces: list[dict[str, Any]] = [{"text": piece} for piece in text_pieces(plan.text)]
        if plan.tool_call is not None:
            call = plan.tool_call
            function_call = {"id": call.id, "name": call.name, "args": call.arguments}
            pieces.append({"functionCall": function_call})
        final: dict[str, Any] = {"index": 0, "finishReason": FINISH_REASONS[plan.finish]}
        if plan.filter is not None:
            final["safetyRatings"] = [_blocked_rating(plan.filter.category)]
            final["finishMessage"] = plan.filter.explanation
        if plan.finish == "refusal" and plan.refusal is not None:
            final["finishMessage"] = plan.refusal.explanation
        chunks = []
        for number, part in enumerate(pieces):
            candidate: dict[str, Any] = {"content": {"parts": [part], "role": "model"}, "index": 0}
            if number == len(pieces) - 1:
                candidate.update(final)
            chunks.append({"candidates": [candidate], "usageMetadata": usage, **envelope})
        if not pieces:
            candidate = {"content": {"parts": [], "role": "model"}, **final}
            chunks.append({"candidates": [candidate], "usageMetadata": usage, **envelope})
        return chunks


def _field(value: Any, *names: str) -> Any:
    """The first of `names` present in `value`, by its JSON name or its proto field name:
    Google's JSON parsers accept both `functionDeclarations` and `function_declarations`."""
    if not isinstance(value, dict):
        return None
    for name in names:
        snake = "".join("_" + c.lower() if c.isupper() else c for c in name)
        for key in (name, snake):
            if key in value:
                return value[key]
    return None


def _merge(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """A whole response from its stream chunks: their parts joined, the last one's facts."""
    body = dict(chunks[-1])
    if "candidates" in body:
        candidate = dict(body["candidates"][0])
        parts: list[dict[str, Any]] = []
        for chunk in chunks:
            for part in chunk["candidates"][0]["content"]["parts"]:
                if "text" in part and parts and "text" in parts[-1]:
                    parts[-1] = {"text": parts[-1]["text"] + part["text"]}
                else:
                    parts.append(part)
        candidate["content"] = {"parts": parts, "role": "model"}
        body["candidates"] = [candidate]
    return body


def _blocked_rating(category: str) -> dict[str, Any]:
    name = HARM_CATEGORIES.get(category, "HARM_CATEGORY_DANGEROUS_CONTENT")
    return {"category": name, "probability": "HIGH", "blocked": True}


def _usage(plan: Plan, conv: Conversation) -> dict[str, int]:
    prompt = sum(token_count(text) for text in conv.user_texts) or 1
    output = token_count(plan.text)
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": output,
        "totalTokenCount": prompt + output,
    }


def _lower_types(schema: dict[str, Any]) -> dict[str, Any]:
    """A Gemini OpenAPI schema (`"type": "STRING"`) with JSON Schema type names."""
    result = dict(schema)
    if isinstance(result.get("type"), str):
        result["type"] = result["type"].lower()
    properties = result.get("properties")
    if isinstance(properties, dict):
        result["properties"] = {
            key: _lower_types(value) if isinstance(value, dict) else value
            for key, value in properties.items()
        }
    return result
