"""A `Request` as a Gemini API or Vertex AI `generateContent` call: the body, the endpoint
(the model and streaming are in the URL) and the credential header.
https://ai.google.dev/api/generate-content,
https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest"""

from __future__ import annotations

import re
from urllib.parse import quote

from refusals.providers._request import Endpoint, merge_extra, tool_arguments, wire_runs
from refusals.request import JsonObject, Message, Request


def _gemini_parts(message: Message) -> list[JsonObject]:
    if message.role == "tool":
        return [
            {
                "functionResponse": {
                    "name": message.name or "",
                    "response": {"error" if message.is_error else "result": message.content},
                }
            }
        ]
    if message.role == "user":
        return [{"text": message.content}] if message.content else []
    parts: list[JsonObject] = [{"text": message.content}] if message.content else []
    parts += [
        {"functionCall": {"name": call.name, "args": tool_arguments(call.arguments)}}
        for call in message.tool_calls
    ]
    return parts


def generate_body(request: Request) -> JsonObject:
    """The `generateContent` body (the model and streaming are in the URL)."""
    contents: list[JsonObject] = []
    for role, group in wire_runs(request.messages):
        parts = [p for m in group for p in _gemini_parts(m)]
        if parts:
            contents.append({"role": "model" if role == "assistant" else "user", "parts": parts})
    body: JsonObject = {"contents": contents}
    if request.system:
        body["systemInstruction"] = {"parts": [{"text": request.system}]}
    if request.tools:
        body["tools"] = [
            {
                "functionDeclarations": [
                    {"name": t.name, "description": t.description, "parameters": t.parameters}
                    for t in request.tools
                ]
            }
        ]
    config: JsonObject = {}
    if request.max_tokens is not None:
        config["maxOutputTokens"] = request.max_tokens
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if request.stop:
        config["stopSequences"] = list(request.stop)
    if request.output_schema is not None:
        config["responseMimeType"] = "application/json"
        config["responseJsonSchema"] = request.output_schema
    if config:
        body["generationConfig"] = config
    return merge_extra(body, request)


def endpoint(
    base_url: str,
    *,
    model: str,
    stream: bool,
    project: str | None = None,
    location: str | None = None,
) -> str:
    """The `generateContent` (or SSE `streamGenerateContent`) URL; Vertex AI's names the
    project and location."""
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    name = quote(model, safe="")
    if project is not None:
        return (
            f"{base_url}/v1/projects/{quote(project, safe='')}/locations/"
            f"{quote(location or '', safe='')}/publishers/google/models/{name}:{method}"
        )
    return f"{base_url}/v1beta/models/{name}:{method}"


_METHOD = r":(?:generateContent|streamGenerateContent)$"
ENDPOINTS = (
    # Vertex AI's models are Google's publisher's, under a project and location.
    Endpoint("vertex", re.compile(r"/publishers/google/models/(?P<model>[^/:]+)" + _METHOD)),
    Endpoint("gemini", re.compile(r"/models/(?P<model>[^/:]+)" + _METHOD)),
)


def auth_headers(vendor: str, key: str) -> dict[str, str]:
    """The Gemini API's `x-goog-api-key`; Vertex AI takes an OAuth bearer token."""
    if vendor == "gemini":
        return {"x-goog-api-key": key}
    return {"authorization": f"Bearer {key}"}
