"""A `Request` as a Messages API call: the body, the `anthropic-beta` features it needs,
the endpoint and the credential header. https://docs.claude.com/en/api/messages"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from refusals.providers._request import Endpoint, merge_extra, tool_arguments, wire_runs
from refusals.request import JsonObject, Message, Request

API_VERSION = "2023-06-01"
"""The `anthropic-version` header every call sends."""

DEFAULT_MAX_TOKENS = 4096
"""Anthropic requires `max_tokens`; this is sent when the request leaves it out."""

SERVER_SIDE_FALLBACK_BETA = "server-side-fallback-2026-06-01"
"""The beta Anthropic's documentation names for the request's `fallbacks` field."""

FALLBACK_CREDIT_BETA = "fallback-credit-2026-07-01"
"""The beta under which refusals mint, and retries redeem, a `fallback_credit_token`."""


@dataclass(slots=True)
class AnthropicBody:
    """An Anthropic Messages body and the `anthropic-beta` features it needs."""

    body: JsonObject
    betas: list[str] = field(default_factory=list)


def _anthropic_blocks(message: Message, *, last: bool) -> list[JsonObject]:
    if message.role == "tool":
        block: JsonObject = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id or "",
            "content": message.content,
        }
        if message.is_error:
            block["is_error"] = True
        return [block]
    if message.role == "user":
        return [{"type": "text", "text": message.content}] if message.content else []
    if message.blocks is not None:
        return [dict(b) for b in message.blocks]
    # A final assistant turn is a prefill, which the API rejects with trailing whitespace.
    text = message.content.rstrip() if last else message.content
    blocks: list[JsonObject] = [{"type": "text", "text": text}] if text else []
    blocks += [
        {
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": tool_arguments(call.arguments),
        }
        for call in message.tool_calls
    ]
    return blocks


def messages_body(request: Request, *, stream: bool) -> AnthropicBody:
    """The Messages body; `fallbacks` and a credit token bring their beta features.

    `Request.temperature` is not sent (see below).
    """
    messages: list[JsonObject] = []
    runs = list(wire_runs(request.messages))
    for index, (role, group) in enumerate(runs):
        last = index == len(runs) - 1
        content = [b for m in group for b in _anthropic_blocks(m, last=last)]
        if content:
            messages.append({"role": role, "content": content})
    body: JsonObject = {
        "model": request.model,
        "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
        "messages": messages,
    }
    if request.system:
        body["system"] = request.system
    if request.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
    # The current Messages API (and its SDK) has no `temperature`: newer models reject it,
    # so it is not sent; older models still take it through `Request.extra`.
    if request.stop:
        body["stop_sequences"] = list(request.stop)
    if request.output_schema is not None:
        body["output_config"] = {"format": {"type": "json_schema", "schema": request.output_schema}}
    if stream:
        body["stream"] = True
    betas = list(request.betas)
    if request.fallbacks:
        body["fallbacks"] = [{"model": model} for model in request.fallbacks]
        betas.append(SERVER_SIDE_FALLBACK_BETA)
    elif request.fallback_credit_token:
        # Anthropic rejects a credit token combined with `fallbacks`, so it goes only
        # on a plain retry.
        body["fallback_credit_token"] = request.fallback_credit_token
        betas.append(FALLBACK_CREDIT_BETA)
    return AnthropicBody(merge_extra(body, request), list(dict.fromkeys(betas)))


def endpoint(base_url: str) -> str:
    """The Messages URL under a server root (`https://api.anthropic.com`)."""
    return f"{base_url}/v1/messages"


ENDPOINTS = (Endpoint("anthropic", re.compile(r"/messages$")),)


def headers(built: AnthropicBody) -> dict[str, str]:
    """The headers a call with `built` needs beyond content type and credentials."""
    given = {"anthropic-version": API_VERSION}
    if built.betas:
        given["anthropic-beta"] = ",".join(built.betas)
    return given


def auth_headers(key: str) -> dict[str, str]:
    """The credential header of an API key."""
    return {"x-api-key": key}
