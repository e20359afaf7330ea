"""OpenAI Chat Completions, and every vendor that speaks it: responses, streams and errors.

One wire format, many dialects. Where each one says "blocked" or "declined":

- OpenAI: `message.refusal` (the model declined; `finish_reason` is still `stop`),
  `finish_reason: "content_filter"`, and the optional `moderation` object, whose flagged
  categories are recorded but do not by themselves mean a block (the recordings show a
  flagged input answered normally, even under a `block` moderation policy).
- Azure OpenAI: `prompt_filter_results[].content_filter_results` and
  `choices[].content_filter_results`; a category counts only where `filtered` is true,
  and a `content_filter_results.error` means the filter did not run (the text went out
  unfiltered: not a block). A blocked prompt is an HTTP 400 `content_filter` error whose
  `innererror.content_filter_result(s)` names the categories.
- OpenRouter: `native_finish_reason` (the upstream model's own value, kept as the raw
  finish reason), errors with `metadata` (`error_type`, moderation `reasons`), and errors
  inside a 200 body. `error_type: "refusal"` means the upstream model declined: it is read
  as a REFUSAL (never retried, like every policy error), not as a content filter.
- DeepSeek: `finish_reason: "content_filter"`, `insufficient_system_resource`, and the 400
  "Content Exists Risk" error. xAI: a 403 `SAFETY_CHECK_TYPE_*` body. Groq (`x_groq`),
  Mistral (`{"object": "error"}` bodies) and Ollama's `/v1` endpoint speak it plainly.

Streams (`detect_stream`, `ChatStreamReader`) read each chunk the way `parse_response`
reads a message, so that a stream and its full response agree; see `ChatStreamReader` for
where a stream says things a full response does not (Azure's asynchronous filter, errors
after a finish, the end of a stream).

This module is also the fallback for error bodies of no known shape (provider
`"unknown"`) and for error text that is not JSON: the HTTP status classifies those.

The folder holds the format: `schema` (the Structs, the only description of the wire),
`response` (the one mapping), `filters` (Azure's filter results and OpenAI's moderation,
shared with Responses), `errors`, `vendors` (which vendor a body is from) and `stream`.
`request` builds the request body, the endpoint and the credential header.

Documentation:

- https://platform.openai.com/docs/api-reference/chat/object
- https://platform.openai.com/docs/api-reference/chat-streaming
- https://platform.openai.com/docs/guides/structured-outputs#refusals
- https://platform.openai.com/docs/guides/error-codes
- https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter
- https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter-annotations
- https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-streaming
- https://openrouter.ai/docs/api/reference/errors-and-debugging
- https://openrouter.ai/docs/api/reference/overview (`native_finish_reason`)
- https://openrouter.ai/docs/api/reference/streaming (comments, errors during streaming)
- https://api-docs.deepseek.com/quick_start/error_codes
- https://api-docs.deepseek.com/api/create-chat-completion (`finish_reason` values)
- https://docs.x.ai/developers/debugging (status codes; the body is `{"code", "error"}`)
- https://console.groq.com/docs/errors
- https://docs.mistral.ai/api/ (`finish_reason` values, error bodies)
- https://github.com/ollama/ollama/blob/main/docs/openai.md
"""

from __future__ import annotations

from refusals.providers.openai_chat.errors import (
    API,
    AUTH_CODES,
    INVALID_CODES,
    POLICY_CODES,
    TRANSIENT_CODES,
    ErrorVerdict,
    classify,
    classify_error,
    finish_error,
    is_error,
    nonblank,
    parse_error,
    parse_error_fast,
    stop_for,
)
from refusals.providers.openai_chat.filters import (
    FilterSignals,
    ModerationSignals,
    azure_category,
    azure_filter_signals,
    azure_filtered_categories,
    clean_message,
    moderation_signals,
)
from refusals.providers.openai_chat.response import (
    FINISH_REASONS,
    NATIVE_BLOCKS,
    PROVIDER_NAMES,
    completion_response,
    outcome_key,
    parse_fast,
    parse_plain,
    parse_response,
    plain_answer,
    plain_completion,
    to_response,
)
from refusals.providers.openai_chat.stream import (
    ChatStreamReader,
    StreamReader,
    detect_stream,
    keep_error_details,
)
from refusals.providers.openai_chat.vendors import detect_provider, looks_like

__all__ = [
    "API",
    "AUTH_CODES",
    "FINISH_REASONS",
    "INVALID_CODES",
    "NATIVE_BLOCKS",
    "POLICY_CODES",
    "PROVIDER_NAMES",
    "TRANSIENT_CODES",
    "ChatStreamReader",
    "ErrorVerdict",
    "FilterSignals",
    "ModerationSignals",
    "StreamReader",
    "azure_category",
    "azure_filter_signals",
    "azure_filtered_categories",
    "classify",
    "classify_error",
    "clean_message",
    "completion_response",
    "detect_provider",
    "detect_stream",
    "finish_error",
    "is_error",
    "keep_error_details",
    "looks_like",
    "moderation_signals",
    "nonblank",
    "outcome_key",
    "parse_error",
    "parse_error_fast",
    "parse_fast",
    "parse_plain",
    "parse_response",
    "plain_answer",
    "plain_completion",
    "stop_for",
    "to_response",
]
