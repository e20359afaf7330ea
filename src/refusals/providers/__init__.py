"""Provider wire formats: one module each, behind one entry point, `normalize`.

Each wire-format module exposes `API` (the API it speaks), `parse_response(body,
provider)` for a full response body and `parse_error(body, status, provider)` for an HTTP
error body; both return an `LLMResponse`. `normalize` decodes the payload, works out
the wire format from `provider` or from the body's shape, and dispatches.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import orjson

from refusals.model import LLMResponse
from refusals.providers import (
    anthropic,
    bedrock,
    cohere,
    gemini,
    ollama,
    openai_chat,
    openai_responses,
)
from refusals.providers._common import JsonObject, NormalizeError, key_names, type_name

__all__ = ["PROVIDERS", "NormalizeError", "decode_payload", "detect", "normalize"]

PROVIDERS: tuple[str, ...] = (
    "anthropic",
    "openai",
    "openai-responses",
    "azure",
    "gemini",
    "vertex",
    "bedrock",
    "openrouter",
    "deepseek",
    "xai",
    "groq",
    "mistral",
    "cohere",
    "ollama",
)
"""Provider names accepted by `--provider` and as the prefix of model strings."""

# Vendors whose API is OpenAI Chat Completions with their own extensions and errors.
_CHAT_COMPATIBLE = frozenset(
    {"openai", "azure", "openrouter", "deepseek", "xai", "groq", "mistral"}
)

_EXPECTED = (
    "a provider response or error body (Anthropic Messages, OpenAI Chat Completions or "
    "Responses, Azure OpenAI, Gemini/Vertex, Bedrock Converse, Cohere, Ollama, or an "
    "OpenAI-compatible vendor)"
)


def decode_payload(payload: Any) -> Any:
    """A payload as plain JSON values: bytes and text are parsed, SDK objects dumped."""
    if type(payload) is bytes or isinstance(payload, bytearray | memoryview | str):
        try:
            return orjson.loads(payload)
        except orjson.JSONDecodeError as exc:
            if not (payload.strip() if isinstance(payload, str) else bytes(payload).strip()):
                raise NormalizeError(f"the payload is empty; expected {_EXPECTED}") from None
            raise NormalizeError(f"the payload is not JSON ({exc}); expected {_EXPECTED}") from None
    if isinstance(payload, dict | list) or payload is None:
        return payload
    for method in ("model_dump", "to_dict"):
        dump: Callable[..., Any] | None = getattr(payload, method, None)
        if callable(dump):
            return dump(mode="json") if method == "model_dump" else dump()
    raise NormalizeError(f"cannot read a {type(payload).__name__}; expected {_EXPECTED}")


def _module_for(provider: str, body: JsonObject) -> ModuleType:
    if provider == "anthropic":
        return anthropic
    if provider == "openai-responses":
        return openai_responses
    if provider in ("gemini", "vertex"):
        return gemini
    if provider == "bedrock":
        return bedrock
    if provider == "cohere":
        return cohere
    if provider == "ollama":
        return openai_chat if "choices" in body else ollama
    if provider in _CHAT_COMPATIBLE:
        if openai_responses.looks_like(body):
            return openai_responses
        return openai_chat
    raise NormalizeError(f"unknown provider {provider!r}; expected one of: {', '.join(PROVIDERS)}")


def detect(body: Any) -> tuple[str, ModuleType]:
    """The provider name and wire-format module a body's shape belongs to."""
    if not isinstance(body, dict):
        raise NormalizeError(f"expected {_EXPECTED}, got {type_name(body)}")
    hinted = _hint(body)
    if hinted is not None:
        name: str | None = hinted.detect_provider(body)
        if name is not None:
            return name, hinted
    # Most specific shapes first: a generic `{"error": {...}}` body is OpenAI-style.
    for module in (anthropic, openai_responses, gemini, bedrock, cohere, ollama, openai_chat):
        provider: str | None = module.detect_provider(body)
        if provider is not None:
            return provider, module
    raise NormalizeError(
        f"unrecognised JSON object (keys: {key_names(body)}); expected {_EXPECTED}"
    )


def _hint(body: JsonObject) -> ModuleType | None:
    """The module a body's most telling key points to, checked before the full search."""
    kind = body.get("object")
    if kind == "chat.completion":
        return openai_chat
    if kind == "response":
        return openai_responses
    if body.get("type") in ("message", "error"):
        return anthropic
    if "candidates" in body or "promptFeedback" in body:
        return gemini
    if "stopReason" in body:
        return bedrock
    return None


def normalize(payload: Any, provider: str | None = None, status: int | None = None) -> LLMResponse:
    """Turn a recorded response or HTTP error body into an `LLMResponse`.

    `payload` is bytes, text, a decoded dict, or an official SDK object (anything with
    `model_dump()` or `to_dict()`). `provider` names the API (see `PROVIDERS`); without
    it the wire format is recognised from the body's shape. `status` is the HTTP status
    when the body came with one: any status of 400 or more reads the body as an error.
    Raises `NormalizeError` for anything that is not a known body.
    """
    try:
        body = decode_payload(payload)
    except NormalizeError:
        if status is not None and status >= 400 and isinstance(payload, bytes | str):
            # Gateways answer some errors with HTML or plain text; the status still speaks.
            text = payload if isinstance(payload, str) else payload.decode("utf-8", "replace")
            name = provider or "unknown"
            module = _module_for(name, {}) if provider else openai_chat
            result: LLMResponse = module.parse_error(text, status, name)
            return result
        raise
    if provider is not None:
        provider = provider.lower()
        is_error_list = isinstance(body, list) and status is not None and status >= 400
        if not isinstance(body, dict) and not is_error_list:
            raise NormalizeError(f"expected a JSON object for {provider}, got {type_name(body)}")
        module = _module_for(provider, body if isinstance(body, dict) else {})
    elif status is not None and status >= 400 and isinstance(body, dict):
        try:
            provider, module = detect(body)
        except NormalizeError:
            # An error body of no known shape: the status alone still classifies it.
            provider, module = "unknown", openai_chat
    else:
        provider, module = detect(body)
    if (status is not None and status >= 400) or module.is_error(body):
        result = module.parse_error(body, status, provider)
    else:
        result = module.parse_response(body, provider)
    return result
