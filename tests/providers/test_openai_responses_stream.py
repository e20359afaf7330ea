"""OpenAI Responses streams: refusal deltas, incomplete and failed responses, error events.

Recorded streams are in tests/fixtures/openai-responses/ (see tests/fixtures/SOURCES.md);
streams and full responses written from OpenAI's documentation are in
tests/fixtures/openai-responses/written/ (see its README.md). Azure's Responses streams are
tested in test_azure_stream.py. The shared checks are described in
test_openai_chat_stream.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals import notice
from refusals.events import StreamError, Verdict
from refusals.model import ErrorKind, FinishReason
from refusals.providers import normalize
from refusals.providers import openai_chat as chat_module
from refusals.providers import openai_responses as responses_module
from tests.providers._support import (
    CHAT_STREAMS,
    DECLINED,
    FILTERED,
    FIXTURES,
    INCOMPLETE,
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
    first_event,
    stop_fields,
    stream_files,
)

QUOTA_MESSAGE = (
    "You exceeded your current quota, please check your plan and billing details. For more "
    "information on this error, read the docs: "
    "https://platform.openai.com/docs/guides/error-codes/api-errors."
)
INVALID_PROMPT = (
    "Invalid prompt: your prompt was flagged as potentially violating our usage policy. "
    "Please try again with a different prompt"
)

CASES = [
    Case(
        "openai-responses/moderation-stream.sse",
        provider="openai-responses",
        verdict_index=11,
        finish=FinishReason.STOP,
        raw="completed",
        content="Paris.",
        partner="openai-responses/written/moderation-stream.json",
    ),
    Case(
        "openai-responses/stream-failed-insufficient-quota.chunks.txt",
        provider="openai-responses",
        verdict_index=2,
        finish=FinishReason.ERROR,
        raw="insufficient_quota",
        explanation=QUOTA_MESSAGE,
        partner="openai-responses/error-insufficient-quota.json",
    ),
    Case(
        "openai-responses/written/stream-refusal.sse",
        provider="openai-responses",
        verdict_index=4,
        finish=FinishReason.REFUSAL,
        raw="completed",
        notice=f"{DECLINED}: I'm sorry, I can't help with that request. {NEXT_STEP}",
        content="I'm sorry, I can't help with that request.",
        partner="openai-responses/written/refusal.json",
    ),
    Case(
        "openai-responses/written/stream-refusal-after-text.sse",
        provider="openai-responses",
        verdict_index=10,
        finish=FinishReason.REFUSAL,
        raw="completed",
        explanation="I can't help with the rest of this.",
        notice=f"{DECLINED}: I can't help with the rest of this. {NEXT_STEP}",
        cut_off=True,
        content="Here is the first step.\n\nI can't help with the rest of this.",
        partner="openai-responses/written/refusal-after-text.json",
    ),
    Case(
        "openai-responses/written/stream-incomplete-content-filter.sse",
        provider="openai-responses",
        verdict_index=10,
        finish=FinishReason.CONTENT_FILTER,
        raw="content_filter",
        notice=f"{FILTERED}. {NEXT_STEP}",
        cut_off=True,
        content="The first steps are",
        partner="openai-responses/written/incomplete-content-filter.json",
    ),
    Case(
        "openai-responses/written/stream-incomplete-max-output-tokens.sse",
        provider="openai-responses",
        verdict_index=11,
        finish=FinishReason.LENGTH,
        raw="max_output_tokens",
        content="A long answer that was cut",
        partner="openai-responses/written/incomplete-max-output-tokens.json",
    ),
    Case(
        "openai-responses/written/stream-failed-invalid-prompt.sse",
        provider="openai-responses",
        verdict_index=2,
        finish=FinishReason.CONTENT_FILTER,
        raw="invalid_prompt",
        category="invalid_prompt",
        explanation=f"{INVALID_PROMPT}.",
        notice=f"{FILTERED} (category: invalid_prompt): {INVALID_PROMPT}. {NEXT_STEP}",
        partner="openai-responses/written/failed-invalid-prompt.json",
    ),
    Case(
        "openai-responses/written/stream-function-call.sse",
        provider="openai-responses",
        verdict_index=15,
        finish=FinishReason.TOOL_CALLS,
        raw="completed",
        partner="openai-responses/written/function-call-with-reasoning.json",
    ),
    Case(
        "openai-responses/written/stream-error-event-invalid-prompt.sse",
        provider="openai-responses",
        verdict_index=0,
        finish=FinishReason.CONTENT_FILTER,
        raw="invalid_prompt",
        category="invalid_prompt",
        explanation=f"{INVALID_PROMPT}: "
        "https://platform.openai.com/docs/guides/reasoning#advice-on-prompting",
        notice=f"{FILTERED} (category: invalid_prompt): {INVALID_PROMPT}: "
        f"https://platform.openai.com/docs/guides/reasoning#advice-on-prompting. {NEXT_STEP}",
        partner="openai-chat/written/error-invalid-prompt.json",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_each_responses_stream_gives_its_verdict_on_the_event_that_carries_it(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.partner], ids=case_id)
def test_each_responses_stream_agrees_with_its_full_response(case: Case) -> None:
    check_equivalent(case)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_responses_stream_split_anywhere_decodes_as_in_one_piece(case: Case) -> None:
    check_any_split(case)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_responses_stream_cut_short_is_an_error_until_a_block_was_seen(case: Case) -> None:
    check_truncations(case)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.data())
def test_cut_mutated_or_reshuffled_responses_streams_never_raise_nor_lose_a_block(
    data: st.DataObject,
) -> None:
    check_fuzzed(data, CASES)


# Building streams in a test -----------------------------------------------------------------


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(
        b"event: " + str(e["type"]).encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n"
        for e in events
    )


def response_object(status: str = "completed", **fields: Any) -> dict[str, Any]:
    return {"id": "resp_test", "object": "response", "model": "gpt-5", "status": status, **fields}


def text_delta(text: str, output_index: int = 0, content_index: int = 0) -> dict[str, Any]:
    return {
        "type": "response.output_text.delta",
        "item_id": f"msg_{output_index}",
        "output_index": output_index,
        "content_index": content_index,
        "delta": text,
    }


CREATED = {"type": "response.created", "response": response_object("in_progress", output=[])}


# The insufficient-quota recording ---------------------------------------------------------


def test_a_quota_error_event_is_the_verdict_and_the_failed_response_confirms_it() -> None:
    path = FIXTURES / "openai-responses/stream-failed-insufficient-quota.chunks.txt"
    data = path.read_bytes()
    response, decoder, events = decode_with_events(data)
    assert decoder.verdict_index == 2  # the `error` event; `response.failed` (3) agrees
    assert next(e for e in events if isinstance(e, Verdict)).finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.kind is ErrorKind.AUTH  # billing: retrying cannot help
    assert response.error.code == "insufficient_quota"
    assert response.model == "gpt-5-nano-2025-08-07"
    # The HTTP error body (no status given) and the failed Responses object inside the stream
    # are different documents, an error body and a response, but they say the same thing.
    failed = orjson.loads(data.splitlines()[-1])["response"]
    for full in (
        normalize((FIXTURES / "openai-responses/error-insufficient-quota.json").read_bytes()),
        normalize(failed),
    ):
        assert full.finish_reason is FinishReason.ERROR
        assert full.raw_finish_reason == "insufficient_quota"
        assert stop_fields(full) == stop_fields(response) == (None, (), QUOTA_MESSAGE)
        assert full.error is not None
        assert full.error.kind is ErrorKind.AUTH
        assert notice(full) is None
    assert normalize(failed).api == response.api == "responses"


# Refusals and output -------------------------------------------------------------------


def test_a_refusal_cut_off_before_the_response_completed_stays_a_refusal() -> None:
    data = (FIXTURES / "openai-responses/written/stream-refusal.sse").read_bytes()
    cut = data[: data.index(b"event: response.refusal.done")]
    response, _, events = decode_with_events(cut)
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.raw_finish_reason is None
    assert response.content == "I'm sorry, I can't help with that request."
    assert [e.message for e in events if isinstance(e, StreamError)] == [INCOMPLETE]


def test_text_cut_off_before_the_terminal_event_is_an_error() -> None:
    data = (FIXTURES / "openai-responses/moderation-stream.sse").read_bytes()
    response, decoder = decode(data[: data.index(b"event: response.output_text.done")])
    assert response.finish_reason is FinishReason.ERROR
    assert response.content == "Paris."
    assert response.cut_off is True
    assert decoder.verdict_index is None


def test_messages_are_joined_by_a_blank_line_as_in_the_full_response() -> None:
    data = sse(
        CREATED,
        text_delta("First", 0),
        text_delta(" part.", 0),
        text_delta("Second.", 1),
        {"type": "response.completed", "response": response_object()},
    )
    response, _ = decode(data)
    assert response.content == "First part.\n\nSecond."
    full = normalize(
        response_object(
            output=[
                {"type": "message", "content": [{"type": "output_text", "text": "First part."}]},
                {"type": "message", "content": [{"type": "output_text", "text": "Second."}]},
            ]
        )
    )
    assert full.content == response.content


def test_output_that_never_came_as_deltas_is_taken_from_the_final_response() -> None:
    final = response_object(
        output=[
            {"type": "message", "content": [{"type": "refusal", "refusal": "I can't do that."}]},
        ]
    )
    response, decoder = decode(sse(CREATED, {"type": "response.completed", "response": final}))
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.content == "I can't do that."
    assert decoder.verdict_index == 1
    assert notice(response) == notice(normalize(final))


def test_tool_arguments_come_from_the_done_event_when_no_delta_came() -> None:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather"}
    data = sse(
        CREATED,
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "arguments": ""},
        },
        {
            "type": "response.function_call_arguments.done",
            "output_index": 0,
            "item_id": "fc_1",
            "arguments": '{"city":"Oslo"}',
        },
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "arguments": '{"city":"Oslo"}'},
        },
        {"type": "response.completed", "response": response_object()},
    )
    response, _ = decode(data)
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_1", "get_weather", '{"city":"Oslo"}')
    ]
    # The final object's `output` is empty here: the calls that came as events still make
    # the completed response end on tool calls.
    assert response.finish_reason is FinishReason.TOOL_CALLS


def test_reasoning_summary_deltas_are_the_reasoning() -> None:
    path = FIXTURES / "openai-responses/written/stream-function-call.sse"
    response, _ = decode(path.read_bytes())
    assert response.reasoning == "The user wants the weather; call the tool."
    assert response.usage is not None
    assert response.usage.cache_read_tokens == 64


def test_an_error_event_that_is_not_a_policy_block_is_an_error_with_its_message() -> None:
    error = {"type": "error", "sequence_number": 3, "code": "server_error", "message": "Oops."}
    response, decoder, events = decode_with_events(sse(CREATED, text_delta("Hi"), error))
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert [e.message for e in events if isinstance(e, StreamError)] == ["Oops."]
    assert decoder.verdict_index == 2


def test_an_event_that_is_not_an_object_is_an_error_not_an_exception() -> None:
    data = sse(CREATED) + b"data: 42\n\n"
    data += sse({"type": "response.completed", "response": response_object()})
    response, _ = decode(data)
    assert response.finish_reason is FinishReason.ERROR


# Detection -------------------------------------------------------------------------------

RESPONSES_STREAMS = stream_files("openai-responses") + [
    p for p in stream_files("azure") if "responses" in p.name
]
OTHER_STREAMS = [
    *CHAT_STREAMS,
    *(
        p
        for p in stream_files("anthropic", "bedrock", "gemini", "other", "ollama")
        if p not in CHAT_STREAMS
    ),
]


@pytest.mark.parametrize("path", RESPONSES_STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_first_event_of_every_responses_stream_is_recognised(path: Path) -> None:
    name, payload = first_event(path)
    expected = "azure" if "azure" in path.parts else "openai-responses"
    assert responses_module.detect_stream(name, payload) == expected
    assert chat_module.detect_stream(name, payload) is None


@pytest.mark.parametrize("path", OTHER_STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_first_event_of_other_formats_is_never_claimed_by_responses(path: Path) -> None:
    name, payload = first_event(path)
    assert responses_module.detect_stream(name, payload) is None


@pytest.mark.parametrize(
    ("name", "payload"),
    [
        ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "x"}}),
        (None, {"type": "message_start", "message": {}}),
        ("response.created", {"type": "response.in_progress", "response": {}}),
        (None, {"type": "response.created", "response": {"object": "realtime.response"}}),
        (None, {"type": "response.created", "response": "text"}),
        (None, {"choices": [], "object": "chat.completion.chunk"}),
        (None, None),
        (None, [1]),
    ],
)
def test_events_of_other_formats_are_never_claimed_by_responses(
    name: str | None, payload: Any
) -> None:
    assert responses_module.detect_stream(name, payload) is None


def test_an_opening_error_event_with_a_sequence_number_is_claimed() -> None:
    event = {"type": "error", "sequence_number": 0, "code": "server_error", "message": "x"}
    assert responses_module.detect_stream("error", event) == "openai-responses"
    assert responses_module.detect_stream(None, event) == "openai-responses"
