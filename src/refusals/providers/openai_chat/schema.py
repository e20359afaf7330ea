"""The Chat Completions wire (OpenAI and every compatible vendor), as msgspec Structs: the
only description of it. A stream chunk has a body's shape (`delta` for `message`), so one
Struct reads both; an error body has its own.

Bytes are decoded strictly; anything else goes through the shared lenient pass
(`providers._lenient`) into the same Structs. Azure's filter results and OpenAI's
moderation object stay `Raw`: they come in many shapes and are read, when present, by
`filters`. Documentation: https://platform.openai.com/docs/api-reference/chat/object,
https://platform.openai.com/docs/api-reference/chat-streaming,
https://platform.openai.com/docs/guides/error-codes
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import msgspec

from refusals.providers._common import NO_RAW, Absent, Count, Int, Raw

_UNSET: Any = msgspec.UNSET


class Function(msgspec.Struct, gc=False):
    name: str | None = None
    # A string on the wire; any other JSON value is kept, and written out as JSON text.
    arguments: Raw = NO_RAW


class Custom(msgspec.Struct, gc=False):
    """A custom tool's call: its arguments are its `input`."""

    name: str | None = None
    input: Raw = NO_RAW


class Call(msgspec.Struct, gc=False):
    """A `tool_calls` entry (in a stream, a piece of one)."""

    # A stream matches pieces by an integer `index`; any other value is none.
    index: Int | None = None
    id: str | None = None
    function: Function | None = None
    custom: Custom | None = None


class Legacy(msgspec.Struct, gc=False):
    """The deprecated `function_call` of a message."""

    name: str | None = None
    arguments: Raw = NO_RAW


class Part(msgspec.Struct, gc=False):
    """A content part (`text`, `refusal`, Mistral's `thinking`), or a refusal part."""

    type: str | None = None
    text: str | None = None
    # UNSET: a refusal part's text is its `refusal`, or else (the key absent) its `text`.
    refusal: str | msgspec.UnsetType | None = msgspec.UNSET
    thinking: str | list[str | Part] | None = None


class ReasoningEntry(msgspec.Struct, gc=False):
    """An OpenRouter `reasoning_details` entry; only its text is read."""

    text: str | None = None


class Message(msgspec.Struct, gc=False):
    """A choice's `message` (or, in a stream, its `delta`)."""

    content: str | list[str | Part] | None = None
    refusal: str | list[str | Part] | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    reasoning_details: list[ReasoningEntry] | None = None
    tool_calls: list[Call] | None = None
    # Raw: `{}` is no call, but an object of other keys is one (with no name).
    function_call: Raw = NO_RAW
    role: Raw = NO_RAW  # not read, but a message that has it is not an empty one

    def has_fields(self) -> bool:
        """Whether any field is given: `message or delta` reads the other one when not."""
        return (
            bool(self.role)
            or self.content is not None
            or self.refusal is not None
            or self.reasoning_content is not None
            or self.reasoning is not None
            or self.reasoning_details is not None
            or self.tool_calls is not None
            or bool(self.function_call)
        )


class Choice(msgspec.Struct, gc=False):
    # Elements of `choices` that are not objects are dropped (not read as empty choices).
    drop_non_objects: ClassVar[bool] = True

    # Choice 0 is the first whose `index` is 0, absent, or not an integer (read as null).
    index: Int | None = 0
    message: Message | None = None
    delta: Message | None = None
    finish_reason: str | None = None
    # UNSET: the key present at all (null too) makes the body OpenRouter's.
    native_finish_reason: str | msgspec.UnsetType | None = msgspec.UNSET
    content_filter_results: Raw = NO_RAW
    content_filter_offsets: Raw = NO_RAW


class TokenDetails(msgspec.Struct, gc=False):
    cached_tokens: Count | None = 0
    cache_write_tokens: Count | None = 0  # OpenRouter


class ChatUsage(msgspec.Struct, gc=False):
    prompt_tokens: Count | None = 0
    completion_tokens: Count | None = 0
    prompt_tokens_details: TokenDetails | None = None
    prompt_cache_hit_tokens: Count | None = 0  # DeepSeek


class Groq(msgspec.Struct, gc=False):
    """Groq's `x_groq`, whose last stream chunk carries the usage."""

    usage: ChatUsage | None = None


class Completion(msgspec.Struct, gc=False):
    """A chat completion, or a stream chunk (which may also be an error body)."""

    id: str | None = None
    object: str | None = None
    type: str | None = None
    model: str | None = None
    # UNSET: a chunk without the key at all may be an error body.
    choices: list[Choice] | msgspec.UnsetType | None = msgspec.UNSET
    usage: ChatUsage | None = None
    system_fingerprint: str | None = None
    provider: str | None = None  # OpenRouter names the upstream here
    x_groq: Groq | msgspec.UnsetType | None = msgspec.UNSET
    prompt_filter_results: Raw = NO_RAW
    prompt_annotations: Raw = NO_RAW  # Azure's preview API versions
    moderation: Raw = NO_RAW
    # Raw: `{}` is no error, an object of other keys is one (OpenRouter's in a 200 body).
    error: Raw = NO_RAW
    # Bedrock InvokeModel's markers: a body with one is read by `bedrock`, and the strict
    # decode declines it.
    guardrail_action: Absent = msgspec.field(default=0, name="amazon-bedrock-guardrailAction")
    invocation_metrics: Absent = msgspec.field(default=0, name="amazon-bedrock-invocationMetrics")


