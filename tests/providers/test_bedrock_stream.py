"""Bedrock ConverseStream: the verdict at messageStop, the guardrail trace merged from the
metadata event after it, modelled exceptions, incomplete streams, and agreement with the
matching full Converse responses.

Streams are kept as one decoded event per line (`*.chunks.txt`, the recorded form) and
encoded here into AWS event-stream binary framing with `encode_event_stream`, the way
Bedrock sends them: each message names its event in `:event-type` (exceptions in
`:exception-type` with `:message-type: exception`), and event payloads carry the `p`
padding field. Both forms must decode to the same response. Notices are asserted whole.
"""

from __future__ import annotations

import base64
import json
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals import ErrorKind, FinishReason, LLMResponse, StopDetails, normalize, notice
from refusals.events import ReasoningDelta, StreamError, TextDelta, ToolCallDelta, Verdict
from refusals.providers import bedrock
from refusals.transport.framing import encode_event_stream
from refusals.transport.streams import StreamDecoder, decode_stream
from tests.providers._support import (
    DETECTING,
    FILTERED,
    FIXTURES,
    INCOMPLETE,
    NEXT_STEP,
    WRONG_VALUES,
    decode_closing,
    event_json,
    facts,
    feed_events,
    json_paths,
    other_providers_events,
    replace_at,
)

BEDROCK = FIXTURES / "bedrock"
TERMINAL = (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER)
PADDING = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123"
# Detection without a provider name asks every module in turn; until each has its stream
# decoder, the tests that detect name the provider instead.
AUTO_READY = all(hasattr(module, "detect_stream") for module in DETECTING)
needs_auto = pytest.mark.skipif(
    not AUTO_READY, reason="a module detected before bedrock has no detect_stream yet"
)


def read(name: str) -> bytes:
    return (BEDROCK / name).read_bytes()


def events_of(raw: bytes) -> list[tuple[str, Any]]:
    """The (event name, body) pairs of a stream kept as one decoded event per line."""
    pairs = []
    for line in raw.splitlines():
        if line.strip():
            ((name, body),) = json.loads(line).items()
            pairs.append((name, body))
    return pairs


def message(name: str, body: Any, padding: int = 0) -> bytes:
    """One event-stream message as Bedrock frames it."""
    if name.lower().endswith("exception"):
        headers = {
            ":exception-type": name,
            ":message-type": "exception",
            ":content-type": "application/json",
        }
    else:
        headers = {
            ":event-type": name,
            ":message-type": "event",
            ":content-type": "application/json",
        }
        if padding and isinstance(body, dict):
            body = {**body, "p": PADDING[: padding % len(PADDING) + 1]}
    return encode_event_stream(headers, json.dumps(body).encode())


def binary(events: list[tuple[str, Any]]) -> bytes:
    return b"".join(message(name, body, i + 3) for i, (name, body) in enumerate(events))


def lines(events: list[tuple[str, Any]]) -> bytes:
    return b"".join(json.dumps({name: body}).encode() + b"\n" for name, body in events)


def decode(raw: bytes, provider: str | None = "bedrock") -> tuple[LLMResponse, StreamDecoder]:
    response, decoder = decode_stream(raw, provider=provider)
    assert response.provider == "bedrock"
    assert response.api == "converse"
    return response, decoder


def both_forms(name: str) -> tuple[LLMResponse, StreamDecoder]:
    """Decode the stream as recorded (JSON lines) and as binary event-stream: both agree."""
    raw = read(name)
    as_lines, lines_decoder = decode(raw)
    as_binary, binary_decoder = decode(binary(events_of(raw)))
    assert as_binary == as_lines
    assert binary_decoder.verdict_index == lines_decoder.verdict_index
    return as_binary, binary_decoder


# --- every stream, its verdict and its full response ---------------------------------------


class Case(NamedTuple):
    stream: str
    full: str | None
    verdict_index: int | None
    finish: FinishReason
    raw: str | None
    category: str | None
    categories: tuple[str, ...]
    explanation: str | None
    notice: str | None
    cut_off: bool


