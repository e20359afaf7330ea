"""Cohere chat streams, v2 (SSE events named by `type`) and v1 (`event_type`, JSON lines or
SSE): verdicts, cut-off text, tool calls, errors.

The streams are written from Cohere's documentation: tests/fixtures/other/written/cohere-*
(see its README.md). Every stream is decoded with the provider named and by detection, in
every chunking, cut short and mutated, and compared with the full response saying the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals import notice
from refusals.events import StreamError, Verdict
from refusals.model import ErrorKind, FinishReason, LLMResponse, StopDetails, ToolCall
from refusals.providers import cohere as cohere_module
from refusals.providers import normalize
from tests.providers import _support
from tests.providers._support import (
    BYTE_EDITS,
    FILTERED,
    FIXTURES,
    INCOMPLETE,
    NEXT_STEP,
    check_split_at_any_byte,
    cut_anywhere,
    decode,
    decode_events,
    edited,
    feed_events,
    first_event,
    keyed_json,
    split_events,
    stream_fixtures,
)

OTHER = FIXTURES / "other"
WRITTEN = OTHER / "written"
TOXIC_NOTICE = f"{FILTERED} (category: toxic). {NEXT_STEP}"


@dataclass(frozen=True)
class Case:
    """A stream, what decoding it must give, and the full response that must agree."""

    stream: Path
    verdict_index: int | None
    finish: FinishReason
    raw: str | None
    category: str | None = None
    notice: str | None = None
    cut_off: bool = False
    full: Path | None = None


CASES = [
    Case(
        WRITTEN / "cohere-v2-stream-complete-thinking.sse",
        10,
        FinishReason.STOP,
        "COMPLETE",
        full=WRITTEN / "cohere-v2-complete-thinking.json",
    ),
    Case(
        WRITTEN / "cohere-v2-stream-max-tokens.sse",
        6,
        FinishReason.LENGTH,
        "MAX_TOKENS",
        full=OTHER / "cohere-v2-max-tokens.json",
    ),
    Case(
        WRITTEN / "cohere-v2-stream-max-tokens.chunks.txt",
        6,
        FinishReason.LENGTH,
        "MAX_TOKENS",
        full=OTHER / "cohere-v2-max-tokens.json",
    ),
    Case(
        WRITTEN / "cohere-v2-stream-tool-call.sse",
        17,
        FinishReason.TOOL_CALLS,
        "TOOL_CALL",
        full=WRITTEN / "cohere-v2-tool-call.json",
    ),
    Case(
        WRITTEN / "cohere-v2-stream-stop-sequence.sse",
        9,
        FinishReason.STOP,
        "STOP_SEQUENCE",
        full=WRITTEN / "cohere-v2-stop-sequence.json",
    ),
    Case(
        WRITTEN / "cohere-v2-stream-error.sse",
        5,
        FinishReason.ERROR,
        "ERROR",
        cut_off=True,
        full=WRITTEN / "cohere-v2-error.json",
    ),
    Case(
        WRITTEN / "cohere-v2-stream-timeout.sse",
        1,
        FinishReason.ERROR,
        "TIMEOUT",
        full=WRITTEN / "cohere-v2-timeout.json",
    ),
    Case(WRITTEN / "cohere-v2-stream-truncated.sse", None, FinishReason.ERROR, None, cut_off=True),
    Case(
        WRITTEN / "cohere-v1-stream-complete.ndjson",
        5,
        FinishReason.STOP,
        "COMPLETE",
        full=WRITTEN / "cohere-v1-complete.json",
    ),
    Case(
        WRITTEN / "cohere-v1-stream-error-toxic.ndjson",
        1,
        FinishReason.CONTENT_FILTER,
        "ERROR_TOXIC",
        category="toxic",
        notice=TOXIC_NOTICE,
        full=WRITTEN / "cohere-v1-error-toxic.json",
    ),
    Case(
        WRITTEN / "cohere-v1-stream-error-toxic-cut-off.ndjson",
        3,
        FinishReason.CONTENT_FILTER,
        "ERROR_TOXIC",
        category="toxic",
        notice=TOXIC_NOTICE,
        cut_off=True,
    ),
    Case(
        WRITTEN / "cohere-v1-stream-tool-calls.ndjson",
        7,
        FinishReason.TOOL_CALLS,
        "COMPLETE",
        full=WRITTEN / "cohere-v1-tool-calls.json",
    ),
    Case(
        WRITTEN / "cohere-v1-stream-error-limit.sse",
        5,
        FinishReason.LENGTH,
        "ERROR_LIMIT",
        full=WRITTEN / "cohere-v1-error-limit.json",
    ),
    Case(
        WRITTEN / "cohere-v1-stream-truncated.ndjson", None, FinishReason.ERROR, None, cut_off=True
    ),
]
STREAMS = [case.stream for case in CASES]
FILTER_STREAMS = [c.stream for c in CASES if c.finish is FinishReason.CONTENT_FILTER]
V1_ENDED = [c.stream for c in CASES if "-v1-" in c.stream.name and c.verdict_index is not None]


def case_id(case: Case) -> str:
    return case.stream.name


def agreed(response: LLMResponse) -> dict[str, Any]:
    """What a stream and its full response must agree on."""
    return _support.agreed(response, "usage", "request_id", "model")


def feed_all(*events: dict[str, Any], name_by_type: bool = True) -> LLMResponse:
    decoder = cohere_module.StreamReader("cohere")
    for event in events:
        decoder.feed(event.get("type") if name_by_type else None, orjson.dumps(event))
    decoder.close()
    return decoder.response


# Each stream, decoded --------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_each_stream_gives_its_verdict_on_the_event_that_carries_it(case: Case) -> None:
    for provider in (None, "cohere"):
        response, decoder = decode(case.stream.read_bytes(), provider)
        assert decoder.verdict_index == case.verdict_index
        assert response.provider == "cohere"
        assert response.api == "chat"
        assert response.finish_reason is case.finish
        assert response.raw_finish_reason == case.raw
        stop = response.stop_details
        assert (stop.category if stop else None) == case.category
        assert (stop.explanation if stop else None) is None
        assert notice(response) == case.notice
        assert response.cut_off is case.cut_off


@pytest.mark.parametrize("case", [c for c in CASES if c.full is not None], ids=case_id)
def test_a_stream_and_the_full_response_saying_the_same_agree(case: Case) -> None:
    assert case.full is not None
    streamed, _ = decode(case.stream.read_bytes())
    full = normalize(case.full.read_bytes(), provider="cohere")
    assert agreed(streamed) == agreed(full)


@pytest.mark.parametrize("path", V1_ENDED, ids=lambda p: p.name)
def test_a_v1_stream_agrees_with_the_response_its_stream_end_carries(path: Path) -> None:
    streamed, _ = decode(path.read_bytes())
    events, _ = split_events(path)
    end = orjson.loads(events[-1].removeprefix(b"data: "))
    assert end["event_type"] == "stream-end"
    assert agreed(streamed) == agreed(normalize(end["response"], provider="cohere"))


def test_a_toxic_stop_after_partial_text_keeps_the_text_marked_cut_off() -> None:
    path = WRITTEN / "cohere-v1-stream-error-toxic-cut-off.ndjson"
    response, _ = decode(path.read_bytes())
    assert response.content == "The press itself was"
    assert response.cut_off is True
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert notice(response) == TOXIC_NOTICE
    assert response.request_id == "6b5a4c3d-2e1f-4a0b-9c8d-7e6f5a4b3c2d"


def test_v2_tool_calls_are_built_from_their_start_and_argument_deltas() -> None:
    response, _ = decode((WRITTEN / "cohere-v2-stream-tool-call.sse").read_bytes())
    assert response.tool_calls == [
        ToolCall("get_weather_1byjy32y4hvq", "get_weather", '{"location":"Toronto"}')
    ]
    assert response.reasoning == "I will search for the weather in Toronto."
    assert response.content is None


def test_v1_tool_call_chunks_are_not_repeated_by_the_generation_event() -> None:
    response, _ = decode((WRITTEN / "cohere-v1-stream-tool-calls.ndjson").read_bytes())
    assert response.tool_calls == [ToolCall("", "query_daily_sales_report", '{"day":"2023-09-29"}')]
    assert response.content == "I will look up today's sales report."


def test_v2_thinking_is_reasoning_and_usage_comes_with_message_end() -> None:
    response, _ = decode((WRITTEN / "cohere-v2-stream-complete-thinking.sse").read_bytes())
    assert response.reasoning == "The user wants a title. Short and concrete is best."
    assert response.content == "The Art of API Design: Crafting Elegant and Powerful Interfaces"
    assert response.request_id == "5a50480a-cf52-46f0-af01-53d18539bd31"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (502, 12)


def test_a_v2_error_finish_keeps_the_error_message_and_the_partial_text() -> None:
    response, _ = decode((WRITTEN / "cohere-v2-stream-error.sse").read_bytes())
    assert response.finish_reason is FinishReason.ERROR
    assert response.content == "Gutenberg's press"
    assert response.cut_off is True
    assert response.error is not None
    assert response.error.message == "internal server error, please try again later"
    assert response.error.kind is ErrorKind.TRANSIENT


def test_a_stream_that_ends_before_its_end_event_is_an_incomplete_error() -> None:
    for name in ("cohere-v2-stream-truncated.sse", "cohere-v1-stream-truncated.ndjson"):
        response, events = decode_events((WRITTEN / name).read_bytes())
        assert events[-1] == StreamError(INCOMPLETE)
        assert not any(isinstance(event, Verdict) for event in events)
        assert response.finish_reason is FinishReason.ERROR
        assert response.raw_finish_reason is None
        assert response.cut_off is True
        assert notice(response) is None


@pytest.mark.parametrize(
    "case", [c for c in CASES if len(split_events(c.stream)[0]) > 1], ids=case_id
)
def test_a_stream_cut_before_its_last_event_is_an_error_that_says_so(case: Case) -> None:
    events, separator = split_events(case.stream)
    response, decoded = decode_events(separator.join(events[:-1]) + separator)
    # Every Cohere verdict is on the last event (message-end, stream-end), which ends the stream.
    assert response.finish_reason is FinishReason.ERROR
    assert decoded[-1] == StreamError(INCOMPLETE)
    assert response.cut_off is bool(response.content)


# Any chunking, truncation and mutation -----------------------------------------------------


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name)
def test_a_stream_split_at_any_byte_decodes_identically(path: Path) -> None:
    check_split_at_any_byte(path)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), path=st.sampled_from(STREAMS))
def test_a_stream_cut_anywhere_is_its_verdict_or_an_error_and_never_raises(
    data: st.DataObject, path: Path
) -> None:
    whole, response = cut_anywhere(data, path)
    assert response.finish_reason in (whole.finish_reason, FinishReason.ERROR)
    if whole.finish_reason is not FinishReason.STOP:
        assert response.finish_reason is not FinishReason.STOP


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=st.sampled_from(FILTER_STREAMS),
    edits=BYTE_EDITS,
    provider=st.sampled_from([None, "cohere"]),
)
def test_a_mutated_filter_stream_never_raises_and_is_never_a_stop(
    path: Path, edits: list[tuple[int, int, int]], provider: str | None
) -> None:
    response, _ = decode(edited(path.read_bytes(), edits), provider)
    assert isinstance(response, LLMResponse)
    assert response.finish_reason is not FinishReason.STOP


KEYS = [
    "type",
    "event_type",
    "id",
    "index",
    "delta",
    "message",
    "content",
    "text",
    "thinking",
    "tool_plan",
    "tool_calls",
    "function",
    "name",
    "arguments",
    "parameters",
    "tool_call_delta",
    "finish_reason",
    "usage",
    "tokens",
    "input_tokens",
    "error",
    "response",
    "generation_id",
]
TYPES = sorted(cohere_module.V2_STREAM_EVENTS | cohere_module.V1_STREAM_EVENTS)
JSON = keyed_json(KEYS, st.sampled_from(TYPES))


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(JSON, max_size=6))
def test_arbitrary_json_events_never_raise(events: list[Any]) -> None:
    response = feed_events(
        cohere_module.StreamReader("cohere"), [(None, event) for event in events]
    )
    assert isinstance(response.finish_reason, FinishReason)


# Event by event ------------------------------------------------------------------------------


def test_reasoning_blocks_are_joined_as_the_full_response_joins_them() -> None:
    streamed = feed_all(
        {"id": "r1", "type": "message-start"},
        {
            "type": "content-start",
            "index": 0,
            "delta": {"message": {"content": {"type": "thinking"}}},
        },
        {
            "type": "content-delta",
            "index": 0,
            "delta": {"message": {"content": {"thinking": "Need data."}}},
        },
        {"type": "content-end", "index": 0},
        {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "I will search."}}},
        {"type": "message-end", "delta": {"finish_reason": "COMPLETE"}},
    )
    full = normalize(
        {
            "id": "r1",
            "message": {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "Need data."}],
                "tool_plan": "I will search.",
            },
            "finish_reason": "COMPLETE",
        },
        provider="cohere",
    )
    assert streamed.reasoning == full.reasoning == "Need data.\nI will search."


def test_a_message_end_without_a_finish_reason_is_an_error_never_a_stop() -> None:
    response = feed_all(
        {"id": "r2", "type": "message-start"},
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "Hi"}}}},
        {"type": "message-end", "delta": {}},
    )
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason is None
    assert response.cut_off is True


def test_a_policy_error_on_message_end_is_a_content_filter_with_its_message() -> None:
    message = "the generated output was flagged as unsafe by the safety filter"
    response = feed_all(
        {"id": "r3", "type": "message-start"},
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "So"}}}},
        {"type": "message-end", "delta": {"finish_reason": "ERROR", "error": message}},
    )
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.cut_off is True
    assert notice(response) == f"{FILTERED}: {message}. {NEXT_STEP}"


def test_a_bare_error_body_mid_stream_is_classified_like_the_error_body() -> None:
    body = orjson.loads((WRITTEN / "cohere-error-422-content-blocked.json").read_bytes())
    decoder = cohere_module.StreamReader("cohere")
    decoder.feed("message-start", orjson.dumps({"id": "r4", "type": "message-start"}))
    events = decoder.feed(None, orjson.dumps(body))
    decoder.close()
    full = normalize(body, provider="cohere")
    assert events == [
        StreamError(body["message"], full.error),
        Verdict(FinishReason.CONTENT_FILTER, None, StopDetails(explanation=body["message"])),
    ]
    assert decoder.acc.verdict_index == 1
    assert agreed(decoder.response) | {"request_id": None} == agreed(full)


def test_an_error_after_the_end_of_a_toxic_stop_changes_nothing() -> None:
    raw = (WRITTEN / "cohere-v1-stream-error-toxic-cut-off.ndjson").read_bytes()
    alone, _ = decode(raw)
    response, decoder = decode(raw + b'{"message": "internal server error"}\n')
    assert decoder.verdict_index == 3
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert notice(response) == TOXIC_NOTICE
    assert response.error is None
    assert response == alone


def test_v1_tool_calls_come_whole_from_the_generation_event_when_no_chunk_came() -> None:
    response = feed_all(
        {"event_type": "stream-start", "generation_id": "g1"},
        {
            "event_type": "tool-calls-generation",
            "tool_calls": [{"name": "lookup", "parameters": {"q": "x"}}],
        },
        {"event_type": "stream-end", "finish_reason": "COMPLETE", "response": {}},
        name_by_type=False,
    )
    assert response.tool_calls == [ToolCall("", "lookup", '{"q":"x"}')]
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.request_id == "g1"


def test_v1_stream_end_alone_supplies_what_the_stream_did_not() -> None:
    body = orjson.loads((WRITTEN / "cohere-v1-complete.json").read_bytes())
    response = feed_all(
        {"event_type": "stream-end", "finish_reason": "COMPLETE", "response": body},
        name_by_type=False,
    )
    assert agreed(response) == agreed(normalize(body, provider="cohere"))


def test_an_event_that_is_not_an_object_is_an_error_not_a_crash() -> None:
    decoder = cohere_module.StreamReader("cohere")
    assert decoder.feed(None, b"[1]") == [StreamError("a Cohere stream event is not a JSON object")]


# Detection -----------------------------------------------------------------------------------


def test_detection_claims_every_v1_and_v2_first_event() -> None:
    for case in CASES:
        name, payload = first_event(case.stream)
        assert cohere_module.detect_stream(name, payload) == "cohere"


@pytest.mark.parametrize(
    "path",
    stream_fixtures(lambda path: path.name.startswith("cohere-")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_detection_never_claims_another_formats_first_event(path: Path) -> None:
    name, payload = first_event(path)
    assert cohere_module.detect_stream(name, payload) is None


@pytest.mark.parametrize(
    ("name", "payload"),
    [
        ("message_start", {"type": "message_start", "message": {}}),
        ("content-delta", {"type": "message-start"}),
        ("message", {"type": "message-start"}),
        (None, {"type": "response.created", "response": {}}),
        (None, {"event_type": "text-generation", "choices": []}),
        (None, {"message": "invalid api token"}),
        (None, None),
        (None, ["message-start"]),
    ],
)
def test_detection_rejects_shapes_that_are_not_cohere_streams(
    name: str | None, payload: Any
) -> None:
    assert cohere_module.detect_stream(name, payload) is None
