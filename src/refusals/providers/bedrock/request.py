"""A `Request` as a Converse / ConverseStream call: the body and the endpoint (requests are
signed with SigV4 or sent with a Bedrock API key as a bearer token).
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html"""

from __future__ import annotations

import re
from urllib.parse import quote

from refusals.providers._request import Endpoint, merge_extra, tool_arguments, wire_runs
from refusals.request import JsonObject, Message, Request


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


def converse_body(request: Request) -> JsonObject:
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


def endpoint(base_url: str, *, model: str, stream: bool) -> str:
    operation = "converse-stream" if stream else "converse"
    return f"{base_url}/model/{quote(model, safe='')}/{operation}"


ENDPOINTS = (
    # Converse, and InvokeModel (which the clients do not call, but SDKs and tools do).
    Endpoint(
        "bedrock",
        re.compile(
            r"/model/(?P<model>[^/]+)/(?:converse|converse-stream|invoke"
            r"|invoke-with-response-stream)$"
        ),
    ),
)