BLOCKED = "Guardrail blocked."
VALIDATION = (
    "This request has been blocked by our content filters. Please adjust your text prompt "
    "to submit a new request."
)

CASES = [
    Case(
        "converse-stream-end-turn.chunks.txt",
        "written/converse-stream-end-turn.json",
        14,
        FinishReason.STOP,
        "end_turn",
        None,
        (),
        None,
        None,
        False,
    ),
    Case(
        "written/stream-guardrail-intervened-input.chunks.txt",
        "written/guardrail-intervened-input-topic-content.json",
        3,
        FinishReason.CONTENT_FILTER,
        "guardrail_intervened",
        "Investment Advice",
        ("Investment Advice", "violence"),
        BLOCKED,
        f"{FILTERED} (categories: Investment Advice, violence): guardrail blocked. {NEXT_STEP}",
        True,
    ),
    Case(
        "written/stream-guardrail-intervened-output-pii.chunks.txt",
        "written/guardrail-intervened-output-pii.json",
        4,
        FinishReason.CONTENT_FILTER,
        "guardrail_intervened",
        "email",
        ("email", "AccountNumber"),
        BLOCKED,
        f"{FILTERED} (categories: email, AccountNumber): guardrail blocked. {NEXT_STEP}",
        True,
    ),
    Case(
        "written/stream-guardrail-intervened-words-grounding.chunks.txt",
        "written/guardrail-intervened-words-grounding.json",
        4,
        FinishReason.CONTENT_FILTER,
        "guardrail_intervened",
        "custom_word",
        ("custom_word", "profanity", "grounding"),
        BLOCKED,
        f"{FILTERED} (categories: custom_word, profanity, grounding): guardrail blocked. "
        + NEXT_STEP,
        True,
    ),
    Case(
        "written/stream-guardrail-intervened-no-metadata.chunks.txt",
        "written/guardrail-intervened-no-trace.json",
        3,
        FinishReason.CONTENT_FILTER,
        "guardrail_intervened",
        None,
        (),
        None,
        f"{FILTERED}. {NEXT_STEP}",
        True,
    ),
    Case(
        # messageStop says end_turn; the trace in the metadata event says a policy blocked
        # the output, so the verdict rides on the metadata event.
        "written/stream-end-turn-trace-blocked.chunks.txt",
        "written/end-turn-trace-blocked.json",
        5,
        FinishReason.CONTENT_FILTER,
        "end_turn",
        "credit_debit_card_number",
        (),
        BLOCKED,
        f"{FILTERED} (category: credit_debit_card_number): guardrail blocked. {NEXT_STEP}",
        True,
    ),
    Case(
        "written/stream-content-filtered.chunks.txt",
        "written/content-filtered.json",
        4,
        FinishReason.CONTENT_FILTER,
        "content_filtered",
        None,
        (),
        None,
        f"{FILTERED}. {NEXT_STEP}",
        True,
    ),
    Case(
        "written/stream-max-tokens.chunks.txt",
        "converse-max-tokens.json",
        4,
        FinishReason.LENGTH,
        "max_tokens",
        None,
        (),
        None,
        None,
        False,
    ),
    Case(
        "written/stream-tool-use-reasoning.chunks.txt",
        "written/tool-use-reasoning.json",
        14,
        FinishReason.TOOL_CALLS,
        "tool_use",
        None,
        (),
        None,
        None,
        False,
    ),
    Case(
        "written/stream-unknown-stop-reason.chunks.txt",
        "written/unknown-stop-reason.json",
        4,
        FinishReason.ERROR,
        "awaiting_approval_2027",
        None,
        (),
        None,
        None,
        True,
    ),
    Case(
        # The full counterpart is the error body: it has no partial text, the stream has.
        "written/stream-exception-throttling.chunks.txt",
        "written/error-429-throttling.json",
        2,
        FinishReason.ERROR,
        "ThrottlingException",
        None,
        (),
        "Too many requests, please wait before trying again.",
        None,
        True,
    ),
    Case(
        "written/stream-exception-validation-content-filter.chunks.txt",
        "written/error-400-validation-content-filter.json",
        1,
        FinishReason.CONTENT_FILTER,
        "ValidationException",
        None,
        (),
        VALIDATION,
        f"{FILTERED}: this request has been blocked by our content filters. Please adjust "
        f"your text prompt to submit a new request. {NEXT_STEP}",
        False,
    ),
    Case(
        "written/stream-truncated.chunks.txt",
        None,
        None,
        FinishReason.ERROR,
        None,
        None,
        (),
        None,
        None,
        True,
    ),
]
# Checked on its own below: an exception after a guardrail stop.
AFTER_GUARDRAIL = "written/stream-exception-after-guardrail.chunks.txt"
STREAMS = [case.stream for case in CASES] + [AFTER_GUARDRAIL]
# Streams whose filter signal is the stop reason (or an exception), not only the trace.
SIGNAL_STREAMS = [c.stream for c in CASES if c.finish in TERMINAL and c.raw != "end_turn"] + [
    AFTER_GUARDRAIL
]


