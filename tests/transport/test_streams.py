"""The stream entry point: framing recognised from the first bytes, errors that say what."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from refusals import FinishReason, NormalizeError, StreamDecoder, StreamError, decode_stream
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
