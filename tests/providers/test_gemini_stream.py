"""Gemini API and Vertex AI streams (`streamGenerateContent`): verdicts, cut-off text, errors.

The recorded stream is tests/fixtures/gemini/stream-stop.chunks.txt (one chunk per line, see
tests/fixtures/SOURCES.md); the streams written from Google's documentation are
tests/fixtures/gemini/written/stream-*.sse (see its README.md). Every stream is decoded with
the provider named and by detection, in every chunking, cut short and mutated, and compared
with the full response that says the same thing.
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
from refusals.events import StreamError, TextDelta, Verdict
from refusals.model import ErrorKind, FinishReason, LLMResponse, StopDetails
from refusals.providers import gemini as gemini_module
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

RECORDED = FIXTURES / "gemini"
WRITTEN = RECORDED / "written"


@dataclass(frozen=True)
class Case:
    """A stream, what decoding it must give, and the full response that must agree."""

    stream: Path
    provider: str
    verdict_index: int | None
    finish: FinishReason
    raw: str | None
    category: str | None = None
    explanation: str | None = None
    notice: str | None = None
    cut_off: bool = False
    full: Path | None = None
    same_content: bool = True
    """False where the stream kept text that an error body cannot have."""


CASES = [
    Case(
        RECORDED / "stream-stop.chunks.txt",
        "gemini",
        2,
        FinishReason.STOP,
        "STOP",
        full=WRITTEN / "stop-recorded-stream-consolidated.json",
    ),
    Case(
        WRITTEN / "stream-safety-cut-off.sse",
        "vertex",
        2,
        FinishReason.CONTENT_FILTER,
        "SAFETY",
        category="dangerous_content",
        notice=f"{FILTERED} (categories: dangerous_content, harassment). {NEXT_STEP}",
        cut_off=True,
        full=WRITTEN / "finish-safety-several-categories.json",
    ),
    Case(
        WRITTEN / "stream-spii-cut-off.sse",
        "vertex",
        1,
        FinishReason.CONTENT_FILTER,
        "SPII",
        category="spii",
        notice=f"{FILTERED} (category: spii). {NEXT_STEP}",
        cut_off=True,
        full=WRITTEN / "finish-spii.json",
    ),
    Case(
        WRITTEN / "stream-recitation.sse",
        "gemini",
        2,
        FinishReason.CONTENT_FILTER,
        "RECITATION",
        category="recitation",
        notice=f"{FILTERED} (category: recitation). {NEXT_STEP}",
        cut_off=True,
        full=WRITTEN / "finish-recitation.json",
    ),
    Case(
        WRITTEN / "stream-model-armor.sse",
        "vertex",
        0,
        FinishReason.CONTENT_FILTER,
        "MODEL_ARMOR",
        category="model_armor",
        explanation="The response violated Responsible AI Safety settings (Hate Speech, "
        "Harassment, Dangerous) filters.",
        notice=f"{FILTERED} (category: model_armor): the response violated Responsible AI "
        f"Safety settings (Hate Speech, Harassment, Dangerous) filters. {NEXT_STEP}",
        full=RECORDED / "finish-model-armor.json",
    ),
    Case(
        WRITTEN / "stream-prompt-blocked-safety.sse",
        "gemini",
        0,
        FinishReason.CONTENT_FILTER,
        "SAFETY",
        category="hate_speech",
        notice=f"{FILTERED} (category: hate_speech). {NEXT_STEP}",
        full=WRITTEN / "prompt-blocked-safety-ratings.json",
    ),
    Case(
        WRITTEN / "stream-prompt-blocked-model-armor.sse",
        "vertex",
        0,
        FinishReason.CONTENT_FILTER,
        "MODEL_ARMOR",
        category="model_armor",
        explanation="The prompt violated Prompt Injection and Jailbreak filters.",
        notice=f"{FILTERED} (category: model_armor): the prompt violated Prompt Injection "
        f"and Jailbreak filters. {NEXT_STEP}",
        full=RECORDED / "prompt-blocked-model-armor.json",
    ),
    Case(
        WRITTEN / "stream-max-tokens.sse",
        "gemini",
        1,
        FinishReason.LENGTH,
        "MAX_TOKENS",
        full=RECORDED / "finish-max-tokens.json",
    ),
    Case(
        WRITTEN / "stream-function-calls.sse",
        "gemini",
        1,
        FinishReason.TOOL_CALLS,
        "STOP",
        full=WRITTEN / "stop-function-calls.json",
    ),
    Case(
        WRITTEN / "stream-thoughts.sse",
        "gemini",
        2,
        FinishReason.STOP,
        "STOP",
        full=WRITTEN / "stop-text-and-thoughts.json",
    ),
    Case(
        WRITTEN / "stream-error-responsible-ai.sse",
        "gemini",
        0,
        FinishReason.CONTENT_FILTER,
        "INVALID_ARGUMENT",
        explanation="The prompt could not be submitted. This prompt contains sensitive words "
        "that violate Google's Responsible AI practices. Try rephrasing the prompt.",
        notice=f"{FILTERED}: the prompt could not be submitted. This prompt contains "
        "sensitive words that violate Google's Responsible AI practices. Try rephrasing the "
        f"prompt. {NEXT_STEP}",
        full=WRITTEN / "error-400-responsible-ai.json",
    ),
    Case(
        WRITTEN / "stream-error-internal.sse",
        "gemini",
        1,
        FinishReason.ERROR,
        "INTERNAL",
        explanation="An internal error has occurred. Please retry or report in "
        "https://developers.generativeai.google/guide/troubleshooting",
        cut_off=True,
        full=WRITTEN / "error-500-internal.json",
        same_content=False,
    ),
    Case(
        WRITTEN / "stream-truncated.sse",
        "gemini",
        None,
        FinishReason.ERROR,
        None,
        cut_off=True,
    ),
]
STREAMS = [case.stream for case in CASES]
FILTER_STREAMS = [c.stream for c in CASES if c.finish is FinishReason.CONTENT_FILTER]


def case_id(case: Case) -> str:
    return case.stream.name


def agreed(response: LLMResponse) -> dict[str, Any]:
    """What a stream and its full response must agree on."""
    details = sorted(str(detail) for detail in response.reasoning_details or ())
    return _support.agreed(response) | {"details": details}


# Each stream, decoded --------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_each_stream_gives_its_verdict_on_the_event_that_carries_it(case: Case) -> None:
    for provider in (None, case.provider):
        response, decoder = decode(case.stream.read_bytes(), provider)
        assert decoder.verdict_index == case.verdict_index
        assert response.provider == case.provider
        assert response.api == "generateContent"
        assert response.finish_reason is case.finish
        assert response.raw_finish_reason == case.raw
        stop = response.stop_details
        assert (stop.category if stop else None) == case.category
        assert (stop.explanation if stop else None) == case.explanation
        assert notice(response) == case.notice
        assert response.cut_off is case.cut_off


@pytest.mark.parametrize("case", [c for c in CASES if c.full is not None], ids=case_id)
def test_a_stream_and_the_full_response_saying_the_same_agree(case: Case) -> None:
    assert case.full is not None
    streamed, _ = decode(case.stream.read_bytes())
    full = normalize(case.full.read_bytes())
    expected, got = agreed(full), agreed(streamed)
    if not case.same_content:
        assert got.pop("content") is not None
        assert got.pop("cut_off") is True
        del expected["content"], expected["cut_off"]
    assert got == expected
    assert streamed.provider == full.provider
    if case.same_content:
        assert streamed.model == full.model
        assert streamed.request_id == full.request_id
        assert streamed.usage == full.usage


def test_a_safety_stop_after_partial_text_keeps_the_text_marked_cut_off() -> None:
    response, decoder = decode((WRITTEN / "stream-safety-cut-off.sse").read_bytes())
    assert response.content == "Here is how you"
    assert response.cut_off is True
    assert response.model == "gemini-2.5-flash"
    assert response.request_id == "c3NMaLz9CvKa7dcP9pX0yQo"
    assert decoder.events_seen == 3
    ratings = [d for d in response.decoded_details() if d.get("type") == "safety_ratings"]
    assert ratings == [
        {
            "type": "safety_ratings",
            "scope": "response",
            "ratings": [
                {
                    "category": "dangerous_content",
                    "probability": "HIGH",
                    "probabilityScore": 0.93,
                    "severity": "HARM_SEVERITY_HIGH",
                    "severityScore": 0.88,
                },
                {
                    "category": "harassment",
                    "probability": "MEDIUM",
                    "probabilityScore": 0.61,
                    "severity": "HARM_SEVERITY_MEDIUM",
                    "severityScore": 0.57,
                },
            ],
        }
    ]


def test_a_prompt_block_is_the_first_and_only_event_and_completes_the_stream() -> None:
    response, decoder = decode((WRITTEN / "stream-prompt-blocked-safety.sse").read_bytes())
    assert decoder.events_seen == 1
    assert response.error is None  # complete: no "ended before its terminal event"
    assert response.content is None
    assert response.cut_off is False
    ratings = [d for d in response.decoded_details() if d.get("type") == "safety_ratings"]
    assert [r["scope"] for r in ratings] == ["prompt"]


def test_function_call_parts_are_whole_tool_calls_in_stream_order() -> None:
    response, _ = decode((WRITTEN / "stream-function-calls.sse").read_bytes())
    assert [(c.id, c.name, orjson.loads(c.arguments)) for c in response.tool_calls] == [
        ("", "get_weather", {"city": "Paris", "unit": "celsius"}),
        ("call-7f3a", "get_time", {"timezone": "Europe/Paris"}),
    ]
    assert response.content is None


def test_thought_parts_are_reasoning_and_signatures_are_kept() -> None:
    response, _ = decode((WRITTEN / "stream-thoughts.sse").read_bytes())
    assert response.reasoning == ("**Counting letters**\n\nI will spell the word and count each r.")
    assert response.content == 'There are three r\'s in "strawberry".'
    signatures = [d for d in response.decoded_details() if d.get("type") == "thought_signature"]
    assert signatures == [
        {
            "type": "thought_signature",
            "signature": "CiQBjz1rXwS0cWnGm2vE6Vn2kq0dQ3I7zq0bq2J5yX6v0q0=",
        }
    ]
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (1210, 140)
    assert response.usage.cache_read_tokens == 1024


def test_an_error_event_mid_stream_is_classified_like_an_error_body() -> None:
    response, decoder = decode((WRITTEN / "stream-error-internal.sse").read_bytes())
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.status == 500
    assert response.content == "Photosynthesis turns light"
    assert decoder.verdict_index == 1


def test_a_responsible_ai_error_in_the_stream_is_a_content_filter_never_a_retry() -> None:
    response, _ = decode((WRITTEN / "stream-error-responsible-ai.sse").read_bytes())
    assert response.error is not None
    assert response.error.kind is ErrorKind.POLICY
    assert response.error.retryable is False
    assert response.finish_reason is FinishReason.CONTENT_FILTER


def test_a_stream_that_ends_without_a_finish_reason_is_an_incomplete_error() -> None:
    response, events = decode_events((WRITTEN / "stream-truncated.sse").read_bytes())
    assert events[-1] == StreamError(INCOMPLETE)
    assert not any(isinstance(event, Verdict) for event in events)
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason is None
    assert response.content == "Photosynthesis turns light into chemical energy"
    assert response.cut_off is True
    assert notice(response) is None


@pytest.mark.parametrize(
    "case", [c for c in CASES if len(split_events(c.stream)[0]) > 1], ids=case_id
)
def test_a_stream_cut_before_its_last_event_is_an_error_that_says_so(case: Case) -> None:
    events, separator = split_events(case.stream)
    response, decoded = decode_events(separator.join(events[:-1]) + separator)
    # Every Gemini verdict is on the last event, which also completes the stream.
    assert response.finish_reason is FinishReason.ERROR
    assert decoded[-1] == StreamError(INCOMPLETE)
    assert response.cut_off is bool(response.content)


def test_named_vertex_provider_is_kept_for_a_gemini_shaped_stream() -> None:
    response, _ = decode(RECORDED.joinpath("stream-stop.chunks.txt").read_bytes(), "vertex")
    assert response.provider == "vertex"
    assert response.finish_reason is FinishReason.STOP


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
    provider=st.sampled_from([None, "gemini"]),
)
def test_a_mutated_filter_stream_never_raises_and_is_never_a_stop(
    path: Path, edits: list[tuple[int, int, int]], provider: str | None
) -> None:
    response, _ = decode(edited(path.read_bytes(), edits), provider)
    assert isinstance(response, LLMResponse)
    assert response.finish_reason is not FinishReason.STOP


GENERATE_CONTENT_KEYS = [
    "candidates",
    "content",
    "parts",
    "text",
    "thought",
    "functionCall",
    "args",
    "name",
    "finishReason",
    "finishMessage",
    "safetyRatings",
    "blocked",
    "category",
    "promptFeedback",
    "blockReason",
    "usageMetadata",
    "modelVersion",
    "responseId",
    "index",
    "error",
    "status",
    "message",
]
JSON = keyed_json(GENERATE_CONTENT_KEYS)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(JSON, max_size=6))
def test_arbitrary_json_events_never_raise(events: list[Any]) -> None:
    response = feed_events(
        gemini_module.StreamReader("gemini"), [(None, event) for event in events]
    )
    assert isinstance(response.finish_reason, FinishReason)


# Event by event ------------------------------------------------------------------------------


def chunk(candidate: dict[str, Any], **top: Any) -> bytes:
    return orjson.dumps({"candidates": [candidate], **top})


def test_a_later_usage_chunk_keeps_the_filter_verdict_and_its_index() -> None:
    decoder = gemini_module.StreamReader("gemini")
    decoder.feed(None, chunk({"content": {"parts": [{"text": "Step one"}]}, "index": 0}))
    events = decoder.feed(None, chunk({"finishReason": "PROHIBITED_CONTENT", "index": 0}))
    assert events == [
        Verdict(
            FinishReason.CONTENT_FILTER,
            "PROHIBITED_CONTENT",
            StopDetails(category="prohibited_content"),
        )
    ]
    decoder.feed(None, orjson.dumps({"usageMetadata": {"promptTokenCount": 5}}))
    decoder.close()
    response = decoder.response
    assert decoder.acc.verdict_index == 1
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.cut_off is True
    assert response.error is None
    assert response.usage is not None
    assert response.usage.input_tokens == 5


def test_an_error_after_the_final_chunk_of_a_block_changes_nothing() -> None:
    raw = (WRITTEN / "stream-recitation.sse").read_bytes()
    alone, _ = decode(raw)
    raw += b"data: " + (WRITTEN / "error-500-internal.json").read_bytes().replace(b"\n", b"")
    response, decoder = decode(raw + b"\n\n")
    assert decoder.verdict_index == 2
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "RECITATION"
    assert notice(response) == f"{FILTERED} (category: recitation). {NEXT_STEP}"
    assert response.error is None
    assert response == alone


def test_a_block_already_seen_stays_a_block_when_the_stream_is_then_cut_mid_event() -> None:
    raw = (WRITTEN / "stream-safety-cut-off.sse").read_bytes() + b'data: {"usageMetada'
    response, decoder = decode(raw)
    assert decoder.verdict_index == 2
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert (
        notice(response) == f"{FILTERED} (categories: dangerous_content, harassment). {NEXT_STEP}"
    )
    assert response.cut_off is True


def test_blocked_ratings_from_an_earlier_chunk_name_the_category_of_a_later_block() -> None:
    decoder = gemini_module.StreamReader("gemini")
    rating = {"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH", "blocked": True}
    decoder.feed(None, chunk({"content": {"parts": [{"text": "You"}]}, "safetyRatings": [rating]}))
    decoder.feed(None, chunk({"finishReason": "SAFETY"}))
    decoder.close()
    response = decoder.response
    assert response.stop_details is not None
    assert response.stop_details.category == "harassment"
    assert notice(response) == f"{FILTERED} (category: harassment). {NEXT_STEP}"


def test_only_candidate_zero_is_read_as_the_full_parser_reads_it() -> None:
    decoder = gemini_module.StreamReader("gemini")
    decoder.feed(None, chunk({"content": {"parts": [{"text": "other"}]}, "index": 1}))
    decoder.feed(None, chunk({"content": {"parts": [{"text": "mine"}]}, "finishReason": "STOP"}))
    decoder.close()
    assert decoder.response.content == "mine"
    assert decoder.response.finish_reason is FinishReason.STOP


def test_a_finish_reason_on_every_chunk_gives_the_verdict_on_the_first() -> None:
    # Early Gemini versions repeated `finishReason: STOP` on each chunk of a stream.
    decoder = gemini_module.StreamReader("gemini")
    for text in ("In the quaint,", " cobbled streets"):
        events = decoder.feed(
            None, chunk({"content": {"parts": [{"text": text}]}, "finishReason": "STOP"})
        )
        assert events[0] == TextDelta(text)
    decoder.close()
    assert decoder.acc.verdict_index == 0
    assert decoder.response.content == "In the quaint, cobbled streets"
    assert decoder.response.finish_reason is FinishReason.STOP


def test_the_json_array_form_of_an_error_is_read_item_by_item() -> None:
    decoder = gemini_module.StreamReader("gemini")
    body = [
        {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    ]
    decoder.feed(None, orjson.dumps(body))
    decoder.close()
    response = decoder.response
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "UNAVAILABLE"
    assert response.error is not None
    assert response.error.retryable is True


def test_an_event_that_is_not_an_object_is_an_error_not_a_crash() -> None:
    decoder = gemini_module.StreamReader("gemini")
    assert decoder.feed(None, b"42") == [StreamError("a Gemini stream event is not a JSON object")]
    assert decoder.feed(None, b"{not json") == [StreamError("stream event 1 is not JSON")]


# Detection -----------------------------------------------------------------------------------


def test_detection_claims_gemini_and_vertex_first_events() -> None:
    for case in CASES:
        name, payload = first_event(case.stream)
        assert gemini_module.detect_stream(name, payload) == case.provider


@pytest.mark.parametrize(
    "path",
    stream_fixtures(lambda path: RECORDED in path.parents),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_detection_never_claims_another_formats_first_event(path: Path) -> None:
    name, payload = first_event(path)
    assert gemini_module.detect_stream(name, payload) is None


@pytest.mark.parametrize(
    ("name", "payload"),
    [
        (None, {"id": "c1", "object": "chat.completion.chunk", "choices": [], "usageMetadata": {}}),
        ("message_start", {"type": "message_start", "message": {}}),
        (None, {"candidates": []} | {"output": []}),
        ("content_block_delta", {"candidates": [{}]}),
        (None, {"error": {"code": 400, "message": "bad", "type": "invalid_request_error"}}),
        (None, None),
        (None, [1, 2]),
    ],
)
def test_detection_rejects_shapes_that_are_not_gemini(name: str | None, payload: Any) -> None:
    assert gemini_module.detect_stream(name, payload) is None


def _stop_on_every_chunk(raw: bytes) -> bytes:
    """The written RECITATION stream as Vertex may send it: STOP on each text chunk (the
    Firebase SDKs' streaming-failure test data has that shape), the block on the last."""
    out = b""
    for line in raw.splitlines(keepends=True):
        if line.startswith(b"data: ") and b'"finishReason"' not in line:
            chunk = orjson.loads(line[6:])
            chunk["candidates"][0]["finishReason"] = "STOP"
            out += b"data: " + orjson.dumps(chunk) + b"\n"
        else:
            out += line
    return out


def test_a_block_on_the_last_chunk_after_stop_on_every_chunk_is_the_verdict(
    tmp_path: Path,
) -> None:
    written, _ = decode((WRITTEN / "stream-recitation.sse").read_bytes())
    stream = tmp_path / "stop-then-recitation.sse"
    stream.write_bytes(_stop_on_every_chunk((WRITTEN / "stream-recitation.sse").read_bytes()))
    for provider in ("gemini", None):
        response, decoder = decode(stream.read_bytes(), provider)
        assert response.finish_reason is FinishReason.CONTENT_FILTER
        assert response.raw_finish_reason == "RECITATION"
        assert response.content == written.content  # each chunk's text once
        assert decoder.verdict_index == 2
        assert notice(response) == notice(written)
    check_split_at_any_byte(stream)


def test_an_error_body_written_bare_after_stop_chunks_is_an_error(tmp_path: Path) -> None:
    # The Firebase SDKs' streaming-failure-error-mid-stream shape: data chunks that each
    # say STOP, then a google.rpc.Status body pretty-printed with no `data:` field.
    chunks = _stop_on_every_chunk((WRITTEN / "stream-recitation.sse").read_bytes())
    text_chunks = b"".join(event + b"\n\n" for event in chunks.split(b"\n\n")[:2])
    error = (WRITTEN / "error-500-internal.json").read_bytes()
    assert error.count(b"\n") > 2  # pretty-printed over several lines
    stream = tmp_path / "stop-then-bare-error.sse"
    stream.write_bytes(text_chunks + error)
    response, _ = decode(stream.read_bytes(), "gemini")
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.message == orjson.loads(error)["error"]["message"]
    assert (
        response.content == "It was the best of times, it was the worst of times, it was the age of"
    )
    check_split_at_any_byte(stream)


def test_an_error_event_after_a_stop_chunk_ends_the_stream_as_an_error() -> None:
    stop = _stop_on_every_chunk((WRITTEN / "stream-recitation.sse").read_bytes())
    first = stop.split(b"\n\n")[0] + b"\n\n"
    error = b"data: " + orjson.dumps(
        orjson.loads((WRITTEN / "error-500-internal.json").read_bytes())
    )
    response, _ = decode(first + error + b"\n\n", "gemini")
    assert response.finish_reason is FinishReason.ERROR