def test_every_stream_fixture_has_a_case() -> None:
    on_disk = {
        str(path.relative_to(BEDROCK))
        for pattern in ("*.chunks.txt", "written/*.chunks.txt")
        for path in BEDROCK.glob(pattern)
    }
    assert on_disk == set(STREAMS)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.stream)
def test_a_stream_reports_its_verdict_on_the_event_that_carries_it(case: Case) -> None:
    response, decoder = both_forms(case.stream)

    assert decoder.verdict_index == case.verdict_index
    assert response.finish_reason is case.finish
    assert response.raw_finish_reason == case.raw
    stop = response.stop_details
    assert (stop.category if stop else None) == case.category
    assert (stop.categories if stop else ()) == case.categories
    assert (stop.explanation if stop else None) == case.explanation
    assert notice(response) == case.notice
    assert response.cut_off is case.cut_off


@pytest.mark.parametrize("case", [c for c in CASES if c.full], ids=lambda c: c.stream)
def test_a_stream_agrees_with_its_full_response(case: Case) -> None:
    assert case.full is not None
    streamed, _ = both_forms(case.stream)
    full = normalize(read(case.full), provider="bedrock")

    expected = facts(full)
    if case.stream == "written/stream-exception-throttling.chunks.txt":
        # An error body has no partial text; the stream keeps what arrived, cut off.
        expected["content"] = "The first"
    assert facts(streamed) == expected
    assert streamed.raw_finish_reason == full.raw_finish_reason
    if streamed.error is None:
        assert streamed.reasoning == full.reasoning
        assert [(t.id, t.name) for t in streamed.tool_calls] == [
            (t.id, t.name) for t in full.tool_calls
        ]
        assert [json.loads(t.arguments) for t in streamed.tool_calls] == [
            json.loads(t.arguments) for t in full.tool_calls
        ]
        assert sorted(map(str, streamed.reasoning_details or [])) == sorted(
            map(str, full.reasoning_details or [])
        )
        assert streamed.usage == full.usage
        assert streamed.cut_off is full.cut_off
    else:
        assert streamed.error == full.error


@needs_auto
def test_every_stream_is_recognised_as_bedrock_from_its_first_event() -> None:
    for name in STREAMS:
        raw = read(name)
        for form in (raw, binary(events_of(raw))):
            response, decoder = decode(form, provider=None)
            assert decoder.provider == "bedrock", name
            assert response == decode(form)[0], name


# --- the guardrail verdict and its trace -----------------------------------------------------


def feed_all(events: list[tuple[str, Any]]) -> tuple[bedrock.StreamReader, list[list[Any]]]:
    decoder = bedrock.StreamReader("bedrock")
    produced = [decoder.feed(name, json.dumps(body)) for name, body in events]
    return decoder, produced


