"""Streams of OpenAI-compatible vendors: OpenRouter, DeepSeek, xAI, Groq, Mistral, Ollama /v1.

They all stream Chat Completions chunks; what differs is how each says "blocked", "declined"
or "failed" in a stream. The recorded OpenRouter stream is in tests/fixtures/openrouter/ (see
tests/fixtures/SOURCES.md); streams written from each vendor's documentation are in
tests/fixtures/<vendor>/written/ (see the README.md there). The shared checks are described
in test_openai_chat_stream.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals import notice
from refusals.events import ReasoningDelta, StreamError
from refusals.model import ErrorKind, FinishReason
from refusals.providers import normalize
from tests.providers._support import (
    DECLINED,
    DONE,
    FILTERED,
    FIXTURES,
    NEXT_STEP,
    Case,
    case_id,
    check_any_split,
    check_case,
    check_equivalent,
    check_fuzzed,
    check_truncations,
    decode,
    decode_with_events,
    sse_chunk,
)

CASES = [
    Case(
        "openrouter/stream-error-token-limit.sse",
        provider="openrouter",
        verdict_index=1,
        finish=FinishReason.LENGTH,
        raw="length",
        partner="openrouter/written/stream-error-token-limit.json",
    ),
    Case(
        "openrouter/written/stream-content-filter-safety.sse",
        provider="openrouter",
        verdict_index=1,
        finish=FinishReason.CONTENT_FILTER,
        raw="SAFETY",
        notice=f"{FILTERED}. {NEXT_STEP}",
        partner="openrouter/written/response-content-filter-safety.json",
    ),
    Case(
        "openrouter/written/stream-error-in-body.sse",
        provider="openrouter",
        verdict_index=2,
        finish=FinishReason.ERROR,
        raw="error",
        cut_off=True,
        content="The three main causes were",
        partner="openrouter/written/response-error-in-body.json",
    ),
    Case(
        "openrouter/written/stream-refusal-error.sse",
        provider="openrouter",
        verdict_index=1,
        finish=FinishReason.REFUSAL,
        raw="error",
        explanation="The model declined to respond to this request.",
        notice=f"{DECLINED}: the model declined to respond to this request. {NEXT_STEP}",
        partner="openrouter/written/stream-refusal-error.json",
    ),
    Case(
        "deepseek/written/stream-content-filter.sse",
        provider="deepseek",
        verdict_index=1,
        finish=FinishReason.CONTENT_FILTER,
        raw="content_filter",
        notice=f"{FILTERED}. {NEXT_STEP}",
        partner="deepseek/written/response-content-filter.json",
    ),
    Case(
        "deepseek/written/stream-insufficient-system-resource.sse",
        provider="deepseek",
        verdict_index=5,
        finish=FinishReason.ERROR,
        raw="insufficient_system_resource",
        cut_off=True,
        content="The first part of the answer is",
        partner="deepseek/written/response-insufficient-system-resource.json",
    ),
    Case(
        "deepseek/written/stream-reasoner.sse",
        provider="deepseek",
        verdict_index=7,
        finish=FinishReason.STOP,
        raw="stop",
        content="9.11 is smaller than 9.8.",
        partner="deepseek/written/response-reasoner.json",
    ),
    Case(
        "xai/written/stream-reasoning.sse",
        provider="xai",
        verdict_index=6,
        finish=FinishReason.STOP,
        raw="stop",
        content="101 multiplied by 3 is 303.",
        partner="xai/written/response-reasoning.json",
    ),
    Case(
        "groq/written/stream.sse",
        provider="groq",
        verdict_index=5,
        finish=FinishReason.STOP,
        raw="stop",
        content="Fast language models matter because latency shapes what people build.",
        partner="groq/written/response.json",
    ),
    Case(
        "mistral/written/stream-thinking.sse",
        provider="mistral",
        verdict_index=5,
        finish=FinishReason.STOP,
        raw="stop",
        content="2 + 2 = 4.",
        partner="mistral/written/response-thinking.json",
    ),
    Case(
        "mistral/written/stream-model-length.sse",
        provider="mistral",
        verdict_index=4,
        finish=FinishReason.LENGTH,
        raw="model_length",
        content="The history of the region begins",
        partner="mistral/written/response-model-length.json",
    ),
    Case(
        "ollama/written/stream.sse",
        provider="ollama",
        verdict_index=5,
        finish=FinishReason.STOP,
        raw="stop",
        content="Hello! How can I help you today?",
        partner="ollama/written/response.json",
    ),
    Case(
        "ollama/written/stream-tool-calls.sse",
        provider="ollama",
        verdict_index=4,
        finish=FinishReason.TOOL_CALLS,
        raw="tool_calls",
        partner="ollama/written/response-tool-calls.json",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_each_vendor_stream_gives_its_verdict_on_the_event_that_carries_it(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.partner], ids=case_id)
def test_each_vendor_stream_agrees_with_its_full_response(case: Case) -> None:
    check_equivalent(case)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_vendor_stream_split_anywhere_decodes_as_in_one_piece(case: Case) -> None:
    check_any_split(case)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_vendor_stream_cut_short_is_an_error_until_a_block_was_seen(case: Case) -> None:
    check_truncations(case)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.data())
def test_cut_mutated_or_reshuffled_vendor_streams_never_raise_nor_lose_a_block(
    data: st.DataObject,
) -> None:
    check_fuzzed(data, CASES)


def openrouter_chunk(
    delta: dict[str, Any] | None = None,
    finish: str | None = None,
    native: str | None = None,
    **extra: Any,
) -> bytes:
    body: dict[str, Any] = {
        "id": "gen-test",
        "provider": "Anthropic",
        "model": "anthropic/claude-sonnet-4.5",
        "object": "chat.completion.chunk",
        "choices": [
            {
                "index": 0,
                "delta": delta or {},
                "finish_reason": finish,
                "native_finish_reason": native,
            }
        ],
    }
    body.update(extra)
    return sse_chunk(body)


# OpenRouter ---------------------------------------------------------------------------------


def test_an_error_after_a_length_finish_explains_it_and_the_stop_stays_a_length_stop() -> None:
    # The recording: `finish_reason: "length"` (twice), then an error chunk "Token limit
    # reached". The error arrived after the finish and says why the output stopped; the same
    # body read whole is a length stop too, so both say LENGTH, never an error or a stop.
    path = FIXTURES / "openrouter/stream-error-token-limit.sse"
    response, decoder, events = decode_with_events(path.read_bytes())
    assert response.finish_reason is FinishReason.LENGTH
    assert response.raw_finish_reason == "length"
    assert not [e for e in events if isinstance(e, StreamError)]
    assert decoder.events_seen == 5  # the ": OPENROUTER PROCESSING" comments are no events
    assert response.reasoning == "We need to respond to a greeting. The user"
    assert len([e for e in events if isinstance(e, ReasoningDelta)]) == 2  # not doubled
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (43, 10)
    full = normalize((FIXTURES / "openrouter/written/stream-error-token-limit.json").read_bytes())
    assert full.error is not None
    assert full.error.message == "Token limit reached"


def test_an_error_after_a_stop_finish_turns_the_stream_into_an_error() -> None:
    error = {"code": 502, "message": "Provider disconnected unexpectedly"}
    data = openrouter_chunk({"content": "Done."}) + openrouter_chunk({}, "stop", "end_turn")
    data += openrouter_chunk({"content": ""}, error=error) + DONE
    response, decoder, events = decode_with_events(data)
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "end_turn"
    assert decoder.verdict_index == 2
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert [e.message for e in events if isinstance(e, StreamError)] == [
        "Provider disconnected unexpectedly"
    ]


def test_a_moderation_error_in_an_openrouter_chunk_is_a_content_filter_naming_its_reasons() -> None:
    error = {
        "code": 403,
        "message": "Input was flagged",
        "metadata": {"reasons": ["violence"], "flagged_input": "...", "provider_name": "OpenAI"},
    }
    data = openrouter_chunk({"content": ""}) + openrouter_chunk({}, "error", "error", error=error)
    response, decoder = decode(data + DONE)
    assert decoder.verdict_index == 1
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert notice(response) == f"{FILTERED} (category: violence): Input was flagged. {NEXT_STEP}"
    full = normalize(
        {
            "choices": [{"index": 0, "message": {"content": ""}, "finish_reason": "error"}],
            "provider": "OpenAI",
            "error": error,
        }
    )
    assert notice(full) == notice(response)


def test_openrouter_keeps_the_upstream_value_as_the_raw_finish_reason() -> None:
    path = FIXTURES / "openrouter/written/stream-content-filter-safety.sse"
    response, _ = decode(path.read_bytes())
    assert (response.finish_reason, response.raw_finish_reason) == (
        FinishReason.CONTENT_FILTER,
        "SAFETY",
    )


# Other vendors ------------------------------------------------------------------------------


def test_reasoning_content_streams_as_reasoning_for_deepseek_and_xai() -> None:
    deepseek, _ = decode((FIXTURES / "deepseek/written/stream-reasoner.sse").read_bytes())
    xai, _ = decode((FIXTURES / "xai/written/stream-reasoning.sse").read_bytes())
    assert deepseek.reasoning == "Compare 9.11 and 9.80: 0.11 < 0.80."
    assert xai.reasoning == "101 * 3 = 303."


def test_groq_token_counts_come_from_the_x_groq_extension_of_the_last_chunk() -> None:
    response, _ = decode((FIXTURES / "groq/written/stream.sse").read_bytes())
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (18, 12)


def test_mistral_thinking_parts_are_reasoning_and_text_parts_the_answer() -> None:
    response, _ = decode((FIXTURES / "mistral/written/stream-thinking.sse").read_bytes())
    assert response.reasoning == "Two plus two is four."
    assert response.content == "2 + 2 = 4."


def test_naming_ollama_decodes_its_v1_stream_as_chat_completions() -> None:
    path = FIXTURES / "ollama/written/stream-tool-calls.sse"
    response, _ = decode(path.read_bytes(), "ollama")
    assert response.api == "chat.completions"
    assert response.reasoning == "The user wants the weather."
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_ollama_1", "get_weather", '{"city":"Toronto"}')
    ]
