"""Cohere Chat API, v1 and v2: full responses, streams and HTTP error bodies.

v1 (`POST /v1/chat`) answers `{"text", "generation_id", "response_id", "finish_reason",
"tool_calls": [{"name", "parameters"}], "meta": {"billed_units", "tokens"}}`; v2
(`POST /v2/chat`) answers `{"id", "finish_reason", "message": {"role", "content": [{"type":
"text", "text"}, {"type": "thinking", "thinking"}], "tool_plan", "tool_calls": [{"id",
"function": {"name", "arguments"}}]}, "usage": {"billed_units", "tokens",
"cached_tokens"}}`. Errors are `{"message": "..."}` with the HTTP status. Streams: v2 sends
SSE events named by their `type` (`message-start` … `message-end`); v1 sends one JSON object
per line (or SSE) with an `event_type` (`stream-start` … `stream-end`). See `stream`.

Documentation:

- https://docs.cohere.com/v1/reference/chat (v1 response, `finish_reason`)
- https://docs.cohere.com/v2/reference/chat (v2 response, `finish_reason`)
- https://docs.cohere.com/reference/errors (error body and statuses)
- https://docs.cohere.com/v2/docs/streaming and https://docs.cohere.com/docs/tool-use-streaming
  (v2 stream events), https://docs.cohere.com/reference/chat-stream-v1 (v1 stream events)
- cohere-python `ChatStreamEndEventFinishReason` documents the v1 values: `ERROR_LIMIT`
  "the reply was cut off because the model reached the maximum number of tokens for its
  context length"; `ERROR_TOXIC` "the model generated a reply that was deemed toxic".

The folder holds the whole format: `schema` (the Structs, the only description of the
wire), `response` (the one mapping), `errors`, `stream`.
"""

from __future__ import annotations

from refusals.providers._common import JsonObject
from refusals.providers.cohere.errors import is_error, parse_error
from refusals.providers.cohere.response import (
    API,
    FILTER_CATEGORIES,
    FINISH_REASONS,
    is_upper,
    parse_fast,
    parse_plain,
    parse_response,
)
from refusals.providers.cohere.stream import (
    V1_STREAM_EVENTS,
    V2_STREAM_EVENTS,
    ChatStreamReader,
    StreamReader,
    detect_stream,
)

__all__ = [
    "API",
    "FILTER_CATEGORIES",
    "FINISH_REASONS",
    "V1_STREAM_EVENTS",
    "V2_STREAM_EVENTS",
    "ChatStreamReader",
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


def detect_provider(body: JsonObject) -> str | None:
    """`"cohere"` for a v1 or v2 chat response; None for anything else.

    Error bodies (`{"message": "..."}`) are not claimed: other APIs (Bedrock among them)
    answer errors in the same shape, so only `provider="cohere"` reads them as Cohere's.
    """
    if "choices" in body or "error" in body:
        return None
    upper_finish = is_upper(body.get("finish_reason"))
    message = body.get("message")
    if isinstance(message, dict) and isinstance(message.get("role"), str) and upper_finish:
        return "cohere"
    if isinstance(body.get("generation_id"), str):
        return "cohere"
    if isinstance(body.get("text"), str) and upper_finish:
        return "cohere"
    return None


def looks_like(body: JsonObject) -> bool:
    return detect_provider(body) is not None