decode_completion = msgspec.json.Decoder(Completion).decode
decode_legacy = msgspec.json.Decoder(Legacy).decode


# --- plain answers -----------------------------------------------------------------------
# For counting logs, where most bodies are plain answers: Structs that decode a completion
# only when `plain_completion` (detection without a provider) finds it one. Every key the
# Structs above declare is declared here as strictly or more (a key that could refuse,
# filter, fail the body or make it another vendor's is `Absent`), so a body these decode
# is one `Completion` decodes and finds plain; `plain_answer` gives its verdict from the
# few fields left. Any other body fails the decode and is read the usual way. Fields are
# declared in the order the API sends its keys (`kw_only` lets a required one follow
# others): msgspec looks each key up from the field after the last one it matched.

PlainFinish = Literal["stop", "length", "model_length", "tool_calls", "function_call", "eos"]
"""The `finish_reason` values that map to a plain finish (`response.FINISH_REASONS`)."""


class PlainFunction(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | None = None  # JSON text: any other value is read the usual way


class PlainCall(msgspec.Struct, gc=False):
    index: Int | None = None
    id: str | None = None
    function: PlainFunction | None = None
    custom: Absent = 0


class PlainMessage(msgspec.Struct, gc=False):
    role: Raw = NO_RAW
    content: str | None = None
    refusal: None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    reasoning_details: list[ReasoningEntry] | None = None
    tool_calls: list[PlainCall] | None = None
    function_call: Absent = 0


class PlainChoice(msgspec.Struct, gc=False, kw_only=True):
    index: Int | None = 0
    message: PlainMessage
    finish_reason: PlainFinish
    delta: None = None
    native_finish_reason: Absent = 0
    content_filter_results: Absent = 0
    content_filter_offsets: Raw = NO_RAW


class PlainCompletion(msgspec.Struct, gc=False, kw_only=True):
    """A chat completion that is a plain answer: one choice, its message of plain text
    and tool calls, nothing Azure, OpenRouter or an error could mark."""

    id: str | None = None
    object: Literal["chat.completion"]
    type: str | None = None
    model: str | None = None
    choices: Annotated[list[PlainChoice], msgspec.Meta(min_length=1, max_length=1)]
    usage: ChatUsage | None = None
    system_fingerprint: str | None = None
    provider: None = None
    x_groq: Groq | msgspec.UnsetType | None = msgspec.UNSET
    prompt_filter_results: Absent = 0
    prompt_annotations: Absent = 0
    moderation: Absent = 0
    error: Absent = 0
    guardrail_action: Absent = msgspec.field(default=0, name="amazon-bedrock-guardrailAction")
    invocation_metrics: Absent = msgspec.field(default=0, name="amazon-bedrock-invocationMetrics")


# --- error bodies ------------------------------------------------------------------------

# A message is a string, or (Mistral's validation errors) an object or array shown as
# JSON: Raw, so that its numbers read as orjson reads them (see `errors.text_value`).


class Metadata(msgspec.Struct, gc=False):
    """OpenRouter's `error.metadata`."""

    error_type: str | None = None
    reasons: list[Any] | None = None
    # UNSET: the key present at all says OpenRouter's moderation flagged the input.
    flagged_input: str | msgspec.UnsetType | None = msgspec.UNSET
    provider_name: str | None = None
    model_slug: str | None = None
    raw: Raw = NO_RAW


class Inner(msgspec.Struct, gc=False):
    """Azure's `error.innererror`."""

    code: str | None = None
    content_filter_result: Raw = NO_RAW
    content_filter_results: Raw = NO_RAW


class ErrorObject(msgspec.Struct, gc=False):
    message: Raw = NO_RAW
    # A string code; OpenRouter's numeric one is the HTTP status.
    code: str | Int | None = None
    type: str | None = None
    # google.rpc.Status (Gemini) spells the status as a name: a string here is not ours.
    status: str | Int | None = None
    param: str | None = None
    metadata: Metadata | None = None
    innererror: Inner | None = None
    content_filter_result: Raw = NO_RAW
    content_filter_results: Raw = NO_RAW


class ErrorBody(msgspec.Struct, gc=False):
    """An error body: OpenAI's `{"error": {...}}`, xAI's `{"code", "error": "..."}`,
    Mistral's `{"object": "error", "message", "type", "code"}`, or a bare message."""

    error: ErrorObject | str | None = None
    code: str | Int | None = None
    object: str | None = None
    message: Raw = NO_RAW
    detail: Raw = NO_RAW
    type: str | None = None


decode_error_body = msgspec.json.Decoder(ErrorBody).decode
decode_error_object = msgspec.json.Decoder(ErrorObject).decode
decode_error_text = msgspec.json.Decoder(str).decode
