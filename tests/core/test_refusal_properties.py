"""Property tests for the rules of the refusal and content-filter notices."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from refusals import (
    FinishReason,
    LLMResponse,
    StopDetails,
    Usage,
    _unicode,
    content_filter_reason,
    is_blocked_notice,
    is_refusal_notice,
    refusal_reason,
)
from refusals.refusal import (
    CONTENT_FILTER_NOTICE_PREFIX,
    MAX_EXPLANATION_CHARS,
    NEXT_STEP_SENTENCE,
    REFUSAL_NOTICE_PREFIX,
    WHITESPACE,
    lowercase_leading_word,
    truncate_within,
)

FALLBACK_SENTENCE = "The configured fallback model also declined."
texts = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=600)
spaced_texts = st.text(
    alphabet=st.sampled_from([*"abc XYZ.!?\n\t\u3000\u00a0\x1c", "I", "É"]), max_size=900
)
optional_text = st.none() | texts | spaced_texts


def _stop(category: str | None, explanation: str | None, recommended: str | None) -> str:
    detail: dict[str, str] = {"type": "stop_details"}
    if category is not None:
        detail["category"] = category
    if explanation is not None:
        detail["explanation"] = explanation
    if recommended is not None:
        detail["recommended_model"] = recommended
    return json.dumps(detail)


responses = st.builds(
    lambda content, category, explanation, recommended, fallback_block, fallback_iter: LLMResponse(
        content=content,
        finish_reason=FinishReason.REFUSAL,
        reasoning_details=[_stop(category, explanation, recommended)]
        + ([json.dumps({"type": "fallback", "from": {"model": "a"}})] * fallback_block),
        usage=Usage(iterations=[{"type": "fallback_message"}] if fallback_iter else []),
    ),
    optional_text,
    st.none() | st.text(max_size=20),
    optional_text,
    st.none() | st.text(max_size=30),
    st.booleans(),
    st.booleans(),
)


@given(responses)
def test_notice_always_starts_with_the_prefix_and_ends_with_the_next_step(
    response: LLMResponse,
) -> None:
    reason = refusal_reason(response)
    assert reason.startswith(REFUSAL_NOTICE_PREFIX)
    assert reason.endswith(" " + NEXT_STEP_SENTENCE)
    assert is_refusal_notice(reason)
    assert is_blocked_notice(reason)


@given(responses)
def test_fallback_sentence_appears_exactly_when_a_fallback_ran_or_was_recommended(
    response: LLMResponse,
) -> None:
    reason = refusal_reason(response)
    stop = response.stop_details
    assert stop is not None
    recommended = (stop.recommended_model or "").strip(WHITESPACE)
    if response.served_by_fallback:
        assert FALLBACK_SENTENCE in reason
        assert "was recommended but could not run" not in reason
    elif recommended:
        assert f"A fallback to `{recommended}` was recommended but could not run." in reason
    else:
        assert "fallback" not in reason.replace(response.content or "", "").replace(
            stop.explanation or "", ""
        ).replace(stop.category or "", "")


@given(st.none() | texts | spaced_texts)
def test_content_explanation_is_collapsed_and_never_over_its_bound(content: str | None) -> None:
    reason = refusal_reason(LLMResponse(content=content, finish_reason=FinishReason.REFUSAL))
    body = reason[len(REFUSAL_NOTICE_PREFIX) : -len(NEXT_STEP_SENTENCE) - 1]
    if not (content or "").strip(WHITESPACE):
        assert body == "."
        return
    assert body.startswith(": ")
    explanation = body[2:]
    # The notice adds at most one full stop after the bounded explanation.
    assert len(explanation) <= MAX_EXPLANATION_CHARS + 1
    assert "  " not in explanation
    assert "\n" not in explanation


@given(st.text(alphabet=st.sampled_from(list("ab cD\n!?,;")), max_size=900))
def test_no_double_full_stop_is_produced_from_text_without_full_stops(content: str) -> None:
    reason = refusal_reason(LLMResponse(content=content, finish_reason=FinishReason.REFUSAL))
    collapsed = " ".join(content.split())
    if len(collapsed) > MAX_EXPLANATION_CHARS:
        # Only the truncation ellipsis may bring dots, and nothing is added after it.
        assert reason.count("...") == 1
        assert "...." not in reason
    else:
        assert ".." not in reason


def _rust_is_uppercase(char: str) -> bool:
    # Rust's char::is_uppercase: Python's answer, corrected to Rust's newer Unicode data.
    return char in _unicode.EXTRA_UPPERCASE or (
        char.isupper() and char not in _unicode.NOT_UPPERCASE
    )


def _rust_is_lowercase(char: str) -> bool:
    return char in _unicode.EXTRA_LOWERCASE or (
        char.islower() and char not in _unicode.NOT_LOWERCASE
    )


def _rust_to_lowercase(char: str) -> str:
    return _unicode.LOWERCASE_MAPPINGS.get(char, char.lower())


@given(st.text(min_size=1, max_size=20))
def test_leading_word_is_lowercased_only_for_an_ordinary_capitalised_word(text: str) -> None:
    result = lowercase_leading_word(text)
    first, rest = text[0], text[1:]
    second = rest[:1]
    ordinary = (
        _rust_is_uppercase(first)
        and first != "I"
        and (not second or _rust_is_lowercase(second) or second in WHITESPACE)
    )
    if ordinary:
        assert result == _rust_to_lowercase(first) + rest
    else:
        assert result == text


@given(texts, st.integers(min_value=0, max_value=50), st.sampled_from(["...", "…", ""]))
def test_truncation_never_exceeds_the_bound(text: str, bound: int, ellipsis: str) -> None:
    result = truncate_within(text, bound, ellipsis)
    if len(text) <= bound:
        assert result == text
    else:
        assert len(result) <= max(bound, len(ellipsis))
        assert result.endswith(ellipsis)


@given(st.lists(st.text(min_size=1, max_size=12), max_size=4), st.none() | texts)
def test_content_filter_notice_names_categories_and_ends_with_the_next_step(
    categories: list[str], explanation: str | None
) -> None:
    stop = StopDetails(categories=tuple(categories), explanation=explanation)
    response = LLMResponse(
        finish_reason=FinishReason.CONTENT_FILTER,
        reasoning_details=[stop.to_detail()],
        content="partial output that must not be quoted",
    )
    reason = content_filter_reason(response)
    assert reason.startswith(CONTENT_FILTER_NOTICE_PREFIX)
    assert reason.endswith(" " + NEXT_STEP_SENTENCE)
    assert is_blocked_notice(reason)
    assert not is_refusal_notice(reason)
    assert "partial output that must not be quoted" not in reason
