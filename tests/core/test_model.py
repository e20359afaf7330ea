"""The response model: keyword construction, typed views of reasoning details."""

from __future__ import annotations

import json
from typing import Any

import pytest

from refusals import (
    ErrorKind,
    Fallback,
    FinishReason,
    LLMResponse,
    ProviderError,
    StopDetails,
    Usage,
    content_filter_reason,
    is_blocked_notice,
    is_content_filter_notice,
    is_refusal_notice,
    notice,
    refusal_reason,
)
from refusals.model import MAX_JSON_DEPTH, MAX_REPR_CHARS, loads_lenient, sanitize_json


def test_fields_not_given_are_empty() -> None:
    response = LLMResponse()
    assert response.content is None
    assert response.tool_calls == []
    assert response.reasoning_details == []
    assert response.usage == Usage()
    assert response.finish_reason is FinishReason.STOP
    assert response.raw_finish_reason is None
    assert response.stop_details is None
    assert response.fallbacks == []
    assert not response.served_by_fallback
    assert not response.cut_off


def test_finish_reasons_keep_refusal_and_content_filter_apart() -> None:
    assert [reason.value for reason in FinishReason] == [
        "stop",
        "length",
        "tool_calls",
        "content_filter",
        "pause",
        "refusal",
        "error",
    ]


def test_stop_details_are_read_from_the_first_stop_details_detail() -> None:
    response = LLMResponse(
        finish_reason=FinishReason.REFUSAL,
        reasoning_details=[
            '{"type": "thinking", "signature": "x"}',
            "not json",
            '{"type": "stop_details", "category": "cyber", "explanation": "No.",'
            ' "recommended_model": "claude-opus-4-8", "fallback_credit_token": "tok",'
            ' "fallback_has_prefill_claim": true}',
            '{"type": "stop_details", "category": "bio"}',
        ],
    )
    assert response.stop_details == StopDetails(
        category="cyber",
        explanation="No.",
        recommended_model="claude-opus-4-8",
        fallback_credit_token="tok",
        fallback_has_prefill_claim=True,
    )


def test_dict_details_are_treated_like_json_texts() -> None:
    as_text = LLMResponse(
        finish_reason=FinishReason.REFUSAL,
        reasoning_details=['{"type": "stop_details", "category": "bio"}'],
    )
    as_dict = LLMResponse(
        finish_reason=FinishReason.REFUSAL,
        reasoning_details=[{"type": "stop_details", "category": "bio"}],
    )
    assert as_dict.stop_details == as_text.stop_details
    assert refusal_reason(as_dict) == refusal_reason(as_text)


def test_non_strict_json_details_are_skipped_like_the_reference() -> None:
    for text in (
        '{"type": "stop_details", "category": "cyber", "x": NaN}',
        '{"type": "stop_details", "category": "cyber",}',
        '{"type": "stop_details", "category": "cyber", "x": "\\ud800"}',
        '{"type": "stop_details", "category": "cyber", "x": 1e400}',
        '{"type": "stop_details", "category": "cyber", "x": ' + "[" * 128 + "]" * 128 + "}",
    ):
        response = LLMResponse(finish_reason=FinishReason.REFUSAL, reasoning_details=[text])
        assert response.stop_details is None, text
        assert refusal_reason(response) == (
            "The model declined this request. The request was not retried; rephrase it or "
            "switch models."
        )


def test_non_string_fields_are_not_read_as_text() -> None:
    response = LLMResponse(
        finish_reason=FinishReason.REFUSAL,
        reasoning_details=[{"type": "stop_details", "category": 7, "explanation": None}],
        content="Fallback text here",
    )
    assert refusal_reason(response) == (
        "The model declined this request: fallback text here. The request was not retried; "
        "rephrase it or switch models."
    )


