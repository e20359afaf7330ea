"""Gemini API and Vertex AI generateContent: blocks, stops and errors, end to end.

Recorded bodies are in tests/fixtures/gemini/ (see tests/fixtures/SOURCES.md); bodies
written from Google's documentation are in tests/fixtures/gemini/written/ (see its
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
from refusals.model import ErrorKind, FinishReason, LLMResponse
from refusals.providers import NormalizeError, normalize
from refusals.providers import gemini as gemini_module
from tests.providers._support import (
    FILTERED,
    FIXTURES,
    JSON,
    NEXT_STEP,
    category_and_explanation,
    check_never_raises_but_normalize_error,
    json_fixtures,
    read,
)

RECORDED = FIXTURES / "gemini"
WRITTEN = RECORDED / "written"


def both_ways(path: Path, status: int | None = None) -> LLMResponse:
    """The body normalised by shape detection, checked against the named-provider result."""
    payload = read(path)
    detected = normalize(payload, status=status)
    assert detected.provider in ("gemini", "vertex")
    named = normalize(payload, provider=detected.provider, status=status)
    assert named == detected
    assert detected.api == "generateContent"
    return detected


# Recorded responses -------------------------------------------------------------------


def test_a_safety_stop_names_the_blocked_harm_category_in_readable_form() -> None:
    response = both_ways(RECORDED / "finish-safety-blocked.json")
    assert response.provider == "gemini"
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "SAFETY"
    assert category_and_explanation(response) == ("hate_speech", None)
    assert response.content is None
    assert response.cut_off is False
    assert response.model == "gemini-1.5-flash"
    assert response.request_id == "5lpeaLOIBf__698Pv8HGgAg"
    assert notice(response) == f"{FILTERED} (category: hate_speech). {NEXT_STEP}"
    ratings = [d for d in response.decoded_details() if d.get("type") == "safety_ratings"]
    assert ratings == [
        {
            "type": "safety_ratings",
            "scope": "response",
            "ratings": [{"category": "hate_speech", "probability": "LOW"}],
        }
    ]


def test_a_model_armor_prompt_block_is_a_filter_on_the_prompt_with_its_message() -> None:
    response = both_ways(RECORDED / "prompt-blocked-model-armor.json")
    assert response.provider == "vertex"
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "MODEL_ARMOR"
    assert category_and_explanation(response) == (
        "model_armor",
        "The prompt violated Prompt Injection and Jailbreak filters.",
    )
    assert response.content is None
    assert response.tool_calls == []
    assert notice(response) == (
        f"{FILTERED} (category: model_armor): the prompt violated Prompt Injection and "
        f"Jailbreak filters. {NEXT_STEP}"
    )


def test_a_model_armor_output_block_explains_itself_with_the_finish_message() -> None:
    response = both_ways(RECORDED / "finish-model-armor.json")
    assert response.provider == "vertex"
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "MODEL_ARMOR"
    assert category_and_explanation(response) == (
        "model_armor",
        "The response violated Responsible AI Safety settings (Hate Speech, Harassment, "
        "Dangerous) filters.",
    )
    assert notice(response) == (
        f"{FILTERED} (category: model_armor): the response violated Responsible AI Safety "
        f"settings (Hate Speech, Harassment, Dangerous) filters. {NEXT_STEP}"
    )
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (19, 6 + 27)


def test_max_tokens_is_a_length_stop_that_keeps_the_partial_text() -> None:
    response = both_ways(RECORDED / "finish-max-tokens.json")
    assert response.finish_reason is FinishReason.LENGTH
    assert response.raw_finish_reason == "MAX_TOKENS"
    assert category_and_explanation(response) == (None, None)
    assert response.content == "The capital of France is"
    assert response.cut_off is False
    assert notice(response) is None
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (15, 5)


def test_max_tokens_spent_on_thinking_leaves_no_content_and_counts_thoughts_as_output() -> None:
    response = both_ways(RECORDED / "finish-max-tokens-empty-thinking.json")
    assert response.finish_reason is FinishReason.LENGTH
    assert response.raw_finish_reason == "MAX_TOKENS"
    assert response.content is None
    assert response.reasoning is None
    assert notice(response) is None
    assert response.usage is not None
    assert response.usage.output_tokens == 2


def test_an_unexpected_tool_call_is_an_error_with_its_finish_message_never_a_stop() -> None:
    response = both_ways(RECORDED / "finish-unexpected-tool-call.json")
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "UNEXPECTED_TOOL_CALL"
    assert category_and_explanation(response) == (
        None,
        "Unexpected tool call: Model tried to call an undeclared function: list_files",
    )
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("list_files", "{}")]
    assert response.cut_off is True
    assert notice(response) is None
    signatures = [d for d in response.decoded_details() if d.get("type") == "thought_signature"]
    assert len(signatures) == 1


def test_the_final_stream_chunk_reads_as_a_stop() -> None:
    lines = read(RECORDED / "stream-stop.chunks.txt").splitlines()
    response = normalize(lines[-1])
    assert response.provider == "gemini"
    assert response.finish_reason is FinishReason.STOP
    assert response.raw_finish_reason == "STOP"


# Written from the documentation: every other filter value ------------------------------

OUTPUT_FILTERS = [
    ("finish-spii.json", "SPII", "spii", None, "The customer's card number is"),
    (
        "finish-recitation.json",
        "RECITATION",
        "recitation",
        None,
        "It was the best of times, it was the worst of times, it was the age of",
    ),
    ("finish-blocklist.json", "BLOCKLIST", "blocklist", None, "The internal codename is"),
    ("finish-prohibited-content.json", "PROHIBITED_CONTENT", "prohibited_content", None, None),
    (
        "finish-image-safety.json",
        "IMAGE_SAFETY",
        "image_safety",
        "Unable to show the generated image. The image was filtered out because it violated "
        "Google's Generative AI Prohibited Use policy.",
        None,
    ),
    (
        "finish-image-prohibited-content.json",
        "IMAGE_PROHIBITED_CONTENT",
        "image_prohibited_content",
        None,
        None,
    ),
    ("finish-image-recitation.json", "IMAGE_RECITATION", "image_recitation", None, None),
]


@pytest.mark.parametrize(("name", "raw", "category", "explanation", "content"), OUTPUT_FILTERS)
def test_every_output_filter_value_is_a_content_filter_named_after_the_value(
    name: str, raw: str, category: str, explanation: str | None, content: str | None
) -> None:
    response = both_ways(WRITTEN / name)
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == raw
    assert category_and_explanation(response) == (category, explanation)
    assert response.content == content
    assert response.cut_off is (content is not None)
    expected = f"{FILTERED} (category: {category})"
    if explanation is not None:
        expected += ": unable to show the generated image. The image was filtered out because "
        expected += "it violated Google's Generative AI Prohibited Use policy."
    else:
        expected += "."
    assert notice(response) == f"{expected} {NEXT_STEP}"


def test_several_blocked_ratings_are_all_named_with_their_severity_kept() -> None:
    response = both_ways(WRITTEN / "finish-safety-several-categories.json")
    assert response.provider == "vertex"
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "SAFETY"
    stop = response.stop_details
    assert stop is not None
    assert (stop.category, stop.categories) == (
        "dangerous_content",
        ("dangerous_content", "harassment"),
    )
    assert stop.explanation is None
    assert response.content == "Here is how you"
    assert response.cut_off is True
    assert notice(response) == (
        f"{FILTERED} (categories: dangerous_content, harassment). {NEXT_STEP}"
    )
    ratings = [d for d in response.decoded_details() if d.get("type") == "safety_ratings"]
    assert ratings[0]["ratings"][0] == {
        "category": "dangerous_content",
        "probability": "HIGH",
        "probabilityScore": 0.93,
        "severity": "HARM_SEVERITY_HIGH",
        "severityScore": 0.88,
    }


PROMPT_BLOCKS = [
    ("prompt-blocked-safety-ratings.json", "gemini", "SAFETY", "hate_speech", None),
    ("prompt-blocked-other.json", "gemini", "OTHER", "other", None),
    (
        "prompt-blocked-prohibited-content.json",
        "gemini",
        "PROHIBITED_CONTENT",
        "prohibited_content",
        None,
    ),
    ("prompt-blocked-blocklist.json", "vertex", "BLOCKLIST", "blocklist", None),
    ("prompt-blocked-image-safety.json", "gemini", "IMAGE_SAFETY", "image_safety", None),
    (
        "prompt-blocked-jailbreak.json",
        "vertex",
        "JAILBREAK",
        "jailbreak",
        "The prompt was blocked as a jailbreak attempt.",
    ),
]


@pytest.mark.parametrize(("name", "provider", "raw", "category", "explanation"), PROMPT_BLOCKS)
def test_a_prompt_block_names_the_blocked_ratings_or_else_the_block_reason(
    name: str, provider: str, raw: str, category: str, explanation: str | None
) -> None:
    response = both_ways(WRITTEN / name)
    assert response.provider == provider
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == raw
    assert category_and_explanation(response) == (category, explanation)
    assert response.content is None
    assert response.cut_off is False
    tail = ": the prompt was blocked as a jailbreak attempt." if explanation else "."
    assert notice(response) == f"{FILTERED} (category: {category}){tail} {NEXT_STEP}"


FAILURES = [
    (
        "finish-malformed-function-call.json",
        "MALFORMED_FUNCTION_CALL",
        'Malformed function call: print(default_api.get_weather(city="Paris", unit=celsius))',
    ),
    ("finish-other.json", "OTHER", None),
    ("finish-language.json", "LANGUAGE", None),
    ("finish-no-image.json", "NO_IMAGE", None),
    ("finish-too-many-tool-calls.json", "TOO_MANY_TOOL_CALLS", None),
    ("finish-reason-unspecified.json", "FINISH_REASON_UNSPECIFIED", None),
    (
        "finish-unknown-value.json",
        "SOMETHING_NEW",
        "A finish reason this library does not know yet.",
    ),
]


@pytest.mark.parametrize(("name", "raw", "explanation"), FAILURES)
def test_failure_and_unknown_finish_values_are_errors_kept_raw_never_stops(
    name: str, raw: str, explanation: str | None
) -> None:
    response = both_ways(WRITTEN / name)
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == raw
    assert category_and_explanation(response) == (None, explanation)
    assert notice(response) is None
    assert response.cut_off is (response.content is not None)


def test_thought_parts_go_to_reasoning_and_only_answer_parts_to_content() -> None:
    response = both_ways(WRITTEN / "stop-text-and-thoughts.json")
    assert response.finish_reason is FinishReason.STOP
    assert response.raw_finish_reason == "STOP"
    assert response.content == 'There are three r\'s in "strawberry".'
    assert response.reasoning == ("**Counting letters**\n\nI will spell the word and count each r.")
    assert response.stop_details is None
    assert notice(response) is None
    assert response.usage is not None
    assert response.usage.input_tokens == 1210
    assert response.usage.output_tokens == 9 + 131
    assert response.usage.cache_read_tokens == 1024


def test_function_call_parts_become_tool_calls_with_json_arguments() -> None:
    response = both_ways(WRITTEN / "stop-function-calls.json")
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.raw_finish_reason == "STOP"
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("", "get_weather", '{"city":"Paris","unit":"celsius"}'),
        ("call-7f3a", "get_time", '{"timezone":"Europe/Paris"}'),
    ]
    assert response.content is None
    assert response.cut_off is False


def test_vertex_is_told_from_gemini_by_create_time_unless_the_provider_is_named() -> None:
    body = orjson.loads(read(RECORDED / "finish-model-armor.json"))
    assert gemini_module.detect_provider(body) == "vertex"
    del body["createTime"]
    assert gemini_module.detect_provider(body) == "gemini"
    named = normalize(read(RECORDED / "finish-model-armor.json"), provider="gemini")
    assert named.provider == "gemini"


# Errors ---------------------------------------------------------------------------------

ERRORS = [
    ("error-429-resource-exhausted.json", 429, ErrorKind.TRANSIENT, "RESOURCE_EXHAUSTED"),
    ("error-503-unavailable.json", 503, ErrorKind.TRANSIENT, "UNAVAILABLE"),
    ("error-500-internal.json", 500, ErrorKind.TRANSIENT, "INTERNAL"),
    ("error-504-deadline-exceeded.json", 504, ErrorKind.TRANSIENT, "DEADLINE_EXCEEDED"),
    ("error-403-permission-denied.json", 403, ErrorKind.AUTH, "PERMISSION_DENIED"),
    ("error-401-unauthenticated.json", 401, ErrorKind.AUTH, "UNAUTHENTICATED"),
    ("error-400-api-key-invalid.json", 400, ErrorKind.AUTH, "INVALID_ARGUMENT"),
    ("error-400-invalid-argument.json", 400, ErrorKind.INVALID_REQUEST, "INVALID_ARGUMENT"),
]


@pytest.mark.parametrize(("name", "status", "kind", "code"), ERRORS)
def test_error_bodies_are_classified_by_their_google_status_with_or_without_http_status(
    name: str, status: int, kind: ErrorKind, code: str
) -> None:
    for given_status in (status, None):
        response = both_ways(WRITTEN / name, status=given_status)
        assert response.provider == "gemini"
        assert response.finish_reason is FinishReason.ERROR
        assert response.raw_finish_reason == code
        assert response.error is not None
        assert (response.error.kind, response.error.status, response.error.code) == (
            kind,
            status,
            code,
        )
        assert response.error.retryable is (kind is ErrorKind.TRANSIENT)
        assert category_and_explanation(response) == (None, response.error.message)
        assert notice(response) is None


def test_a_bad_api_key_is_auth_even_though_google_calls_it_an_invalid_argument() -> None:
    response = both_ways(WRITTEN / "error-400-api-key-invalid.json", status=400)
    assert response.error is not None
    assert response.error.kind is ErrorKind.AUTH
    assert response.error.message == "API key not valid. Please pass a valid API key."


def test_a_responsible_ai_block_is_a_policy_stop_and_a_permission_error_is_not() -> None:
    response = both_ways(WRITTEN / "error-400-responsible-ai.json", status=400)
    message = (
        "The prompt could not be submitted. This prompt contains sensitive words that violate "
        "Google's Responsible AI practices. Try rephrasing the prompt."
    )
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "INVALID_ARGUMENT"
    assert response.error is not None
    assert response.error.kind is ErrorKind.POLICY
    assert category_and_explanation(response) == (None, message)
    assert notice(response) == (
        f"{FILTERED}: the prompt could not be submitted. This prompt contains sensitive words "
        f"that violate Google's Responsible AI practices. Try rephrasing the prompt. {NEXT_STEP}"
    )

    policy_403 = {
        "error": {"code": 403, "message": message, "status": "PERMISSION_DENIED"},
    }
    assert normalize(policy_403, status=403).finish_reason is FinishReason.CONTENT_FILTER
    denied = normalize(read(WRITTEN / "error-403-permission-denied.json"), status=403)
    assert denied.error is not None
    assert denied.error.kind is ErrorKind.AUTH


def test_error_messages_never_carry_api_keys_or_tokens() -> None:
    response = both_ways(WRITTEN / "error-403-permission-denied.json", status=403)
    assert response.error is not None
    assert response.error.message == (
        "Permission denied: Consumer 'api_key:[redacted]' has been suspended."
    )
    body = {
        "error": {
            "code": 400,
            "status": "INVALID_ARGUMENT",
            "message": "Bad request to https://x.googleapis.com/v1?key=AIzaSyA1b2C3d4E5f6G7h8 "
            "with Authorization: Bearer ya29.a0AfH6SMBx and sk-proj-abcdef123456",
        }
    }
    error = normalize(body, status=400).error
    assert error is not None
    assert error.message is not None
    message = error.message
    for secret in ("AIzaSy", "ya29", "sk-proj"):
        assert secret not in message


def test_an_html_error_page_is_classified_by_its_status_alone() -> None:
    page = b"<html><head><title>502 Bad Gateway</title></head><body>Bad Gateway</body></html>"
    response = normalize(page, provider="vertex", status=502)
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "http_502"
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.message == "502 Bad Gateway Bad Gateway"


def test_an_error_wrapped_in_an_array_by_the_streaming_endpoint_is_still_read() -> None:
    body = orjson.loads(read(WRITTEN / "error-429-resource-exhausted.json"))
    response = gemini_module.parse_error([body], 429, "gemini")
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT


# Detection stays specific -----------------------------------------------------------------

OTHER_FORMATS = json_fixtures(
    "anthropic",
    "openai-chat",
    "openai-responses",
    "azure",
    "bedrock",
    "openrouter",
    "other",
    "other/written",
)


@pytest.mark.parametrize("path", OTHER_FORMATS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_bodies_of_other_formats_are_never_claimed(path: Path) -> None:
    assert gemini_module.detect_provider(orjson.loads(read(path))) is None


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}},
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        {"error": {"code": 429, "message": "Rate limited", "metadata": {}}},
        {"error": {"code": 400, "message": "bad", "status": "invalid_argument"}},
        {"code": "The caller does not have permission", "error": "Content violates usage"},
        {"error": "model 'llama3' not found"},
        {"choices": [], "usageMetadata": {}, "modelVersion": "x"},
    ],
)
def test_only_google_style_error_bodies_are_claimed(body: dict[str, Any]) -> None:
    assert gemini_module.detect_provider(body) is None


def test_a_body_of_no_generate_content_shape_is_rejected_with_a_normalize_error() -> None:
    with pytest.raises(NormalizeError, match="generateContent"):
        normalize({"hello": "world"}, provider="gemini")


# Properties -----------------------------------------------------------------------------

ALL_PAYLOADS = sorted(RECORDED.glob("*.json")) + sorted(WRITTEN.glob("*.json"))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), path=st.sampled_from(ALL_PAYLOADS))
def test_mutated_and_truncated_payloads_raise_nothing_but_normalize_error(
    data: st.DataObject, path: Path
) -> None:
    check_never_raises_but_normalize_error(
        data, path, (None, "gemini", "vertex"), (None, 200, 400, 403, 429, 500)
    )


FILTER_VALUES = [
    raw
    for raw, finish in gemini_module.FINISH_REASONS.items()
    if finish is (FinishReason.CONTENT_FILTER)
]


@settings(max_examples=200)
@given(
    reason=st.sampled_from(FILTER_VALUES),
    candidate=st.dictionaries(st.text(max_size=12), JSON, max_size=4),
    top=st.dictionaries(st.sampled_from(["usageMetadata", "modelVersion", "createTime"]), JSON),
    block_reason=st.none() | st.text(max_size=12),
)
def test_a_filter_signal_is_never_reported_as_a_stop(
    reason: str, candidate: dict[str, Any], top: dict[str, Any], block_reason: str | None
) -> None:
    body: dict[str, Any] = {**top, "candidates": [{**candidate, "finishReason": reason}]}
    if block_reason is not None:
        body["promptFeedback"] = {"blockReason": block_reason}
    for provider in (None, "gemini"):
        response = normalize(body, provider=provider)
        assert response.finish_reason is FinishReason.CONTENT_FILTER
        assert response.raw_finish_reason == (block_reason if block_reason is not None else reason)
        assert notice(response) is not None
