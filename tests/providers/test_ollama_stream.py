"""Ollama native streams (`/api/chat`, `/api/generate`: one JSON body per line): verdicts,
tool calls, errors mid-stream, and streams that never say `done`.

The streams are written from Ollama's documentation: tests/fixtures/other/written/ollama-*
(see its README.md). Every stream is decoded with the provider named and by detection, in
every chunking and cut short, and compared with the full response saying the same. Ollama
has no refusal or filter signal; what matters is that no unfinished stream reads as STOP.
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
from refusals.providers import normalize
from refusals.providers import ollama as ollama_module
from tests.providers import _support
from tests.providers._support import (
    BYTE_EDITS,
    FIXTURES,
    INCOMPLETE,
    check_split_at_any_byte,
    cut_anywhere,
    decode,
    decode_events,
    edited,
    feed_events,
    first_event,
    keyed_json,
    stream_fixtures,
)

WRITTEN = FIXTURES / "other" / "written"
MODEL_FAILED = "an error was encountered while running the model"


@dataclass(frozen=True)
class Case:
    """A stream, what decoding it must give, and the full response that must agree."""

    stream: Path
    verdict_index: int | None
    finish: FinishReason
    raw: str | None
    explanation: str | None = None
    cut_off: bool = False
    full: Path | None = None
    same_content: bool = True
    """False where the stream kept text that an error body cannot have."""


CASES = [
    Case(
        WRITTEN / "ollama-chat-stream-stop.ndjson",
        7,
        FinishReason.STOP,
        "stop",
        full=WRITTEN / "ollama-chat-stop.json",
    ),
    Case(
        WRITTEN / "ollama-chat-stream-length.ndjson",
        9,
        FinishReason.LENGTH,
        "length",
        full=WRITTEN / "ollama-chat-length.json",
    ),
    Case(
        WRITTEN / "ollama-chat-stream-tool-calls.ndjson",
        1,
        FinishReason.TOOL_CALLS,
        "stop",
        full=WRITTEN / "ollama-chat-tool-calls.json",
    ),
    Case(
        WRITTEN / "ollama-chat-stream-thinking.ndjson",
        6,
        FinishReason.STOP,
        "stop",
        full=WRITTEN / "ollama-chat-thinking.json",
    ),
    Case(
        WRITTEN / "ollama-generate-stream-stop.ndjson",
        5,
        FinishReason.STOP,
        "stop",
        full=WRITTEN / "ollama-generate-stop.json",
    ),
    Case(
        WRITTEN / "ollama-chat-stream-load.ndjson",
        0,
        FinishReason.STOP,
        "load",
        full=WRITTEN / "ollama-chat-load.json",
    ),
    Case(
        WRITTEN / "ollama-chat-stream-unknown-reason.ndjson",
        1,
        FinishReason.ERROR,
        "something_new",
        cut_off=True,
        full=WRITTEN / "ollama-chat-unknown-reason.json",
    ),
    Case(
        WRITTEN / "ollama-chat-stream-error.ndjson",
        3,
        FinishReason.ERROR,
        None,
        explanation=MODEL_FAILED,
        cut_off=True,
        full=WRITTEN / "ollama-error-in-stream.json",
        same_content=False,
    ),
    Case(
        WRITTEN / "ollama-chat-stream-truncated.ndjson",
        None,
        FinishReason.ERROR,
        None,
        cut_off=True,
        full=WRITTEN / "ollama-chat-unfinished.json",
    ),
]
STREAMS = [case.stream for case in CASES]


def case_id(case: Case) -> str:
    return case.stream.name


def lines(*bodies: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(body) + b"\n" for body in bodies)


def agreed(response: LLMResponse) -> dict[str, Any]:
    """What a stream and its full response must agree on."""
    return _support.agreed(response, "usage", "model", "error")


# Each stream, decoded --------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_each_stream_gives_its_verdict_on_the_line_that_carries_it(case: Case) -> None:
    for provider in (None, "ollama"):
        response, decoder = decode(case.stream.read_bytes(), provider)
        assert decoder.verdict_index == case.verdict_index
        assert response.provider == "ollama"
        assert response.api == "chat"
        assert response.finish_reason is case.finish
        assert response.raw_finish_reason == case.raw
        stop = response.stop_details
        assert (stop.category if stop else None) is None
        assert (stop.explanation if stop else None) == case.explanation
        assert notice(response) is None
        assert response.cut_off is case.cut_off


@pytest.mark.parametrize("case", [c for c in CASES if c.full is not None], ids=case_id)
def test_a_stream_and_the_full_response_saying_the_same_agree(case: Case) -> None:
    assert case.full is not None
    streamed, _ = decode(case.stream.read_bytes())
    full = normalize(case.full.read_bytes())
    expected, got = agreed(full), agreed(streamed)
    if full.error is None and got["error"] is not None:
        # The stream broke off, and its error says so; a whole body has no stream to lose.
        assert got.pop("error").message == INCOMPLETE
        expected.pop("error")
    if not case.same_content:
        assert got.pop("content") is not None
        assert got.pop("cut_off") is True
        for name in ("content", "cut_off", "model", "usage"):
            expected.pop(name)
        got.pop("model")
        got.pop("usage")
    assert got == expected


def test_text_thinking_and_counts_are_accumulated_line_by_line() -> None:
    response, _ = decode((WRITTEN / "ollama-chat-stream-thinking.ndjson").read_bytes())
    assert response.reasoning == "Let me spell it: s-t-r-a-w-b-e-r-r-y. That is three r's."
    assert response.content == "There are three r's in strawberry."
    assert response.model == "qwen3:8b"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (26, 298)


def test_tool_calls_arrive_whole_before_the_done_line() -> None:
    response, _ = decode((WRITTEN / "ollama-chat-stream-tool-calls.ndjson").read_bytes())
    assert response.tool_calls == [
        ToolCall("", "get_current_weather", '{"format":"celsius","location":"Paris, FR"}')
    ]
    assert response.finish_reason is FinishReason.TOOL_CALLS


def test_an_error_line_mid_stream_is_an_error_that_keeps_the_text_cut_off() -> None:
    response, events = decode_events((WRITTEN / "ollama-chat-stream-error.ndjson").read_bytes())
    error = normalize((WRITTEN / "ollama-error-in-stream.json").read_bytes()).error
    assert error is not None
    assert error.kind is ErrorKind.TRANSIENT
    assert events[-2:] == [
        StreamError(MODEL_FAILED, error),
        Verdict(FinishReason.ERROR, None, StopDetails(explanation=MODEL_FAILED)),
    ]
    assert response.content == "The answer is"
    assert response.cut_off is True
    assert response.error == error


def test_a_stream_that_never_says_done_is_an_incomplete_error() -> None:
    response, events = decode_events((WRITTEN / "ollama-chat-stream-stop.ndjson").read_bytes()[:-1])
    assert response.finish_reason is FinishReason.STOP  # the last line lacks only its newline
    cut = b"".join((WRITTEN / "ollama-chat-stream-stop.ndjson").read_bytes().splitlines(True)[:-1])
    response, events = decode_events(cut)
    assert events[-1] == StreamError(INCOMPLETE)
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason is None
    assert response.content == "Hello! How are you today?"
    assert response.cut_off is True


@pytest.mark.parametrize("case", [c for c in CASES if c.verdict_index], ids=case_id)
def test_a_stream_cut_before_its_done_line_is_an_error_that_says_so(case: Case) -> None:
    cut = b"".join(case.stream.read_bytes().splitlines(True)[:-1])
    response, events = decode_events(cut)
    assert response.finish_reason is FinishReason.ERROR
    assert events[-1] == StreamError(INCOMPLETE)
    assert response.cut_off is bool(response.content)


def test_a_done_line_without_done_reason_is_a_stop_as_in_older_versions() -> None:
    body = orjson.loads((WRITTEN / "ollama-generate-no-done-reason.json").read_bytes())
    first = {"model": body["model"], "created_at": body["created_at"], "response": body["response"]}
    raw = lines({**first, "done": False}, {**body, "response": ""})
    response, decoder = decode(raw)
    assert decoder.verdict_index == 1
    assert agreed(response) == agreed(normalize(body))
    assert response.finish_reason is FinishReason.STOP
    assert response.raw_finish_reason is None


def test_an_error_as_the_first_line_is_read_as_ollamas() -> None:
    raw = lines({"error": "model 'llama9' not found"})
    response, decoder = decode(raw)
    assert decoder.provider == "ollama"
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.kind is ErrorKind.INVALID_REQUEST
    assert decoder.verdict_index == 0


def test_a_line_that_is_not_an_object_is_an_error_not_a_crash() -> None:
    decoder = ollama_module.StreamReader("ollama")
    assert decoder.feed(None, b'"done"') == [
        StreamError("an Ollama stream line is not a JSON object")
    ]


# Any chunking and truncation ---------------------------------------------------------------


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


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=st.sampled_from(STREAMS),
    edits=BYTE_EDITS,
)
def test_a_mutated_stream_never_raises(path: Path, edits: list[tuple[int, int, int]]) -> None:
    raw = edited(path.read_bytes(), edits)
    for provider in (None, "ollama"):
        response, _ = decode(raw, provider)
        assert isinstance(response.finish_reason, FinishReason)


NATIVE_KEYS = [
    "model",
    "message",
    "content",
    "thinking",
    "tool_calls",
    "function",
    "name",
    "arguments",
    "response",
    "done",
    "done_reason",
    "eval_count",
    "prompt_eval_count",
    "error",
]
JSON = keyed_json(NATIVE_KEYS)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(JSON, max_size=6))
def test_arbitrary_json_lines_never_raise(events: list[Any]) -> None:
    response = feed_events(
        ollama_module.StreamReader("ollama"), [(None, event) for event in events]
    )
    assert isinstance(response.finish_reason, FinishReason)


# Detection -----------------------------------------------------------------------------------


def test_detection_claims_every_native_first_line() -> None:
    for case in CASES:
        name, payload = first_event(case.stream)
        assert ollama_module.detect_stream(name, payload) == "ollama"


@pytest.mark.parametrize(
    "path",
    stream_fixtures(lambda path: path.name.startswith("ollama-")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_detection_never_claims_another_formats_first_event(path: Path) -> None:
    name, payload = first_event(path)
    assert ollama_module.detect_stream(name, payload) is None


OPENAI_COMPATIBLE_CHUNK = {
    "id": "chatcmpl-512",
    "object": "chat.completion.chunk",
    "created": 1747213963,
    "model": "llama3.2",
    "system_fingerprint": "fp_ollama",
    "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}}],
}


@pytest.mark.parametrize(
    ("name", "payload"),
    [
        (None, OPENAI_COMPATIBLE_CHUNK),
        (None, {"choices": [], "done": False, "message": {"content": "x"}}),
        (None, {"object": "chat.completion.chunk", "done": True, "response": ""}),
        (None, {"error": {"message": "model not found", "type": "api_error"}}),
        (None, {"code": "invalid-argument", "error": "bad"}),
        ("message_start", {"done": False, "message": {}}),
        (None, {"done": "false", "message": {}}),
        (None, None),
    ],
)
def test_detection_rejects_openai_compatible_chunks_and_other_shapes(
    name: str | None, payload: Any
) -> None:
    assert ollama_module.detect_stream(name, payload) is None
