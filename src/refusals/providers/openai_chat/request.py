"""A `Request` as a Chat Completions call (OpenAI and every compatible vendor): the body,
the endpoint (Azure's deployment URL) and the credential header.
https://platform.openai.com/docs/api-reference/chat/create,
https://learn.microsoft.com/azure/ai-foundry/openai/reference"""

from __future__ import annotations

import re
from urllib.parse import quote

from refusals.providers._request import (
    OUTPUT_SCHEMA_NAME,
    Endpoint,
    function_calls,
    function_tools,
    merge_extra,
    strict_schema,
)
from refusals.request import JsonObject, Request

# Vendors that take `max_completion_tokens` (OpenAI deprecated `max_tokens` for it);
# every other OpenAI-compatible server documents `max_tokens`.
_COMPLETION_TOKENS = frozenset({"openai", "azure"})
# Vendors known to reject `stream_options`.
_NO_STREAM_OPTIONS = frozenset({"mistral"})


def _chat_messages(request: Request) -> list[JsonObject]:
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
            item: JsonObject = {"role": "assistant", "content": message.content or None}
            if message.tool_calls:
                item["tool_calls"] = function_calls(message.tool_calls)
            messages.append(item)
    return messages


def chat_body(request: Request, *, stream: bool, vendor: str = "openai") -> JsonObject:
    """The Chat Completions body; `vendor` picks the few fields vendors spell differently."""
    body: JsonObject = {"model": request.model, "messages": _chat_messages(request)}
    if request.tools:
        body["tools"] = function_tools(request)
    if request.max_tokens is not None:
        key = "max_completion_tokens" if vendor in _COMPLETION_TOKENS else "max_tokens"
        body[key] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.stop:
        body["stop"] = list(request.stop)
    if request.output_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": OUTPUT_SCHEMA_NAME,
                "schema": request.output_schema,
                "strict": strict_schema(request.output_schema),
            },
        }
    if stream:
        body["stream"] = True
        if vendor not in _NO_STREAM_OPTIONS:
            # Without it the stream carries no token counts.
            body["stream_options"] = {"include_usage": True}
    return merge_extra(body, request)


def endpoint(base_url: str, *, vendor: str, model: str, api_version: str | None = None) -> str:
    """The chat completions URL; Azure names the deployment (`model`) in the path and
    wants its `api-version` (then the body carries no model: see `chat_body`)."""
    if vendor == "azure":
        deployment = quote(model, safe="")
        version = quote(api_version or "", safe="")
        return f"{base_url}/openai/deployments/{deployment}/chat/completions?api-version={version}"
    return f"{base_url}/chat/completions"


ENDPOINTS = (
    # Azure's deployment path first: it ends as every vendor's does.
    Endpoint("azure", re.compile(r"/openai/deployments/(?P<model>[^/]+)/chat/completions$")),
    Endpoint("openai", re.compile(r"/chat/completions$")),
)


def auth_headers(vendor: str, key: str, source: str | None = None) -> dict[str, str]:
    """The credential header: Azure's `api-key` (or a Microsoft Entra token as a bearer
    token), everyone else's bearer token."""
    if vendor == "azure":
        if source == "AZURE_OPENAI_AD_TOKEN":
            return {"authorization": f"Bearer {key}"}
        return {"api-key": key}
    return {"authorization": f"Bearer {key}"}
