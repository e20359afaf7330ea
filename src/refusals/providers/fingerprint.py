"""What makes two provider requests the same prompt: the model and the conversation.

A refused prompt comes back in many shapes: an SDK retry, a user loop, LiteLLM's
`num_retries` or a tool that rebuilds its request each time may change `max_tokens`,
the temperature, a metadata field, or write the same text as a string or as a list of
text parts. None of that changes what the model is asked, so none of it may let a
refused prompt through again. `conversation_fingerprint` reads a request body of any
wire format the clients speak (Anthropic Messages, OpenAI Chat Completions and
Responses, Gemini and Vertex, Bedrock Converse, Cohere, Ollama) and digests only the
model and the messages: each message's role and content, text with its whitespace
runs made one space, other parts (images, tool calls and results) as canonical JSON
without their ids.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

import orjson

__all__ = ["conversation_fingerprint", "non_streaming_path"]

# The model named by the path (Gemini, Vertex, Bedrock), not the body.
_PATH_MODEL = re.compile(r"/models/([^/:]+)(?::|$)|/model/([^/]+)/")
_ROLES = {"model": "assistant", "developer": "system", "human": "user", "chatbot": "assistant"}
_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
_NOT_CONTENT = frozenset({"id", "cache_control", "call_id", "tool_call_id", "citations"})
# The same call, streamed: the path names the streaming variant in these APIs.
_STREAM_PATHS = (
    (":streamGenerateContent", ":generateContent"),
    ("/converse-stream", "/converse"),
    ("/invoke-with-response-stream", "/invoke"),
)


def non_streaming_path(path: str) -> str:
    """`path` with a streaming endpoint named as its non-streaming twin (Gemini's
    `:streamGenerateContent`, Bedrock's `/converse-stream`...): the same prompt."""
    for streaming, plain in _STREAM_PATHS:
        if path.endswith(streaming):
            return path[: -len(streaming)] + plain
    return path


def conversation_fingerprint(body: Any, path: str = "") -> str | None:
    """The SHA-256 hex digest of the model and messages of a request body, or None when
    the body holds no conversation (an embeddings call, a file upload, a model list)."""
    if not isinstance(body, Mapping):
        return None
    messages = _conversation(body)
    if messages is None:
        return None
    model = body.get("model")
    if not isinstance(model, str):
        found = _PATH_MODEL.search(path)
        model = unquote(next(g for g in found.groups() if g)) if found else ""
    canonical = orjson.dumps([model.strip().lower(), messages], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


def _conversation(body: Mapping[str, Any]) -> list[Any] | None:
    turns: list[Any] = []
    for name in ("system", "instructions", "systemInstruction", "system_instruction", "preamble"):
        if body.get(name):
            turns.append(["system", _content(body[name])])
    raw = None
    for name in ("messages", "input", "contents", "prompt"):
        if name in body:
            raw = body[name]
            break
    if raw is None:
        return None
    if isinstance(raw, str | Mapping):
        raw = [raw]
    if not isinstance(raw, list):
        return None
    for message in raw:
        if isinstance(message, str):
            turns.append(["user", [_text(message)]])
            continue
        if not isinstance(message, Mapping):
            turns.append(["", _canonical(message)])
            continue
        role = str(message.get("role") or "user").lower()
        role = _ROLES.get(role, role)
        if "content" in message:
            content = _content(message["content"])
        elif "parts" in message:
            content = _content(message["parts"])
        else:  # a Responses item that is no message (a function call, its output)
            content = _canonical(message)
        turns.append([role, content])
        for extra in ("tool_calls", "images"):
            if message.get(extra):
                turns.append([role, _canonical(message[extra])])
    return turns


def _content(value: Any) -> list[Any]:
    """A message's content as a list of parts; adjacent text parts are one text."""
    if isinstance(value, str):
        return [_text(value)]
    if isinstance(value, Mapping):
        value = value.get("parts", value.get("content", [value]))
        if isinstance(value, str):
            return [_text(value)]
    if not isinstance(value, list):
        return [_canonical(value)]
    parts: list[Any] = []
    texts: list[str] = []
    for part in value:
        text = _part_text(part)
        if text is not None:
            texts.append(text)
            continue
        if texts:
            parts.append(_text("\n".join(texts)))
            texts = []
        parts.append(_canonical(part))
    if texts:
        parts.append(_text("\n".join(texts)))
    return parts


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if not isinstance(part, Mapping):
        return None
    text = part.get("text")
    if not isinstance(text, str):
        return None
    kind = part.get("type")
    if kind is None or kind in _TEXT_TYPES:
        return text
    return None


def _text(text: str) -> str:
    return " ".join(text.split())


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items() if str(k) not in _NOT_CONTENT}
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    if isinstance(value, str):
        return _text(value)
    return value
