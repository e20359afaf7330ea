"""refusals: make LLM refusals first-class.

Everything importable from here is public; other modules are implementation details.
The names load on first use (PEP 562), so that `import refusals` and `refusals --help`
cost next to nothing beside the interpreter's own start.
"""

from __future__ import annotations

import importlib

# Eager, and light (only `re`): the function shares its name with its module, and a lazy
# binding would be shadowed by the module once anything imports `refusals.sanitize`.
from refusals.sanitize import sanitize

# Not `typing.TYPE_CHECKING`: importing typing is a measurable share of a bare import, and
# mypy treats any name TYPE_CHECKING as true.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from refusals.events import (
        FallbackSeam,
        ReasoningDelta,
        RefusalDelta,
        StreamError,
        StreamEvent,
        TextDelta,
        ToolCallDelta,
        UsageUpdate,
        Verdict,
    )
    from refusals.model import (
        ErrorKind,
        Fallback,
        FinishReason,
        LLMResponse,
        ProviderError,
        StopDetails,
        ToolCall,
        Usage,
    )
    from refusals.providers import NormalizeError, normalize
    from refusals.refusal import (
        CONTENT_FILTER_ALTERED_PREFIX,
        CONTENT_FILTER_NOTICE_PREFIX,
        REFUSAL_NOTICE_PREFIX,
        content_filter_reason,
        is_blocked_notice,
        is_content_filter_notice,
        is_content_filtered,
        is_refusal,
        is_refusal_notice,
        notice,
        refusal_reason,
    )
    from refusals.request import Message, Request
    from refusals.transport.clients import client_for
    from refusals.transport.streams import StreamDecoder, decode_stream

__all__ = [
    "CONTENT_FILTER_ALTERED_PREFIX",
    "CONTENT_FILTER_NOTICE_PREFIX",
    "REFUSAL_NOTICE_PREFIX",
    "ErrorKind",
    "Fallback",
    "FallbackSeam",
    "FinishReason",
    "LLMResponse",
    "Message",
    "NormalizeError",
    "ProviderError",
    "ReasoningDelta",
    "RefusalDelta",
    "Request",
    "StopDetails",
    "StreamDecoder",
    "StreamError",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
    "UsageUpdate",
    "Verdict",
    "client_for",
    "content_filter_reason",
    "decode_stream",
    "is_blocked_notice",
    "is_content_filter_notice",
    "is_content_filtered",
    "is_refusal",
    "is_refusal_notice",
    "normalize",
    "notice",
    "refusal_reason",
    "sanitize",
]

__version__ = "0.1.0"

_MODEL = "refusals.model"
_REFUSAL = "refusals.refusal"
_STREAM = "refusals.events"

# public name -> module that defines it; read only by __getattr__ below.
_LAZY: dict[str, str] = {
    "ErrorKind": _MODEL,
    "Fallback": _MODEL,
    "FinishReason": _MODEL,
    "LLMResponse": _MODEL,
    "ProviderError": _MODEL,
    "StopDetails": _MODEL,
    "ToolCall": _MODEL,
    "Usage": _MODEL,
    "NormalizeError": "refusals.providers",
    "normalize": "refusals.providers",
    "CONTENT_FILTER_ALTERED_PREFIX": _REFUSAL,
    "CONTENT_FILTER_NOTICE_PREFIX": _REFUSAL,
    "REFUSAL_NOTICE_PREFIX": _REFUSAL,
    "content_filter_reason": _REFUSAL,
    "is_blocked_notice": _REFUSAL,
    "is_content_filter_notice": _REFUSAL,
    "is_content_filtered": _REFUSAL,
    "is_refusal": _REFUSAL,
    "is_refusal_notice": _REFUSAL,
    "notice": _REFUSAL,
    "refusal_reason": _REFUSAL,
    "FallbackSeam": _STREAM,
    "ReasoningDelta": _STREAM,
    "RefusalDelta": _STREAM,
    "StreamError": _STREAM,
    "StreamEvent": _STREAM,
    "TextDelta": _STREAM,
    "ToolCallDelta": _STREAM,
    "UsageUpdate": _STREAM,
    "Verdict": _STREAM,
    "StreamDecoder": "refusals.transport.streams",
    "decode_stream": "refusals.transport.streams",
    # The calling half: a client for PROVIDER:MODEL, and what to ask it.
    "client_for": "refusals.transport.clients",
    "Message": "refusals.request",
    "Request": "refusals.request",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'refusals' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    # Cache it so the next read is a plain module attribute, not another call here.
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