def test_a_guardrail_stop_is_decided_at_message_stop_and_the_trace_adds_categories() -> None:
    decoder, produced = feed_all(events_of(read(CASES[1].stream))[:4])

    assert produced[3] == [Verdict(FinishReason.CONTENT_FILTER, "guardrail_intervened")]
    assert decoder.done is False  # the metadata event with the trace is still to come
    name, body = events_of(read(CASES[1].stream))[4]
    produced.append(decoder.feed(name, json.dumps(body)))
    stop = StopDetails(
        category="Investment Advice",
        explanation=BLOCKED,
        categories=("Investment Advice", "violence"),
    )
    assert [e for e in produced[4] if isinstance(e, Verdict)] == [
        Verdict(FinishReason.CONTENT_FILTER, "guardrail_intervened", stop)
    ]
    assert decoder.done is True
    assert decoder.close() == []
    assert decoder.acc.verdict_index == 3
    assert decoder.response.stop_details == stop


def test_a_consumer_can_stop_reading_at_message_stop_and_still_gets_a_filter_notice() -> None:
    raw = binary(events_of(read(CASES[1].stream)))
    decoder = StreamDecoder("bedrock")
    for offset in range(0, len(raw), 5):
        events = decoder.feed(raw[offset : offset + 5])
        if any(isinstance(e, Verdict) for e in events):
            break
    response = decoder.response

    assert decoder.events_seen == 4
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert notice(response) == f"{FILTERED}. {NEXT_STEP}"


def test_a_stream_that_ends_after_message_stop_without_metadata_is_complete() -> None:
    decoder, _ = feed_all(
        events_of(read("written/stream-guardrail-intervened-no-metadata.chunks.txt"))
    )

    assert decoder.done is False
    assert decoder.close() == []  # no "ended before its terminal event" error
    assert decoder.done is True
    assert decoder.response.error is None
    assert decoder.response.finish_reason is FinishReason.CONTENT_FILTER


def test_a_stop_whose_trace_shows_a_block_becomes_a_filter_stop_at_metadata() -> None:
    decoder, produced = feed_all(
        events_of(read("written/stream-end-turn-trace-blocked.chunks.txt"))
    )

    assert produced[4] == [Verdict(FinishReason.STOP, "end_turn")]
    stop = StopDetails(category="credit_debit_card_number", explanation=BLOCKED)
    assert [e for e in produced[5] if isinstance(e, Verdict)] == [
        Verdict(FinishReason.CONTENT_FILTER, "end_turn", stop)
    ]
    assert decoder.acc.verdict_index == 5


def test_a_trace_with_no_blocked_action_stays_a_stop() -> None:
    recorded = json.loads(read("converse-guardrail-trace-no-action.json"))
    events = events_of(read("converse-stream-end-turn.chunks.txt"))
    name, body = events[-1]
    events[-1] = (name, {**body, "trace": recorded["trace"]})
    response, decoder = decode(binary(events))

    assert response.finish_reason is FinishReason.STOP
    assert response.stop_details is None
    assert decoder.verdict_index == 14


def test_a_trace_arriving_before_message_stop_still_marks_the_filter() -> None:
    events = events_of(read(CASES[1].stream))
    events[3], events[4] = events[4], events[3]  # metadata first, then messageStop
    response, decoder = decode(binary(events))

    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "guardrail_intervened"
    assert decoder.verdict_index == 3
    assert response.stop_details is not None
    assert response.stop_details.categories == ("Investment Advice", "violence")


def test_a_second_metadata_event_with_no_trace_erases_nothing() -> None:
    events = events_of(read(CASES[1].stream))
    events.append(("metadata", {"usage": {"inputTokens": 1}, "metrics": {}}))
    response, _ = decode(binary(events))
    reference, _ = decode(read(CASES[1].stream))

    assert notice(response) == notice(reference)
    assert response.stop_details == reference.stop_details


