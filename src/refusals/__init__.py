"""refusals: make LLM refusals first-class.

Everything importable from here is public; other modules are implementation details.
"""

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
from refusals.sanitize import sanitize
from refusals.stream import (
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
    "NormalizeError",
    "ProviderError",
    "ReasoningDelta",
    "RefusalDelta",
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
