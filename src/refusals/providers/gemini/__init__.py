"""Gemini API and Vertex AI `generateContent`: full responses, streams and HTTP error bodies.

Both services speak the same wire format; a Vertex AI body also carries `createTime`.
A stream (`streamGenerateContent?alt=sse`) is a sequence of the same response bodies, each
holding the next parts of the answer (see `stream`).
A block shows up in two places, and neither is an HTTP error:

- the prompt: `promptFeedback.blockReason` (no candidates at all), with the ratings that
  blocked it in `promptFeedback.safetyRatings` and a message in `blockReasonMessage`;
- the output: a candidate's `finishReason` (`SAFETY`, `RECITATION`, `MODEL_ARMOR`, …),
  with `safetyRatings` entries marked `blocked: true` and a message in `finishMessage`.

Documentation:

- https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse
- https://ai.google.dev/api/generate-content#FinishReason
- https://ai.google.dev/api/generate-content#BlockReason
- https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/GenerateContentResponse
- https://googleapis.github.io/js-genai/release_docs/enums/types.FinishReason.html
- https://googleapis.github.io/js-genai/release_docs/enums/types.BlockedReason.html
- https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes
- https://cloud.google.com/apis/design/errors (the `google.rpc.Status` error body)
- https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent and
  https://ai.google.dev/gemini-api/docs/text-generation#streaming-responses (streams)

The folder holds the whole format: `schema` (the Structs, the only description of the
wire), `response` (the one mapping, and the category rule), `errors`, `stream`, and
`request` (the `generateContent` body, the endpoint and the credential header).
"""

from __future__ import annotations

from refusals.providers.gemini.errors import (
    AUTH_REASONS,
    ERROR_STATUSES,
    is_error,
    parse_error,
    parse_error_fast,
)
from refusals.providers.gemini.response import (
    API,
    FINISH_REASONS,
    PROMPT_BLOCKED,
    body_response,
    looks_like,
    outcome_key,
    parse_fast,
    parse_plain,
    parse_response,
    plain_answer,
    plain_body,
    wire_keys,
)
from refusals.providers.gemini.stream import (
    GenerateContentStreamReader,
    StreamReader,
    detect_provider,
    detect_stream,
)

__all__ = [
    "API",
    "AUTH_REASONS",
    "ERROR_STATUSES",
    "FINISH_REASONS",
    "PROMPT_BLOCKED",
    "GenerateContentStreamReader",
    "StreamReader",
    "body_response",
    "detect_provider",
    "detect_stream",
    "is_error",
    "looks_like",
    "outcome_key",
    "parse_error",
    "parse_error_fast",
    "parse_fast",
    "parse_plain",
    "parse_response",
    "plain_answer",
    "plain_body",
    "wire_keys",
]
