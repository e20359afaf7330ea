"""The reference module's seven tests, ported one for one (same inputs, same strings)."""

from __future__ import annotations

import json
from typing import Any

from refusals import (
    FinishReason,
    LLMResponse,
    Usage,
    is_refusal,
    is_refusal_notice,
    refusal_reason,
)
from refusals.refusal import MAX_EXPLANATION_CHARS


def refusal(content: str | None, details: list[dict[str, Any]]) -> LLMResponse:
    return LLMResponse(
        content=content,
        finish_reason=FinishReason.REFUSAL,
        reasoning_details=[json.dumps(detail) for detail in details] if details else None,
    )


def test_reports_category_and_explanation_without_fallback_claim() -> None:
    response = refusal(
        None,
        [
            {
                "type": "stop_details",
                "category": "cyber",
                "explanation": "This looks like malware development.",
            }
        ],
    )
    reason = refusal_reason(response)
    assert reason == (
        "The model declined this request (category: cyber): this looks like malware "
        "development. The request was not retried; rephrase it or switch models."
    )
    assert ".." not in reason
    assert "fallback" not in reason
    assert is_refusal_notice(reason)


def test_mentions_fallback_only_when_a_fallback_model_ran() -> None:
    response = refusal(None, [{"type": "stop_details", "category": "cyber"}])
    response.usage = Usage(
        iterations=[
            {"type": "message", "input_tokens": 10, "output_tokens": 0},
            {"type": "fallback_message", "input_tokens": 10, "output_tokens": 0},
        ]
    )
    assert refusal_reason(response) == (
        "The model declined this request (category: cyber). The configured fallback model "
        "also declined. The request was not retried; rephrase it or switch models."
    )

    served = refusal(
        None,
        [
            {"type": "fallback", "from": {"model": "a"}, "to": {"model": "b"}},
            {"type": "stop_details", "category": "bio"},
        ],
    )
    assert "The configured fallback model also declined." in refusal_reason(served)


def test_reports_recommended_model_that_could_not_run() -> None:
    response = refusal(
        None,
        [
            {
                "type": "stop_details",
                "category": "cyber",
                "recommended_model": "claude-opus-4-8",
            }
        ],
    )
    assert refusal_reason(response) == (
        "The model declined this request (category: cyber). A fallback to `claude-opus-4-8` "
        "was recommended but could not run. The request was not retried; rephrase it or "
        "switch models."
    )


def test_uses_bounded_content_when_stop_details_are_absent() -> None:
    response = refusal("  I can't help with that.\n\nPlease ask something else.  ", [])
    assert refusal_reason(response) == (
        "The model declined this request: I can't help with that. Please ask something else. "
        "The request was not retried; rephrase it or switch models."
    )

    long = "Sorry " * 200
    bounded = refusal_reason(refusal(long, []))
    assert "sorry Sorry" in bounded
    assert "..." in bounded
    assert "...." not in bounded
    assert len(bounded) < MAX_EXPLANATION_CHARS + 150


def test_stop_details_explanation_takes_precedence_over_content() -> None:
    response = refusal(
        "partial answer that was cut off",
        [{"type": "stop_details", "category": "cyber", "explanation": "Policy violation"}],
    )
    reason = refusal_reason(response)
    assert ": policy violation." in reason
    assert "partial answer" not in reason


def test_plain_refusal_has_no_category_or_fallback() -> None:
    assert refusal_reason(refusal(None, [])) == (
        "The model declined this request. The request was not retried; rephrase it or "
        "switch models."
    )
    assert is_refusal(refusal(None, []))
    assert not is_refusal(LLMResponse())


def test_keeps_case_of_acronyms_after_colon() -> None:
    response = refusal("CSAM content is not allowed", [])
    assert ": CSAM content is not allowed." in refusal_reason(response)
