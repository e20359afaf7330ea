"""The strict decode of Anthropic stream events and the lenient pass agree.

`MessagesStreamReader.read_strict` decodes every event strictly into the schema's `Event`;
what that rejects is decoded by orjson and read by `decode`, through the lenient pass,
into the same Struct and the same mapping. Every Anthropic stream fixture, and hypothesis
mutations of their events (wrong types, nulls, dropped keys, duplicate keys, escapes,
bytes that are not UTF-8, nesting, other event names), must give the same events and the
same final response both ways.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals.events import StreamEvent, TextDelta
from refusals.providers import anthropic
from refusals.transport.framing import SSEParser
from tests.providers._fast_support import run_stream, strict_off
from tests.providers._support import FIXTURES, WRONG_VALUES, mutated, mutated_bytes

STREAMS = sorted((FIXTURES / "anthropic").rglob("*.sse"))
TEXT_DELTA = {
    "type": "content_block_delta",
    "index": 0,
    "delta": {"type": "text_delta", "text": "Hi"},
}


def same_both_ways(raw: bytes, provider: str | None = "anthropic", chunk: int = 4096) -> int:
    """Assert equal events and responses with and without quick; return how many events
    quick answered."""
    answered = 0
    original = anthropic.StreamReader.read_strict

    def counting(
        self: anthropic.StreamReader, name: str | None, data: str | bytes
    ) -> list[StreamEvent] | None:
        nonlocal answered
        events = original(self, name, data)
        answered += events is not None
        return events

    anthropic.StreamReader.read_strict = counting  # type: ignore[method-assign]
    try:
        fast = run_stream(raw, provider, chunk)
    finally:
        anthropic.StreamReader.read_strict = original  # type: ignore[method-assign]
    with strict_off(anthropic.StreamReader):
        full = run_stream(raw, provider, chunk)
    assert fast == full
    assert fast[1].reasoning_details == full[1].reasoning_details
    return answered


def sse(events: list[tuple[str | None, bytes]]) -> bytes:
    out = b""
    for name, data in events:
        head = b"event: " + name.encode() + b"\n" if name is not None else b""
        out += head + b"data: " + data + b"\n\n"
    return out


def fixture_events(path: Path) -> list[tuple[str | None, bytes]]:
    parser = SSEParser()
    return [(e.event, e.data) for e in [*parser.feed(path.read_bytes()), *parser.close()]]


DELTAS: list[dict[str, Any]] = [
    {"type": "text_delta", "text": "Hi"},
    {"type": "thinking_delta", "thinking": "Hm"},
    {"type": "signature_delta", "signature": "c2ln"},
    {"type": "input_json_delta", "partial_json": '{"q": '},
    {"type": "citations_delta", "citation": {"type": "char_location"}},
]
# Blocks whose start the fast path reads (it keeps what `_Block` keeps, nothing more).
SERVER_BLOCKS: list[dict[str, Any]] = [
    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
    {"type": "server_tool_use", "input": {"query": "x", "n": 2**70}, "signature": "s"},
    {"type": "web_search_tool_result", "content": [{"type": "web_search_result", "url": "u"}]},
    {"type": "compaction"},
    {},
]
# Blocks whose start says more: left to the full path.
READ_BLOCKS: list[dict[str, Any]] = [
    {"type": "text", "text": "Hi"},
    {"type": "thinking", "thinking": "Hm", "signature": "s"},
    {"type": "redacted_thinking", "data": "d"},
    {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
    {"type": "fallback", "from": {"model": "a"}, "to": {"model": "b"}},
]


def test_the_common_event_takes_the_fast_path() -> None:
    decoder = anthropic.StreamReader("anthropic")
    data = json.dumps(TEXT_DELTA).encode()
    assert decoder.read_strict("content_block_delta", data) == [TextDelta("Hi")]
    # Unnamed (one payload a line) and named alike; an empty text is no event.
    assert decoder.read_strict(None, data) == [TextDelta("Hi")]
    empty = {**TEXT_DELTA, "delta": {"type": "text_delta", "text": ""}}
    assert decoder.read_strict(None, json.dumps(empty)) == []


def state(decoder: anthropic.StreamReader) -> object:
    blocks = {
        i: (b.kind, b.signature, b.input, b.streamed, b.wrote) for i, b in decoder._blocks.items()
    }
    return blocks, decoder._current, decoder._reasoning, decoder.acc.response


def block_start(index: int, block: Any) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


OPEN = [None, *READ_BLOCKS[:2], READ_BLOCKS[3], *SERVER_BLOCKS[:1]]
"""What is open at index 0 before the event: nothing, text, thinking, tool_use, server tool."""
BLOCK_EVENTS: list[dict[str, Any]] = [
    *({"type": "content_block_delta", "index": 0, "delta": delta} for delta in DELTAS),
    {"type": "content_block_delta", "index": 0, "delta": None},
    {"type": "content_block_delta", "delta": DELTAS[1]},
    {"type": "content_block_delta", "index": 1, "delta": DELTAS[1]},
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_stop", "index": 1},
    {"type": "content_block_stop"},
    *(block_start(0, block) for block in SERVER_BLOCKS),
    block_start(1, SERVER_BLOCKS[0]),
    block_start(0, None),
    {"type": "content_block_start", "content_block": SERVER_BLOCKS[2]},
]


@pytest.mark.parametrize("event", BLOCK_EVENTS, ids=lambda e: json.dumps(e)[:70])
@pytest.mark.parametrize("opened", OPEN, ids=lambda b: (b or {}).get("type", "none"))
def test_every_block_event_gives_what_decode_gives(opened: Any, event: Any) -> None:
    """With the block it lands in open (or none), events and decoder state alike."""
    fast, full = anthropic.StreamReader("anthropic"), anthropic.StreamReader("anthropic")
    for decoder in (fast, full):
        if opened is not None:
            decoder.feed("content_block_start", json.dumps(block_start(0, opened)))
    name = event["type"]
    events = fast.read_strict(name, json.dumps(event))
    expected = full.decode(name, event)
    assert events is not None
    assert events == expected
    for decoder, made in ((fast, events), (full, expected)):
        for item in made:
            decoder.acc.apply(item, 1)
    assert state(fast) == state(full)


@pytest.mark.parametrize(
    ("name", "payload"),
    [
        ("content_block_delta", {**TEXT_DELTA, "delta": {"type": "text_delta", "text": 5}}),
        ("content_block_delta", {**TEXT_DELTA, "delta": {"type": 7, "text": "Hi"}}),
        ("content_block_delta", {**TEXT_DELTA, "type": 1}),
        ("content_block_delta", {**TEXT_DELTA, "index": True}),
        ("content_block_delta", {**TEXT_DELTA, "index": 2**64}),
        ("content_block_delta", {**TEXT_DELTA, "delta": "Hi"}),
        ("content_block_delta", [TEXT_DELTA]),
        ("content_block_stop", {"type": "content_block_stop", "index": 1.0}),
        ("content_block_start", block_start(0, {"type": 5})),
        ("content_block_start", block_start(0, {"type": "server_tool_use", "signature": 1})),
        ("content_block_start", block_start(0, "text")),
        ("content_block_start", block_start(0, {"type": "text", "text": 1})),
    ],
    ids=lambda value: json.dumps(value)[:70],
)
def test_events_of_the_wrong_types_are_left_to_the_lenient_pass(name: str, payload: Any) -> None:
    decoder = anthropic.StreamReader("anthropic")
    assert decoder.read_strict(name, json.dumps(payload)) is None


@pytest.mark.parametrize(
    "data",
    [
        b'{"type":"content_block_delta","delta":{"type":"text_delta","text":"\\ud83d"}}',
        b'{"type":"content_block_delta","delta":{"type":"text_delta","text":"\xff"}}',
        b'{"type":"content_block_delta","x":NaN,"delta":{"type":"text_delta","text":"a"}}',
        b'{"type":"content_block_delta","x":' + b"[" * 3000 + b"]" * 3000 + b"}",
        b'{"type":"content_block_delta","delta":{"type":"text_delta","text":"a"}} x',
        b'{"type":"content_block_start","content_block":{"type":"x","input":"\xff"}}',
        b'{"type":"content_block_start","content_block":{"type":"x","input":"\\udc00"}}',
        b'{"type":"content_block_start","content_block":{"type":"x","input":1e999}}',
    ],
    ids=[
        "lone-surrogate",
        "not-utf8",
        "nan",
        "deep",
        "trailing",
        "input-not-utf8",
        "input-lone-surrogate",
        "input-infinite",
    ],
)
def test_text_the_fast_reader_refuses_is_left_to_the_full_path(data: bytes) -> None:
    decoder = anthropic.StreamReader("anthropic")
    before = state(decoder)
    assert decoder.read_strict(None, data) is None
    assert state(decoder) == before


def test_text_with_a_raw_lone_surrogate_is_left_to_the_full_path() -> None:
    # Only a caller handing text (not bytes) can send one; msgspec cannot encode it.
    data = '{"type":"content_block_delta","delta":{"type":"text_delta","text":"a\ud800"}}'
    assert anthropic.StreamReader("anthropic").read_strict(None, data) is None
    same_both_ways(b"event: content_block_delta\ndata: " + data.encode("utf-8", "surrogatepass"))


def quick_kinds(path: Path) -> list[str | None]:
    """The names of the events in a fixture that the strict decode must answer (all of
    them, up to the end of the stream)."""
    found: list[str | None] = []
    for name, _ in fixture_events(path):
        found.append(name)
        if name == "message_stop":
            break
    return found


@pytest.mark.parametrize("path", STREAMS, ids=[str(p.relative_to(FIXTURES)) for p in STREAMS])
def test_fixture_same_both_ways(path: Path) -> None:
    raw = path.read_bytes()
    answered = same_both_ways(raw)
    same_both_ways(raw, None, chunk=7)
    # Every recorded event is well typed: the strict decode answers each one.
    if "written" not in path.parts:
        assert answered == len(quick_kinds(path))


EDITED = [
    ("type",),
    ("index",),
    ("delta",),
    ("content_block",),
    *(("delta", key) for key in ("type", "text", "thinking", "signature", "partial_json")),
    *(("content_block", key) for key in ("type", "signature", "input", "content")),
]


def edit_at(payload: Any, path: tuple[str, ...], value: Any, drop: bool) -> None:
    target = payload
    for key in path[:-1]:
        target = target.get(key) if isinstance(target, dict) else None
    if not isinstance(target, dict):
        return
    if drop:
        target.pop(path[-1], None)
    else:
        target[path[-1]] = value


@st.composite
def mutated_block_event(draw: st.DrawFn) -> bytes:
    """A block event as JSON bytes, edited where the fast reader looks."""
    kind = draw(st.sampled_from(["delta", "start", "stop"]))
    payload: Any = {"type": f"content_block_{kind}"}
    index = draw(st.sampled_from([0, 1, 2, 3, None, -1]))
    if index is not None:
        payload["index"] = index
    if kind == "delta":
        payload["delta"] = dict(draw(st.sampled_from(DELTAS)))
    elif kind == "start":
        payload["content_block"] = dict(draw(st.sampled_from(SERVER_BLOCKS + READ_BLOCKS)))
    edit = draw(st.sampled_from(["none", "value", "drop", "tree", "raw"]))
    if edit in ("value", "drop"):
        value = draw(WRONG_VALUES | st.text(max_size=4) | st.integers())
        edit_at(payload, draw(st.sampled_from(EDITED)), value, edit == "drop")
    elif edit == "tree":
        payload = draw(mutated(payload))
    data = json.dumps(payload).encode()
    if edit == "raw":
        pieces = [
            b',"delta":{"type":"text_delta","text":"dup"}',
            b',"delta":null',
            b',"type":"ping"',
            b',"type":"content_block_stop"',
            b',"index":7',
            b',"content_block":{"type":"server_tool_use","input":{"q":"\xff"}}',
            b',"content_block":{"type":"text","text":"dup"}',
            b',"x":"\xff\xfe"',
            b',"x":"\\ud800"',
            b',"x":1e999',
            b',"x":123456789012345678901234567890',
            b',"x":' + b"[" * 600 + b"]" * 600,
        ]
        # A key repeated after the first (the last one counts), or a value only some
        # readers take, just before the closing brace.
        data = data[:-1] + draw(st.sampled_from(pieces)) + b"}"
    return data


EVENT_NAMES = st.sampled_from(
    [None, "content_block_delta", "content_block_start", "content_block_stop", "ping"]
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(STREAMS),
    st.lists(st.tuples(st.integers(0, 200), EVENT_NAMES, mutated_block_event()), max_size=5),
)
def test_mutated_block_events_same_both_ways(
    path: Path, inserts: list[tuple[int, str | None, bytes]]
) -> None:
    events = fixture_events(path)
    for at, name, data in inserts:
        events.insert(at % (len(events) + 1), (name, data))
    raw = sse(events)
    same_both_ways(raw)
    same_both_ways(raw, None)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_stream_bytes_same_both_ways(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(STREAMS))
    raw = data.draw(mutated_bytes(path.read_bytes()))
    same_both_ways(raw)
    same_both_ways(raw, None)


# --- SSE framing: runs of plain events --------------------------------------------------
#
# The SSE parser dispatches a run of plain events (`event:`, `data:`, blank line) without
# a loop in Python once a chunk completes several lines. Fed one byte at a time, no chunk
# completes more than one line, so every line goes the one-by-one way: both must agree.


def sse_fields(raw: bytes, chunk: int) -> list[tuple[bytes, str | None, str | None, int | None]]:
    parser = SSEParser()
    fields = []
    for start in range(0, len(raw), chunk):
        fields += parser.feed_fields(raw[start : start + chunk])
    return fields + parser.close_fields()


def one_by_one(raw: bytes) -> list[tuple[bytes, str | None, str | None, int | None]]:
    return sse_fields(raw, 1)


@pytest.mark.parametrize("path", STREAMS[:4], ids=[p.name for p in STREAMS[:4]])
def test_runs_of_recorded_events_frame_as_line_by_line(path: Path) -> None:
    raw = path.read_bytes()
    assert sse_fields(raw, len(raw)) == one_by_one(raw)


NAMES = st.sampled_from([b"content_block_delta", b"ping", b"", b"caf\xc3\xa9", b"\xff"])
PAYLOADS = st.binary(max_size=8).filter(lambda b: b"\n" not in b and b"\r" not in b)


ODD_LINES = [
    b": comment\n",
    b"id: 7\n",
    b"retry: 10\n",
    b"data: one\ndata: two\n\n",
    b"data: one\ndata: two\ndata: three\n\n",
    b"data:tight\n\n",
    b"event: ping\n\n",
    b"\n",
    b"event:\ndata: x\n\n",
    b"data\n\n",
    b"eventual: x\n",
    b"event: ping\ndata: x\n",
]


@pytest.mark.parametrize("odd", ODD_LINES)
@pytest.mark.parametrize("head", [b"", b"event: content_block_delta\n"], ids=["unnamed", "named"])
def test_an_odd_event_among_plain_ones_frames_as_line_by_line(odd: bytes, head: bytes) -> None:
    plain = head + b"data: {}\n\n"
    raw = (plain * 3 + odd) * 4
    for chunk in (len(raw), 50, 97):
        assert sse_fields(raw, chunk) == one_by_one(raw)


@st.composite
def sse_streams(draw: st.DrawFn) -> bytes:
    """Mostly plain events, named or not as the whole stream is, with odd lines between."""
    named = draw(st.booleans())
    out = b""
    for _ in range(draw(st.integers(0, 40))):
        if draw(st.integers(0, 5)) == 0:
            out += draw(st.sampled_from(ODD_LINES))
            continue
        if named or draw(st.integers(0, 9)) == 0:
            out += b"event: " + draw(NAMES) + b"\n"
        out += b"data: " + draw(PAYLOADS) + b"\n\n"
    return out


@settings(max_examples=300)
@given(sse_streams(), st.integers(1, 200))
def test_runs_of_plain_events_frame_as_line_by_line(raw: bytes, chunk: int) -> None:
    assert sse_fields(raw, max(len(raw), 1)) == one_by_one(raw)
    assert sse_fields(raw, chunk) == one_by_one(raw)
