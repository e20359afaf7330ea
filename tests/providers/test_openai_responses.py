"""OpenAI Responses API: refusal parts, incomplete and failed responses, errors, end to end.

Recorded bodies are in tests/fixtures/openai-responses/ (see tests/fixtures/SOURCES.md);
bodies written from OpenAI's documentation are in tests/fixtures/openai-responses/written/
(see its README.md). Every body is read with the provider named and by shape detection.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals import notice
from refusals.model import ErrorKind, FinishReason, LLMResponse, ToolCall
from refusals.providers import NormalizeError, normalize
from refusals.providers import openai_responses as responses_module
from tests.providers._support import (
    DECLINED,
    FILTERED,
    FIXTURES,
    JSON,
    NEXT_STEP,
    category_and_explanation,
    check_never_raises_but_normalize_error,
    json_fixtures,
    read,
)

RECORDED = FIXTURES / "openai-responses"
WRITTEN = RECORDED / "written"


def both_ways(body: bytes | dict[str, Any]) -> LLMResponse:
    """The body normalised by shape detection, checked against the named-provider result."""
    detected = normalize(body)
    assert detected.provider == "openai-responses"
    assert detected.api == "responses"
    assert normalize(body, provider="openai-responses") == detected
    return detected


# Recorded -------------------------------------------------------------------------------


def test_a_completed_response_with_flagged_input_moderation_is_a_plain_stop() -> None:
    response = both_ways(read(RECORDED / "moderation-block-policy-flagged.json"))
    assert response.finish_reason is FinishReason.STOP
    assert response.raw_finish_reason == "completed"
    assert category_and_explanation(response) == (None, None)
    assert notice(response) is None
    assert response.content is not None
    assert response.content.startswith("I'm really sorry you're feeling this much anger.")
    assert response.reasoning is None  # the reasoning item is encrypted, with no summary
    assert response.model == "gpt-5-2025-08-07"
    assert response.request_id == "resp_0389eb20a98f6e92006a6103ba175481a3a46beaea833ed28d"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 1351)
    moderation = [d for d in response.decoded_details() if d.get("type") == "moderation"]
    assert moderation == [
        {
            "type": "moderation",
            "source": "input",
            "flagged": True,
            "categories": ["harassment", "harassment/threatening", "violence"],
            "model": "omni-moderation-latest",
        }
    ]


def test_a_failed_response_for_lack_of_quota_is_an_auth_error_not_a_block() -> None:
    # The `response.failed` event of the recorded stream carries the full Responses object.
    line = read(RECORDED / "stream-failed-insufficient-quota.chunks.txt").splitlines()[3]
    body = orjson.loads(line)["response"]
    response = both_ways(body)
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "insufficient_quota"
    assert response.error is not None
    assert response.error.kind is ErrorKind.AUTH
    assert response.error.retryable is False
    assert response.content is None
    assert notice(response) is None


def test_an_http_error_body_named_as_responses_reports_the_responses_api() -> None:
    payload = read(RECORDED / "error-insufficient-quota.json")
    response = normalize(payload, provider="openai-responses", status=429)
    assert response.api == "responses"
    assert response.provider == "openai-responses"
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "insufficient_quota"
    assert response.error is not None
    assert response.error.kind is ErrorKind.AUTH
    assert response.error.status == 429


# Written --------------------------------------------------------------------------------


def test_a_refusal_part_is_a_refusal_explained_by_its_text() -> None:
    response = both_ways(read(WRITTEN / "refusal.json"))
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.raw_finish_reason == "completed"
    assert category_and_explanation(response) == (None, None)
    assert response.content == "I'm sorry, I can't help with that request."
    assert response.cut_off is False
    assert notice(response) == f"{DECLINED}: I'm sorry, I can't help with that request. {NEXT_STEP}"


def test_function_calls_end_a_completed_response_as_tool_calls_with_the_reasoning_summary() -> None:
    response = both_ways(read(WRITTEN / "function-call-with-reasoning.json"))
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.raw_finish_reason == "completed"
    assert response.tool_calls == [
        ToolCall(id="call_written_1", name="get_weather", arguments='{"location":"Paris, France"}')
    ]
    assert response.reasoning == "The user wants the weather; call the tool."
    assert response.usage is not None
    assert response.usage.cache_read_tokens == 64
    assert notice(response) is None


def test_an_incomplete_response_stopped_by_the_content_filter_keeps_the_cut_off_text() -> None:
    response = both_ways(read(WRITTEN / "incomplete-content-filter.json"))
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "content_filter"
    assert category_and_explanation(response) == (None, None)
    assert response.content == "The first steps are"
    assert response.cut_off is True
    assert notice(response) == f"{FILTERED}. {NEXT_STEP}"


def test_an_incomplete_response_out_of_output_tokens_is_a_length_stop() -> None:
    response = both_ways(read(WRITTEN / "incomplete-max-output-tokens.json"))
    assert response.finish_reason is FinishReason.LENGTH
    assert response.raw_finish_reason == "max_output_tokens"
    assert response.content == "A long answer that was cut"
    assert response.cut_off is False
    assert notice(response) is None


POLICY_FAILURES = [
    (
        "failed-invalid-prompt.json",
        "invalid_prompt",
        "Invalid prompt: your prompt was flagged as potentially violating our usage policy. "
        "Please try again with a different prompt.",
        "Invalid prompt: your prompt",
    ),
    (
        "failed-bio-policy.json",
        "bio_policy",
        "This request was blocked because it may relate to biological weapons.",
        "this request",
    ),
    (
        "failed-image-content-policy.json",
        "image_content_policy_violation",
        "The image you provided was rejected as a result of our safety system.",
        "the image you",
    ),
]


@pytest.mark.parametrize(("name", "code", "explanation", "lead"), POLICY_FAILURES)
def test_a_response_failed_on_a_policy_code_is_a_filter_named_by_the_code(
    name: str, code: str, explanation: str, lead: str
) -> None:
    response = both_ways(read(WRITTEN / name))
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == code
    assert category_and_explanation(response) == (code, explanation)
    assert response.error is not None
    assert response.error.kind is ErrorKind.POLICY
    assert response.error.retryable is False
    rest = explanation[len(lead) :]
    assert notice(response) == f"{FILTERED} (category: {code}): {lead}{rest} {NEXT_STEP}"


def test_a_response_failed_on_a_server_error_is_a_retryable_error() -> None:
    response = both_ways(read(WRITTEN / "failed-server-error.json"))
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "server_error"
    assert category_and_explanation(response) == (
        None,
        "An error occurred while processing your request.",
    )
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert notice(response) is None


# Routing and detection --------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "azure"])
def test_a_responses_object_named_as_openai_or_azure_is_read_as_responses(provider: str) -> None:
    response = normalize(read(WRITTEN / "refusal.json"), provider=provider)
    assert response.api == "responses"
    assert response.provider == provider
    assert response.finish_reason is FinishReason.REFUSAL


def test_looks_like_tells_responses_objects_from_chat_bodies_and_errors() -> None:
    responses = [*RECORDED.glob("*.json"), *WRITTEN.glob("*.json")]
    looks = {
        p.name: responses_module.looks_like(orjson.loads(read(p)))
        for p in responses
        if p.name != "error-insufficient-quota.json"
    }
    assert all(looks.values()), looks
    others = [*(FIXTURES / "openai-chat").glob("*.json"), *(FIXTURES / "openrouter").glob("*.json")]
    others.append(RECORDED / "error-insufficient-quota.json")
    assert not any(responses_module.looks_like(orjson.loads(read(p))) for p in others)


OTHER_FORMATS = json_fixtures(
    *(
        f"{folder}{sub}"
        for folder in ("anthropic", "gemini", "bedrock", "other", "openai-chat", "openrouter")
        for sub in ("", "/written")
    )
)


@pytest.mark.parametrize("path", OTHER_FORMATS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_bodies_of_other_formats_are_never_claimed(path: Path) -> None:
    body = orjson.loads(read(path))
    assert not isinstance(body, dict) or responses_module.detect_provider(body) is None


def test_a_body_of_no_responses_shape_is_rejected_with_a_normalize_error() -> None:
    with pytest.raises(NormalizeError, match="Responses"):
        normalize({"hello": "world"}, provider="openai-responses")


# Properties -------------------------------------------------------------------------------

ALL_PAYLOADS = sorted(RECORDED.glob("*.json")) + sorted(WRITTEN.glob("*.json"))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), path=st.sampled_from(ALL_PAYLOADS))
def test_mutated_and_truncated_payloads_raise_nothing_but_normalize_error(
    data: st.DataObject, path: Path
) -> None:
    check_never_raises_but_normalize_error(data, path, (None, "openai-responses", "openai"))


TEXT = st.text(min_size=1, max_size=20).filter(lambda s: bool(s.strip()))
STATUS = st.sampled_from([*responses_module.STATUSES, None]) | st.text(max_size=10)


@settings(max_examples=200)
@given(
    refusal=TEXT,
    status=STATUS,
    before=st.lists(st.dictionaries(st.sampled_from(["type", "content", "text"]), JSON)),
    top=st.dictionaries(st.sampled_from(["usage", "model", "id", "moderation"]), JSON),
)
def test_a_refusal_part_is_never_reported_as_a_stop(
    refusal: str, status: str | None, before: list[dict[str, Any]], top: dict[str, Any]
) -> None:
    part = {"type": "refusal", "refusal": refusal}
    item = {"type": "message", "content": [*before, part]}
    body = {**top, "object": "response", "status": status, "output": [item]}
    response = normalize(body, provider="openai-responses")
    assert response.finish_reason in (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER)
    assert notice(response) is not None


@settings(max_examples=200)
@given(
    output=JSON,
    top=st.dictionaries(st.sampled_from(["usage", "model", "id", "moderation", "error"]), JSON),
)
def test_an_incomplete_content_filter_is_never_reported_as_a_stop(
    output: Any, top: dict[str, Any]
) -> None:
    body = {
        **top,
        "object": "response",
        "status": "incomplete",
        "incomplete_details": {"reason": "content_filter"},
        "output": output,
    }
    response = normalize(body)
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "content_filter"
    assert notice(response) is not None
