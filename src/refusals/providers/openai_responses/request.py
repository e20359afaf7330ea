"""A `Request` as a Responses API call: the body and the endpoint.
https://platform.openai.com/docs/api-reference/responses/create"""

from __future__ import annotations

import re

from refusals.providers._request import OUTPUT_SCHEMA_NAME, Endpoint, merge_extra, strict_schema
from refusals.request import JsonObject, Request


def _responses_input(request: Request) -> list[JsonObject]:
    items: list[JsonObject] = []
    for message in request.messages:
        if message.role == "user":
            items.append(
                {"role": "user", "content": [{"type": "input_text", "text": message.content}]}
            )
        elif message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id or "",
                    "output": message.content,
                }
            )
        else:
            if message.content:
                items.append({"role": "assistant", "content": message.content})
            items += [
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments or "{}",
                }
                for call in message.tool_calls
            ]
    return items


def responses_body(request: Request, *, stream: bool) -> JsonObject:
    """The Responses body: `instructions`, `input` items, flat function tools.

    The Responses API has no stop sequences, so `Request.stop` is not sent.
    """
    body: JsonObject = {"model": request.model, "input": _responses_input(request)}
    if request.system:
        body["instructions"] = request.system
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": False,
            }
            for t in request.tools
        ]
    if request.max_tokens is not None:
        body["max_output_tokens"] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.output_schema is not None:
        body["text"] = {
            "format": {
                "type": "json_schema",
                "name": OUTPUT_SCHEMA_NAME,
                "schema": request.output_schema,
                "strict": strict_schema(request.output_schema),
            }
        }
    if stream:
        body["stream"] = True
    return merge_extra(body, request)


def endpoint(base_url: str) -> str:
    return f"{base_url}/responses"


ENDPOINTS = (Endpoint("openai-responses", re.compile(r"/responses$")),)
