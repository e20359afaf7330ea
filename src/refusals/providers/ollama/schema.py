"""Ollama's native wire (`/api/chat`, `/api/generate`), as msgspec Structs: the only
description of it. A stream line is a response body, so one Struct reads both.

Bytes are decoded strictly; anything else goes through the shared lenient pass
(`providers._lenient`) into the same Structs. Documentation:
https://github.com/ollama/ollama/blob/main/docs/api.md, https://docs.ollama.com/api/errors
"""

from __future__ import annotations

import msgspec

from refusals.providers._common import NO_RAW, Count, Raw


class Function(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: Raw = NO_RAW


class ToolCallItem(msgspec.Struct, gc=False):
    id: str | None = None
    function: Function | None = None


class Message(msgspec.Struct, gc=False):
    content: str | None = None
    thinking: str | None = None
    tool_calls: list[ToolCallItem] | None = None


class ErrorObject(msgspec.Struct, gc=False):
    """The OpenAI-style error of Ollama's `/v1` endpoints."""

    message: str | None = None


class Body(msgspec.Struct, gc=False):
    """A chat or generate body (or stream line), or an error body (`error`)."""

    model: str | None = None
    # Raw: an empty object reads as no message (a generate body), which a Struct cannot
    # tell from an object with only keys it does not declare (see `response.message_of`).
    message: Raw = NO_RAW
    # UNSET where the reader asks whether the key is there at all (null included).
    response: str | msgspec.UnsetType | None = msgspec.UNSET
    thinking: str | None = None
    done_reason: str | msgspec.UnsetType | None = msgspec.UNSET
    done: bool | msgspec.UnsetType | None = msgspec.UNSET
    prompt_eval_count: Count | None = 0
    eval_count: Count | None = 0
    error: str | ErrorObject | None = None
    # Keys that make detection look elsewhere, for a body without a provider name: the
    # ones earlier formats claim a body by (`_CLAIMED_EARLIER` in providers/__init__.py),
    # `choices` (an OpenAI-style body), the ones `bedrock.is_invoke_body` reads, and the
    # ones Cohere's detection, asked first, claims a body by.
    type: Raw = NO_RAW
    object: Raw = NO_RAW
    output: Raw = NO_RAW
    candidates: Raw = NO_RAW
    promptFeedback: Raw = NO_RAW
    prompt_feedback: Raw = NO_RAW
    usageMetadata: Raw = NO_RAW
    usage_metadata: Raw = NO_RAW
    stopReason: Raw = NO_RAW
    aws_type: Raw = msgspec.field(default=NO_RAW, name="__type")
    aws_error: Raw = msgspec.field(default=NO_RAW, name="Error")
    choices: Raw = NO_RAW
    guardrail_action: Raw = msgspec.field(default=NO_RAW, name="amazon-bedrock-guardrailAction")
    invocation_metrics: Raw = msgspec.field(default=NO_RAW, name="amazon-bedrock-invocationMetrics")
    results: Raw = NO_RAW
    generation: Raw = NO_RAW
    outputs: Raw = NO_RAW
    finish_reason: Raw = NO_RAW
    generation_id: Raw = NO_RAW

    def claimed_elsewhere(self) -> bool:
        """Whether a key of another format is there (detection then looks elsewhere)."""
        return bool(
            self.type or self.object or self.output or self.candidates or self.promptFeedback
            or self.prompt_feedback or self.usageMetadata or self.usage_metadata
            or self.stopReason or self.aws_type or self.aws_error or self.choices
            or self.guardrail_action or self.invocation_metrics or self.results
            or self.generation or self.outputs or self.finish_reason or self.generation_id
        )  # fmt: skip


decode_body = msgspec.json.Decoder(Body).decode
decode_message = msgspec.json.Decoder(Message).decode
