"""SSE and AWS event-stream framing: the specification's cases, any chunking, fuzzing."""

from __future__ import annotations

import struct
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refusals.transport.framing import (
    EventStreamMessage,
    EventStreamParser,
    FramingError,
    JSONArrayParser,
    JSONLinesParser,
    SSEEvent,
    SSEParser,
    encode_event_stream,
)

FIXTURES = Path(__file__).parent.parent / "fixtures"


def parse(data: bytes, sizes: list[int] | None = None) -> list[SSEEvent]:
    parser = SSEParser()
    events: list[SSEEvent] = []
    if sizes is None:
        events += parser.feed(data)
    else:
        pos = 0
        for size in sizes:
            events += parser.feed(data[pos : pos + size])
            pos += size
        events += parser.feed(data[pos:])
    return events + parser.close()


def test_event_data_id_and_retry_fields_are_read() -> None:
    events = parse(b"event: ping\ndata: {}\nid: 7\nretry: 1500\n\n")
    assert events == [SSEEvent(data=b"{}", event="ping", id="7", retry=1500)]


def test_multi_line_data_is_joined_with_line_feeds() -> None:
    assert parse(b"data: first\ndata:second\ndata:  third\n\n") == [
        SSEEvent(data=b"first\nsecond\n third")
    ]


def test_comments_and_unknown_fields_are_ignored() -> None:
    data = b": OPENROUTER PROCESSING\n\nfoo: bar\ndata: x\n\n"
    assert parse(data) == [SSEEvent(data=b"x")]


BARE_ERROR = b'{\n  "error": {\n    "code": 499,\n    "status": "CANCELLED"\n  }\n}\n'


def test_a_json_body_written_bare_between_events_is_one_event() -> None:
    data = b"data: first\n\n" + BARE_ERROR
    assert parse(data) == [SSEEvent(data=b"first"), SSEEvent(data=BARE_ERROR.rstrip(b"\n"))]
    for cut in range(len(data) + 1):
        assert parse(data, [cut]) == parse(data)


def test_a_stray_brace_inside_an_event_with_data_is_still_skipped() -> None:
    # Only a bare body standing where an event starts is kept: inside an event, a line
    # that is no field is skipped as the specification says.
    assert parse(b"data: x\n{not a field\n\ndata: y\n\n") == [
        SSEEvent(data=b"x"),
        SSEEvent(data=b"y"),
    ]


@pytest.mark.parametrize("newline", [b"\n", b"\r", b"\r\n"])
def test_cr_lf_and_crlf_line_ends_give_the_same_events(newline: bytes) -> None:
    raw = newline.join([b"event: a", b"data: 1", b"", b"data: 2", b"", b""])
    assert parse(raw) == [SSEEvent(data=b"1", event="a"), SSEEvent(data=b"2")]


def test_a_crlf_split_between_chunks_is_one_line_end() -> None:
    raw = b"data: 1\r\n\r\ndata: 2\r\n\r\n"
    for cut in range(len(raw) + 1):
        assert parse(raw, [cut]) == [SSEEvent(data=b"1"), SSEEvent(data=b"2")], cut


def test_event_without_data_is_not_dispatched_and_type_resets() -> None:
    assert parse(b"event: lonely\n\ndata: x\n\n") == [SSEEvent(data=b"x")]


def test_field_without_colon_and_empty_data_line() -> None:
    assert parse(b"data\n\n") == [SSEEvent(data=b"")]


def test_byte_order_mark_at_start_is_ignored() -> None:
    assert parse(b"\xef\xbb\xbfdata: x\n\n") == [SSEEvent(data=b"x")]


def test_retry_must_be_digits_and_id_with_nul_is_ignored() -> None:
    events = parse(b"retry: 1x\nid: a\x00b\ndata: x\n\n")
    assert events == [SSEEvent(data=b"x")]


def test_a_last_event_without_blank_line_is_flushed_on_close() -> None:
    assert parse(b"event: message_stop\ndata: {}") == [SSEEvent(data=b"{}", event="message_stop")]


