"""Request builders of the wire formats not yet in their own folder: one function per
format, from a `Request` to that provider's body (Anthropic's is in
`providers/anthropic/request.py`).

Each builder is pure (no I/O, no keys): it returns the JSON body. The clients add the URL,
the credentials and the transport. `Request.extra` is merged last, so a caller can set any
option we do not model; the builders never drop what a caller put there.

Wire formats and their documentation:
- OpenAI Chat Completions (and every OpenAI-compatible vendor, Azure included):
  https://platform.openai.com/docs/api-reference/chat/create
- OpenAI Responses: https://platform.openai.com/docs/api-reference/responses/create
- Gemini / Vertex AI `generateContent`:
  https://ai.google.dev/api/generate-content
- Bedrock Converse: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html
"""

from __future__ import annotations

from refusals.providers._request import merge_extra, tool_arguments, wire_runs
from refusals.request import JsonObject, Message, Request

__all__ = [
    "bedrock_body",
    "gemini_body",
    "openai_chat_body",
    "openai_responses_body",
]

# --- OpenAI Chat Completions (and compatible vendors) ------------------------------

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
                item["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments or "{}"},
                    }
                    for call in message.tool_calls
                ]
            messages.append(item)
    return messages


def openai_chat_body(request: Request, *, stream: bool, vendor: str = "openai") -> JsonObject:
    """The Chat Completions body; `vendor` picks the few fields vendors spell differently."""
    body: JsonObject = {"model": request.model, "messages": _chat_messages(request)}
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in request.tools
        ]
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
                "strict": _strict(request.output_schema),
            },
        }
    if stream:
        body["stream"] = True
        if vendor not in _NO_STREAM_OPTIONS:
            # Without it the stream carries no token counts.
            body["stream_options"] = {"include_usage": True}
    return merge_extra(body, request)


# --- OpenAI Responses ---------------------------------------------------------------


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


def openai_responses_body(request: Request, *, stream: bool) -> JsonObject:
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
                "strict": _strict(request.output_schema),
            }
        }
    if stream:
        body["stream"] = True
    return merge_extra(body, request)


OUTPUT_SCHEMA_NAME = "output"
"""The name OpenAI's structured output requires for the schema."""


def _strict(schema: JsonObject) -> bool:
    """OpenAI's strict mode (the answer always follows the schema) accepts only schemas
    that close their objects: asked for when the schema's top object does."""
    return schema.get("additionalProperties") is False


# --- Gemini and Vertex AI -----------------------------------------------------------


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


def gemini_body(request: Request) -> JsonObject:
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


# --- Bedrock Converse ---------------------------------------------------------------


def _bedrock_blocks(message: Message) -> list[JsonObject]:
    if message.role == "tool":
        return [
            {
                "toolResult": {
                    "toolUseId": message.tool_call_id or "",
                    "content": [{"text": message.content}],
                    "status": "error" if message.is_error else "success",
                }
            }
        ]
    if message.role == "user":
        return [{"text": message.content}] if message.content else []
    blocks: list[JsonObject] = [{"text": message.content}] if message.content else []
    blocks += [
        {
            "toolUse": {
                "toolUseId": call.id,
                "name": call.name,
                "input": tool_arguments(call.arguments),
            }
        }
        for call in message.tool_calls
    ]
    return blocks


def bedrock_body(request: Request) -> JsonObject:
    """The Converse / ConverseStream body (the model id is in the URL)."""
    messages: list[JsonObject] = []
    for role, group in wire_runs(request.messages):
        content = [b for m in group for b in _bedrock_blocks(m)]
        if content:
            messages.append({"role": role, "content": content})
    body: JsonObject = {"messages": messages}
    if request.system:
        body["system"] = [{"text": request.system}]
    config: JsonObject = {}
    if request.max_tokens is not None:
        config["maxTokens"] = request.max_tokens
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if request.stop:
        config["stopSequences"] = list(request.stop)
    if config:
        body["inferenceConfig"] = config
    if request.tools:
        body["toolConfig"] = {
            "tools": [
                {
                    "toolSpec": {
                        "name": t.name,
                        "description": t.description or t.name,
                        "inputSchema": {"json": t.parameters},
                    }
                }
                for t in request.tools
            ]
        }
    return merge_extra(body, request)
