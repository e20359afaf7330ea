"""Ollama's native API: done reasons, unfinished bodies and string error bodies.

Bodies written from Ollama's API documentation are in tests/fixtures/other/written/ (see
its README.md). Every body is read with the provider named and by shape detection.
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
from refusals.providers import ollama as ollama_module
from tests.providers._support import (
    FIXTURES,
    JSON,
    check_never_raises_but_normalize_error,
    json_fixtures,
    read,
)

WRITTEN = FIXTURES / "other" / "written"


def both_ways(path: Path, status: int | None = None) -> LLMResponse:
    """The body normalised by shape detection, checked against the named-provider result."""
    payload = read(path)
    detected = normalize(payload, status=status)
    assert detected.provider == "ollama"
    assert normalize(payload, provider="ollama", status=status) == detected
    assert detected.api == "chat"
    return detected


# Responses ----------------------------------------------------------------------------------

DONE = [
    ("ollama-chat-stop.json", FinishReason.STOP, "stop", "Hello! How are you today?"),
    (
        "ollama-chat-length.json",
        FinishReason.LENGTH,
        "length",
        "The sky is blue because of a phenomenon called",
    ),
    ("ollama-chat-load.json", FinishReason.STOP, "load", None),
    ("ollama-chat-unload.json", FinishReason.STOP, "unload", None),
    (
        "ollama-generate-stop.json",
        FinishReason.STOP,
        "stop",
        "\n  if a == 0:\n    return b\n  else:\n    return compute_gcd(b % a, a)\n",
    ),
    (
        "ollama-generate-no-done-reason.json",
        FinishReason.STOP,
        None,
        "The sky is blue because it is the color of the sky.",
    ),
]


@pytest.mark.parametrize(("name", "finish", "raw", "content"), DONE)
def test_finished_bodies_map_their_done_reason_and_keep_it_raw(
    name: str, finish: FinishReason, raw: str | None, content: str | None
) -> None:
    response = both_ways(WRITTEN / name)
    assert response.finish_reason is finish
    assert response.raw_finish_reason == raw
    assert response.stop_details is None
    assert response.content == content
    assert response.cut_off is False
    assert notice(response) is None


def test_chat_token_counts_and_model_are_read() -> None:
    response = both_ways(WRITTEN / "ollama-chat-stop.json")
    assert response.model == "llama3.2"
    assert response.request_id is None
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (26, 298)


def test_tool_calls_with_a_stop_reason_are_a_tool_calls_finish() -> None:
    response = both_ways(WRITTEN / "ollama-chat-tool-calls.json")
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.raw_finish_reason == "stop"
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("", "get_current_weather", '{"format":"celsius","location":"Paris, FR"}')
    ]
    assert response.content is None


def test_thinking_goes_to_reasoning_not_content() -> None:
    response = both_ways(WRITTEN / "ollama-chat-thinking.json")
    assert response.finish_reason is FinishReason.STOP
    assert response.content == "There are three r's in strawberry."
    assert response.reasoning == "Let me spell it: s-t-r-a-w-b-e-r-r-y. That is three r's."


def test_an_unfinished_body_is_an_error_and_its_text_a_cut_off_fragment() -> None:
    response = both_ways(WRITTEN / "ollama-chat-unfinished.json")
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason is None
    assert response.content == "The"
    assert response.cut_off is True
    assert notice(response) is None


def test_an_unknown_done_reason_is_an_error_never_a_stop() -> None:
    response = both_ways(WRITTEN / "ollama-chat-unknown-reason.json")
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "something_new"
    assert response.content == "Partial"
    assert response.cut_off is True


# Errors -------------------------------------------------------------------------------------

ERRORS = [
    ("ollama-error-404-model-not-found.json", 404, ErrorKind.INVALID_REQUEST),
    ("ollama-error-400-bad-request.json", 400, ErrorKind.INVALID_REQUEST),
    ("ollama-error-401-unauthorized.json", 401, ErrorKind.AUTH),
    ("ollama-error-429-rate-limit.json", 429, ErrorKind.TRANSIENT),
    ("ollama-error-500.json", 500, ErrorKind.TRANSIENT),
]


@pytest.mark.parametrize(("name", "status", "kind"), ERRORS)
def test_string_error_bodies_are_classified_by_status(
    name: str, status: int, kind: ErrorKind
) -> None:
    message = orjson.loads(read(WRITTEN / name))["error"]
    response = both_ways(WRITTEN / name, status=status)
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == f"http_{status}"
    assert response.error is not None
    assert (response.error.kind, response.error.status, response.error.message) == (
        kind,
        status,
        message,
    )
    assert response.stop_details is not None
    assert response.stop_details.explanation == message
    assert notice(response) is None


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("ollama-error-in-stream.json", ErrorKind.TRANSIENT),
        ("ollama-error-404-model-not-found.json", ErrorKind.INVALID_REQUEST),
        ("ollama-error-401-unauthorized.json", ErrorKind.AUTH),
    ],
)
def test_an_error_line_without_a_status_is_judged_by_its_message(
    name: str, kind: ErrorKind
) -> None:
    response = both_ways(WRITTEN / name)
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert (response.error.kind, response.error.status) == (kind, None)


def test_an_openai_style_error_sent_to_the_ollama_provider_is_still_read() -> None:
    body = {"error": {"message": 'model "x" not found', "type": "api_error", "param": None}}
    response = normalize(body, provider="ollama", status=404)
    assert response.error is not None
    assert (response.error.kind, response.error.code) == (ErrorKind.INVALID_REQUEST, "api_error")
    assert response.error.message == 'model "x" not found'


def test_error_messages_never_carry_api_keys() -> None:
    body = {"error": "unauthorized: Authorization: Bearer sk-ollama-abcdef123456"}
    error = normalize(body, provider="ollama", status=401).error
    assert error is not None
    assert error.message is not None
    assert "abcdef" not in error.message


def test_an_html_error_page_is_classified_by_its_status_alone() -> None:
    response = normalize(b"<html><body>502 Bad Gateway</body></html>", "ollama", 502)
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.raw_finish_reason == "http_502"


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
    "other",
) + sorted(WRITTEN.glob("cohere-*.json"))


@pytest.mark.parametrize("path", OTHER_FORMATS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_bodies_of_other_formats_are_never_claimed(path: Path) -> None:
    assert ollama_module.detect_provider(orjson.loads(read(path))) is None


@pytest.mark.parametrize(
    "body",
    [
        # xAI 403: an `error` string beside a `code` string belongs to the OpenAI-chat module.
        {
            "code": "The caller does not have permission to execute the specified operation",
            "error": "Content violates usage guidelines. Failed check: SAFETY_CHECK_TYPE_BIO",
        },
        {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}},
        {"error": "bad", "error_type": "validation"},
        {"object": "chat.completion", "done": True, "message": {"content": "hi"}},
        {"choices": [], "done": True, "message": {"content": "hi"}},
    ],
)
def test_error_strings_beside_other_keys_and_openai_bodies_are_not_claimed(
    body: dict[str, Any],
) -> None:
    assert ollama_module.detect_provider(body) is None


def test_a_body_of_no_ollama_shape_is_rejected_with_a_normalize_error() -> None:
    with pytest.raises(NormalizeError, match="Ollama"):
        normalize({"hello": "world"}, provider="ollama")


# Properties ---------------------------------------------------------------------------------

ALL_PAYLOADS = sorted(WRITTEN.glob("ollama-*.json"))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), path=st.sampled_from(ALL_PAYLOADS))
def test_mutated_and_truncated_payloads_raise_nothing_but_normalize_error(
    data: st.DataObject, path: Path
) -> None:
    check_never_raises_but_normalize_error(
        data, path, (None, "ollama"), (None, 200, 400, 404, 429, 500)
    )


@settings(max_examples=200)
@given(
    done=st.sampled_from([False, None, 0, "true"]),
    reason=st.none() | st.text(max_size=10),
    message=st.dictionaries(st.sampled_from(["role", "content", "thinking", "tool_calls"]), JSON),
)
def test_an_unfinished_body_or_an_unknown_done_reason_is_never_a_stop(
    done: Any, reason: str | None, message: dict[str, Any]
) -> None:
    body: dict[str, Any] = {"model": "llama3.2", "message": message, "done": done}
    if reason is not None:
        body["done_reason"] = reason
    response = normalize(body, provider="ollama")
    assert response.finish_reason is FinishReason.ERROR
    finished = {**body, "done": True, "done_reason": f"x-{reason}"}
    assert normalize(finished, provider="ollama").finish_reason is FinishReason.ERROR
