"""Amazon Bedrock Converse (`/model/{modelId}/converse`) and ConverseStream
(`/converse-stream`, binary AWS event-stream framing with valid CRCs).

Shapes follow https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html
and API_runtime_ConverseStream.html: a guardrail block is `stopReason:
"guardrail_intervened"` with the guardrail trace (`trace.guardrail`, input or output
assessments whose policies say `action: "BLOCKED"`), which a stream sends in the `metadata`
event after `messageStop`. Bedrock has no refusal of its own: the `refusal` scenarios
end with `content_filtered`, the stop reason of the model's own filter. Errors are
`{"message": ...}` with the exception named in the `x-amzn-ErrorType` header. The auth
check looks at the shape of the SigV4 `Authorization` header only (or a Bedrock API key
sent as a bearer token); no signature is verified.
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
    stream_reply,
    text_of,
    text_pieces,
    token_count,
    whole_reply,
)
from refusals.transport.framing import encode_event_stream

STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "refusal": "content_filtered",
    "filter": "guardrail_intervened",
}

EXCEPTIONS: dict[str, str] = {
    "auth": "AccessDeniedException",
    "invalid": "ValidationException",
    "not_found": "ResourceNotFoundException",
    "too_large": "ValidationException",
    "rate_limited": "ThrottlingException",
    "overloaded": "ServiceUnavailableException",
    "server_error": "InternalServerException",
}

GUARDRAIL_ID = "mockguardrail"
GUARDRAIL_TYPES = {"violence": "VIOLENCE", "hate": "HATE", "sexual": "SEXUAL"}
EVENT_STREAM = "application/vnd.amazon.eventstream"


class BedrockWire(Wire):
    name = "bedrock"
    stream_media_type = EVENT_STREAM

    def authorized(self, headers: Mapping[str, str], route: Route) -> bool:
        value = headers.get("authorization", "")
        if value.startswith("AWS4-HMAC-SHA256 "):
            return all(f"{part}=" in value for part in ("Credential", "SignedHeaders", "Signature"))
        return bearer(headers)

    def read(self, body: Any, route: Route) -> Conversation:
        body = require_object(body, "a Converse request")
        conv = Conversation(wire=self.name, model=route.model or "", stream=bool(route.stream))
        for index, message in enumerate(require_list(body, "messages")):
            if not isinstance(message, dict):
                raise BadRequest(f"messages.{index}: expected an object")
            blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
            results = [b["toolResult"] for b in blocks if isinstance(b.get("toolResult"), dict)]
            if message.get("role") == "user":
                texts = [b["text"] for b in blocks if isinstance(b.get("text"), str)]
                if texts:
                    conv.user_texts.append("".join(texts))
            conv.last_is_tool_result = bool(results)
            if results:
                parts = results[-1].get("content")
                conv.tool_result = "".join(
                    text_of(p.get("text", p.get("json")))
                    for p in parts or []
                    if isinstance(p, dict)
                )
        config = body.get("toolConfig")
        for tool in config.get("tools") or [] if isinstance(config, dict) else []:
            spec = tool.get("toolSpec") if isinstance(tool, dict) else None
            if isinstance(spec, dict) and isinstance(spec.get("name"), str):
                schema = spec.get("inputSchema")
                schema = schema.get("json") if isinstance(schema, dict) else None
                conv.tools.append(Tool(spec["name"], schema if isinstance(schema, dict) else {}))
        return conv

    def error(self, status: int, kind: ErrorKind, message: str) -> Reply:
        name = EXCEPTIONS[kind]
        headers = {
            "x-amzn-errortype": f"{name}:http://internal.amazon.com/coral/com.amazon.bedrock/"
        }
        headers["x-amzn-requestid"] = "mock-request"
        return json_reply(status, {"message": message}, headers)

    def render(self, plan: Plan, conv: Conversation) -> Reply:
        if plan.finish == "pause":
            raise BadRequest("the pause-turn scenario has no bedrock counterpart")
        if conv.stream:
            return self._stream(plan, conv)
        content: list[dict[str, Any]] = [{"text": plan.text}] if plan.text else []
        if plan.tool_call is not None:
            call = plan.tool_call
            tool_use = {"toolUseId": call.id, "name": call.name, "input": call.arguments}
            content.append({"toolUse": tool_use})
        body: dict[str, Any] = {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": STOP_REASONS[plan.finish],
            "usage": _usage(plan, conv),
            "metrics": {"latencyMs": 1},
        }
        trace = _trace(plan)
        if trace is not None:
            body["trace"] = trace
        return whole_reply(body, plan, {"x-amzn-requestid": f"mock-{plan.serial:06d}"})

    def _stream(self, plan: Plan, conv: Conversation) -> Reply:
        events: list[bytes] = [_event("messageStart", {"role": "assistant"})]
        index = 0
        if plan.text:
            for piece in text_pieces(plan.text):
                delta = {"contentBlockIndex": index, "delta": {"text": piece}}
                events.append(_event("contentBlockDelta", delta))
            events.append(_event("contentBlockStop", {"contentBlockIndex": index}))
            index += 1
        if plan.tool_call is not None:
            call = plan.tool_call
            start = {"toolUse": {"toolUseId": call.id, "name": call.name}}
            events.append(_event("contentBlockStart", {"contentBlockIndex": index, "start": start}))
            arguments = dumps(call.arguments).decode()
            half = len(arguments) // 2
            for part in (arguments[:half], arguments[half:]):
                delta = {"contentBlockIndex": index, "delta": {"toolUse": {"input": part}}}
                events.append(_event("contentBlockDelta", delta))
            events.append(_event("contentBlockStop", {"contentBlockIndex": index}))
        events.append(_event("messageStop", {"stopReason": STOP_REASONS[plan.finish]}))
        metadata: dict[str, Any] = {"usage": _usage(plan, conv), "metrics": {"latencyMs": 1}}
        trace = _trace(plan)
        if trace is not None:
            metadata["trace"] = trace
        events.append(_event("metadata", metadata))
        return stream_reply(events, plan, EVENT_STREAM, terminal=2)

    def frame(self, event: Any) -> bytes:
        if isinstance(event, dict) and len(event) == 1:
            name, payload = next(iter(event.items()))
            return _event(str(name), payload)
        raise BadRequest("a literal Bedrock event must be an object with one key, its event type")

    def render_literal(self, literal: LiteralAnswer, conv: Conversation) -> Reply:
        reply = super().render_literal(literal, conv)
        if literal.events is not None:
            reply.media_type = EVENT_STREAM
        return reply


def _event(name: str, payload: Any) -> bytes:
    headers = {":event-type": name, ":content-type": "application/json", ":message-type": "event"}
    return encode_event_stream(headers, dumps(payload))


def _usage(plan: Plan, conv: Conversation) -> dict[str, int]:
    prompt = sum(token_count(text) for text in conv.user_texts) or 1
    output = token_count(plan.text)
    return {"inputTokens": prompt, "outputTokens": output, "totalTokens": prompt + output}


def _trace(plan: Plan) -> dict[str, Any] | None:
    """The guardrail trace of a filter plan: the assessment whose policy blocked."""
    if plan.filter is None:
        return None
    kind = GUARDRAIL_TYPES.get(plan.filter.category, plan.filter.category.upper())
    match = {
        "type": kind,
        "confidence": "HIGH",
        "filterStrength": "HIGH",
        "action": "BLOCKED",
        "detected": True,
    }
    assessment = {"contentPolicy": {"filters": [match]}}
    guardrail: dict[str, Any] = {"actionReason": plan.filter.explanation}
    if plan.filter.where == "prompt":
        guardrail["inputAssessment"] = {GUARDRAIL_ID: assessment}
    else:
        guardrail["outputAssessments"] = {GUARDRAIL_ID: [assessment]}
    return {"guardrail": guardrail}