def test_fallback_facts_name_the_declined_and_serving_models() -> None:
    response = LLMResponse(
        reasoning_details=[
            Fallback(
                from_model="claude-fable-5", to_model="claude-opus-4-8", trigger="refusal"
            ).to_detail()
        ],
        usage=Usage(
            iterations=[
                {"type": "message", "model": "claude-fable-5"},
                {"type": "fallback_message", "model": "claude-opus-4-8"},
            ]
        ),
    )
    assert response.fallbacks == [
        Fallback(from_model="claude-fable-5", to_model="claude-opus-4-8", trigger="refusal")
    ]
    assert response.served_by_fallback
    assert response.declined_models == ["claude-fable-5"]
    assert response.fallback_model == "claude-opus-4-8"


def test_fallback_iterations_alone_name_the_models() -> None:
    response = LLMResponse(
        usage=Usage(
            iterations=[
                {"type": "message", "model": "a"},
                {"type": "fallback_message", "model": "b"},
            ]
        )
    )
    assert response.declined_models == ["a"]
    assert response.fallback_model == "b"


def test_usage_none_is_tolerated() -> None:
    response = LLMResponse(finish_reason=FinishReason.REFUSAL, usage=None, reasoning_details=None)
    assert not response.served_by_fallback
    assert refusal_reason(response).startswith("The model declined this request.")


def test_content_filter_notice_states_categories_and_explanation() -> None:
    response = LLMResponse(
        finish_reason=FinishReason.CONTENT_FILTER,
        content="Here is the first half of",
        reasoning_details=[
            StopDetails(
                categories=("hate", "violence"),
                explanation="Content was blocked by the provider's filter",
            ).to_detail()
        ],
    )
    text = content_filter_reason(response)
    assert text == (
        "The provider's content filter blocked this request (categories: hate, violence): "
        "content was blocked by the provider's filter. The request was not retried; "
        "rephrase it or switch models."
    )
    assert notice(response) == text
    assert is_content_filter_notice(text)
    assert is_blocked_notice("  \n" + text)
    assert not is_refusal_notice(text)


def test_content_filter_notice_with_one_category_and_no_explanation() -> None:
    response = LLMResponse(
        finish_reason=FinishReason.CONTENT_FILTER,
        reasoning_details=[StopDetails(category="SAFETY").to_detail()],
    )
    assert content_filter_reason(response) == (
        "The provider's content filter blocked this request (category: SAFETY). "
        "The request was not retried; rephrase it or switch models."
    )


def test_only_refusals_and_filters_have_a_notice() -> None:
    for reason in FinishReason:
        response = LLMResponse(finish_reason=reason)
        text = notice(response)
        if reason in (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER):
            assert text is not None
            assert is_blocked_notice(text)
        else:
            assert text is None


def test_notice_prefix_matching_ignores_only_unicode_white_space() -> None:
    text = refusal_reason(LLMResponse(finish_reason=FinishReason.REFUSAL))
    assert is_refusal_notice("\u3000\n " + text)
    # U+001F is whitespace to Python's str.strip but not to Rust, so not to the reference.
    assert not is_refusal_notice("\x1f" + text)


def test_stop_details_round_trip_through_a_detail() -> None:
    stop = StopDetails(category="bio", explanation="x", fallback_has_prefill_claim=False)
    assert json.loads(stop.to_detail())["type"] == "stop_details"
    assert LLMResponse(reasoning_details=[stop.to_detail()]).stop_details == stop


# --- hardening: altered output, retry advice, hostile values, bounded repr ---------------


def test_stop_details_carry_how_a_filter_altered_the_output() -> None:
    stop = StopDetails(category="email", altered="anonymized")
    assert not stop.is_empty()
    assert not StopDetails(altered="masked").is_empty()
    response = LLMResponse(
        finish_reason=FinishReason.CONTENT_FILTER, reasoning_details=[stop.to_detail()]
    )
    assert response.stop_details == stop


