"""One writer per wire format, by the name the request log and routes use."""

from __future__ import annotations

from refusals.mock.wire._base import Wire
from refusals.mock.wire.anthropic import AnthropicWire
from refusals.mock.wire.bedrock import BedrockWire
from refusals.mock.wire.cohere import CohereWire
from refusals.mock.wire.gemini import GeminiWire
from refusals.mock.wire.ollama import OllamaWire
from refusals.mock.wire.openai_chat import WIRE_NAMES as CHAT_WIRES
from refusals.mock.wire.openai_chat import ChatWire
from refusals.mock.wire.openai_responses import ResponsesWire

WIRES: dict[str, Wire] = {
    "anthropic": AnthropicWire(),
    **{name: ChatWire(name) for name in CHAT_WIRES},
    "openai-responses": ResponsesWire(),
    "gemini": GeminiWire("gemini"),
    "vertex": GeminiWire("vertex"),
    "bedrock": BedrockWire(),
    "cohere": CohereWire(),
    "ollama": OllamaWire(),
}
"""Wire name → its writer."""

__all__ = ["WIRES", "Wire"]