def test_reasoning_text_signatures_and_redacted_content_match_the_full_response() -> None:
    response, _ = both_forms("written/stream-tool-use-reasoning.chunks.txt")

    assert response.reasoning == "The user wants the weather, so I should call the tool."
    assert list(response.reasoning_details or []) == [
        '{"type":"thinking","signature":"c2lnLWJlZHJvY2stcmVhc29uaW5n"}',
        '{"type":"redacted_thinking","data":"cmVkYWN0ZWQtYmVkcm9jaw=="}',
    ]
    assert [(t.id, t.name, t.arguments) for t in response.tool_calls] == [
        (
            "tooluse_WrittenSeattle01",
            "get_weather",
            '{"city": "Seattle", "unit": "fahrenheit"}',
        )
    ]


def test_decoded_events_are_typed_stream_events() -> None:
    _, produced = feed_all(events_of(read("written/stream-tool-use-reasoning.chunks.txt")))
    flat = [event for events in produced for event in events]

    assert ToolCallDelta(3, id="tooluse_WrittenSeattle01", name="get_weather") in flat
    assert ReasoningDelta("The user wants the weather, ") in flat
    assert TextDelta("I'll look up the current ") in flat


def test_a_tool_without_input_deltas_gets_an_empty_input_like_a_full_response() -> None:
    events = [
        ("messageStart", {"role": "assistant"}),
        (
            "contentBlockStart",
            {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "now"}}},
        ),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("messageStop", {"stopReason": "tool_use"}),
        ("metadata", {"usage": {}, "metrics": {}}),
    ]
    response, _ = decode(binary(events))

    assert [(t.id, t.name, t.arguments) for t in response.tool_calls] == [("t1", "now", "{}")]


