"""Azure OpenAI: content-filter results, the 400 content_filter error, and Responses filters.

Recorded bodies are in tests/fixtures/azure/ (see tests/fixtures/SOURCES.md); bodies written
from Microsoft's documentation are in tests/fixtures/azure/written/ (see its README.md).
Every body is read with the provider named and, where its shape says Azure, by detection.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals import notice
from refusals.model import ErrorKind, FinishReason, LLMResponse
from refusals.providers import normalize
from tests.providers._support import (
    FILTERED,
    FIXTURES,
    JSON,
    NEXT_STEP,
    category_and_explanation,
    check_never_raises_but_normalize_error,
    read,
)

RECORDED = FIXTURES / "azure"
WRITTEN = RECORDED / "written"
POLICY_MESSAGE = (
    "The response was filtered due to the prompt triggering Azure OpenAI's content management "
    "policy. Please modify your prompt and retry. To learn more about our content filtering "
    "policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766"
)


def both_ways(path: Path, status: int | None = None) -> LLMResponse:
    """The body normalised by shape detection, checked against the named-provider result."""
    payload = read(path)
    detected = normalize(payload, status=status)
    assert detected.provider == "azure"
    assert normalize(payload, provider="azure", status=status) == detected
    return detected


def filter_details(response: LLMResponse) -> list[dict[str, Any]]:
    return [d for d in response.decoded_details() if d.get("type") == "azure_content_filter"]


# Recorded -------------------------------------------------------------------------------


def test_filter_results_that_filtered_nothing_leave_a_plain_stop() -> None:
    response = both_ways(RECORDED / "chat-content-filter-results.json")
    assert response.api == "chat.completions"
    assert response.finish_reason is FinishReason.STOP
    assert response.raw_finish_reason == "stop"
    assert response.content == "The capital of France is **Paris**."
    assert response.reasoning_details == []
    assert notice(response) is None
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (14, 9)


def test_responses_content_filters_that_blocked_nothing_leave_a_plain_stop() -> None:
    response = both_ways(RECORDED / "responses-content-filters.json")
    assert response.api == "responses"
    assert response.finish_reason is FinishReason.STOP
    assert response.raw_finish_reason == "completed"
    assert response.content == "Word"
    assert response.reasoning_details == []
    assert notice(response) is None


# Written chat completions -----------------------------------------------------------------


def test_a_content_filter_finish_names_the_filtered_categories_and_keeps_their_severity() -> None:
    response = both_ways(WRITTEN / "chat-finish-content-filter.json")
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "content_filter"
    assert category_and_explanation(response) == ("hate", None)
    assert response.stop_details is not None
    assert response.stop_details.categories == ("hate", "violence")
    assert response.content is None
    assert response.cut_off is False
    assert notice(response) == f"{FILTERED} (categories: hate, violence). {NEXT_STEP}"
    assert filter_details(response) == [
        {
            "type": "azure_content_filter",
            "source": "completion",
            "results": {
                "hate": {"filtered": True, "severity": "high"},
                "violence": {"filtered": True, "severity": "medium"},
            },
        }
    ]


def test_a_custom_blocklist_hit_is_a_filter_on_the_blocklist_category() -> None:
    response = both_ways(WRITTEN / "chat-custom-blocklist.json")
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "content_filter"
    assert category_and_explanation(response) == ("custom_blocklists", None)
    assert response.content == "The project code name is"
    assert response.cut_off is True
    assert notice(response) == f"{FILTERED} (category: custom_blocklists). {NEXT_STEP}"
    assert filter_details(response)[0]["results"] == {
        "custom_blocklists": {"filtered": True, "ids": ["project-codenames"]}
    }


def test_a_filter_that_did_not_run_is_recorded_and_the_answer_stands() -> None:
    response = both_ways(WRITTEN / "chat-filter-error.json")
    assert response.finish_reason is FinishReason.STOP
    assert response.raw_finish_reason == "stop"
    assert response.content == "Example model response will be returned."
    assert response.stop_details is None
    assert notice(response) is None
    assert filter_details(response) == [
        {
            "type": "azure_content_filter",
            "source": "completion",
            "error": {"code": "content_filter_error", "message": "The contents are not filtered"},
        }
    ]


def test_a_detected_but_unfiltered_jailbreak_is_an_annotation_not_a_block() -> None:
    response = both_ways(WRITTEN / "chat-jailbreak-annotated.json")
    assert response.finish_reason is FinishReason.STOP
    assert notice(response) is None
    assert filter_details(response) == [
        {
            "type": "azure_content_filter",
            "source": "prompt",
            "prompt_index": 0,
            "results": {"jailbreak": {"filtered": False, "detected": True}},
        },
        {
            "type": "azure_content_filter",
            "source": "completion",
            "results": {"violence": {"filtered": False, "severity": "low"}},
        },
    ]


# Written errors ---------------------------------------------------------------------------


def test_the_content_filter_error_is_a_policy_block_with_the_filtered_categories() -> None:
    response = both_ways(WRITTEN / "error-content-filter.json", status=400)
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "content_filter"
    assert response.error is not None
    assert response.error.kind is ErrorKind.POLICY
    assert response.error.retryable is False
    assert response.error.status == 400
    assert category_and_explanation(response) == ("hate", POLICY_MESSAGE)
    assert response.stop_details is not None
    assert response.stop_details.categories == ("hate", "self_harm", "violence")
    assert notice(response) == (
        f"{FILTERED} (categories: hate, self_harm, violence): the response was filtered due to "
        "the prompt triggering Azure OpenAI's content management policy. Please modify your "
        "prompt and retry. To learn more about our content filtering policies please read our "
        f"documentation: https://go.microsoft.com/fwlink/?linkid=2198766. {NEXT_STEP}"
    )
    assert filter_details(response)[0]["results"]["violence"] == {
        "filtered": True,
        "severity": "medium",
    }


def test_the_plural_content_filter_results_spelling_is_read_too() -> None:
    response = both_ways(WRITTEN / "error-content-filter-results-jailbreak.json", status=400)
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert category_and_explanation(response) == ("jailbreak", POLICY_MESSAGE)
    assert response.error is not None
    assert response.error.kind is ErrorKind.POLICY


def test_the_content_filter_error_is_a_block_even_without_its_http_status() -> None:
    response = both_ways(WRITTEN / "error-content-filter.json")
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.error is not None
    assert response.error.status == 400  # from the body's own `status`


@pytest.mark.parametrize("status", [429, None])
def test_an_azure_rate_limit_is_transient_with_or_without_the_http_status(
    status: int | None,
) -> None:
    response = both_ways(WRITTEN / "error-rate-limit.json", status=status)
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "429"
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.status == 429
    assert notice(response) is None


def test_an_azure_401_is_an_auth_error() -> None:
    response = normalize(read(WRITTEN / "error-unauthorized.json"), provider="azure", status=401)
    assert response.provider == "azure"
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.kind is ErrorKind.AUTH
    assert notice(response) is None


# Written Responses --------------------------------------------------------------------------


def test_a_blocked_responses_content_filter_names_its_filtered_categories() -> None:
    response = both_ways(WRITTEN / "responses-content-filters-blocked.json")
    assert response.api == "responses"
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "content_filter"
    assert category_and_explanation(response) == ("violence", None)
    assert response.content == "The attack began when"
    assert response.cut_off is True
    assert notice(response) == f"{FILTERED} (category: violence). {NEXT_STEP}"
    assert filter_details(response) == [
        {
            "type": "azure_content_filter",
            "blocked": True,
            "source": "completion",
            "results": {"violence": {"filtered": True, "severity": "high"}},
        }
    ]


def test_a_blocked_filter_entry_is_a_block_even_when_the_status_says_completed() -> None:
    body = orjson.loads(read(WRITTEN / "responses-content-filters-blocked.json"))
    body["status"] = "completed"
    body["incomplete_details"] = None
    response = normalize(body)
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "completed"
    assert category_and_explanation(response) == ("violence", None)


# Properties -------------------------------------------------------------------------------

ALL_PAYLOADS = sorted(RECORDED.glob("*.json")) + sorted(WRITTEN.glob("*.json"))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), path=st.sampled_from(ALL_PAYLOADS))
def test_mutated_and_truncated_payloads_raise_nothing_but_normalize_error(
    data: st.DataObject, path: Path
) -> None:
    check_never_raises_but_normalize_error(data, path, (None, "azure"))


CATEGORY = st.sampled_from(["hate", "sexual", "violence", "self_harm", "jailbreak", "profanity"])


@settings(max_examples=200)
@given(
    category=CATEGORY,
    severity=st.sampled_from(["low", "medium", "high"]),
    where=st.sampled_from(["prompt", "completion"]),
    finish=st.sampled_from(["stop", "length", "tool_calls", "content_filter"]) | st.none(),
    message=st.dictionaries(st.sampled_from(["content", "tool_calls", "role"]), JSON),
)
def test_a_filtered_category_is_never_reported_as_a_stop(
    category: str,
    severity: str,
    where: str,
    finish: str | None,
    message: dict[str, Any],
) -> None:
    results = {category: {"filtered": True, "severity": severity}}
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
    body: dict[str, Any] = {"choices": [choice]}
    if where == "prompt":
        body["prompt_filter_results"] = [{"prompt_index": 0, "content_filter_results": results}]
    else:
        choice["content_filter_results"] = results
    for provider in (None, "azure"):
        response = normalize(body, provider=provider)
        assert response.provider == "azure"
        assert response.finish_reason is FinishReason.CONTENT_FILTER
        assert category_and_explanation(response) == (category, None)
        assert notice(response) == f"{FILTERED} (category: {category}). {NEXT_STEP}"
