"""OpenAI Chat Completions: refusals, filters, stops and errors, end to end.

Recorded bodies are in tests/fixtures/openai-chat/ (see tests/fixtures/SOURCES.md); bodies
written from OpenAI's documentation are in tests/fixtures/openai-chat/written/ (see its
README.md). Every body is read twice: with the provider named and by shape detection.
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
from refusals.providers import openai_chat as chat_module
from tests.providers._support import (
    DECLINED,
    FILTERED,
    FIXTURES,
    JSON,
    NEXT_STEP,
    category_and_explanation,
    check_never_raises_but_normalize_error,
    details_of,
    json_fixtures,
    read,
)

RECORDED = FIXTURES / "openai-chat"
WRITTEN = RECORDED / "written"


def both_ways(path: Path, provider: str = "openai", status: int | None = None) -> LLMResponse:
    """The body normalised by shape detection, checked against the named-provider result."""
    payload = read(path)
    detected = normalize(payload, status=status)
    assert detected.provider == provider
    named = normalize(payload, provider=provider, status=status)
    assert named == detected
    return detected


# Recorded responses -------------------------------------------------------------------


def test_a_refusal_message_is_a_refusal_although_the_finish_reason_says_stop() -> None:
    response = both_ways(RECORDED / "refusal.json")
    assert response.api == "chat.completions"
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.raw_finish_reason == "stop"
    assert category_and_explanation(response) == (None, None)
    assert response.content == "I'm very sorry, but I can't assist with that."
    assert response.cut_off is False
    assert response.model == "gpt-4o-2024-08-06"
    assert response.request_id == "chatcmpl-ABfvwoKVWPQj2UPlAcAKM7s40GsRx"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (79, 12)
    assert notice(response) == (
        f"{DECLINED}: I'm very sorry, but I can't assist with that. {NEXT_STEP}"
    )


def test_a_length_stop_keeps_the_partial_text_and_is_not_a_notice() -> None:
    response = both_ways(RECORDED / "length.json")
    assert response.finish_reason is FinishReason.LENGTH
    assert response.raw_finish_reason == "length"
    assert response.content == '{"'
    assert response.cut_off is False
    assert notice(response) is None


def test_tool_calls_are_read_with_their_ids_names_and_argument_text() -> None:
    response = both_ways(RECORDED / "tool-calls.json")
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.raw_finish_reason == "tool_calls"
    assert response.content is None
    assert response.tool_calls == [
        ToolCall(
            id="call_Y6qJ7ofLgOrBnMD5WbVAeiRV",
            name="GetWeatherArgs",
            arguments='{"city":"Edinburgh","country":"UK","units":"c"}',
        )
    ]
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (76, 24)


@pytest.mark.parametrize(
    "name", ["moderation-flagged.json", "moderation-block-policy-flagged.json"]
)
def test_a_flagged_moderation_with_a_normal_finish_is_recorded_but_not_a_block(name: str) -> None:
    response = both_ways(RECORDED / name)
    assert response.finish_reason is FinishReason.STOP
    assert response.raw_finish_reason == "stop"
    assert category_and_explanation(response) == (None, None)
    assert notice(response) is None
    assert response.content is not None
    assert response.content.startswith("I'm really sorry you're feeling this")
    assert details_of(response, "moderation") == [
        {
            "type": "moderation",
            "source": "input",
            "flagged": True,
            "categories": ["harassment", "harassment/threatening", "violence"],
            "model": "omni-moderation-latest",
        }
    ]


def test_a_moderation_result_that_says_it_blocked_is_a_content_filter_stop() -> None:
    # No recording or documentation shows such a field yet: the recorded block-policy body
    # is edited to say so, to pin down what the parser does if OpenAI adds one.
    body = orjson.loads(read(RECORDED / "moderation-block-policy-flagged.json"))
    body["moderation"]["input"]["results"][0]["blocked"] = True
    response = normalize(body)
    assert response.provider == "openai"
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "stop"
    assert response.stop_details is not None
    assert response.stop_details.categories == (
        "harassment",
        "harassment/threatening",
        "violence",
    )
    assert category_and_explanation(response) == ("harassment", None)
    assert response.cut_off is True
    assert notice(response) == (
        f"{FILTERED} (categories: harassment, harassment/threatening, violence). {NEXT_STEP}"
    )


# Written responses --------------------------------------------------------------------


def test_a_content_filter_finish_is_a_filter_stop_that_keeps_the_cut_off_text() -> None:
    response = both_ways(WRITTEN / "content-filter.json")
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "content_filter"
    assert category_and_explanation(response) == (None, None)
    assert response.content == "Here is the first part of the story, before"
    assert response.cut_off is True
    assert notice(response) == f"{FILTERED}. {NEXT_STEP}"


def test_a_legacy_function_call_is_a_tool_call() -> None:
    response = both_ways(WRITTEN / "function-call-legacy.json")
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.raw_finish_reason == "function_call"
    assert response.tool_calls == [
        ToolCall(name="get_current_weather", arguments='{\n  "location": "Boston, MA"\n}')
    ]
    assert notice(response) is None


def test_an_unknown_finish_reason_is_an_error_never_a_stop() -> None:
    response = both_ways(WRITTEN / "unknown-finish-reason.json")
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "a_finish_reason_from_the_future"
    assert response.content == "Partial answer"
    assert response.cut_off is True
    assert response.usage is not None
    assert response.usage.cache_read_tokens == 8
    assert notice(response) is None


def test_a_refusal_after_some_text_keeps_both_and_explains_with_the_refusal_alone() -> None:
    response = both_ways(WRITTEN / "refusal-after-content.json")
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.raw_finish_reason == "stop"
    assert response.content == (
        "Sure, here is an outline.\n\nI can't continue with the rest of this request."
    )
    assert category_and_explanation(response) == (
        None,
        "I can't continue with the rest of this request.",
    )
    assert response.cut_off is True
    assert notice(response) == (
        f"{DECLINED}: I can't continue with the rest of this request. {NEXT_STEP}"
    )


def test_a_moderation_that_did_not_run_is_recorded_and_changes_nothing() -> None:
    response = both_ways(WRITTEN / "moderation-output-error.json")
    assert response.finish_reason is FinishReason.STOP
    assert notice(response) is None
    assert details_of(response, "moderation") == [
        {
            "type": "moderation",
            "source": "output",
            "error": {"code": "timeout", "message": "moderation timed out"},
        }
    ]


# HTTP errors ----------------------------------------------------------------------------

ERRORS = [
    # (path, status, kind, raw finish reason, category, explanation)
    (
        FIXTURES / "openai-responses" / "error-insufficient-quota.json",
        429,
        ErrorKind.AUTH,
        "insufficient_quota",
        None,
        "You exceeded your current quota, please check your plan and billing details. For more "
        "information on this error, read the docs: "
        "https://platform.openai.com/docs/guides/error-codes/api-errors.",
    ),
    (
        WRITTEN / "error-rate-limit.json",
        429,
        ErrorKind.TRANSIENT,
        "rate_limit_exceeded",
        None,
        "Rate limit reached for gpt-4o in organization org-written on tokens per min (TPM): "
        "Limit 30000, Used 29500, Requested 1200. Please try again in 1.4s. Visit "
        "https://platform.openai.com/account/rate-limits to learn more.",
    ),
    (
        WRITTEN / "error-invalid-api-key.json",
        401,
        ErrorKind.AUTH,
        "invalid_api_key",
        None,
        "Incorrect API key provided: [redacted]. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
    ),
    (
        WRITTEN / "error-context-length.json",
        400,
        ErrorKind.INVALID_REQUEST,
        "context_length_exceeded",
        None,
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 131072 tokens. Please reduce the length of the messages.",
    ),
    (
        WRITTEN / "error-server.json",
        500,
        ErrorKind.TRANSIENT,
        "http_500",
        None,
        "The server had an error while processing your request. Sorry about that!",
    ),
]


@pytest.mark.parametrize(
    ("path", "status", "kind", "raw", "category", "explanation"),
    ERRORS,
    ids=lambda v: v.name if isinstance(v, Path) else None,
)
def test_errors_are_classified_by_code_before_status(
    *,
    path: Path,
    status: int,
    kind: ErrorKind,
    raw: str,
    category: str | None,
    explanation: str,
) -> None:
    response = both_ways(path, status=status)
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == raw
    assert response.error is not None
    assert response.error.kind is kind
    assert response.error.status == status
    assert response.error.retryable is (kind is ErrorKind.TRANSIENT)
    assert response.error.message == explanation
    assert category_and_explanation(response) == (category, explanation)
    assert notice(response) is None


def test_insufficient_quota_is_billing_and_never_retried_even_as_a_429() -> None:
    response = both_ways(
        FIXTURES / "openai-responses" / "error-insufficient-quota.json", status=429
    )
    assert response.error is not None
    assert response.error.kind is ErrorKind.AUTH
    assert response.error.retryable is False


def test_an_error_body_without_a_status_is_still_classified_by_its_code() -> None:
    kinds = {
        name: normalize(read(WRITTEN / name)).error
        for name in ("error-rate-limit.json", "error-context-length.json")
    }
    assert {name: e.kind if e else None for name, e in kinds.items()} == {
        "error-rate-limit.json": ErrorKind.TRANSIENT,
        "error-context-length.json": ErrorKind.INVALID_REQUEST,
    }


def test_an_invalid_prompt_error_is_a_policy_block_with_the_code_as_category() -> None:
    response = both_ways(WRITTEN / "error-invalid-prompt.json", status=400)
    explanation = (
        "Invalid prompt: your prompt was flagged as potentially violating our usage policy. "
        "Please try again with a different prompt: "
        "https://platform.openai.com/docs/guides/reasoning#advice-on-prompting"
    )
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "invalid_prompt"
    assert response.error is not None
    assert response.error.kind is ErrorKind.POLICY
    assert response.error.retryable is False
    assert category_and_explanation(response) == ("invalid_prompt", explanation)
    assert notice(response) == f"{FILTERED} (category: invalid_prompt): {explanation}. {NEXT_STEP}"


def test_a_content_policy_violation_error_is_a_policy_block_explained_by_its_message() -> None:
    response = both_ways(WRITTEN / "error-content-policy-violation.json", status=400)
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "content_policy_violation"
    assert response.error is not None
    assert response.error.kind is ErrorKind.POLICY
    assert category_and_explanation(response) == (
        None,
        "Your request was rejected as a result of our safety system. Your prompt may contain "
        "text that is not allowed by our safety system.",
    )
    assert notice(response) == (
        f"{FILTERED}: your request was rejected as a result of our safety system. Your prompt "
        f"may contain text that is not allowed by our safety system. {NEXT_STEP}"
    )


def test_a_non_json_gateway_page_is_classified_by_its_status_and_keeps_its_title() -> None:
    page = b"<html><head><title>502 Bad Gateway</title></head><body><h1>502</h1></body></html>"
    response = normalize(page, status=502)
    assert response.provider == "unknown"
    assert response.api == "chat.completions"
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "http_502"
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.message == "502 Bad Gateway"


def test_an_error_body_of_no_known_shape_is_classified_by_its_status() -> None:
    response = normalize(b'{"oops": {"what": "happened"}}', status=503)
    assert response.provider == "unknown"
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.status == 503


def test_secrets_echoed_by_an_error_body_never_reach_the_result() -> None:
    body = {
        "error": {
            "message": (
                "Incorrect API key provided: sk-proj-A1b2C3d4E5f6G7h8. Headers were "
                "Authorization: Bearer sk-live-abcdef123456 and x-api-key: 0123456789abcdef "
                "(url https://example.test/v1?key=AIzaSyExample123)"
            ),
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    response = normalize(body, provider="openai", status=401)
    text = repr(response)
    for secret in ("A1b2C3d4E5f6G7h8", "abcdef123456", "0123456789abcdef", "AIzaSyExample123"):
        assert secret not in text
    assert response.error is not None
    assert response.error.kind is ErrorKind.AUTH
    assert response.error.message == (
        "Incorrect API key provided: [redacted]. Headers were Authorization: Bearer [redacted] "
        "and x-api-key: [redacted] (url https://example.test/v1?key=[redacted])"
    )


def test_a_long_error_message_is_bounded() -> None:
    response = normalize({"error": {"message": "x" * 5000, "code": "server_error"}}, status=500)
    assert response.error is not None
    assert response.error.message is not None
    assert len(response.error.message) == 1000
    assert response.error.message.endswith("...")


# Detection stays specific -----------------------------------------------------------------

OTHER_FORMATS = json_fixtures(
    *(
        f"{folder}{sub}"
        for folder in ("anthropic", "gemini", "bedrock", "other")
        for sub in ("", "/written")
    )
)


@pytest.mark.parametrize("path", OTHER_FORMATS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_bodies_of_other_formats_are_never_claimed(path: Path) -> None:
    body = orjson.loads(read(path))
    assert not isinstance(body, dict) or chat_module.detect_provider(body) is None


@pytest.mark.parametrize(
    "body",
    [
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        {"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}},
        {"error": "model 'llama3' not found"},
        {"message": "Unauthorized", "request_id": "abc"},
        {"candidates": [], "usageMetadata": {}},
        {"id": "resp_1", "object": "response", "status": "completed", "output": []},
    ],
)
def test_only_chat_completions_bodies_and_their_errors_are_claimed(body: dict[str, Any]) -> None:
    assert chat_module.detect_provider(body) is None


def test_a_body_of_no_chat_completions_shape_is_rejected_with_a_normalize_error() -> None:
    with pytest.raises(NormalizeError, match="Chat Completions"):
        normalize({"hello": "world"}, provider="openai")


# Properties -------------------------------------------------------------------------------

ALL_PAYLOADS = (
    sorted(RECORDED.glob("*.json"))
    + sorted(WRITTEN.glob("*.json"))
    + [FIXTURES / "openai-responses" / "error-insufficient-quota.json"]
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), path=st.sampled_from(ALL_PAYLOADS))
def test_mutated_and_truncated_payloads_raise_nothing_but_normalize_error(
    data: st.DataObject, path: Path
) -> None:
    check_never_raises_but_normalize_error(data, path, (None, "openai", "deepseek"))


TEXT = st.text(min_size=1, max_size=20).filter(lambda s: bool(s.strip()))


@settings(max_examples=200)
@given(
    refusal=TEXT,
    finish=st.sampled_from([*chat_module.FINISH_REASONS, None]) | st.text(max_size=10),
    message=st.dictionaries(st.sampled_from(["content", "tool_calls", "role"]), JSON),
    top=st.dictionaries(st.sampled_from(["usage", "model", "id", "moderation", "error"]), JSON),
    provider=st.sampled_from([None, "openai", "azure", "openrouter", "xai", "groq", "mistral"]),
)
def test_a_refusal_signal_is_never_reported_as_a_stop(
    refusal: str,
    finish: str | None,
    message: dict[str, Any],
    top: dict[str, Any],
    provider: str | None,
) -> None:
    body = {
        **top,
        "choices": [{"message": {**message, "refusal": refusal}, "finish_reason": finish}],
    }
    response = normalize(body, provider=provider)
    assert response.finish_reason in (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER)
    assert response.raw_finish_reason == finish
    assert notice(response) is not None


@settings(max_examples=200)
@given(
    message=st.dictionaries(st.sampled_from(["content", "tool_calls", "refusal"]), JSON),
    top=st.dictionaries(st.sampled_from(["usage", "model", "id", "moderation", "error"]), JSON),
)
def test_a_content_filter_finish_is_never_reported_as_a_stop(
    message: dict[str, Any], top: dict[str, Any]
) -> None:
    body = {**top, "choices": [{"message": message, "finish_reason": "content_filter"}]}
    response = normalize(body, provider="openai")
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "content_filter"
    assert notice(response) is not None
