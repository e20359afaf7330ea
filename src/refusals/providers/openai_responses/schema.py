"""The OpenAI Responses wire (and Azure's), as msgspec Structs: the only description of it.

Bodies (the Responses object) and stream events. Azure's `content_filters` and OpenAI's
`moderation` stay `Raw`: `openai_chat.filters` reads them, as it does for Chat
Completions. Bytes are decoded strictly; anything else goes through the shared lenient
pass (`providers._lenient`) into the same Structs.
https://platform.openai.com/docs/api-reference/responses/object,
https://platform.openai.com/docs/api-reference/responses-streaming
"""

from __future__ import annotations

import msgspec

from refusals.providers._common import NO_RAW, Int, Raw


class Part(msgspec.Struct):
    """A message content part, or a reasoning summary or content part."""

    type: str | None = None
    text: str | None = None
    refusal: str | None = None


class Item(msgspec.Struct):
    type: str | None = None
    content: list[Part] | None = None
    summary: list[Part] | None = None
    call_id: str | None = None
    id: str | None = None
    name: str | None = None
    arguments: Raw = NO_RAW
    input: Raw = NO_RAW


class Incomplete(msgspec.Struct):
    reason: str | None = None


class TokenDetails(msgspec.Struct):
    # 0 for null as for absent: `integer` reads both as 0.
    cached_tokens: Int | None = 0
    cache_write_tokens: Int | None = 0


class ResponseUsage(msgspec.Struct):
    input_tokens: Int | None = 0
    output_tokens: Int | None = 0
    input_tokens_details: TokenDetails | None = None


class Response(msgspec.Struct):
    object: str | None = None
    id: str | None = None
    model: str | None = None
    status: str | None = None
    output: list[Item] | None = None
    incomplete_details: Incomplete | None = None
    error: Raw = NO_RAW
    content_filters: Raw = NO_RAW
    moderation: Raw = NO_RAW
    usage: ResponseUsage | None = None
    choices: Raw = NO_RAW
    # Not read: a scan asks every format's Struct for a bare body's `type`, which tells an
    # exec event or a proxy line from a body.
    type: Raw = NO_RAW
    guardrail_action: Raw = msgspec.field(default=NO_RAW, name="amazon-bedrock-guardrailAction")
    invocation_metrics: Raw = msgspec.field(default=NO_RAW, name="amazon-bedrock-invocationMetrics")


decode_response = msgspec.json.Decoder(Response).decode


class Event(msgspec.Struct):
    """A stream event of any type; `type` (or the SSE name) says which fields matter."""

    type: str | None = None
    delta: str | None = None
    # Where the event belongs; values of other types read as null.
    output_index: Int | str | msgspec.UnsetType | None = msgspec.UNSET
    item_id: Int | str | None = None
    content_index: Int | str | None = None
    summary_index: Int | str | None = None
    item: Item | None = None
    part: Part | None = None
    response: Response | None = None
    refusal: str | None = None
    # The `done` events of arguments (`arguments`, or `input` for custom tools), and an
    # error event's fields: any JSON value, read when the event is.
    arguments: Raw = NO_RAW
    input: Raw = NO_RAW
    error: Raw = NO_RAW
    code: Raw = NO_RAW
    message: Raw = NO_RAW
    param: Raw = NO_RAW


decode_event = msgspec.json.Decoder(Event).decode
