"""The stream entry point: framing recognised from the first bytes, errors that say what."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refusals import (
    FinishReason,
    NormalizeError,
    StreamDecoder,
    StreamError,
    TextDelta,
    decode_stream,
)
from refusals.transport.framing import encode_event_stream
from refusals.transport.streams import sniff_framing

FIXTURES = Path(__file__).parent.parent / "fixtures"


def test_framing_is_recognised_from_the_first_bytes() -> None:
    assert sniff_framing(b"event: message_start\n") == "sse"
    assert sniff_framing(b"data: {}\n") == "sse"
    assert sniff_framing(b'{"messageStart":{}}\n') == "json-lines"
    assert sniff_framing(encode_event_stream({":event-type": "messageStart"}, b"{}")) == (
        "event-stream"
    )


def test_a_stream_fed_one_byte_at_a_time_recognises_its_framing() -> None:
    raw = (FIXTURES / "anthropic" / "stream-refusal-cyber.sse").read_bytes()
    decoder = StreamDecoder()
    for byte in raw:
        decoder.feed(bytes([byte]))
    decoder.close()
    assert decoder.response.finish_reason is FinishReason.REFUSAL
    assert decoder.provider == "anthropic"
    assert decoder.framing == "sse"


def test_an_empty_stream_is_an_error_that_says_so() -> None:
    response, decoder = decode_stream(b"")
    assert response.finish_reason is FinishReason.ERROR
    assert decoder.events_seen == 0
    assert response.error is not None
    assert response.error.message is not None
    assert "no events" in response.error.message


def test_a_stream_of_no_known_provider_is_an_error_naming_what_was_expected() -> None:
    response, decoder = decode_stream(b'data: {"hello": 1}\n\n')
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert "no known provider format" in (response.error.message or "")
    assert decoder.events_seen == 0


def test_an_unknown_provider_name_is_rejected() -> None:
    with pytest.raises(NormalizeError, match="unknown provider 'nope'"):
        StreamDecoder("nope")


def test_an_event_stream_service_error_message_ends_the_stream_as_an_error() -> None:
    raw = encode_event_stream(
        {":event-type": "messageStart", ":message-type": "event"}, b'{"role":"assistant"}'
    ) + encode_event_stream(
        {
            ":message-type": "error",
            ":error-code": "InternalFailure",
            ":error-message": "try later",
        },
        b"",
    )
    decoder = StreamDecoder()
    events = decoder.feed(raw)
    assert StreamError in {type(event) for event in events}
    decoder.close()
    response = decoder.response
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.message == "InternalFailure: try later"
    assert response.error.retryable


def test_a_later_usage_count_of_zero_replaces_the_placeholder_of_message_start() -> None:
    # message_start says output_tokens 1 as a placeholder; message_delta's 0 is the count.
    raw = (FIXTURES / "anthropic" / "stream-refusal-cyber.sse").read_bytes()
    response, _ = decode_stream(raw)
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (20, 0)


def gemini_array_stream() -> bytes:
    """The recorded Gemini stream re-served as alt=json does: one pretty-printed array."""
    lines = (FIXTURES / "gemini" / "stream-stop.chunks.txt").read_bytes().splitlines()
    chunks = [orjson.loads(line) for line in lines if line.strip()]
    body = b"\n,\r\n".join(orjson.dumps(c, option=orjson.OPT_INDENT_2) for c in chunks)
    return b"[" + body + b"]"


def test_a_gemini_json_array_stream_decodes_like_its_json_lines_form() -> None:
    lines_form, _ = decode_stream((FIXTURES / "gemini" / "stream-stop.chunks.txt").read_bytes())
    array_form, decoder = decode_stream(gemini_array_stream())
    assert decoder.framing == "json-array"
    assert array_form.finish_reason is FinishReason.STOP
    assert array_form.content == lines_form.content
    assert decoder.verdict_index == 2


def test_a_gemini_json_array_stream_cut_short_is_an_error() -> None:
    response, _ = decode_stream(gemini_array_stream()[:-40])
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None


def decode_seconds(raw: bytes, chunk: int = 64 * 1024) -> float:
    """The least CPU time of five runs decoding `raw` fed in `chunk`-byte pieces."""
    best = float("inf")
    for _ in range(5):
        decoder = StreamDecoder()
        start = time.process_time()
        for pos in range(0, len(raw), chunk):
            decoder.feed(raw[pos : pos + chunk])
        decoder.close()
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize(
    "line",
    [
        lambda size: b'data: {"type": "ping", "pad": "' + b"x" * size + b'"}\n\n',
        lambda size: b'{"pad": "' + b"x" * size + b'"}\n',
    ],
    ids=["sse", "json-lines"],
)
def test_decoding_one_long_line_in_small_chunks_takes_time_linear_in_its_length(
    line: Callable[[int], bytes],
) -> None:
    # Chunking must not matter: quadratic framing makes 16 MB in 64 KB chunks many times
    # slower than in one piece (each chunk copies the held part of the line again).
    large = line(16 * 1024 * 1024)
    decode_seconds(large, len(large))  # first touch of that much memory: not timed
    whole = decode_seconds(large, len(large))
    chunked = decode_seconds(large)
    assert chunked / max(whole, 1e-4) < 4, (whole, chunked)


GEMINI_LINES = (FIXTURES / "gemini" / "stream-stop.chunks.txt").read_bytes()


def decode_chunked(raw: bytes, sizes: list[int]) -> StreamDecoder:
    decoder = StreamDecoder()
    pos = 0
    for size in [*sizes, len(raw)]:
        decoder.feed(raw[pos : pos + size])
        pos += size
    decoder.close()
    return decoder


@pytest.mark.parametrize(
    "raw",
    [
        b"\xef\xbb\xbf" + GEMINI_LINES,
        GEMINI_LINES.replace(b"\n", b"\r"),
        GEMINI_LINES.replace(b"\n", b"\r\n"),
        b"\xef\xbb\xbf\r\n\r\n" + GEMINI_LINES.replace(b"\n", b"\r"),
    ],
    ids=["bom", "cr", "crlf", "bom-blank-lines-cr"],
)
def test_json_lines_with_a_bom_or_cr_line_ends_decode_like_plain_ones(raw: bytes) -> None:
    plain, _ = decode_stream(GEMINI_LINES)
    assert plain.finish_reason is FinishReason.STOP and plain.content
    for cut in range(0, len(raw) + 1, 97):
        decoder = decode_chunked(raw, [cut])
        assert decoder.framing == "json-lines"
        assert decoder.response == plain, cut


def test_an_unrecognised_first_json_line_is_an_error_not_dropped() -> None:
    response, _ = decode_stream(b'{"hello": 1}\n' + GEMINI_LINES)
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert "no known provider format" in (response.error.message or "")
    assert response.content  # what followed is still decoded


@pytest.mark.parametrize(
    "first", [b"HTTP/1.1 200 OK\r\n", b"hello world\n", b"x" * 40, b"identity: me\n"]
)
def test_an_sse_stream_whose_first_line_is_no_sse_field_is_an_error(first: bytes) -> None:
    raw = (FIXTURES / "anthropic" / "stream-end-turn-basic.sse").read_bytes()
    plain, _ = decode_stream(raw)
    assert plain.finish_reason is FinishReason.STOP
    for sizes in ([], [1] * 50):
        decoder = decode_chunked(first + b"\n" + raw, sizes)
        response = decoder.response
        assert response.finish_reason is FinishReason.ERROR, sizes
        assert response.error is not None
        assert (response.error.message or "").startswith(
            "the stream's first line is neither an SSE field"
        )


def test_blank_lines_and_comments_may_open_an_sse_stream() -> None:
    raw = (FIXTURES / "anthropic" / "stream-end-turn-basic.sse").read_bytes()
    for prefix in (b"\xef\xbb\xbf", b"\n\n", b": keep-alive\n\n", b"\r\n" * 5000):
        response, _ = decode_stream(prefix + raw)
        assert response.finish_reason is FinishReason.STOP, prefix[:8]
        assert response.error is None


BEDROCK_LINES = (FIXTURES / "bedrock" / "converse-stream-end-turn.chunks.txt").read_bytes()


def bedrock_event_stream(corrupt_at: int | None = None) -> tuple[bytes, int]:
    """The recorded ConverseStream as AWS event-stream bytes; with `corrupt_at`, the
    message of that index has one payload byte flipped. Returns the bytes and the number
    of text deltas before the corrupt message."""
    raw = b""
    deltas = 0
    for index, line in enumerate(BEDROCK_LINES.splitlines()):
        ((name, payload),) = orjson.loads(line).items()
        message = bytearray(
            encode_event_stream(
                {":event-type": name, ":message-type": "event"}, orjson.dumps(payload)
            )
        )
        if index == corrupt_at:
            message[-6] ^= 0x20
        elif corrupt_at is None or index < corrupt_at:
            deltas += name == "contentBlockDelta"
        raw += bytes(message)
    return raw, deltas


def test_an_event_stream_that_fails_a_crc_keeps_the_text_before_the_bad_message() -> None:
    whole, _ = decode_stream(bedrock_event_stream()[0])
    assert whole.finish_reason is FinishReason.STOP
    raw, deltas = bedrock_event_stream(corrupt_at=5)
    assert deltas == 4
    events = StreamDecoder().feed(raw)  # one chunk: the bad message is in the middle
    texts = [event.text for event in events if isinstance(event, TextDelta)]
    assert len(texts) == 4
    response, _ = decode_stream(raw)
    assert response.content == "".join(texts)
    assert response.finish_reason is FinishReason.ERROR
    assert response.cut_off
    assert response.error is not None
    assert "message CRC mismatch at byte" in (response.error.message or "")


@given(st.integers(0, 14), st.lists(st.integers(0, 400), max_size=12))
def test_a_corrupt_event_stream_decodes_the_same_however_it_is_chunked(
    corrupt_at: int, sizes: list[int]
) -> None:
    raw, _ = bedrock_event_stream(corrupt_at)
    whole, _ = decode_stream(raw)
    chunked = decode_chunked(raw, sizes).response
    assert chunked == whole


def test_an_event_stream_error_message_header_is_redacted_and_bounded() -> None:
    key = "sk-proj-" + "S3NT1NEL" + "x9Y8" * 10
    raw = encode_event_stream(
        {":event-type": "messageStart", ":message-type": "event"}, b'{"role":"assistant"}'
    ) + encode_event_stream(
        {
            ":message-type": "error",
            ":error-code": "UnrecognizedClientException",
            ":error-message": f"Incorrect API key provided: {key}. " + "more " * 1000,
        },
        b"",
    )
    response, _ = decode_stream(raw)
    assert response.error is not None and response.error.message is not None
    assert "S3NT1NEL" not in response.error.message
    assert response.error.message.startswith(
        "UnrecognizedClientException: Incorrect API key provided: [redacted]"
    )
    assert len(response.error.message) <= 1000


def test_an_event_stream_error_saying_blocked_is_a_content_filter_stop_never_retried() -> None:
    raw = encode_event_stream(
        {
            ":message-type": "error",
            ":error-code": "ValidationException",
            ":error-message": "The request was blocked by content filters.",
        },
        b"",
    )
    response, _ = decode_stream(raw)
    assert response.provider == "bedrock"
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.error is not None and not response.error.retryable


def test_a_first_event_with_an_escaped_lone_surrogate_still_names_its_format() -> None:
    start = (
        b'{"type":"message_start","message":{"id":"m","type":"message","role":"assistant",'
        b'"model":"claude\\ud83d","content":[],"stop_reason":null,'
        b'"usage":{"input_tokens":1,"output_tokens":0}}}'
    )
    delta = (
        b'{"type":"message_delta","delta":{"stop_reason":"refusal"},"usage":{"output_tokens":0}}'
    )
    raw = (
        b"event: message_start\ndata: " + start + b"\n\n"
        b"event: message_delta\ndata: " + delta + b"\n\n"
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    response, _ = decode_stream(raw)
    assert response.provider == "anthropic"
    assert response.finish_reason is FinishReason.REFUSAL


def test_a_provider_that_is_not_a_string_is_a_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match="provider must be"):
        StreamDecoder(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="framing must be"):
        StreamDecoder(framing="xml")  # type: ignore[arg-type]
