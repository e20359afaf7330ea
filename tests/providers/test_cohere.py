"""Cohere Chat API v1 and v2: finish reasons, the toxic-output filter and errors.

The recorded body is tests/fixtures/other/cohere-v2-max-tokens.json (see
tests/fixtures/SOURCES.md); bodies written from Cohere's documentation are in
tests/fixtures/other/written/ (see its README.md). Responses are read both with the
provider named and by shape detection; error bodies (`{"message": ...}`) are shared with
other APIs, so they are read with the provider named.
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
from refusals.providers import cohere as cohere_module
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

OTHER = FIXTURES / "other"
WRITTEN = OTHER / "written"


def both_ways(path: Path) -> LLMResponse:
    """The body normalised by shape detection, checked against the named-provider result."""
    payload = read(path)
    detected = normalize(payload)
    assert detected.provider == "cohere"
    assert normalize(payload, provider="cohere") == detected
    assert detected.api == "chat"
    return detected


def plain_finish(name: str, finish: FinishReason, raw: str, content: str | None) -> LLMResponse:
    """The body `name`, checked to end as a finish reason that is no filter: its finish,
    its raw value, no notice, and content cut off only by an error."""
    response = both_ways(WRITTEN / name)
    assert response.finish_reason is finish
    assert response.raw_finish_reason == raw
    assert category_and_explanation(response) == (None, None)
    assert response.content == content
    assert response.cut_off is (finish is FinishReason.ERROR and content is not None)
    assert notice(response) is None
    return response


# Recorded ---------------------------------------------------------------------------------


def test_a_recorded_v2_max_tokens_stop_is_a_length_stop_with_token_counts() -> None:
    response = both_ways(OTHER / "cohere-v2-max-tokens.json")
    assert response.finish_reason is FinishReason.LENGTH
    assert response.raw_finish_reason == "MAX_TOKENS"
    assert category_and_explanation(response) == (None, None)
    assert response.content == "**The History of"
    assert response.request_id == "039584d9-7236-4ecb-9dd7-f1bed57888bc"
    assert response.cut_off is False
    assert notice(response) is None
    assert response.usage is not None
    assert (
        response.usage.input_tokens,
        response.usage.output_tokens,
        response.usage.cache_read_tokens,
    ) == (506, 5, 448)


# v1 -----------------------------------------------------------------------------------------


def test_a_v1_toxic_output_is_a_content_filter_with_the_toxic_category() -> None:
    response = both_ways(WRITTEN / "cohere-v1-error-toxic.json")
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "ERROR_TOXIC"
    assert category_and_explanation(response) == ("toxic", None)
    assert response.content is None
    assert response.cut_off is False
    assert response.request_id == "3a2b1c0d-9e8f-4a7b-8c6d-5e4f3a2b1c0d"
    assert notice(response) == f"{FILTERED} (category: toxic). {NEXT_STEP}"


def test_toxic_output_after_partial_text_keeps_the_text_as_a_cut_off_fragment() -> None:
    body = orjson.loads(read(WRITTEN / "cohere-v1-error-toxic.json"))
    body["text"] = "Sure, here is"
    response = normalize(body)
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.content == "Sure, here is"
    assert response.cut_off is True
    assert notice(response) == f"{FILTERED} (category: toxic). {NEXT_STEP}"


V1_STOPS = [
    (
        "cohere-v1-complete.json",
        FinishReason.STOP,
        "COMPLETE",
        "The printing press was invented by Johannes Gutenberg around 1440.",
    ),
    (
        "cohere-v1-max-tokens.json",
        FinishReason.LENGTH,
        "MAX_TOKENS",
        "The printing press was invented by",
    ),
    (
        "cohere-v1-error-limit.json",
        FinishReason.LENGTH,
        "ERROR_LIMIT",
        "Gutenberg's press combined several existing technologies, including",
    ),
    ("cohere-v1-error.json", FinishReason.ERROR, "ERROR", None),
    ("cohere-v1-user-cancel.json", FinishReason.ERROR, "USER_CANCEL", "The printing press"),
]


@pytest.mark.parametrize(("name", "finish", "raw", "content"), V1_STOPS)
def test_v1_finish_reasons_map_to_one_finish_each_and_keep_the_raw_value(
    name: str, finish: FinishReason, raw: str, content: str | None
) -> None:
    response = plain_finish(name, finish, raw, content)
    assert response.usage is not None
    assert response.usage.input_tokens > 0


def test_v1_token_counts_prefer_processed_tokens_over_billed_units() -> None:
    response = both_ways(WRITTEN / "cohere-v1-complete.json")
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (74, 9)
    billed_only = both_ways(WRITTEN / "cohere-v1-tool-calls.json")
    assert billed_only.usage is not None
    assert (billed_only.usage.input_tokens, billed_only.usage.output_tokens) == (37, 21)


def test_v1_tool_calls_on_a_complete_finish_are_a_tool_calls_finish() -> None:
    response = both_ways(WRITTEN / "cohere-v1-tool-calls.json")
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.raw_finish_reason == "COMPLETE"
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("", "query_daily_sales_report", '{"day":"2023-09-29"}')
    ]
    assert response.content == "I will look up today's sales report."


# v2 -----------------------------------------------------------------------------------------

V2_STOPS = [
    (
        "cohere-v2-complete-thinking.json",
        FinishReason.STOP,
        "COMPLETE",
        "The Art of API Design: Crafting Elegant and Powerful Interfaces",
    ),
    (
        "cohere-v2-stop-sequence.json",
        FinishReason.STOP,
        "STOP_SEQUENCE",
        "Amsterdam\nUtrecht\nRotterdam\n",
    ),
    ("cohere-v2-error.json", FinishReason.ERROR, "ERROR", "Gutenberg's press"),
    ("cohere-v2-timeout.json", FinishReason.ERROR, "TIMEOUT", None),
    ("cohere-v2-unknown-value.json", FinishReason.ERROR, "SOMETHING_NEW", "Partial"),
]


@pytest.mark.parametrize(("name", "finish", "raw", "content"), V2_STOPS)
def test_v2_finish_reasons_map_to_one_finish_each_and_unknown_ones_are_errors(
    name: str, finish: FinishReason, raw: str, content: str | None
) -> None:
    plain_finish(name, finish, raw, content)


def test_v2_thinking_goes_to_reasoning_and_text_to_content() -> None:
    response = both_ways(WRITTEN / "cohere-v2-complete-thinking.json")
    assert response.reasoning == "The user wants a title. Short and concrete is best."
    assert response.request_id == "5a50480a-cf52-46f0-af01-53d18539bd31"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (502, 12)


def test_v2_tool_calls_keep_their_ids_and_the_tool_plan_goes_to_reasoning() -> None:
    response = both_ways(WRITTEN / "cohere-v2-tool-call.json")
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.raw_finish_reason == "TOOL_CALL"
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("get_weather_1byjy32y4hvq", "get_weather", '{"location":"Toronto"}')
    ]
    assert response.reasoning == "I will search for the weather in Toronto."
    assert response.content is None


# Errors -------------------------------------------------------------------------------------

ERRORS = [
    ("cohere-error-429-trial-key.json", 429, ErrorKind.TRANSIENT),
    ("cohere-error-500.json", 500, ErrorKind.TRANSIENT),
    ("cohere-error-401-invalid-token.json", 401, ErrorKind.AUTH),
    ("cohere-error-400-too-many-tokens.json", 400, ErrorKind.INVALID_REQUEST),
]


@pytest.mark.parametrize(("name", "status", "kind"), ERRORS)
def test_error_bodies_are_classified_by_status(name: str, status: int, kind: ErrorKind) -> None:
    body = orjson.loads(read(WRITTEN / name))
    assert cohere_module.is_error(body)
    response = normalize(read(WRITTEN / name), provider="cohere", status=status)
    assert response.provider == "cohere"
    assert response.api == "chat"
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == f"http_{status}"
    assert response.error is not None
    assert (response.error.kind, response.error.status) == (kind, status)
    assert response.error.message == body["message"]
    assert category_and_explanation(response) == (None, body["message"])
    assert notice(response) is None


@pytest.mark.parametrize("status", [400, 422])
def test_a_message_saying_the_content_was_blocked_is_a_policy_stop(status: int) -> None:
    response = normalize(
        read(WRITTEN / "cohere-error-422-content-blocked.json"), provider="cohere", status=status
    )
    message = (
        "invalid request: the input was flagged as unsafe by the content moderation filter "
        "and was blocked."
    )
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == f"http_{status}"
    assert response.error is not None
    assert response.error.kind is ErrorKind.POLICY
    assert response.error.retryable is False
    assert category_and_explanation(response) == (None, message)
    assert notice(response) == f"{FILTERED}: {message} {NEXT_STEP}"


def test_a_blocked_message_on_a_rate_limit_or_auth_status_stays_what_the_status_says() -> None:
    payload = read(WRITTEN / "cohere-error-422-content-blocked.json")
    limited = normalize(payload, provider="cohere", status=429).error
    denied = normalize(payload, provider="cohere", status=401).error
    assert limited is not None
    assert denied is not None
    assert (limited.kind, denied.kind) == (ErrorKind.TRANSIENT, ErrorKind.AUTH)


def test_without_a_status_the_error_message_decides_the_kind() -> None:
    def kind(message: str) -> ErrorKind:
        error = normalize({"message": message}, provider="cohere").error
        assert error is not None
        return error.kind

    assert kind("invalid api token") is ErrorKind.AUTH
    assert kind("You are using a Trial key, which is limited to 20 API calls / minute.") is (
        ErrorKind.TRANSIENT
    )
    assert kind("too many tokens: size limit exceeded by 11326 tokens.") is (
        ErrorKind.INVALID_REQUEST
    )


def test_error_messages_never_carry_api_keys() -> None:
    body = {"message": "invalid api token: Bearer abcDEF0123456789 (x-api-key: zz9)"}
    error = normalize(body, provider="cohere", status=401).error
    assert error is not None
    assert error.message == "invalid api token: [redacted] ([redacted])"


def test_an_html_error_page_is_classified_by_its_status_alone() -> None:
    response = normalize(b"<html><body>503 Service Unavailable</body></html>", "cohere", 503)
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.message == "503 Service Unavailable"


# Detection ----------------------------------------------------------------------------------

OTHER_FORMATS = json_fixtures(
    "anthropic",
    "openai-chat",
    "openai-responses",
    "azure",
    "bedrock",
    "openrouter",
    "gemini",
    "gemini/written",
) + sorted((WRITTEN).glob("ollama-*.json"))


@pytest.mark.parametrize("path", OTHER_FORMATS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_bodies_of_other_formats_are_never_claimed(path: Path) -> None:
    assert cohere_module.detect_provider(orjson.loads(read(path))) is None


def test_openai_chat_bodies_and_bare_error_messages_are_not_claimed() -> None:
    chat = orjson.loads(read(FIXTURES / "openai-chat" / "refusal.json"))
    chat["finish_reason"] = "COMPLETE"
    chat["generation_id"] = "x"
    assert cohere_module.detect_provider(chat) is None
    assert cohere_module.detect_provider({"message": "invalid api token"}) is None
    assert cohere_module.detect_provider({"text": "hi", "finish_reason": "stop"}) is None


def test_a_body_of_no_chat_shape_is_rejected_with_a_normalize_error() -> None:
    with pytest.raises(NormalizeError, match="Cohere chat response"):
        normalize({"hello": "world"}, provider="cohere")


# Properties ---------------------------------------------------------------------------------

ALL_PAYLOADS = [OTHER / "cohere-v2-max-tokens.json", *sorted(WRITTEN.glob("cohere-*.json"))]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), path=st.sampled_from(ALL_PAYLOADS))
def test_mutated_and_truncated_payloads_raise_nothing_but_normalize_error(
    data: st.DataObject, path: Path
) -> None:
    check_never_raises_but_normalize_error(
        data, path, (None, "cohere"), (None, 200, 400, 422, 429, 500)
    )


@settings(max_examples=200)
@given(
    base=st.sampled_from(["cohere-v1-error-toxic.json", "cohere-v1-complete.json"]),
    junk=st.dictionaries(
        st.sampled_from(["text", "generation_id", "meta", "tool_calls", "response_id", "model"]),
        JSON,
    ),
)
def test_a_toxic_finish_is_never_reported_as_a_stop(base: str, junk: dict[str, Any]) -> None:
    body = {**orjson.loads(read(WRITTEN / base)), **junk, "finish_reason": "ERROR_TOXIC"}
    response = normalize(body, provider="cohere")
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "ERROR_TOXIC"
    assert notice(response) == f"{FILTERED} (category: toxic). {NEXT_STEP}"
