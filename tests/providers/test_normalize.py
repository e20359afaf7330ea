"""`refusals.normalize`: every input form, shape detection across providers, documented errors."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refusals import FinishReason, NormalizeError, normalize, notice
from refusals.model import ErrorKind

FIXTURES = Path(__file__).parent.parent / "fixtures"
REFUSAL = FIXTURES / "anthropic" / "vercel-refusal-cyber.json"


class PydanticLike:
    """Stands in for an official SDK object: what matters is `model_dump`."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        assert mode == "json"
        return self._data


class ToDictLike:
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def to_dict(self) -> dict[str, Any]:
        return self._data


def test_bytes_text_dict_and_sdk_objects_give_the_same_response() -> None:
    raw = REFUSAL.read_bytes()
    data = orjson.loads(raw)
    expected = normalize(raw)
    assert expected.finish_reason is FinishReason.REFUSAL
    for payload in (raw.decode(), data, bytearray(raw), PydanticLike(data), ToDictLike(data)):
        assert normalize(payload) == expected


def test_a_real_sdk_object_is_read_through_model_dump() -> None:
    types = pytest.importorskip("anthropic.types", reason="the anthropic SDK (bench extra)")
    message = types.Message.model_validate_json(REFUSAL.read_bytes())
    response = normalize(message)
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.stop_details is not None
    assert response.stop_details.category == "cyber"


@pytest.mark.parametrize(
    ("path", "provider", "api"),
    [
        ("anthropic/vercel-refusal-cyber.json", "anthropic", "messages"),
        ("openai-chat/refusal.json", "openai", "chat.completions"),
        ("azure/chat-content-filter-results.json", "azure", "chat.completions"),
        ("openrouter/gemini-length-native-max-tokens.json", "openrouter", "chat.completions"),
        ("openai-responses/moderation-block-policy-flagged.json", "openai-responses", "responses"),
        ("gemini/finish-safety-blocked.json", "gemini", "generateContent"),
        ("gemini/prompt-blocked-model-armor.json", "vertex", "generateContent"),
        ("bedrock/converse-max-tokens.json", "bedrock", "converse"),
        ("other/cohere-v2-max-tokens.json", "cohere", "chat"),
    ],
)
def test_the_wire_format_is_recognised_from_the_shape(path: str, provider: str, api: str) -> None:
    response = normalize((FIXTURES / path).read_bytes())
    assert (response.provider, response.api) == (provider, api)


def test_an_unknown_provider_name_is_a_normalize_error() -> None:
    with pytest.raises(NormalizeError, match="unknown provider 'nope'; expected one of"):
        normalize(REFUSAL.read_bytes(), provider="nope")


def test_an_error_body_of_no_known_shape_is_classified_by_its_status() -> None:
    response = normalize(b'{"detail": "upstream timed out"}', status=504)
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.retryable


def test_a_non_json_error_page_is_classified_by_its_status() -> None:
    page = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
    response = normalize(page, status=502)
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.retryable


def test_a_gemini_error_wrapped_in_an_array_is_read_when_the_provider_is_named() -> None:
    body = (
        b'[{"error": {"code": 429, "message": "Resource exhausted",'
        b' "status": "RESOURCE_EXHAUSTED"}}]'
    )
    response = normalize(body, provider="gemini", status=429)
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT


def test_a_policy_error_body_becomes_a_content_filter_with_its_notice() -> None:
    body = {
        "error": {
            "message": "The response was filtered due to the prompt triggering Azure OpenAI's "
            "content management policy.",
            "type": None,
            "param": "prompt",
            "code": "content_filter",
            "status": 400,
            "innererror": {
                "code": "ResponsibleAIPolicyViolation",
                "content_filter_result": {
                    "hate": {"filtered": True, "severity": "high"},
                    "violence": {"filtered": False, "severity": "safe"},
                },
            },
        }
    }
    response = normalize(body, provider="azure", status=400)
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.error is not None
    assert not response.error.retryable
    text = notice(response)
    assert text is not None
    assert text.startswith("The provider's content filter blocked this request (category: hate)")


@given(st.binary(max_size=200))
def test_arbitrary_bytes_raise_nothing_but_normalize_error(raw: bytes) -> None:
    with contextlib.suppress(NormalizeError):
        normalize(raw)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "choices",
                "type",
                "content",
                "stop_reason",
                "candidates",
                "output",
                "stopReason",
                "error",
                "object",
                "message",
                "finish_reason",
                "done",
                "promptFeedback",
                "status",
            ]
        ),
        json_values,
        max_size=6,
    ),
    st.none() | st.sampled_from([400, 403, 429, 500]),
)
def test_random_objects_with_telling_keys_raise_nothing_but_normalize_error(
    body: dict[str, Any], status: int | None
) -> None:
    with contextlib.suppress(NormalizeError):
        normalize(body, status=status)
