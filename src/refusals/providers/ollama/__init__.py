"""Ollama's native API (`/api/chat`, `/api/generate`): full responses, streams and HTTP
error bodies.

`/api/chat` answers `{"model", "created_at", "message": {"role", "content", "thinking",
"tool_calls": [{"function": {"name", "arguments": {...}}}]}, "done", "done_reason",
"prompt_eval_count", "eval_count", …}`; `/api/generate` has `response` (and `thinking`)
instead of `message`. Errors are `{"error": "<text>"}`: a string, not an object. Ollama's
OpenAI-compatible endpoints (`/v1/...`) are read by the OpenAI modules instead. A stream
(the default for both endpoints) is one such body per line (NDJSON), each with the next piece
of the answer, the last with `done: true` (see `stream`).

Documentation:

- https://github.com/ollama/ollama/blob/main/docs/api.md (responses, `done_reason`,
  loading and unloading a model)
- https://docs.ollama.com/api/errors (error body, statuses, errors in a stream)
- https://docs.ollama.com/capabilities/thinking (`message.thinking`, `thinking`)

Ollama has no refusal or content-filter signal of its own; what matters here is that an
unfinished body (`done: false`) or an unknown `done_reason` is never read as a finished
answer.

The folder holds the whole format: `schema` (the Structs, the only description of the
wire), `response` (the one mapping), `errors`, `stream`. Requests go through Ollama's
OpenAI-compatible endpoint (the clients speak Chat Completions to it).
"""

from __future__ import annotations

from typing import Any

from refusals.providers._common import JsonObject
from refusals.providers.ollama.errors import is_error, parse_error
from refusals.providers.ollama.response import (
    API,
    DONE_REASONS,
    parse_fast,
    parse_plain,
    parse_response,
)
from refusals.providers.ollama.stream import OllamaStreamReader, StreamReader

__all__ = [
    "API",
    "DONE_REASONS",
    "ERROR_KEYS",
    "OllamaStreamReader",
    "StreamReader",
    "detect_provider",
    "detect_stream",
    "is_error",
    "looks_like",
    "parse_error",
    "parse_fast",
    "parse_plain",
    "parse_response",
]

# Error keys besides `error`: a 401 from a remote instance adds the sign-in address.
ERROR_KEYS = frozenset({"error", "signin_url"})

# NDJSON lines have no names; a proxy re-framing them as SSE may use the default type.
_STREAM_EVENT_NAMES = (None, "message")


def detect_provider(body: JsonObject) -> str | None:
    """`"ollama"` for a native chat/generate response or a native error body; else None.

    A native error is `{"error": "<text>"}` (a 401 adds `signin_url`). Bodies with other
    keys are left to the OpenAI-compatible modules (xAI, for one, answers `{"code": "...",
    "error": "..."}`).
    """
    if "choices" in body or "object" in body:
        return None
    if isinstance(body.get("done"), bool) and (
        isinstance(body.get("message"), dict) or isinstance(body.get("response"), str)
    ):
        return "ollama"
    if isinstance(body.get("error"), str) and ERROR_KEYS.issuperset(body):
        return "ollama"
    return None


def looks_like(body: JsonObject) -> bool:
    return detect_provider(body) is not None


def detect_stream(name: str | None, payload: Any) -> str | None:
    """`"ollama"` when the first event of a stream is a native `/api/chat` or `/api/generate`
    chunk (`done` and `message` or `response`) or a native error line; None for anything else,
    OpenAI-style chunks (`choices`, `object`) from Ollama's `/v1` endpoints included."""
    if name not in _STREAM_EVENT_NAMES or not isinstance(payload, dict):
        return None
    return detect_provider(payload)
