"""OpenAI Responses API (and Azure OpenAI's Responses): response objects, streams, errors.

A Responses object (`"object": "response"`) says how it ended in `status`, not in a
finish reason. Where it says "blocked" or "declined":

- a `refusal` content part in an `output` message item: the model declined (the object
  is still `completed`); the refusal text becomes the content, as the notice expects;
- `status: "incomplete"` with `incomplete_details.reason: "content_filter"`;
- `status: "failed"` with a policy `error.code` (`invalid_prompt`, `bio_policy`,
  `image_content_policy_violation`, any other `*_policy` / `*policy_violation` code):
  a content-filter stop whose category is the code and whose explanation is the message;
- Azure's `content_filters` array: an entry with `blocked: true` names the categories.

The raw finish reason is the provider's own word for the ending: the incomplete reason,
the failed `error.code`, or else the `status` itself (`completed`, `cancelled`, ...).
HTTP error bodies have the same shape as Chat Completions ones and are classified by the
same rules (`openai_chat.classify_error`). A stream (`stream`) ends with an event
that carries the final Responses object, which `parse_response` reads.

Documentation:

- https://platform.openai.com/docs/api-reference/responses/object
- https://platform.openai.com/docs/api-reference/responses-streaming
- https://platform.openai.com/docs/guides/structured-outputs#refusals
- https://platform.openai.com/docs/guides/error-codes
- https://learn.microsoft.com/azure/ai-foundry/openai/how-to/responses
- https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter

The folder holds the format: `schema` (the Structs, the only description of the wire),
`response` (the one mapping), `errors`, `stream`, and `request` (the request body and
endpoint).
"""

from __future__ import annotations

from refusals.providers._common import JsonObject
from refusals.providers.openai_responses.errors import is_error, parse_error
from refusals.providers.openai_responses.response import (
    API,
    INCOMPLETE_REASONS,
    PROVIDER_NAMES,
    STATUSES,
    looks_like,
    outcome_key,
    parse_fast,
    parse_plain,
    parse_response,
    plain_response,
    response_of,
)
from refusals.providers.openai_responses.stream import (
    ResponsesStreamReader,
    StreamReader,
    detect_stream,
)

__all__ = [
    "API",
    "INCOMPLETE_REASONS",
    "PROVIDER_NAMES",
    "STATUSES",
    "ResponsesStreamReader",
    "StreamReader",
    "detect_provider",
    "detect_stream",
    "is_error",
    "looks_like",
    "outcome_key",
    "parse_error",
    "parse_fast",
    "parse_plain",
    "parse_response",
    "plain_response",
    "response_of",
]


def detect_provider(body: JsonObject) -> str | None:
    """`azure` for a Responses object with Azure's `content_filters`, else `openai-responses`.

    Error bodies are left to `openai_chat`, which reads the same shape.
    """
    if not looks_like(body):
        return None
    return "azure" if "content_filters" in body else "openai-responses"