def test_the_notice_of_altered_output_says_altered_and_how() -> None:
    response = LLMResponse(
        finish_reason=FinishReason.CONTENT_FILTER,
        reasoning_details=[
            StopDetails(
                category="email", categories=("email", "phone"), altered="anonymized"
            ).to_detail()
        ],
    )
    text = content_filter_reason(response)
    assert text == (
        "The provider's content filter altered this response (anonymized; categories: email, "
        "phone). The request was not retried; rephrase it or switch models."
    )
    assert is_content_filter_notice(text)
    assert is_blocked_notice(text)
    assert not is_refusal_notice(text)
    bare = LLMResponse(
        finish_reason=FinishReason.CONTENT_FILTER,
        reasoning_details=[StopDetails(altered="masked").to_detail()],
    )
    assert content_filter_reason(bare) == (
        "The provider's content filter altered this response (masked). "
        "The request was not retried; rephrase it or switch models."
    )


def test_sanitize_json_tames_surrogates_huge_integers_and_depth() -> None:
    deep: Any = "leaf"
    for _ in range(5000):
        deep = [deep]
    value = sanitize_json({"\ud800k": ["a\udfffb", 2**70, -(2**70), 3, True, None], "d": deep})
    assert value["\ufffdk"][:2] == ["a\ufffdb", float(2**70)]
    assert value["\ufffdk"][2:] == [float(-(2**70)), 3, True, None]
    depth, node = 0, value["d"]
    while isinstance(node, list):
        node, depth = node[0], depth + 1
    assert node is None
    assert depth == MAX_JSON_DEPTH - 1


def test_loads_lenient_reads_escaped_lone_surrogates_and_bad_utf8() -> None:
    assert loads_lenient(b'{"a": "x\\ud83d"}') == {"a": "x\ufffd"}
    assert loads_lenient(b'{"a": "caf\xe9"}') == {"a": "caf\ufffd"}
    with pytest.raises(ValueError):
        loads_lenient(b"{not json")
    with pytest.raises(ValueError):
        loads_lenient("[NaN]")


def test_repr_of_a_response_is_bounded_and_says_what_was_cut() -> None:
    deep: Any = {}
    for _ in range(3000):
        deep = {"a": deep}
    response = LLMResponse(
        content="x" * 1_000_000,
        reasoning_details=["d" * 10_000] * 500 + [deep],
    )
    text = repr(response)
    assert len(text) <= MAX_REPR_CHARS + 100
    assert "more characters" in text


def test_retryable_means_transient_and_not_advised_against() -> None:
    assert ProviderError(ErrorKind.TRANSIENT, retry_after=2.0).retryable
    assert not ProviderError(ErrorKind.TRANSIENT, should_retry=False).retryable
    assert not ProviderError(ErrorKind.POLICY, should_retry=True).retryable


def test_typed_details_are_decoded_once_and_never_shared_mutably() -> None:
    detail = StopDetails(category="cyber", explanation="no", categories=("a", "b")).to_detail()
    response = LLMResponse(finish_reason=FinishReason.REFUSAL, reasoning_details=[detail])
    first = response.stop_details
    assert first == StopDetails(category="cyber", explanation="no", categories=("a", "b"))
    assert first is not None
    first.category = "changed"  # a caller's own copy
    assert response.stop_details is not None
    assert response.stop_details.category == "cyber"
    # The public decode gives fresh values: changing one changes nothing for anyone else.
    fresh = next(response.decoded_details())
    fresh["category"] = "changed"
    assert next(response.decoded_details())["category"] == "cyber"
    assert response.stop_details.category == "cyber"
    # The same text in another response reads alike; a mapping detail is read too.
    other = LLMResponse(reasoning_details=[{"type": "stop_details", "explanation": "m"}])
    assert other.stop_details == StopDetails(explanation="m")
    assert LLMResponse(reasoning_details=[detail]).stop_details == StopDetails(
        category="cyber", explanation="no", categories=("a", "b")
    )
    # A detail that is not strict JSON, or too long to keep, is read each time.
    long = StopDetails(explanation="x" * 10_000).to_detail()
    assert LLMResponse(reasoning_details=["{bad", long]).stop_details == StopDetails(
        explanation="x" * 10_000
    )