# --- modelled exceptions ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exception", "body", "kind", "code", "finish"),
    [
        (
            "throttlingException",
            {"message": "Too many requests, please wait before trying again."},
            ErrorKind.TRANSIENT,
            "ThrottlingException",
            FinishReason.ERROR,
        ),
        (
            "modelStreamErrorException",
            {
                "message": "Model stream error",
                "originalStatusCode": 500,
                "originalMessage": "upstream failure",
            },
            ErrorKind.TRANSIENT,
            "ModelStreamErrorException",
            FinishReason.ERROR,
        ),
        (
            "serviceUnavailableException",
            {"message": "Bedrock is unable to process your request."},
            ErrorKind.TRANSIENT,
            "ServiceUnavailableException",
            FinishReason.ERROR,
        ),
        (
            "internalServerException",
            {"message": "The server encountered an error processing your request."},
            ErrorKind.TRANSIENT,
            "InternalServerException",
            FinishReason.ERROR,
        ),
        (
            "validationException",
            {"message": "The model returned the following errors: max_tokens is too large"},
            ErrorKind.INVALID_REQUEST,
            "ValidationException",
            FinishReason.ERROR,
        ),
        (
            "validationException",
            {"message": VALIDATION},
            ErrorKind.POLICY,
            "ValidationException",
            FinishReason.CONTENT_FILTER,
        ),
    ],
)
def test_an_exception_mid_stream_is_classified_like_the_error_body(
    exception: str, body: dict[str, Any], kind: ErrorKind, code: str, finish: FinishReason
) -> None:
    events = [
        ("messageStart", {"role": "assistant"}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Partial"}}),
        (exception, body),
    ]
    response, decoder = decode(binary(events))
    as_body = normalize({**body, "__type": code}, provider="bedrock")

    assert response.finish_reason is finish
    assert response.error == as_body.error
    assert response.error is not None
    assert response.error.kind is kind
    assert response.error.code == code
    assert response.raw_finish_reason == code
    assert response.content == "Partial"
    assert response.cut_off is True
    assert decoder.verdict_index == 2
    assert response.stop_details == StopDetails(explanation=body["message"])


def test_an_exception_after_a_guardrail_stop_keeps_the_filter_verdict() -> None:
    response, decoder = both_forms(AFTER_GUARDRAIL)

    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "guardrail_intervened"
    assert decoder.verdict_index == 3
    assert response.error is not None
    assert response.error.code == "InternalServerException"


def test_an_exception_after_a_guardrail_stop_does_not_explain_the_filter() -> None:
    response, _ = both_forms(AFTER_GUARDRAIL)
    full = normalize(read("written/guardrail-intervened-no-trace.json"), provider="bedrock")

    assert notice(response) == notice(full) == f"{FILTERED}. {NEXT_STEP}"


# --- incomplete streams ----------------------------------------------------------------------


def test_a_stream_that_stops_before_message_stop_is_an_error_that_says_so() -> None:
    for raw in (
        read("written/stream-truncated.chunks.txt"),
        binary(events_of(read("written/stream-truncated.chunks.txt"))),
    ):
        response, decoder, closing = decode_closing(raw, "bedrock")

        assert closing == [StreamError(INCOMPLETE)]
        assert response.finish_reason is FinishReason.ERROR
        assert decoder.verdict_index is None
        assert response.content == "Step one: open the settings"
        assert response.cut_off is True
        assert notice(response) is None


def test_a_binary_stream_cut_inside_a_message_is_a_framing_error() -> None:
    raw = binary(events_of(read("converse-stream-end-turn.chunks.txt")))
    response, _, closing = decode_closing(raw[:-7], "bedrock")

    assert response.finish_reason is FinishReason.ERROR
    assert len(closing) == 1
    assert isinstance(closing[0], StreamError)
    assert "ended inside a message" in closing[0].message


@pytest.mark.parametrize("name", [c.stream for c in CASES if c.verdict_index is not None])
def test_a_stream_cut_at_any_event_is_an_error_unless_a_filter_was_already_seen(
    name: str,
) -> None:
    events = events_of(read(name))
    complete, complete_decoder = decode(read(name))
    verdict_at = complete_decoder.verdict_index
    assert verdict_at is not None
    stop_at = next((i for i, (n, _) in enumerate(events) if n == "messageStop"), None)
    has_exception = any(n.endswith("Exception") for n, _ in events)
    for keep in range(1, len(events)):
        response, decoder, closing = decode_closing(binary(events[:keep]), "bedrock")
        if complete.finish_reason in TERMINAL and keep > verdict_at:
            assert response.finish_reason is complete.finish_reason, (name, keep)
        elif stop_at is not None and keep > stop_at:
            # Cut after messageStop: complete, with the verdict messageStop gave.
            assert closing == []
            assert response.finish_reason is decoder.response.finish_reason
        else:
            assert response.finish_reason is FinishReason.ERROR, (name, keep)
            if not has_exception:
                assert closing == [StreamError(INCOMPLETE)], (name, keep)


# --- chunking, detection, cross-checks, malformed input --------------------------------------


@pytest.mark.parametrize("name", STREAMS)
def test_a_binary_stream_decodes_identically_when_split_at_any_byte(name: str) -> None:
    raw = binary(events_of(read(name)))
    whole, whole_decoder = decode(raw)
    for cut in range(len(raw) + 1):
        response, decoder = decode_stream([raw[:cut], raw[cut:]], provider="bedrock")
        assert response == whole, cut
        assert decoder.verdict_index == whole_decoder.verdict_index
    small = [raw[i : i + 3] for i in range(0, len(raw), 3)]
    assert decode_stream(small, provider="bedrock")[0] == whole


@pytest.mark.parametrize("name", STREAMS)
def test_a_json_lines_stream_decodes_identically_when_split_at_any_byte(name: str) -> None:
    raw = read(name)
    whole, _ = decode(raw)
    for cut in range(len(raw) + 1):
        assert decode_stream([raw[:cut], raw[cut:]], provider="bedrock")[0] == whole, cut


def test_botocore_reads_the_written_binary_streams_as_the_same_events() -> None:
    session = pytest.importorskip("botocore.session")
    eventstream = pytest.importorskip("botocore.eventstream")
    parsers = pytest.importorskip("botocore.parsers")
    exceptions = pytest.importorskip("botocore.exceptions")
    model = session.get_session().get_service_model("bedrock-runtime")
    shape = model.operation_model("ConverseStream").output_shape.members["stream"]

    class Body:
        def __init__(self, raw: bytes) -> None:
            self.raw = raw

        def stream(self) -> Any:
            yield self.raw

    for path in sorted((BEDROCK / "written").glob("*.chunks.txt")):
        events = events_of(path.read_bytes())
        expected: list[Any] = []
        for name, body in events:
            if name.endswith("Exception"):
                break
            expected.append({name: _blobs(body)})
        parsed: list[Any] = []
        reader = eventstream.EventStream(
            Body(binary(events)), shape, parsers.EventStreamJSONParser(), "ConverseStream"
        )
        try:
            parsed.extend(reader)
        except exceptions.EventStreamError as exc:
            parsed.append(exc.response["Error"]["Code"])
            expected.append(events[len(expected)][0])
        assert parsed == expected, path.name


def _blobs(value: Any) -> Any:
    """A decoded event as botocore gives it: blob members as bytes, `p` padding dropped."""
    if isinstance(value, dict):
        return {
            key: base64.b64decode(item) if key == "redactedContent" else _blobs(item)
            for key, item in value.items()
            if key != "p"
        }
    if isinstance(value, list):
        return [_blobs(item) for item in value]
    return value


def test_detection_never_claims_another_provider_s_stream_events() -> None:
    events = other_providers_events("bedrock")
    assert {source.split("/")[0] for source, _, _ in events} >= {
        "anthropic",
        "gemini",
        "openai-chat",
        "openai-responses",
    }
    for source, event_name, payload in events:
        assert bedrock.detect_stream(event_name, payload) is None, source


def test_detection_claims_every_converse_stream_event_and_exception() -> None:
    for name in bedrock.STREAM_EVENTS:
        assert bedrock.detect_stream(name, {}) == "bedrock"
        assert bedrock.detect_stream(None, {name: {}}) == "bedrock"
    for name in (
        "throttlingException",
        "modelStreamErrorException",
        "validationException",
        "serviceUnavailableException",
        "internalServerException",
    ):
        assert bedrock.detect_stream(name, {"message": "x"}) == "bedrock"
        assert bedrock.detect_stream(None, {name: {"message": "x"}}) == "bedrock"


@pytest.mark.parametrize(
    ("name", "payload"),
    [
        ("chunk", "eyJ0eXBlIjoibWVzc2FnZV9zdGFydCJ9"),  # a chunk is an object with `bytes`
        ("messageStart", None),
        ("metadata", [1]),
        ("message_start", {"type": "message_start", "message": {}}),
        ("somethingException", {"message": "not a Bedrock exception"}),
        (None, {"messageStart": {"role": "assistant"}, "other": 1}),
        (None, {"messageStart": "assistant"}),
        (None, {"metadata": {}, "candidates": []}),
        (None, {"usageMetadata": {"promptTokenCount": 3}}),
        (None, {"type": "message_start"}),
        (None, None),
    ],
)
def test_detection_is_specific(name: str | None, payload: Any) -> None:
    assert bedrock.detect_stream(name, payload) is None


@pytest.mark.parametrize("payload", [b"[1, 2]", b'"text"', b"null", b"17"])
def test_an_event_that_is_not_a_json_object_is_a_stream_error(payload: bytes) -> None:
    events = events_of(read("converse-stream-end-turn.chunks.txt"))
    raw = binary(events[:5])
    raw += encode_event_stream({":event-type": "contentBlockDelta"}, payload)
    raw += binary(events[5:])
    response, _ = decode(raw)

    assert response.finish_reason is FinishReason.ERROR
    assert response.cut_off is True


def test_an_unknown_event_type_is_ignored() -> None:
    events = events_of(read("converse-stream-end-turn.chunks.txt"))
    events.insert(3, ("contentBlockAnnotation2027", {"contentBlockIndex": 0}))
    response, decoder = decode(binary(events))
    reference, _ = decode(read("converse-stream-end-turn.chunks.txt"))

    assert response == reference
    assert decoder.verdict_index == 15


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(STREAMS), st.data())
def test_malformed_field_values_never_raise_and_never_hide_a_filter(
    name: str, data: st.DataObject
) -> None:
    events = events_of(read(name))
    index = data.draw(st.integers(0, len(events) - 1))
    event_name, body = events[index]
    path = data.draw(st.sampled_from(json_paths(body)))
    new = data.draw(WRONG_VALUES.filter(lambda v: not (isinstance(v, str) and v == "end_turn")))
    events[index] = (event_name, replace_at(body, path, new))

    response, _ = decode(binary(events))

    if name in SIGNAL_STREAMS:
        assert response.finish_reason is not FinishReason.STOP


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(STREAMS), st.booleans(), st.data())
def test_random_truncation_never_raises_and_is_never_a_stop(
    name: str, as_binary: bool, data: st.DataObject
) -> None:
    messages = events_of(read(name))
    raw = binary(messages) if as_binary else read(name)
    # Cut before the messageStop event is whole (binary: its last byte; lines: its `}`).
    end = len(raw)
    stop = next((i for i, (n, _) in enumerate(messages) if n == "messageStop"), None)
    if stop is not None and as_binary:
        end = len(binary(messages[: stop + 1])) - 1
    elif stop is not None:
        end = raw.index(b"\n", raw.index(b'{"messageStop"')) - 1
    cut = data.draw(st.integers(0, max(end - 1, 0)))

    response, _ = decode_stream(raw[:cut], provider="bedrock")

    assert response.finish_reason is not FinishReason.STOP


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(STREAMS),
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=6),
)
def test_random_byte_mutations_of_binary_streams_never_raise_or_hide_a_filter(
    name: str, edits: list[tuple[int, int]]
) -> None:
    raw = bytearray(binary(events_of(read(name))))
    for position, byte in edits:
        raw[position % len(raw)] = byte

    response, _ = decode_stream(bytes(raw), provider="bedrock")

    complete, _ = decode(read(name))
    if complete.finish_reason in TERMINAL:
        assert response.finish_reason is not FinishReason.STOP


