"""Anthropic Messages API (GA and beta): full responses, streams and HTTP error bodies.

Documentation:
- Messages API: https://docs.claude.com/en/api/messages
- Streaming: https://docs.claude.com/en/docs/build-with-claude/streaming
- Stop reasons: https://docs.claude.com/en/docs/build-with-claude/handling-stop-reasons
- Errors: https://docs.claude.com/en/api/errors

A refusal is an HTTP 200 message with `stop_reason: "refusal"`; the provider's reasons
come in `stop_details` (on the wire `{"type": "refusal", "category", "explanation",
"recommended_model", "fallback_credit_token", "fallback_has_prefill_claim"}`). The category
is an open set: new values pass through unchanged, never checked against a list. A
server-side fallback shows as a `fallback` content block and as `fallback_message`
entries in `usage.iterations`. All of these become `reasoning_details` (see
`refusals.model`); the notice itself is built only by `refusals.refusal`.

The folder holds the whole format: `schema` (the Structs, the only description of the
wire), `response` (the one mapping to `LLMResponse`), `errors`, `stream`, and `request`
(the request body and the endpoint and auth rules the clients use).
"""

from __future__ import annotations

from refusals.providers._common import JsonObject
from refusals.providers.anthropic.errors import (
    ERROR_TYPES,
    MAX_ERROR_MESSAGE_CHARS,
    NOT_RETRYABLE_ERROR_CODES,
    is_error,
    is_error_body,
    parse_error,
    parse_error_fast,
)
from refusals.providers.anthropic.response import (
    API,
    STOP_REASONS,
    is_message,
    message_response,
    outcome_key,
    parse_fast,
    parse_plain,
    parse_response,
    plain_answer,
    plain_message,
)
from refusals.providers.anthropic.stream import (
    STREAM_EVENTS,
    MessagesStreamReader,
    StreamReader,
    detect_stream,
)

__all__ = [
    "API",
    "ERROR_TYPES",
    "MAX_ERROR_MESSAGE_CHARS",
    "NOT_RETRYABLE_ERROR_CODES",
    "STOP_REASONS",
    "STREAM_EVENTS",
    "MessagesStreamReader",
    "StreamReader",
    "detect_provider",
    "detect_stream",
    "is_error",
    "looks_like",
    "message_response",
    "outcome_key",
    "parse_error",
    "parse_error_fast",
    "parse_fast",
    "parse_plain",
    "parse_response",
    "plain_answer",
    "plain_message",
]


def detect_provider(body: JsonObject) -> str | None:
    """`"anthropic"` for a Messages response or an Anthropic error body, else None."""
    if is_message(body) or is_error_body(body):
        return "anthropic"
    return None


def looks_like(body: JsonObject) -> bool:
    return detect_provider(body) is not None
