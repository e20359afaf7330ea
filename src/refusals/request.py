"""The provider-neutral request: what the loop asks a model, before any wire format.

A `Request` holds the conversation (`Message`s), the tools on offer (`ToolSpec`s) and the
sampling settings. Each wire format has one builder that turns it into that provider's
request body (`request.py` in the format's folder under `refusals.providers`); the loop
builds `Request`s and never a provider's JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from refusals.model import ToolCall

JsonObject = dict[str, Any]

Role = Literal["user", "assistant", "tool"]


@dataclass(slots=True)
class ToolSpec:
    """A tool the model may call: its name, what it does, and its arguments' JSON schema."""

    name: str
    description: str = ""
    parameters: JsonObject = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(slots=True)
class Message:
    """One conversation turn.

    - `user`: `content` is the user's text.
    - `assistant`: `content` is the answer text (may be empty) and `tool_calls` the calls
      it made; `blocks` optionally keeps the provider's own content blocks (Anthropic
      `fallback` blocks, `pause_turn` content) so that they are sent back as they were.
    - `tool`: the result of the call `tool_call_id` (`name` is the tool's), in `content`;
      `is_error` marks a failed call.
    """

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    blocks: list[JsonObject] | None = None


@dataclass(slots=True)
class Request:
    """Everything one model call needs; fields not given take empty defaults.

    `model` is the provider's own model name (no `provider:` prefix); the clients send
    their own model instead, so it may stay empty. `fallbacks` lists
    models for Anthropic's server-side fallback (ignored by other wire formats).
    `extra` is merged into the provider body last, for options this model lacks.
    `fallback_credit_token` and `betas` are Anthropic-only, set by the fallback chain.
    """

    model: str = ""
    messages: list[Message] = field(default_factory=list)
    system: str | None = None
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int | None = None
    temperature: float | None = None
    stop: list[str] = field(default_factory=list)
    stream: bool = True
    fallbacks: list[str] = field(default_factory=list)
    extra: JsonObject = field(default_factory=dict)
    fallback_credit_token: str | None = None
    """Anthropic's token from a refusal's `stop_details`, redeemed on a fallback hop."""
    betas: list[str] = field(default_factory=list)
    """Extra `anthropic-beta` features to send (ignored by other wire formats)."""
    output_schema: JsonObject | None = None
    """A JSON Schema the final answer must follow (structured output), in each wire's
    own form: Anthropic `output_config.format`, OpenAI `response_format` / Responses
    `text.format`, Gemini `responseJsonSchema`. Bedrock Converse has none."""

    def with_model(self, model: str) -> Request:
        """The same request for another model (a fallback hop)."""
        return Request(
            model=model,
            messages=list(self.messages),
            system=self.system,
            tools=list(self.tools),
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            stop=list(self.stop),
            stream=self.stream,
            fallbacks=list(self.fallbacks),
            extra=dict(self.extra),
            fallback_credit_token=self.fallback_credit_token,
            betas=list(self.betas),
            output_schema=self.output_schema,
        )

    @property
    def last_user_text(self) -> str:
        """The text of the last user message (what scenario matching and logs look at)."""
        for message in reversed(self.messages):
            if message.role == "user":
                return message.content
        return ""