@given(st.binary(max_size=400))
def test_arbitrary_bytes_named_as_bedrock_never_raise(raw: bytes) -> None:
    response, _ = decode_stream(raw, provider="bedrock")
    assert response.finish_reason is not FinishReason.STOP


KEYS = st.sampled_from(
    [
        *sorted(bedrock.STREAM_EVENTS),
        "contentBlockIndex",
        "start",
        "toolUse",
        "toolUseId",
        "name",
        "delta",
        "text",
        "input",
        "reasoningContent",
        "signature",
        "redactedContent",
        "stopReason",
        "usage",
        "inputTokens",
        "trace",
        "guardrail",
        "actionReason",
        "outputAssessments",
        "contentPolicy",
        "filters",
        "action",
        "message",
    ]
)
JSON = event_json(
    KEYS,
    st.sampled_from(["BLOCKED", "guardrail_intervened", "end_turn", "VIOLENCE", "x"]),
)
NAMES = st.none() | st.sampled_from(
    [*sorted(bedrock.STREAM_EVENTS), "throttlingException", "validationException", "chunk"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(NAMES, JSON), max_size=12))
def test_arbitrary_json_events_never_raise(events: list[tuple[str | None, Any]]) -> None:
    response = feed_events(bedrock.StreamReader("bedrock"), events)
    assert response.provider == "bedrock"
    notice(response)
