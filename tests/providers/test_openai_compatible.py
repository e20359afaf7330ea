"""OpenAI-compatible vendors: OpenRouter, DeepSeek, xAI, Groq, Mistral and Ollama's /v1.

All of them speak Chat Completions; what differs is how each says "blocked", "declined",
"no money" or "try again". Recorded OpenRouter bodies are in tests/fixtures/openrouter/
(see tests/fixtures/SOURCES.md); bodies written from each vendor's documentation are in
tests/fixtures/<vendor>/written/ (see the README.md there).
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
from refusals.providers import normalize
from tests.providers._support import (
    DECLINED,
    FILTERED,
    FIXTURES,
    JSON,
    NEXT_STEP,
    category_and_explanation,
    check_never_raises_but_normalize_error,
    details_of,
    read,
)


def written(vendor: str, name: str) -> Path:
    return FIXTURES / vendor / "written" / name


def both_ways(path: Path, provider: str, status: int | None = None) -> LLMResponse:
    """The body normalised by shape detection, checked against the named-provider result."""
    payload = read(path)
    detected = normalize(payload, status=status)
    assert detected.provider == provider
    assert normalize(payload, provider=provider, status=status) == detected
    assert detected.api == "chat.completions"
    return detected


def named(path: Path, provider: str, status: int | None = None) -> LLMResponse:
    """The body normalised with the provider named (for bodies no shape can attribute)."""
    response = normalize(read(path), provider=provider, status=status)
    assert response.provider == provider
    assert response.api == "chat.completions"
    return response


# OpenRouter -------------------------------------------------------------------------------


def test_openrouter_keeps_the_upstream_native_finish_reason_as_the_raw_value() -> None:
    response = both_ways(
        FIXTURES / "openrouter" / "gemini-length-native-max-tokens.json", "openrouter"
    )
    assert response.finish_reason is FinishReason.LENGTH
    assert response.raw_finish_reason == "MAX_TOKENS"
    assert response.model == "google/gemini-2.5-flash"
    assert response.usage is not None
    assert response.usage.input_tokens == 2168
    assert response.usage.cache_read_tokens == 2161
    assert response.usage.cache_creation_tokens == 2161
    assert notice(response) is None


def test_an_openrouter_upstream_rate_limit_is_transient_and_quotes_the_upstream() -> None:
    path = FIXTURES / "openrouter" / "error-429-upstream-rate-limited.json"
    response = both_ways(path, "openrouter", status=429)
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "http_429"
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.retryable is True
    assert response.error.message == (
        "Provider returned error: google/gemini-2.0-flash-exp:free is temporarily rate-limited "
        "upstream. Please retry shortly, or add your own key to accumulate your rate limits: "
        "https://openrouter.ai/settings/integrations"
    )
    # Without the status, the body's own numeric code says 429.
    assert both_ways(path, "openrouter").error == response.error


def test_an_openrouter_content_filter_keeps_the_upstream_safety_value() -> None:
    response = both_ways(written("openrouter", "response-content-filter-safety.json"), "openrouter")
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "SAFETY"
    assert category_and_explanation(response) == (None, None)
    assert notice(response) == f"{FILTERED}. {NEXT_STEP}"


def test_an_error_inside_an_openrouter_200_body_is_an_error_with_the_partial_text() -> None:
    response = both_ways(written("openrouter", "response-error-in-body.json"), "openrouter")
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "error"
    assert response.content == "The three main causes were"
    assert response.cut_off is True
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.message == "Provider disconnected unexpectedly"
    assert notice(response) is None


def test_an_openrouter_moderation_403_is_a_policy_block_on_the_flagged_reasons() -> None:
    response = both_ways(written("openrouter", "error-moderation-403.json"), "openrouter", 403)
    explanation = (
        'openai/gpt-4o requires moderation on OpenAI. Your input was flagged for "violence". '
        "No credits were charged."
    )
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "http_403"
    assert response.error is not None
    assert response.error.kind is ErrorKind.POLICY
    assert response.model == "openai/gpt-4o"
    assert category_and_explanation(response) == ("violence", explanation)
    assert response.stop_details is not None
    assert response.stop_details.categories == ("violence", "harassment/threatening")
    assert notice(response) == (
        f"{FILTERED} (categories: violence, harassment/threatening): {explanation} {NEXT_STEP}"
    )
    assert details_of(response, "openrouter_error") == [
        {
            "type": "openrouter_error",
            "reasons": ["violence", "harassment/threatening"],
            "flagged_input": "I want to hurt...them tomorrow",
            "provider_name": "OpenAI",
            "model_slug": "openai/gpt-4o",
        }
    ]


def test_an_openrouter_content_policy_violation_is_a_policy_block() -> None:
    path = written("openrouter", "error-content-policy-violation.json")
    response = both_ways(path, "openrouter", 403)
    explanation = (
        "Provider returned error: The response was blocked by the provider's safety filter."
    )
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "content_policy_violation"
    assert response.error is not None
    assert response.error.kind is ErrorKind.POLICY
    assert category_and_explanation(response) == (None, explanation)
    assert notice(response) == (
        f"{FILTERED}: provider returned error: The response was blocked by the provider's "
        f"safety filter. {NEXT_STEP}"
    )


def test_an_openrouter_refusal_error_is_a_refusal_that_is_never_retried() -> None:
    # OpenRouter's `error_type: "refusal"` means the upstream model declined: that is a
    # refusal (the model's own decision), reported through an error, not a filter.
    response = both_ways(written("openrouter", "error-refusal.json"), "openrouter", 403)
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.raw_finish_reason == "refusal"
    assert response.error is not None
    assert response.error.kind is ErrorKind.POLICY
    assert response.error.retryable is False
    assert category_and_explanation(response) == (
        None,
        "The model declined to respond to this request.",
    )
    assert notice(response) == (
        f"{DECLINED}: the model declined to respond to this request. {NEXT_STEP}"
    )


@pytest.mark.parametrize(
    ("name", "status"), [("error-402-credits.json", 402), ("error-401-key.json", 401)]
)
def test_openrouter_credit_and_key_errors_are_auth_errors(name: str, status: int) -> None:
    response = both_ways(written("openrouter", name), "openrouter", status)
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == f"http_{status}"
    assert response.error is not None
    assert response.error.kind is ErrorKind.AUTH
    assert response.error.status == status
    assert notice(response) is None


# DeepSeek ---------------------------------------------------------------------------------


def test_a_deepseek_content_filter_finish_is_a_filter_stop() -> None:
    response = both_ways(written("deepseek", "response-content-filter.json"), "deepseek")
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "content_filter"
    assert response.content is None
    assert notice(response) == f"{FILTERED}. {NEXT_STEP}"


def test_a_deepseek_insufficient_system_resource_finish_is_an_error_with_cut_off_text() -> None:
    path = written("deepseek", "response-insufficient-system-resource.json")
    response = both_ways(path, "deepseek")
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "insufficient_system_resource"
    assert response.cut_off is True
    assert response.usage is not None
    assert response.usage.cache_read_tokens == 64  # prompt_cache_hit_tokens
    assert notice(response) is None


def test_deepseek_reasoning_content_becomes_the_reasoning() -> None:
    response = both_ways(written("deepseek", "response-reasoner.json"), "deepseek")
    assert response.finish_reason is FinishReason.STOP
    assert response.reasoning == "Compare 9.11 and 9.80: 0.11 < 0.80."
    assert response.content == "9.11 is smaller than 9.8."


def test_content_exists_risk_is_a_deepseek_policy_block() -> None:
    response = both_ways(written("deepseek", "error-content-exists-risk.json"), "deepseek", 400)
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "invalid_request_error"
    assert response.error is not None
    assert response.error.kind is ErrorKind.POLICY
    assert category_and_explanation(response) == (None, "Content Exists Risk")
    assert notice(response) == f"{FILTERED}: content Exists Risk. {NEXT_STEP}"


@pytest.mark.parametrize("status", [402, None])
def test_deepseek_insufficient_balance_is_an_auth_error(status: int | None) -> None:
    response = named(written("deepseek", "error-insufficient-balance.json"), "deepseek", status)
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.kind is ErrorKind.AUTH
    assert response.error.retryable is False


# xAI --------------------------------------------------------------------------------------


def test_an_xai_safety_check_is_a_policy_block_named_after_the_failed_check() -> None:
    response = both_ways(written("xai", "error-safety-check-bio.json"), "xai", 403)
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "SAFETY_CHECK_TYPE_BIO"
    assert response.model == "grok-4-0709"
    assert response.error is not None
    assert response.error.kind is ErrorKind.POLICY
    assert category_and_explanation(response) == ("bio", "Content violates usage guidelines.")
    assert notice(response) == (
        f"{FILTERED} (category: bio): content violates usage guidelines. {NEXT_STEP}"
    )
    assert response.error.message == (
        "Content violates usage guidelines. Team: [redacted], API key ID: [redacted], "
        "Model: grok-4-0709, Failed check: SAFETY_CHECK_TYPE_BIO"
    )
    assert "written-key" not in repr(response)
    assert "written-team" not in repr(response)


@pytest.mark.parametrize(
    ("name", "status", "message"),
    [
        (
            "error-incorrect-api-key.json",
            400,
            "Incorrect API key provided: [redacted]. You can obtain an API key from "
            "https://console.x.ai.",
        ),
        (
            "error-no-credits.json",
            403,
            "Your newly created team doesn't have any credits yet. You can purchase credits on "
            "https://console.x.ai/team/3f6c2a9e-written-team.",
        ),
    ],
)
def test_an_xai_bad_key_or_no_credits_body_is_an_auth_error_not_a_block(
    name: str, status: int, message: str
) -> None:
    response = both_ways(written("xai", name), "xai", status)
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.kind is ErrorKind.AUTH
    assert response.error.message == message
    assert notice(response) is None


def test_a_grok_model_response_is_attributed_to_xai_with_its_reasoning() -> None:
    response = both_ways(written("xai", "response-reasoning.json"), "xai")
    assert response.finish_reason is FinishReason.STOP
    assert response.reasoning == "101 * 3 = 303."
    assert response.usage is not None
    assert response.usage.cache_read_tokens == 6


# Groq -------------------------------------------------------------------------------------


def test_a_groq_response_is_recognised_by_its_x_groq_extension() -> None:
    response = both_ways(written("groq", "response.json"), "groq")
    assert response.finish_reason is FinishReason.STOP
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (18, 12)


def test_a_groq_token_rate_limit_is_transient_even_though_it_mentions_billing() -> None:
    response = both_ways(written("groq", "error-rate-limit.json"), "groq", 429)
    assert response.raw_finish_reason == "rate_limit_exceeded"
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT


def test_a_groq_invalid_key_is_an_auth_error() -> None:
    response = named(written("groq", "error-invalid-api-key.json"), "groq", 401)
    assert response.error is not None
    assert response.error.kind is ErrorKind.AUTH
    assert response.error.message == "Invalid API Key"


def test_groq_flex_capacity_498_is_transient() -> None:
    response = normalize(b"Flex Tier Capacity Exceeded", provider="groq", status=498)
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT


# Mistral ----------------------------------------------------------------------------------


def test_mistral_model_length_is_a_length_stop() -> None:
    response = both_ways(written("mistral", "response-model-length.json"), "mistral")
    assert response.finish_reason is FinishReason.LENGTH
    assert response.raw_finish_reason == "model_length"
    assert notice(response) is None


def test_mistral_thinking_chunks_become_the_reasoning_and_text_chunks_the_content() -> None:
    response = both_ways(written("mistral", "response-thinking.json"), "mistral")
    assert response.finish_reason is FinishReason.STOP
    assert response.content == "2 + 2 = 4."
    assert response.reasoning == "Two plus two is four."


@pytest.mark.parametrize(
    ("name", "status", "kind", "message"),
    [
        (
            "error-invalid-model.json",
            400,
            ErrorKind.INVALID_REQUEST,
            "Invalid model: mistral-huge-latest",
        ),
        (
            "error-validation.json",
            422,
            ErrorKind.INVALID_REQUEST,
            '{"detail":[{"type":"missing","loc":["body","messages"],"msg":"Field required",'
            '"input":{"model":"mistral-small-latest"}}]}',
        ),
    ],
)
def test_mistral_error_objects_are_classified_and_keep_their_message(
    name: str, status: int, kind: ErrorKind, message: str
) -> None:
    response = both_ways(written("mistral", name), "mistral", status)
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.kind is kind
    assert response.error.message == message


def test_a_mistral_gateway_401_is_an_auth_error() -> None:
    response = named(written("mistral", "error-unauthorized.json"), "mistral", 401)
    assert response.error is not None
    assert response.error.kind is ErrorKind.AUTH
    assert response.error.message == "Unauthorized"


# Ollama's OpenAI-compatible endpoint ------------------------------------------------------


def test_an_ollama_v1_response_is_recognised_by_its_fingerprint() -> None:
    response = both_ways(written("ollama", "response.json"), "ollama")
    assert response.finish_reason is FinishReason.STOP
    assert response.content == "Hello! How can I help you today?"
    assert response.model == "llama3.2"


def test_ollama_v1_tool_calls_keep_the_reasoning() -> None:
    response = both_ways(written("ollama", "response-tool-calls.json"), "ollama")
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.reasoning == "The user wants the weather."
    assert response.tool_calls == [
        ToolCall(id="call_ollama_1", name="get_weather", arguments='{"city":"Toronto"}')
    ]


# Detection by model name ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("deepseek-chat", "deepseek"),
        ("grok-4-0709", "xai"),
        ("mistral-small-latest", "mistral"),
        ("codestral-2508", "mistral"),
        ("magistral-medium-2509", "mistral"),
        ("ministral-8b-latest", "mistral"),
        ("gpt-4o-mini", "openai"),
    ],
)
def test_a_plain_chat_body_is_attributed_by_its_model_name(model: str, provider: str) -> None:
    body = {
        "id": "x",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"content": "hi"}, "finish_reason": "stop"}],
    }
    assert normalize(body).provider == provider


# Properties -------------------------------------------------------------------------------

VENDORS = ("openrouter", "deepseek", "xai", "groq", "mistral", "ollama")
ALL_PAYLOADS = sorted((FIXTURES / "openrouter").glob("*.json")) + sorted(
    path for vendor in VENDORS for path in (FIXTURES / vendor / "written").glob("*.json")
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), path=st.sampled_from(ALL_PAYLOADS))
def test_mutated_and_truncated_payloads_raise_nothing_but_normalize_error(
    data: st.DataObject, path: Path
) -> None:
    vendor = path.parent.name if path.parent.name != "written" else path.parent.parent.name
    check_never_raises_but_normalize_error(data, path, (None, vendor))


@settings(max_examples=200)
@given(
    vendor=st.sampled_from(VENDORS),
    native=st.none() | st.text(max_size=12),
    message=st.dictionaries(st.sampled_from(["content", "tool_calls", "reasoning"]), JSON),
    top=st.dictionaries(st.sampled_from(["usage", "model", "id", "provider", "x_groq"]), JSON),
)
def test_a_content_filter_finish_from_any_vendor_is_never_reported_as_a_stop(
    vendor: str, native: str | None, message: dict[str, Any], top: dict[str, Any]
) -> None:
    choice: dict[str, Any] = {"message": message, "finish_reason": "content_filter"}
    if native is not None:
        choice["native_finish_reason"] = native
    body = {**top, "choices": [choice]}
    response = normalize(body, provider=vendor)
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == (native if native is not None else "content_filter")
    assert notice(response) is not None


@settings(max_examples=100)
@given(
    check=st.from_regex(r"[A-Z][A-Z0-9_]{0,12}", fullmatch=True),
    status=st.sampled_from([400, 403, None]),
)
def test_any_xai_failed_safety_check_is_a_block_named_after_the_check(
    check: str, status: int | None
) -> None:
    body = {
        "code": "The caller does not have permission to execute the specified operation",
        "error": f"Content violates usage guidelines. Model: grok-4, Failed check: "
        f"SAFETY_CHECK_TYPE_{check}",
    }
    response = normalize(orjson.dumps(body), status=status)
    assert response.provider == "xai"
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert category_and_explanation(response) == (
        check.lower(),
        "Content violates usage guidelines.",
    )
