"""OpenAI Chat Completions and the vendors that speak it: OpenAI, Azure OpenAI,
OpenRouter, xAI, Groq, DeepSeek and Mistral, each with its own extras and error bodies.

Shapes follow https://platform.openai.com/docs/api-reference/chat (a refusal is
`message.refusal` / `delta.refusal` with `finish_reason: "stop"`; an output filter is
`finish_reason: "content_filter"`), Azure's content-filter documentation
(https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter: prompt and
completion filter results, streamed annotations, the asynchronous filter whose verdict
follows the text, the 400 `content_filter` error with `innererror`), and each vendor's
error page (OpenRouter 403 moderation with `metadata.reasons`, xAI 403
`SAFETY_CHECK_TYPE_*`, DeepSeek 400 "Content Exists Risk", Mistral `{"object": "error"}`).

Azure's asynchronous filter mode is asked for with the request header
`x-mock-azure-async-filter: 1`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from refusals.mock.scenarios import Conversation, Plan, Tool
from refusals.mock.wire._base import (
    BadRequest,
    ErrorKind,
    Reply,
    Route,
    Wire,
    bearer,
    dumps,
    json_reply,
    now,
    require_list,
    require_object,
    require_string,
    sse,
    stream_flag,
    stream_reply,
    text_of,
    text_pieces,
    token_count,
    whole_reply,
)
from refusals.providers.registry import VENDORS

FINISH_REASONS = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "length": "length",
    "refusal": "stop",
    "filter": "content_filter",
}

ASYNC_FILTER_HEADER = "x-mock-azure-async-filter"

_OPENAI_ERRORS: dict[str, tuple[str, str | None]] = {
    "auth": ("invalid_request_error", "invalid_api_key"),
    "invalid": ("invalid_request_error", None),
    "not_found": ("invalid_request_error", "not_found"),
    "too_large": ("invalid_request_error", "request_too_large"),
    "rate_limited": ("requests", "rate_limit_exceeded"),
    "overloaded": ("server_error", "overloaded"),
    "server_error": ("server_error", None),
}

_XAI_CODES = {
    "auth": "Client specified an invalid argument",
    "invalid": "Client specified an invalid argument",
    "not_found": "Some requested entity was not found",
    "too_large": "Client specified an invalid argument",
    "rate_limited": "Some resource has been exhausted",
    "overloaded": "The service is currently unavailable",
    "server_error": "Internal error",
}

_SAFE = {"filtered": False, "severity": "safe"}
_CATEGORIES = ("hate", "self_harm", "sexual", "violence")

PROMPT_FLAGGED = (
    "Invalid prompt: your prompt was flagged as potentially violating our usage policy. "
    "Please try again with a different prompt."
)


class ChatWire(Wire):
    """Chat Completions; `name` picks the vendor's dialect."""

    def __init__(self, name: str) -> None:
        self.name = name

    def authorized(self, headers: Mapping[str, str], route: Route) -> bool:
        if self.name == "azure" and headers.get("api-key", "").strip():
            return True
        return bearer(headers)

    def read(self, body: Any, route: Route) -> Conversation:
        body = require_object(body, "a Chat Completions request")
        if self.name == "azure":
            if not route.query.get("api-version"):
                raise BadRequest("the api-version query parameter is required")
            model = route.model or ""
        else:
            model = require_string(body, "model")
        conv = Conversation(wire=self.name, model=model, stream=stream_flag(body))
        read_chat_messages(conv, require_list(body, "messages"))
        conv.tools = chat_tools(body.get("tools"))
        options = body.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage") is True:
            conv.options["include_usage"] = "1"
        if route.headers.get(ASYNC_FILTER_HEADER, "").lower() in ("1", "true", "yes"):
            conv.options["async_filter"] = "1"
        conv.output_schema = response_schema(body.get("response_format"))
        return conv

    # --- errors -----------------------------------------------------------------------

    def error(self, status: int, kind: ErrorKind, message: str) -> Reply:
        if self.name == "azure":
            return json_reply(status, {"error": {"code": str(status), "message": message}})
        if self.name == "xai":
            return json_reply(status, {"code": _XAI_CODES[kind], "error": message})
        if self.name == "openrouter":
            return json_reply(status, {"error": {"code": status, "message": message}})
        kind_type, code = _OPENAI_ERRORS[kind]
        if self.name == "mistral":
            if kind == "auth":
                return json_reply(status, {"message": "Unauthorized", "request_id": "req_mock"})
            body = {"object": "error", "message": message, "type": kind_type, "param": None}
            body["code"] = code
            return json_reply(status, body)
        error = {"message": message, "type": kind_type, "param": None, "code": code}
        return json_reply(status, {"error": error})

    def _prompt_blocked(self, conv: Conversation, plan: Plan) -> Reply:
        assert plan.filter is not None
        category = plan.filter.category
        if self.name == "azure":
            results = {name: dict(_SAFE) for name in _CATEGORIES}
            results[category] = {"filtered": True, "severity": "high"}
            error = {
                "message": "The response was filtered due to the prompt triggering Azure "
                "OpenAI's content management policy. Please modify your prompt and retry.",
                "type": None,
                "param": "prompt",
                "code": "content_filter",
                "status": 400,
                "innererror": {
                    "code": "ResponsibleAIPolicyViolation",
                    "content_filter_result": results,
                },
            }
            return json_reply(400, {"error": error})
        if self.name == "openrouter":
            error = {
                "code": 403,
                "message": f"{conv.model} requires moderation. Your input was flagged for "
                f'"{category}". No credits were charged.',
                "metadata": {
                    "reasons": [category],
                    "flagged_input": conv.last_user_text[:100],
                    "provider_name": "Mock",
                    "model_slug": conv.model,
                },
            }
            return json_reply(403, {"error": error, "user_id": "user_mock"})
        if self.name == "xai":
            text = (
                f"Content violates usage guidelines. Team: mock-team, Model: {conv.model}, "
                f"Failed check: SAFETY_CHECK_TYPE_{category.upper()}"
            )
            code = "The caller does not have permission to execute the specified operation"
            return json_reply(403, {"code": code, "error": text})
        if self.name == "deepseek":
            error = {
                "message": "Content Exists Risk",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_request_error",
            }
            return json_reply(400, {"error": error})
        if self.name == "mistral":
            body = {
                "object": "error",
                "message": "Prompt blocked: it violates the content policy.",
                "type": "invalid_request_error",
                "param": None,
                "code": "3051",
            }
            return json_reply(400, body)
        error = {"message": PROMPT_FLAGGED, "type": "invalid_request_error", "param": None}
        error["code"] = "invalid_prompt"
        return json_reply(400, {"error": error})

    # --- answers ----------------------------------------------------------------------

    def render(self, plan: Plan, conv: Conversation) -> Reply:
        if plan.finish == "pause":
            raise BadRequest(f"the pause-turn scenario has no {self.name} counterpart")
        if plan.filter is not None and plan.filter.where == "prompt":
            return self._prompt_blocked(conv, plan)
        if conv.stream:
            return self._stream(plan, conv)
        message: dict[str, Any] = {"role": "assistant", "content": plan.text or None}
        message["refusal"] = None
        if plan.finish == "refusal" and plan.refusal is not None:
            message["refusal"] = plan.refusal.message
        if plan.tool_call is not None:
            message["tool_calls"] = [_tool_call(plan)]
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "logprobs": None,
            "finish_reason": FINISH_REASONS[plan.finish],
        }
        body = self._envelope(plan, conv, "chat.completion")
        self._dialect_choice(choice, plan, final=True)
        body["choices"] = [choice]
        body["usage"] = _usage(plan, conv)
        if self.name == "azure":
            body["prompt_filter_results"] = [_prompt_results()]
        return whole_reply(body, plan)

    def _envelope(self, plan: Plan, conv: Conversation, kind: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": f"chatcmpl-mock{plan.serial:06d}",
            "object": kind,
            "created": now(),
            "model": conv.model,
            "system_fingerprint": "fp_mock",
        }
        if self.name == "openrouter":
            body["provider"] = "Mock"
        if self.name == "groq":
            body["x_groq"] = {"id": f"req_mock{plan.serial:06d}"}
        return body

    def _dialect_choice(self, choice: dict[str, Any], plan: Plan, final: bool) -> None:
        """Vendor extras on a choice: Azure filter results, OpenRouter's native reason."""
        if self.name == "azure":
            results = {name: dict(_SAFE) for name in _CATEGORIES}
            if final and plan.filter is not None:
                results[plan.filter.category] = {"filtered": True, "severity": "high"}
            choice["content_filter_results"] = results
        if self.name == "openrouter" and final:
            choice["native_finish_reason"] = FINISH_REASONS[plan.finish]

    def _chunk(self, plan: Plan, conv: Conversation, choices: list[Any]) -> dict[str, Any]:
        chunk = self._envelope(plan, conv, "chat.completion.chunk")
        chunk["choices"] = choices
        return chunk

    def _stream(self, plan: Plan, conv: Conversation) -> Reply:
        async_filter = self.name == "azure" and "async_filter" in conv.options
        chunks: list[dict[str, Any]] = []
        if self.name == "azure":
            chunks.append(
                {
                    "choices": [],
                    "created": 0,
                    "id": "",
                    "model": "",
                    "object": "",
                    "prompt_filter_results": [_prompt_results()],
                }
            )
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": "", "refusal": None}]
        deltas += [{"content": piece} for piece in text_pieces(plan.text)]
        if plan.finish == "refusal" and plan.refusal is not None:
            deltas += [{"refusal": piece} for piece in text_pieces(plan.refusal.message)]
        if plan.tool_call is not None:
            call = _tool_call(plan)
            arguments = call["function"]["arguments"]
            half = len(arguments) // 2
            head = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
            deltas.append({"tool_calls": [{"index": 0, **head}]})
            for part in (arguments[:half], arguments[half:]):
                deltas.append({"tool_calls": [{"index": 0, "function": {"arguments": part}}]})
        for delta in deltas:
            choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": None}
            if self.name == "azure" and not async_filter:
                self._dialect_choice(choice, plan, final=False)
            chunks.append(self._chunk(plan, conv, [choice]))
        flagged = plan.filter is not None
        if async_filter:
            # Annotations follow the text they judge; a flagged one may follow the stop.
            chunks.append(_annotation(plan.text, flagged=False))
        finish = {"index": 0, "delta": {}, "logprobs": None}
        finish["finish_reason"] = "stop" if async_filter else FINISH_REASONS[plan.finish]
        if self.name == "azure" and not async_filter:
            self._dialect_choice(finish, plan, final=True)
        if self.name == "openrouter":
            finish["native_finish_reason"] = finish["finish_reason"]
        first_terminal = len(chunks)
        chunks.append(self._chunk(plan, conv, [finish]))
        if async_filter and flagged:
            chunks.append(_annotation(plan.text, flagged=True, category=_category(plan)))
        if "include_usage" in conv.options or self.name in ("azure", "groq"):
            usage = self._chunk(plan, conv, [])
            usage["usage"] = _usage(plan, conv)
            if self.name == "groq":
                usage["x_groq"] = {"id": f"req_mock{plan.serial:06d}", "usage": usage["usage"]}
            chunks.append(usage)
        events = [sse(chunk) for chunk in chunks] + [sse(b"[DONE]")]
        return stream_reply(events, plan, self.stream_media_type, len(events) - first_terminal)


