"""The hot-path constructors give exactly what the dataclass constructors give."""

from __future__ import annotations

import inspect
from dataclasses import fields

from refusals.model import (
    ErrorKind,
    FinishReason,
    LLMResponse,
    ProviderError,
    ToolCall,
    Usage,
    new_response,
    new_usage,
)


def test_new_response_takes_every_field_in_order() -> None:
    names = [item.name for item in fields(LLMResponse)]
    assert list(inspect.signature(new_response).parameters) == names


def test_new_usage_takes_every_field_in_order() -> None:
    names = [item.name for item in fields(Usage)]
    assert list(inspect.signature(new_usage).parameters) == names


def test_new_response_equals_the_constructor() -> None:
    values = {
        "content": "text",
        "tool_calls": [ToolCall("id", "name", "{}")],
        "reasoning": "thought",
        "reasoning_details": ['{"type":"x"}'],
        "usage": new_usage(1, 2, 3, 4, [{"type": "message"}]),
        "finish_reason": FinishReason.REFUSAL,
        "raw_finish_reason": "refusal",
        "model": "m",
        "request_id": "r",
        "provider": "p",
        "api": "a",
        "cut_off": True,
        "error": ProviderError(ErrorKind.POLICY, 400, "c", "m"),
    }
    built = new_response(**values)  # type: ignore[arg-type]
    assert built == LLMResponse(**values)  # type: ignore[arg-type]
    for name, value in values.items():
        assert getattr(built, name) is value
    assert new_response(*list(values.values())[:-1]).error is None  # type: ignore[arg-type]
    assert new_usage(1, 2, 3, 4, []) == Usage(1, 2, 3, 4, [])