def test_multibyte_characters_split_across_chunks_survive() -> None:
    raw = "data: héllo 😀\n\n".encode()
    for cut in range(len(raw) + 1):
        assert parse(raw, [cut]) == [SSEEvent(data="héllo 😀".encode())]


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.sse")), ids=lambda p: p.name)
def test_recorded_streams_decode_identically_at_every_split(path: Path) -> None:
    raw = path.read_bytes()
    whole = parse(raw)
    assert whole, "a recorded stream has events"
    step = max(1, len(raw) // 200)
    for cut in range(0, len(raw) + 1, step):
        assert parse(raw, [cut]) == whole


sse_lines = st.lists(
    st.one_of(
        st.just(b""),
        st.just(b": comment"),
        st.builds(
            lambda v: b"data: " + v,
            st.binary(max_size=12).filter(lambda b: b"\n" not in b and b"\r" not in b),
        ),
        st.builds(lambda v: b"event: " + v.encode(), st.text(alphabet="abc_", max_size=6)),
        st.builds(lambda v: b"id: " + str(v).encode(), st.integers(0, 99)),
        st.builds(lambda v: b"retry: " + str(v).encode(), st.integers(0, 9999)),
    ),
    max_size=30,
)


@given(
    sse_lines, st.sampled_from([b"\n", b"\r", b"\r\n"]), st.lists(st.integers(0, 40), max_size=8)
)
def test_fuzzed_sse_is_independent_of_chunking_and_line_ends(
    lines: list[bytes], newline: bytes, sizes: list[int]
) -> None:
    raw = newline.join(lines)
    expected = parse(b"\n".join(lines))
    assert parse(raw, sizes) == expected


@given(st.binary(max_size=300), st.lists(st.integers(0, 50), max_size=6))
def test_arbitrary_bytes_never_raise(raw: bytes, sizes: list[int]) -> None:
    assert parse(raw, sizes) == parse(raw)


def test_event_stream_round_trips_and_checks_both_crcs() -> None:
    message = encode_event_stream(
        {":event-type": "messageStop", ":message-type": "event"}, b'{"stopReason":"end_turn"}'
    )
    parser = EventStreamParser()
    messages = []
    for byte in message:
        messages += parser.feed(bytes([byte]))
    assert parser.close() == []
    assert len(messages) == 1
    assert messages[0].event_type == "messageStop"
    assert messages[0].payload == b'{"stopReason":"end_turn"}'

    corrupt_payload = bytearray(message)
    corrupt_payload[-6] ^= 0xFF
    with pytest.raises(FramingError, match="message CRC"):
        EventStreamParser().feed(bytes(corrupt_payload))
    corrupt_prelude = bytearray(message)
    corrupt_prelude[2] ^= 0xFF
    with pytest.raises(FramingError, match="prelude CRC"):
        EventStreamParser().feed(bytes(corrupt_prelude))


def test_event_stream_that_ends_inside_a_message_is_an_error() -> None:
    message = encode_event_stream({":event-type": "metadata"}, b"{}")
    parser = EventStreamParser()
    assert parser.feed(message[:-3]) == []
    with pytest.raises(FramingError, match="ended inside a message"):
        parser.close()


def test_event_stream_headers_of_every_type_are_read() -> None:
    raw_headers = (
        b"\x04bool\x00"
        + b"\x04byte\x02\x05"
        + b"\x05short\x03\x00\x07"
        + b"\x03int\x04\x00\x00\x00\x09"
        + b"\x04long\x05"
        + struct.pack(">q", -3)
        + b"\x03bin\x06\x00\x02\xab\xcd"
        + b"\x03str\x07\x00\x02hi"
        + b"\x02ts\x08"
        + struct.pack(">q", 1)
        + b"\x04uuid\x09"
        + bytes(16)
    )
    total = 12 + len(raw_headers) + 4
    prelude = struct.pack(">II", total, len(raw_headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + raw_headers
    message = body + struct.pack(">I", zlib.crc32(body))
    (parsed,) = EventStreamParser().feed(message)
    assert parsed.headers == {
        "bool": "true",
        "byte": "5",
        "short": "7",
        "int": "9",
        "long": "-3",
        "bin": "abcd",
        "str": "hi",
        "ts": "1",
        "uuid": "0",
    }


def test_event_stream_agrees_with_botocore() -> None:
    parsers = pytest.importorskip(
        "botocore.eventstream", reason="botocore (the bedrock extra) is not installed"
    )
    stream = b"".join(
        encode_event_stream({":event-type": name, ":message-type": "event"}, payload)
        for name, payload in [
            ("messageStart", b'{"role":"assistant"}'),
            ("contentBlockDelta", b'{"delta":{"text":"hi"},"contentBlockIndex":0}'),
            ("messageStop", b'{"stopReason":"guardrail_intervened"}'),
        ]
    )
    buffer = parsers.EventStreamBuffer()
    buffer.add_data(stream)
    theirs = [(m.headers[":event-type"], m.payload) for m in buffer]
    ours = [(m.event_type, m.payload) for m in EventStreamParser().feed(stream)]
    assert ours == theirs


@given(st.binary(max_size=200))
def test_event_stream_garbage_raises_only_framing_errors(raw: bytes) -> None:
    parser = EventStreamParser()
    try:
        parser.feed(raw)
        parser.close()
    except FramingError:
        pass


def array_elements(raw: bytes, sizes: list[int] | None = None) -> list[bytes]:
    parser = JSONArrayParser()
    elements: list[bytes] = []
    pos = 0
    for size in sizes or []:
        elements += parser.feed(raw[pos : pos + size])
        pos += size
    elements += parser.feed(raw[pos:])
    return elements + parser.close()


ARRAY = b'[{\n  "a": "x]}{[\\"", "b": [1, {"c": 2}]\n}\n,\r\n{"text": "\\\\"}\n,\n{"n": []}\n]'


def test_a_streamed_json_array_yields_each_element_whole() -> None:
    elements = array_elements(ARRAY)
    assert [orjson.loads(e) for e in elements] == [
        {"a": 'x]}{["', "b": [1, {"c": 2}]},
        {"text": "\\"},
        {"n": []},
    ]


def test_a_streamed_json_array_is_independent_of_chunking() -> None:
    whole = array_elements(ARRAY)
    for cut in range(len(ARRAY) + 1):
        assert array_elements(ARRAY, [cut]) == whole, cut
    parser = JSONArrayParser()
    one_by_one = [e for byte in ARRAY for e in parser.feed(bytes([byte]))]
    assert one_by_one == whole


def test_a_json_array_stream_cut_before_its_bracket_is_a_framing_error() -> None:
    parser = JSONArrayParser()
    parser.feed(ARRAY[:-3])
    with pytest.raises(FramingError, match="ended before its closing bracket"):
        parser.close()


@given(
    st.lists(st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3), max_size=5),
    st.lists(st.integers(0, 30), max_size=6),
)
def test_fuzzed_json_arrays_round_trip(items: list[dict[str, str]], sizes: list[int]) -> None:
    raw = orjson.dumps(items, option=orjson.OPT_INDENT_2)
    assert [orjson.loads(e) for e in array_elements(raw, sizes)] == items


def feed_seconds(make: Callable[[], Any], raw: bytes, chunk: int = 64 * 1024) -> float:
    """The least CPU time (other processes' load does not count) of five runs feeding
    `raw` in `chunk`-byte pieces, then closing."""
    best = float("inf")
    for _ in range(5):
        parser = make()
        start = time.process_time()
        for pos in range(0, len(raw), chunk):
            parser.feed(raw[pos : pos + chunk])
        parser.close()
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize(
    ("make", "line"),
    [
        (SSEParser, lambda size: b"data: " + b"x" * size + b"\n\n"),
        (JSONLinesParser, lambda size: b'{"x": "' + b"x" * size + b'"}\n'),
    ],
    ids=["sse", "json-lines"],
)
def test_framing_one_long_line_fed_in_small_chunks_takes_time_linear_in_its_length(
    make: Callable[[], Any], line: Callable[[int], bytes]
) -> None:
    # Quadratic framing copies the held part of the line again with every chunk, so the
    # same 16 MB cost more the more chunks they come in: measured before the fix, 6-17
    # times as long in 64 KB chunks as in one piece (and four times the bytes 23-30 times
    # the time); after it, 1.3 times. Both runs touch the same memory, so caches and load
    # affect them alike, where comparing sizes proved noisy on a loaded machine.
    large = line(16 * 1024 * 1024)
    feed_seconds(make, large, len(large))  # first touch of that much memory: not timed
    whole = feed_seconds(make, large, len(large))
    chunked = feed_seconds(make, large)
    assert chunked / max(whole, 1e-4) < 4, (whole, chunked)


def test_a_long_line_split_over_many_chunks_arrives_whole() -> None:
    raw = b"data: " + bytes(range(32, 127)) * 1000 + b"\n\n"
    assert parse(raw, [7] * (len(raw) // 7)) == [SSEEvent(data=raw[6:-2])]
    lines = JSONLinesParser()
    got = [line for pos in range(0, len(raw), 5) for line in lines.feed(raw[pos : pos + 5])]
    assert got + lines.close() == [raw.rstrip(b"\n")]


def json_lines(raw: bytes, sizes: list[int] | None = None) -> list[bytes]:
    parser = JSONLinesParser()
    lines: list[bytes] = []
    pos = 0
    for size in sizes or []:
        lines += parser.feed(raw[pos : pos + size])
        pos += size
    lines += parser.feed(raw[pos:])
    return lines + parser.close()


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_json_lines_end_with_lf_crlf_or_a_lone_cr(newline: bytes) -> None:
    raw = newline.join([b'{"a": 1}', b"", b'{"b": 2}', b"  ", b'{"c": 3}'])
    assert json_lines(raw) == [b'{"a": 1}', b'{"b": 2}', b'{"c": 3}']


def test_json_lines_after_a_byte_order_mark_split_anywhere_are_read() -> None:
    raw = b'\xef\xbb\xbf{"a": 1}\r\n{"b": 2}\r'
    for cut in range(len(raw) + 1):
        assert json_lines(raw, [cut]) == [b'{"a": 1}', b'{"b": 2}'], cut
    assert json_lines(b"\xef\xbb") == []


@given(
    st.lists(st.dictionaries(st.text(max_size=4), st.integers(-9, 9), max_size=2), max_size=6),
    st.sampled_from([b"\n", b"\r", b"\r\n"]),
    st.lists(st.integers(0, 20), max_size=8),
)
def test_fuzzed_json_lines_are_independent_of_chunking_and_line_ends(
    items: list[dict[str, int]], newline: bytes, sizes: list[int]
) -> None:
    raw = newline.join(orjson.dumps(item) for item in items)
    assert [orjson.loads(line) for line in json_lines(raw, sizes)] == items


BEDROCK_STREAM = [
    ("messageStart", b'{"role":"assistant"}'),
    ("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"text":"Hello"}}'),
    ("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"text":" there"}}'),
    ("contentBlockStop", b'{"contentBlockIndex":0}'),
    ("messageStop", b'{"stopReason":"end_turn"}'),
    ("metadata", b'{"usage":{"inputTokens":3,"outputTokens":2,"totalTokens":5}}'),
]


def event_stream(events: list[tuple[str, bytes]]) -> list[bytes]:
    return [
        encode_event_stream({":event-type": name, ":message-type": "event"}, payload)
        for name, payload in events
    ]


def messages_and_error(raw: bytes, sizes: list[int]) -> tuple[list[tuple[str | None, bytes]], str]:
    """What an event-stream parser makes of `raw` chunked by `sizes`: messages, error."""
    parser = EventStreamParser()
    got: list[EventStreamMessage] = []
    pos = 0
    try:
        for size in [*sizes, len(raw)]:
            got += parser.feed(raw[pos : pos + size])
            pos += size
        got += parser.close()
    except FramingError as exc:
        got += exc.messages
        return [(m.event_type, m.payload) for m in got], str(exc)
    return [(m.event_type, m.payload) for m in got], ""


def test_a_crc_failure_keeps_the_messages_before_the_bad_one() -> None:
    messages = event_stream(BEDROCK_STREAM)
    bad = bytearray(messages[2])
    bad[-6] ^= 0x01  # a payload byte: the message CRC no longer matches
    raw = b"".join([*messages[:2], bytes(bad), *messages[3:]])
    parser = EventStreamParser()
    with pytest.raises(FramingError, match="message CRC mismatch at byte") as caught:
        parser.feed(raw)
    assert [m.event_type for m in caught.value.messages] == ["messageStart", "contentBlockDelta"]
    assert str(caught.value).endswith(f"at byte {len(messages[0]) + len(messages[1])}")
    # The stream is over: what follows the bad message is never read as messages.
    with pytest.raises(FramingError, match="message CRC mismatch"):
        parser.feed(messages[3])
    with pytest.raises(FramingError, match="message CRC mismatch"):
        parser.close()


@given(
    st.integers(0, len(b"".join(event_stream(BEDROCK_STREAM))) - 1),
    st.integers(1, 255),
    st.lists(st.integers(0, 120), max_size=10),
)
def test_a_corrupt_event_stream_is_classified_the_same_however_it_is_chunked(
    position: int, flip: int, sizes: list[int]
) -> None:
    raw = bytearray(b"".join(event_stream(BEDROCK_STREAM)))
    raw[position] ^= flip
    whole = messages_and_error(bytes(raw), [])
    assert whole[1], "a flipped byte is always caught by a CRC or a length check"
    assert messages_and_error(bytes(raw), sizes) == whole
    one_by_one = messages_and_error(bytes(raw), [1] * len(raw))
    assert one_by_one == whole
