"""Which vendor a Chat Completions body (or chunk, or error body) comes from, when no
provider is named: Azure's filter results, OpenRouter's `provider` and
`native_finish_reason`, Groq's `x_groq`, Ollama's fingerprint, the model's name, and for
error bodies the fields and wording each vendor's errors carry."""

from __future__ import annotations

import functools
import re
from typing import Any

import msgspec

from refusals.providers._common import JsonObject, arr, obj
from refusals.providers.openai_chat.errors import XAI_CHECK, is_error
from refusals.providers.openai_chat.filters import text_of
from refusals.providers.openai_chat.schema import Choice, Completion, PlainCompletion

_MISTRAL_MODEL = re.compile(r"mistral|ministral|codestral|magistral|devstral|pixtral")
_UNSET: Any = msgspec.UNSET


def detect_provider(body: JsonObject) -> str | None:
    """The vendor of a Chat Completions response or error body; None for other shapes."""
    if isinstance(body.get("choices"), list):
        return response_vendor(body)
    if "prompt_filter_results" in body or "prompt_annotations" in body:
        return "azure"
    if is_error(body):
        return error_vendor(body)
    return None


def looks_like(body: JsonObject) -> bool:
    """Whether `body` is a Chat Completions response or error body."""
    return detect_provider(body) is not None


def response_vendor(body: JsonObject) -> str:
    """The vendor of a decoded completion or chunk (see `vendor_of` for the Structs)."""
    if "prompt_filter_results" in body or "prompt_annotations" in body:
        return "azure"
    openrouter = isinstance(body.get("provider"), str)
    for choice in arr(body.get("choices")):
        if isinstance(choice, dict):
            if "content_filter_results" in choice:
                return "azure"
            openrouter = openrouter or "native_finish_reason" in choice
    if openrouter:
        return "openrouter"
    if "x_groq" in body:
        return "groq"
    if body.get("system_fingerprint") == "fp_ollama":
        return "ollama"
    model = body.get("model")
    return model_vendor(model) if type(model) is str else "openai"


def vendor_of(body: Completion, choices: list[Choice]) -> str:
    """`response_vendor` of a completion read through the schema."""
    if body.prompt_filter_results or body.prompt_annotations:
        return "azure"
    # A loop costs more than the usual single choice does, so that one is read directly.
    if len(choices) == 1:
        marked = choices[0]
        if marked.content_filter_results:
            return "azure"
        openrouter = marked.native_finish_reason is not _UNSET
    else:
        if any(choice.content_filter_results for choice in choices):
            return "azure"
        openrouter = any(choice.native_finish_reason is not _UNSET for choice in choices)
    if openrouter or body.provider is not None:
        return "openrouter"
    return served_by(body)


def served_by(body: Completion | PlainCompletion) -> str:
    """The vendor of a completion that no Azure or OpenRouter key marks: Groq's, Ollama's,
    or the model's."""
    if body.x_groq is not _UNSET:
        return "groq"
    if body.system_fingerprint == "fp_ollama":
        return "ollama"
    model = body.model
    if model is None:
        return "openai"
    vendor = _MODEL_VENDORS.get(model)
    return vendor if vendor is not None else _remember_vendor(model)


@functools.lru_cache(maxsize=512)
def model_vendor(model: str) -> str:
    """The vendor a model name belongs to; cached, since a client sees few distinct names.

    A name with an owner prefix (`mistralai/Mixtral-8x7B`, `deepseek-ai/DeepSeek-V3`) is
    how hosts and routers (Together, Fireworks, Hugging Face) name models they serve
    themselves: the vendor's error and finish dialect does not apply, so it is plain
    OpenAI-compatible. The caller's `provider` (or the URL) names the host.
    """
    name = model.lower()
    if "/" in name:
        return "openai"
    if name.startswith("deepseek"):
        return "deepseek"
    if name.startswith("grok"):
        return "xai"
    if _MISTRAL_MODEL.search(name):
        return "mistral"
    return "openai"


def _remember_vendor(model: str) -> str:
    """`model_vendor`, remembered in `_MODEL_VENDORS` (about 45 ns less than its lru_cache)."""
    vendor = model_vendor(model)
    if len(_MODEL_VENDORS) < _MODEL_VENDORS_KEPT:
        _MODEL_VENDORS[model] = vendor
    return vendor


# Bounded like the lru_cache (a client sees few distinct names), but never evicting.
_MODEL_VENDORS: dict[str, str] = {}
_MODEL_VENDORS_KEPT = 512


def error_vendor(body: JsonObject) -> str | None:
    """The vendor of an error body (`is_error`), from the fields and words it carries."""
    if body.get("object") == "error":
        return "mistral"
    error = body.get("error")
    if isinstance(error, str):
        # A bare `{"error": "..."}` is also Ollama's native shape: only xAI's is claimed.
        code = body.get("code")
        if isinstance(code, str) or XAI_CHECK.search(error) or "console.x.ai" in error:
            return "xai"
        return None
    err = obj(error)
    message = text_of(err.get("message")) or ""
    if "innererror" in err or "Azure OpenAI" in message:
        return "azure"
    code = err.get("code")
    int_code = isinstance(code, int) and not isinstance(code, bool)
    if "metadata" in err or "user_id" in body or (int_code and "param" not in err):
        return "openrouter"
    if "Content Exists Risk" in message or "deepseek" in message.lower():
        return "deepseek"
    if "groq" in message.lower():
        return "groq"
    if "console.x.ai" in message:
        return "xai"
    return "openai"
