"""How a test talks to each wire format of the mock: path, auth headers, request body.

One table, so that the matrix tests send every scenario on every wire the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

WEATHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city", "days"],
}

SIGV4 = (
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/bedrock/aws4_request, "
    "SignedHeaders=host;x-amz-date, Signature=" + "0" * 64
)


WIRES = (
    "anthropic",
    "openai-chat",
    "openai-responses",
    "azure",
    "gemini",
    "vertex",
    "bedrock",
    "cohere",
    "ollama",
    "openrouter",
    "xai",
    "groq",
    "deepseek",
    "mistral",
)
REFUSING = {
    "anthropic",
    "openai-chat",
    "openai-responses",
    "azure",
    "openrouter",
    "xai",
    "groq",
    "deepseek",
    "mistral",
}
"""Wires with a refusal signal of their own."""
BLOCKING = {"gemini", "vertex", "bedrock", "cohere"}
"""Wires whose only word for a declined request is a content block."""


@dataclass(frozen=True)
class WireCall:
    """One request to the mock: where it goes, with which headers and body."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    provider: str
    """The provider name `normalize` and `StreamDecoder` are told."""


CHAT_VENDOR_PATHS = {
    "openai-chat": "/v1/chat/completions",
    "openrouter": "/openrouter/api/v1/chat/completions",
    "xai": "/xai/v1/chat/completions",
    "groq": "/groq/openai/v1/chat/completions",
    "deepseek": "/deepseek/chat/completions",
    "mistral": "/mistral/v1/chat/completions",
}

WIRE_PROVIDER = {
    "openai-chat": "openai",
    "openai-responses": "openai-responses",
}


def call(
    wire: str,
    model: str,
    *,
    prompt: str = "What is the weather like?",
    stream: bool = False,
    tools: bool = True,
    fallbacks: list[str] | None = None,
    array_stream: bool = False,
) -> WireCall:
    """The request that asks `model` `prompt` on `wire`, with one weather tool offered."""
    provider = WIRE_PROVIDER.get(wire, wire)
    bearer = {"authorization": "Bearer sk-test-secret"}
    if wire == "anthropic":
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": 64,
            "messages": [{"role": "user", "content": prompt}],
            "stream": stream,
        }
        if tools:
            body["tools"] = [{"name": "get_weather", "input_schema": WEATHER_SCHEMA}]
        if fallbacks:
            body["fallbacks"] = [{"model": m} for m in fallbacks]
        return WireCall("/v1/messages", {"x-api-key": "sk-ant-secret"}, body, provider)
    if wire in CHAT_VENDOR_PATHS or wire == "azure":
        body = {"model": model, "messages": [{"role": "user", "content": prompt}]}
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        if tools:
            function = {"name": "get_weather", "parameters": WEATHER_SCHEMA}
            body["tools"] = [{"type": "function", "function": function}]
        if wire == "azure":
            del body["model"]
            path = f"/openai/deployments/{model}/chat/completions?api-version=2024-10-21"
            return WireCall(path, {"api-key": "azure-secret"}, body, provider)
        return WireCall(CHAT_VENDOR_PATHS[wire], bearer, body, provider)
    if wire == "openai-responses":
        body = {"model": model, "input": prompt, "stream": stream}
        if tools:
            body["tools"] = [
                {"type": "function", "name": "get_weather", "parameters": WEATHER_SCHEMA}
            ]
        return WireCall("/v1/responses", bearer, body, provider)
    if wire in ("gemini", "vertex"):
        body = {"contents": [{"role": "user", "parts": [{"text": prompt}]}]}
        if tools:
            declaration = {"name": "get_weather", "parameters": WEATHER_SCHEMA}
            body["tools"] = [{"functionDeclarations": [declaration]}]
        method = "streamGenerateContent" if stream else "generateContent"
        query = "?alt=sse" if stream and not array_stream else ""
        if wire == "gemini":
            path = f"/v1beta/models/{model}:{method}{query}"
            return WireCall(path, {"x-goog-api-key": "gemini-secret"}, body, provider)
        path = (
            f"/v1/projects/p/locations/us-central1/publishers/google/models/{model}:{method}{query}"
        )
        return WireCall(path, bearer, body, provider)
    if wire == "bedrock":
        body = {"messages": [{"role": "user", "content": [{"text": prompt}]}]}
        if tools:
            spec = {"name": "get_weather", "inputSchema": {"json": WEATHER_SCHEMA}}
            body["toolConfig"] = {"tools": [{"toolSpec": spec}]}
        action = "converse-stream" if stream else "converse"
        return WireCall(f"/model/{model}/{action}", {"authorization": SIGV4}, body, provider)
    if wire == "cohere":
        body = {"model": model, "messages": [{"role": "user", "content": prompt}]}
        body["stream"] = stream
        if tools:
            function = {"name": "get_weather", "parameters": WEATHER_SCHEMA}
            body["tools"] = [{"type": "function", "function": function}]
        return WireCall("/v2/chat", bearer, body, provider)
    if wire == "ollama":
        body = {"model": model, "messages": [{"role": "user", "content": prompt}]}
        body["stream"] = stream
        if tools:
            function = {"name": "get_weather", "parameters": WEATHER_SCHEMA}
            body["tools"] = [{"type": "function", "function": function}]
        return WireCall("/api/chat", {}, body, provider)
    raise ValueError(f"no test request for wire {wire!r}")
