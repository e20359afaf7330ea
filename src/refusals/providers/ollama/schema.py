"""Ollama's native wire (`/api/chat`, `/api/generate`), as msgspec Structs: the only
description of it. A stream line is a response body, so one Struct reads both.

Bytes are decoded strictly; anything else goes through the shared lenient pass
(`providers._lenient`) into the same Structs. Documentation:
https://github.com/ollama/ollama/blob/main/docs/api.md, https://docs.ollama.com/api/errors
"""

from __future__ import annotations

import msgspec

from refusals.providers._common import NO_RAW, Count, Raw
from refusals.providers._detection import ElsewhereKeys


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
    code: str | None = None
    type: str | None = None


class Body(ElsewhereKeys, gc=False):
    """A chat or generate body (or stream line), or an error body (`error`). The keys of
    other formats (`ElsewhereKeys`, and Cohere's) make detection look elsewhere."""

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
    # Cohere's, asked before Ollama's: a body with one of them is not Ollama's.
    finish_reason: Raw = NO_RAW
    generation_id: Raw = NO_RAW

    def claimed_elsewhere(self) -> bool:
        """Whether a key of another format is there (detection then looks elsewhere)."""
        return bool(self.finish_reason or self.generation_id) or ElsewhereKeys.claimed_elsewhere(
            self
        )


decode_body = msgspec.json.Decoder(Body).decode
decode_message = msgspec.json.Decoder(Message).decode