def _category(plan: Plan) -> str:
    return plan.filter.category if plan.filter is not None else "violence"


def _annotation(text: str, flagged: bool, category: str = "violence") -> dict[str, Any]:
    results: dict[str, Any] = {name: dict(_SAFE) for name in _CATEGORIES}
    if flagged:
        results[category] = {"filtered": True, "severity": "high"}
    offsets = {"check_offset": 0, "start_offset": 0, "end_offset": len(text)}
    choice = {
        "index": 0,
        "finish_reason": None,
        "content_filter_results": results,
        "content_filter_offsets": offsets,
    }
    return {"choices": [choice], "created": 0, "id": "", "model": "", "object": ""}


def _prompt_results() -> dict[str, Any]:
    results: dict[str, Any] = {name: dict(_SAFE) for name in _CATEGORIES}
    results["jailbreak"] = {"filtered": False, "detected": False}
    return {"prompt_index": 0, "content_filter_results": results}


def _tool_call(plan: Plan) -> dict[str, Any]:
    assert plan.tool_call is not None
    call = plan.tool_call
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": dumps(call.arguments).decode()},
    }


def _usage(plan: Plan, conv: Conversation) -> dict[str, int]:
    prompt = sum(token_count(text) for text in conv.user_texts) or 1
    completion = token_count(plan.text)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def read_chat_messages(conv: Conversation, messages: list[Any]) -> None:
    """User texts and the last tool result of Chat-style messages (Chat, Cohere, Ollama)."""
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise BadRequest(f"messages[{index}]: expected an object")
        role = message.get("role")
        if role == "user":
            conv.user_texts.append(text_of(message.get("content")))
        if role == "tool":
            conv.tool_result = text_of(message.get("content"))
        conv.last_is_tool_result = role == "tool"


def chat_tools(value: Any) -> list[Tool]:
    """The function tools of a Chat-style `tools` list."""
    tools: list[Tool] = []
    for tool in value if isinstance(value, list) else []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            schema = function.get("parameters")
            tools.append(Tool(function["name"], schema if isinstance(schema, dict) else {}))
    return tools


def response_schema(value: Any) -> dict[str, Any] | None:
    """The JSON schema of a `response_format: {"type": "json_schema", ...}`, if any."""
    if isinstance(value, dict) and value.get("type") == "json_schema":
        spec = value.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        return schema if isinstance(schema, dict) else {}
    return None


WIRE_NAMES: tuple[str, ...] = (
    "openai-chat",  # OpenAI's own
    *(
        row.name
        for row in VENDORS
        if row.format == "openai-chat" and row.reads_as is None and row.name != "openai"
    ),
)
"""OpenAI's Chat Completions and every vendor the registry reads in its own dialect (a
vendor whose dialect this writer does not know answers as OpenAI does)."""
