"""A `Request` as a Cohere Chat v2 call (`POST /v2/chat`): the body, the endpoint and the
credential header. https://docs.cohere.com/v2/reference/chat,
https://docs.cohere.com/v2/docs/tool-use (tool calls and their results)."""

from __future__ import annotations

import re

from refusals.providers._request import Endpoint, function_calls, function_tools, merge_extra
from refusals.request import JsonObject, Request


def _messages(request: Request) -> list[JsonObject]:
    messages: list[JsonObject] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for message in request.messages:
        if message.role == "user":
            messages.append({"role": "user", "content": message.content})
        elif message.role == "tool":
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id or "",
                    "content": message.content,
                }
            )
        else:
            item: JsonObject = {"role": "assistant"}
            if message.content:
                item["content"] = message.content
            if message.tool_calls:
                item["tool_calls"] = function_calls(message.tool_calls)
            messages.append(item)
    return messages


def chat_body(request: Request, *, stream: bool) -> JsonObject:
    """The Chat v2 body (its tools and tool calls are Chat Completions' shapes)."""
    body: JsonObject = {"model": request.model, "messages": _messages(request)}
    if request.tools:
        body["tools"] = function_tools(request)
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.stop:
        body["stop_sequences"] = list(request.stop)
    if request.output_schema is not None:
        body["response_format"] = {"type": "json_object", "json_schema": request.output_schema}
    if stream:
        body["stream"] = True
    return merge_extra(body, request)


def endpoint(base_url: str) -> str:
    """The chat URL: `base_url` is the server root, as Cohere's SDK takes it."""
    return f"{base_url}/v2/chat"


ENDPOINTS = (Endpoint("cohere", re.compile(r"/v2/chat$")),)


def auth_headers(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}
