"""The typed fast path of OpenAI Responses bodies gives exactly what the dict path gives.

`openai_responses.parse_fast` reads a Responses object (OpenAI's, or Azure's with
`content_filters`) through Structs. Every Responses fixture, the final objects that
Responses streams carry, probes of each check it makes (other formats' keys, wrong types
in every field it declares, null against absent, big integers, duplicate keys) and
generated bodies must come out of `normalize` the same with the fast path as without it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals import providers
from refusals.events import StreamEvent, TextDelta
from refusals.model import LLMResponse
from refusals.providers import openai_responses
from refusals.providers.openai_responses import schema as responses_schema
from refusals.transport.framing import SSEParser
from tests.providers._fast_support import FIXTURES, agree, run_stream, strict_off, taken_fast
from tests.providers._support import WRONG_VALUES, json_paths, replace_at

CHAT_COMPATIBLE = sorted(providers._CHAT_COMPATIBLE)


def _is_responses_body(path: str) -> bool:
    folder, _, name = path.partition("/")
    if name.rsplit("/", 1)[-1].startswith("error-"):
        return False
    return folder == "openai-responses" or (folder == "azure" and "responses" in name)


BODIES = [
    (str(path.relative_to(FIXTURES)), path.read_bytes())
    for path in sorted(FIXTURES.rglob("*.json"))
    if _is_responses_body(str(path.relative_to(FIXTURES)))
]


def _stream_payloads(path: Any) -> list[bytes]:
    raw = path.read_bytes()
    if path.suffix == ".sse":
        parser = SSEParser()
        return [event.data for event in [*parser.feed(raw), *parser.close()]]
    return [line for line in raw.splitlines() if line.strip()]


TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def _final_objects() -> list[tuple[str, bytes]]:
    """The Responses object of every terminal event in the Responses stream fixtures."""
    found = []
    for path in sorted(FIXTURES.rglob("*")):
        name = str(path.relative_to(FIXTURES))
        if not (path.suffix == ".sse" or path.name.endswith(".chunks.txt")):
            continue
        if not _is_responses_body(name):
            continue
        for data in _stream_payloads(path):
            event = orjson.loads(data)
            if event.get("type") in TERMINAL:
                found.append((name, orjson.dumps(event["response"])))
    return found


FINAL_OBJECTS = _final_objects()


@contextlib.contextmanager
def routed_here(name: str) -> Iterator[None]:
    """`normalize` tries this module's fast path for a chat-compatible vendor's name, as it
    would if the chat module handed Responses objects on."""
    saved = providers._FAST_BY_PROVIDER[name]
    providers._FAST_BY_PROVIDER[name] = openai_responses
    try:
        yield
    finally:
        providers._FAST_BY_PROVIDER[name] = saved


def both_providers(data: bytes | str) -> None:
    """The same outcome both ways, by detection and under every name that reaches here."""
    agree(data, None)
    agree(data, "openai-responses")
    for name in ("openai", "azure"):
        with routed_here(name):
            agree(data, name)


# Fixtures ---------------------------------------------------------------------------------


def test_the_fixtures_are_found() -> None:
    assert len(BODIES) >= 12
    assert len(FINAL_OBJECTS) >= 8


@pytest.mark.parametrize(("name", "data"), BODIES, ids=[name for name, _ in BODIES])
def test_every_responses_fixture_takes_the_fast_path(name: str, data: bytes) -> None:
    assert taken_fast(data, None)
    assert taken_fast(data, "openai-responses")
    both_providers(data)
    both_providers(data.decode())


@pytest.mark.parametrize(("name", "data"), FINAL_OBJECTS, ids=[name for name, _ in FINAL_OBJECTS])
def test_the_final_object_of_every_responses_stream_takes_the_fast_path(
    name: str, data: bytes
) -> None:
    assert taken_fast(data, None)
    both_providers(data)


@pytest.mark.parametrize(("name", "data"), BODIES, ids=[name for name, _ in BODIES])
def test_a_chat_compatible_name_reads_a_responses_fixture_as_the_dict_path(
    name: str, data: bytes
) -> None:
    for vendor in CHAT_COMPATIBLE:
        assert openai_responses.parse_fast(data, vendor) is not None
        with routed_here(vendor):
            result = agree(data, vendor)
        assert isinstance(result, LLMResponse)
        assert result.provider == vendor


def test_the_names_taken_are_those_the_dispatch_sends_here() -> None:
    assert {"openai-responses", *CHAT_COMPATIBLE} == openai_responses.PROVIDER_NAMES
    data = BODIES[0][1]
    for name in ("ollama", "anthropic", "gemini", "bedrock", "cohere", "OpenAI", "Azure"):
        assert openai_responses.parse_fast(data, name) is None


def test_azure_is_named_by_the_presence_of_content_filters_even_null() -> None:
    body = {**RICH, "content_filters": None}
    data = orjson.dumps(body)
    assert taken_fast(data, None)
    result = agree(data, None)
    assert isinstance(result, LLMResponse)
    assert result.provider == "azure"
    del body["content_filters"]
    result = agree(orjson.dumps(body), None)
    assert isinstance(result, LLMResponse)
    assert result.provider == "openai-responses"


# Probes -----------------------------------------------------------------------------------

RICH: dict[str, Any] = {
    "id": "resp_1",
    "object": "response",
    "model": "gpt-5",
    "status": "completed",
    "output": [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Think."}],
            "content": [{"type": "reasoning_text", "text": "Deeper."}],
        },
        {
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "content": [
                {"type": "output_text", "text": "Hi.", "annotations": []},
                {"type": "text", "text": " More."},
                {"type": "refusal", "refusal": "No."},
            ],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "f",
            "arguments": "{}",
        },
        {"type": "custom_tool_call", "id": "ct_1", "call_id": "call_2", "name": "g", "input": "x"},
    ],
    "incomplete_details": {"reason": "max_output_tokens"},
    "error": None,
    "content_filters": [
        {
            "blocked": False,
            "source_type": "prompt",
            "content_filter_results": {
                "hate": {"filtered": False, "severity": "safe"},
                "jailbreak": {"filtered": False, "detected": False},
            },
        }
    ],
    "moderation": {
        "input": {
            "type": "moderation_result",
            "categories": {"violence": True, "hate": False},
            "flagged": True,
            "model": "omni-moderation-latest",
        },
        "output": {"type": "moderation_result", "categories": {"hate": False}, "flagged": False},
    },
    "usage": {
        "input_tokens": 5,
        "output_tokens": 7,
        "input_tokens_details": {"cached_tokens": 2, "cache_write_tokens": 1},
    },
}

FAILED = {
    **RICH,
    "status": "failed",
    "error": {"code": "invalid_prompt", "message": "Your prompt was flagged."},
}
INCOMPLETE = {**RICH, "status": "incomplete", "incomplete_details": {"reason": "content_filter"}}
BASES = {"completed": RICH, "failed": FAILED, "incomplete": INCOMPLETE}

WRONG: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    2**63 - 1,
    2**63,
    -(2**63) - 1,
    2**64,
    "",
    " ",
    "x",
    "response",
    "refusal",
    "message",
    "safe",
    "high",
    "error",
    "block",
    [],
    [1],
    [{}],
    {},
    {"a": 1},
    {"type": "refusal", "refusal": "R"},
]

PATHS = [path for path in json_paths(RICH) if path]


def _dump(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # integers past 64 bits: orjson cannot write them
        return json.dumps(value).encode()


@pytest.mark.parametrize("path", PATHS, ids=["/".join(map(str, p)) for p in PATHS])
def test_a_wrong_value_anywhere_agrees_with_the_dict_path(path: tuple[Any, ...]) -> None:
    for base in BASES.values():
        for value in WRONG:
            both_providers(_dump(replace_at(base, path, value)))


@pytest.mark.parametrize("path", PATHS, ids=["/".join(map(str, p)) for p in PATHS])
def test_an_absent_key_agrees_with_the_dict_path(path: tuple[Any, ...]) -> None:
    for base in BASES.values():
        body = orjson.loads(orjson.dumps(base))
        parent = body
        for key in path[:-1]:
            parent = parent[key]
        del parent[path[-1]]
        both_providers(orjson.dumps(body))


def _keys(struct: Any) -> list[str]:
    return [field.encode_name for field in msgspec.structs.fields(struct)]


# The keys `filters.moderation_signals` reads in a moderation result.
MODERATION_KEYS = ["type", "results", "categories", "flagged", "blocked", "action", "model"]

# Every object the Structs read, and the keys they declare there (a filter's results are a
# mapping whose keys `error` and `custom_blocklists` are special).
DECLARED: list[tuple[tuple[Any, ...], list[str]]] = [
    ((), _keys(responses_schema.Response)),
    (("output", 1), _keys(responses_schema.Item)),
    (("output", 2), _keys(responses_schema.Item)),
    (("output", 0, "summary", 0), _keys(responses_schema.Part)),
    (("output", 1, "content", 0), _keys(responses_schema.Part)),
    (("incomplete_details",), _keys(responses_schema.Incomplete)),
    (("usage",), _keys(responses_schema.ResponseUsage)),
    (("usage", "input_tokens_details"), _keys(responses_schema.TokenDetails)),
    (("content_filters", 0), ["blocked", "content_filter_results", "source_type"]),
    (("content_filters", 0, "content_filter_results"), ["error", "custom_blocklists", "sexual"]),
    (
        ("content_filters", 0, "content_filter_results", "hate"),
        ["filtered", "detected", "severity"],
    ),
    (("moderation",), ["input", "output"]),
    (("moderation", "input"), [*MODERATION_KEYS, "code"]),
    (("moderation", "output"), [*MODERATION_KEYS, "message"]),
]
ADDED: list[Any] = [
    None,
    True,
    False,
    0,
    2**64,
    "x",
    "block",
    "error",
    [],
    {},
    {"code": "c", "message": "m"},
    [{"id": "list", "filtered": True}],
    {"filtered": True, "severity": "high"},
    {"flagged": True, "categories": {"hate": True}},
]


@pytest.mark.parametrize(
    ("path", "keys"), DECLARED, ids=["/".join(map(str, path)) or "top" for path, _ in DECLARED]
)
def test_a_declared_key_added_with_any_value_agrees(path: tuple[Any, ...], keys: list[str]) -> None:
    for key in keys:
        for value in ADDED:
            body = orjson.loads(orjson.dumps(RICH))
            target = body
            for step in path:
                target = target[step]
            target[key] = value
            both_providers(_dump(body))


@pytest.mark.parametrize(
    "extra",
    [
        {"type": "message"},
        {"type": "error"},
        {"choices": []},
        {"choices": None},
        {"candidates": []},
        {"promptFeedback": {}},
        {"stopReason": "end_turn"},
        {"stop_reason": "end_turn"},
        {"amazon-bedrock-guardrailAction": "NONE"},
        {"amazon-bedrock-invocationMetrics": {}},
        {"object": "chat.completion"},
        {"object": None},
        {"object": 1},
        {"error": {"message": "x", "type": "server_error"}},
        {"error": "down"},
        {"done": True},
        {"finish_reason": "COMPLETE"},
        {"generation_id": "g"},
    ],
    ids="-".join,
)
def test_other_formats_keys_in_a_responses_object_agree(extra: dict[str, Any]) -> None:
    for base in BASES.values():
        both_providers(orjson.dumps({**base, **extra}))
        # Without `object`, only the shape (`output` and `status`, no `choices`) tells.
        body = {key: value for key, value in {**base, **extra}.items() if key != "object"}
        both_providers(orjson.dumps(body))


def test_the_invoke_markers_keep_a_body_off_the_fast_path() -> None:
    for marker in ("amazon-bedrock-guardrailAction", "amazon-bedrock-invocationMetrics"):
        data = orjson.dumps({**RICH, marker: None})
        assert not taken_fast(data, None)
        agree(data, None)


def test_a_shape_without_object_is_read_fast_only_when_named() -> None:
    body = {key: value for key, value in RICH.items() if key != "object"}
    data = orjson.dumps(body)
    assert openai_responses.parse_fast(data, None) is None
    assert taken_fast(data, "openai-responses")
    agree(data, "openai-responses")
    agree(data, None)
    for missing in ("output", "status"):
        partial = orjson.dumps({k: v for k, v in body.items() if k != missing})
        assert openai_responses.parse_fast(partial, "openai-responses") is None
        agree(partial, "openai-responses")


@pytest.mark.parametrize("name", ["anthropic", "gemini", "bedrock", "openai-chat", "cohere"])
def test_other_formats_bodies_with_responses_keys_grafted_agree(name: str) -> None:
    bodies = [
        orjson.loads(path.read_bytes())
        for path in sorted((FIXTURES / name).rglob("*.json"))
        if not path.name.startswith("error-")
    ]
    grafts: list[dict[str, Any]] = [
        {"object": "response"},
        {"output": RICH["output"], "status": "completed"},
        {"object": "response", "content_filters": None},
        {"output": [], "status": "completed", "choices": None},
    ]
    for body in bodies:
        if not isinstance(body, dict):
            continue
        for graft in grafts:
            data = orjson.dumps({**body, **graft})
            agree(data, None)
            agree(data, "openai-responses")
            agree(data, "openai")


def _with_duplicate(value: Any, path: tuple[Any, ...], extra: Any, first: bool) -> str:
    """JSON text of `value` where the object at `path[:-1]` holds the key `path[-1]` twice:
    `extra` first and the original value second, or the other way round."""
    if isinstance(value, dict):
        pairs = []
        for key, child in value.items():
            if path and key == path[0]:
                if len(path) == 1:
                    dup = orjson.dumps(key).decode() + ":" + _dump(extra).decode()
                    own = orjson.dumps(key).decode() + ":" + _dump(child).decode()
                    pairs += [dup, own] if first else [own, dup]
                    continue
                child_text = _with_duplicate(child, path[1:], extra, first)
            else:
                child_text = _dump(child).decode()
            pairs.append(orjson.dumps(key).decode() + ":" + child_text)
        return "{" + ",".join(pairs) + "}"
    if isinstance(value, list):
        items = [
            _with_duplicate(child, path[1:], extra, first)
            if path and index == path[0]
            else _dump(child).decode()
            for index, child in enumerate(value)
        ]
        return "[" + ",".join(items) + "]"
    return _dump(value).decode()


DUPLICATED = [
    path
    for path in PATHS
    if isinstance(path[-1], str)
    and path[0] in ("object", "status", "model", "output", "usage", "moderation", "error")
]


@pytest.mark.parametrize("path", DUPLICATED, ids=["/".join(map(str, p)) for p in DUPLICATED])
def test_duplicate_keys_agree_with_the_dict_path(path: tuple[Any, ...]) -> None:
    others: list[Any] = [None, 7, "response", "completed", [], {}, True]
    for base in BASES.values():
        for extra in others:
            for first in (True, False):
                both_providers(_with_duplicate(base, path, extra, first))


@pytest.mark.parametrize(
    "tail",
    [
        b',"zz":"\\ud800"}',
        b',"zz":"\xff"}',
        b',"zz":1e400}',
        b',"zz":18446744073709551616}',
        b"}garbage",
    ],
)
def test_odd_json_in_every_raw_part_agrees(tail: bytes) -> None:
    """Odd values inside the parts kept raw (filters, moderation, error, arguments)."""
    for key in ("content_filters", "moderation", "error"):
        for base in BASES.values():
            body = {**base}
            data = orjson.dumps({**body, key: {"zz": 1}})
            data = data.replace(b'{"zz":1}', b'{"a":1' + tail, 1)
            both_providers(data)
    for index in (2, 3):
        output = [dict(item) for item in RICH["output"]]
        output[index]["arguments"] = {"zz": 1}
        data = orjson.dumps({**RICH, "output": output}).replace(b'{"zz":1}', b'{"a":1' + tail, 1)
        both_providers(data)


# Generated bodies -------------------------------------------------------------------------

texts = st.sampled_from(["", " ", "\n", "Hi.", "No.", "I can't help with that.", "é"])
maybe = st.one_of(st.none(), st.booleans(), st.sampled_from(["", "x", 0, 1]))
part = st.fixed_dictionaries(
    {"type": st.sampled_from(["output_text", "text", "refusal", "summary_text", "image"])},
    optional={"text": texts | maybe, "refusal": texts | maybe},
)
item = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            ["message", "reasoning", "function_call", "custom_tool_call", "web_search_call"]
        )
    },
    optional={
        "id": st.sampled_from(["", "item_1"]) | maybe,
        "call_id": st.sampled_from(["", "call_1"]) | maybe,
        "name": st.sampled_from(["", "f"]) | maybe,
        "arguments": st.sampled_from(['{"a":1}', "", {"a": [1]}, None, 2**64, [1, 2]]),
        "input": st.sampled_from(["raw", "", {"q": 1}, None]),
        "content": st.lists(part, max_size=3) | maybe,
        "summary": st.lists(part, max_size=2) | maybe,
    },
)
filter_result = st.fixed_dictionaries(
    {},
    optional={
        "filtered": maybe,
        "detected": maybe,
        "severity": st.sampled_from(["safe", "low", "medium", "high", "SAFE"]) | maybe,
    },
)
filter_entry = st.fixed_dictionaries(
    {},
    optional={
        "blocked": maybe,
        "source_type": st.sampled_from(["prompt", "completion", ""]) | maybe,
        "content_filter_results": st.dictionaries(
            st.sampled_from(
                [
                    "hate",
                    "SelfHarm",
                    "jailbreak",
                    "protected_material_code",
                    "error",
                    "custom_blocklists",
                ]
            ),
            filter_result | st.sampled_from([None, [], [{"id": "b", "filtered": True}]]),
            max_size=4,
        )
        | maybe,
    },
)
moderation_result = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["moderation_result", "moderation_results", "error"]) | maybe,
        "categories": st.dictionaries(
            st.sampled_from(["violence", "hate", "self-harm"]), maybe, max_size=3
        )
        | maybe,
        "flagged": maybe,
        "blocked": maybe,
        "action": st.sampled_from(["block", "Blocked", "allow"]) | maybe,
        "model": st.sampled_from(["", "omni"]) | maybe,
        "results": st.lists(st.just({"flagged": True, "categories": {"hate": True}}), max_size=2)
        | maybe,
        "code": st.sampled_from(["timeout"]) | maybe,
        "message": st.sampled_from(["Moderation did not run."]) | maybe,
    },
)
count = st.one_of(st.integers(-2, 10**6), st.sampled_from([2**63 - 1, 2**63, 2**64]), maybe)
body = st.fixed_dictionaries(
    {},
    optional={
        "object": st.sampled_from(["response", "chat.completion"]) | maybe,
        "id": st.sampled_from(["resp_1", "", " "]) | maybe,
        "model": st.sampled_from(["gpt-5", "", " "]) | maybe,
        "status": st.sampled_from(
            ["completed", "incomplete", "failed", "cancelled", "in_progress", "odd"]
        )
        | maybe,
        "output": st.lists(item, max_size=4) | maybe,
        "incomplete_details": st.fixed_dictionaries(
            {},
            optional={
                "reason": st.sampled_from(["max_output_tokens", "content_filter", "x"]) | maybe
            },
        )
        | maybe,
        "error": st.fixed_dictionaries(
            {},
            optional={
                "code": st.sampled_from(
                    ["invalid_prompt", "bio_policy", "server_error", "rate_limit_exceeded", ""]
                )
                | maybe,
                "message": st.sampled_from(["Blocked.", "Try again.", ""]) | maybe,
            },
        )
        | maybe,
        "content_filters": st.lists(filter_entry, max_size=3) | maybe,
        "moderation": st.fixed_dictionaries(
            {}, optional={"input": moderation_result | maybe, "output": moderation_result | maybe}
        )
        | maybe,
        "usage": st.fixed_dictionaries(
            {},
            optional={
                "input_tokens": count,
                "output_tokens": count,
                "input_tokens_details": st.fixed_dictionaries(
                    {}, optional={"cached_tokens": count, "cache_write_tokens": count}
                )
                | maybe,
            },
        )
        | maybe,
    },
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body, st.booleans())
def test_generated_responses_bodies_agree(value: dict[str, Any], indent: bool) -> None:
    try:
        data = orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0)
    except TypeError:
        data = json.dumps(value, indent=2 if indent else None).encode()
    both_providers(data)


# Streams ----------------------------------------------------------------------------------
#
# `StreamDecoder.read_strict` reads the common events (text deltas, the opening and terminal
# events, and the part and item bookkeeping that carries no tool call or refusal) through
# Structs. With it and without it, every event must give the same events and leave the
# decoder in the same state.

STREAMS = [
    path
    for path in sorted(FIXTURES.rglob("*"))
    if (path.suffix == ".sse" or path.name.endswith(".chunks.txt"))
    and _is_responses_body(str(path.relative_to(FIXTURES)))
]


def stream_both_ways(raw: bytes, provider: str | None, chunk: int = 4096) -> int:
    """Assert the same events and response with and without quick; return how many wire
    events quick answered."""
    answered = 0
    original = openai_responses.StreamReader.read_strict

    def counting(
        self: openai_responses.StreamReader, name: str | None, data: str | bytes
    ) -> list[StreamEvent] | None:
        nonlocal answered
        events = original(self, name, data)
        answered += events is not None
        return events

    openai_responses.StreamReader.read_strict = counting  # type: ignore[method-assign]
    try:
        fast = run_stream(raw, provider, chunk)
    finally:
        openai_responses.StreamReader.read_strict = original  # type: ignore[method-assign]
    with strict_off(openai_responses.StreamReader):
        full = run_stream(raw, provider, chunk)
    assert fast == full
    assert fast[1].reasoning_details == full[1].reasoning_details
    return answered


def _wire_events(path: Any) -> list[tuple[str | None, bytes]]:
    raw = path.read_bytes()
    if path.suffix == ".sse":
        parser = SSEParser()
        return [(e.event, e.data) for e in [*parser.feed(raw), *parser.close()]]
    return [(None, line) for line in raw.splitlines() if line.strip()]


def _answered_by_quick(payloads: list[dict[str, Any]]) -> int:
    """How many of these well-typed events `read_strict` answers itself: every one (the strict
    decode reads each event type through the one schema)."""
    return len(payloads)


def test_the_stream_fixtures_are_found() -> None:
    assert len(STREAMS) >= 10


@pytest.mark.parametrize("path", STREAMS, ids=[str(p.relative_to(FIXTURES)) for p in STREAMS])
def test_every_responses_stream_decodes_the_same_with_quick(path: Any) -> None:
    raw = path.read_bytes()
    answered = stream_both_ways(raw, None)
    stream_both_ways(raw, "openai-responses", chunk=7)
    # Every event up to the terminal one reaches quick, which answers each.
    events = []
    for _, data in _wire_events(path):
        payload = orjson.loads(data)
        events.append(payload)
        if payload.get("type") in TERMINAL:
            break
    assert answered == _answered_by_quick(events)


def _state(decoder: openai_responses.StreamReader) -> dict[str, Any]:
    return dict(vars(decoder))


def events_both_ways(events: list[tuple[str | None, bytes | str]], provider: str) -> None:
    """Feed the same wire events to two decoders, one without quick: after each event,
    the same events out and the same state (accumulator included)."""
    fast = openai_responses.StreamReader(provider)
    full = openai_responses.StreamReader(provider)
    for name, data in events:
        got = fast.feed(name, data)
        with strict_off(openai_responses.StreamReader):
            expected = full.feed(name, data)
        assert got == expected, (name, data)
        assert _state(fast) == _state(full), (name, data)
    assert fast.close() == full.close()
    assert fast.response == full.response


@pytest.mark.parametrize("path", STREAMS, ids=[str(p.relative_to(FIXTURES)) for p in STREAMS])
def test_every_fixture_event_leaves_the_same_state(path: Any) -> None:
    for provider in ("openai-responses", "azure"):
        events_both_ways(list(_wire_events(path)), provider)


DELTA: dict[str, Any] = {
    "type": "response.output_text.delta",
    "item_id": "msg_1",
    "output_index": 0,
    "content_index": 0,
    "delta": "Hi",
    "sequence_number": 4,
}


def test_a_text_delta_takes_the_fast_path() -> None:
    decoder = openai_responses.StreamReader("openai-responses")
    data = orjson.dumps(DELTA)
    assert decoder.read_strict("response.output_text.delta", data) == [TextDelta("Hi")]
    assert decoder.read_strict(None, data) == [TextDelta("Hi")]
    other = orjson.dumps({**DELTA, "output_index": 1})
    assert decoder.read_strict(None, other) == [TextDelta("\n\nHi")]
    assert decoder.read_strict(None, orjson.dumps({**DELTA, "delta": ""})) == []


@pytest.mark.parametrize(
    ("name", "payload"),
    [
        ("response.output_text.delta", {**DELTA, "delta": 5}),
        ("response.output_text.delta", {**DELTA, "type": 1}),
        ("response.output_text.delta", {**DELTA, "output_index": True}),
        ("response.output_text.delta", {**DELTA, "output_index": 1.0}),
        ("response.output_text.delta", {**DELTA, "output_index": 2**64}),
        ("response.output_text.delta", {**DELTA, "item_id": ["msg_1"]}),
        ("response.output_text.delta", [DELTA]),
        ("response.output_item.added", {"type": "response.output_item.added", "item": 1}),
        ("response.completed", {"type": "response.completed", "response": "done"}),
        ("response.completed", {"type": "response.completed", "response": {"status": 1}}),
    ],
    ids=[
        "number-delta",
        "number-type",
        "boolean-index",
        "float-index",
        "huge-index",
        "list-item-id",
        "array",
        "number-item",
        "text-response",
        "number-status",
    ],
)
def test_events_of_the_wrong_types_are_left_to_decode(name: str, payload: Any) -> None:
    decoder = openai_responses.StreamReader("openai-responses")
    assert decoder.read_strict(name, _dump(payload)) is None
    assert vars(decoder) == vars(openai_responses.StreamReader("openai-responses"))


@pytest.mark.parametrize(
    "data",
    [
        b'{"type":"response.output_text.delta","delta":"\\ud83d"}',
        b'{"type":"response.output_text.delta","delta":"\xff"}',
        b'{"type":"response.output_text.delta","x":NaN,"delta":"a"}',
        b'{"type":"response.output_text.delta","x":' + b"[" * 3000 + b"]" * 3000 + b"}",
        b'{"type":"response.output_text.delta","delta":"a"} x',
        b'{"type":"response.completed","response":{"status":"completed","error":{"a":1e400}}}',
        b'{"type":"response.completed","response":{"moderation":{"input":"\xff"}}}',
    ],
    ids=["lone-surrogate", "not-utf8", "nan", "deep", "trailing", "infinite", "raw-not-utf8"],
)
def test_text_the_fast_reader_refuses_is_left_to_decode(data: bytes) -> None:
    decoder = openai_responses.StreamReader("openai-responses")
    assert decoder.read_strict(None, data) is None
    assert vars(decoder) == vars(openai_responses.StreamReader("openai-responses"))


_OBJECT: dict[str, Any] = {
    "id": "resp_1",
    "object": "response",
    "model": "gpt-5",
    "status": "in_progress",
    "output": [],
    "usage": None,
}
TEMPLATES: list[dict[str, Any]] = [
    {"type": "response.created", "response": _OBJECT, "sequence_number": 0},
    {"type": "response.in_progress", "response": {**_OBJECT, "model": " "}},
    {"type": "response.queued", "response": {**_OBJECT, "id": ""}},
    {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "e"},
    },
    {
        "type": "response.output_item.added",
        "output_index": 1,
        "item": {"id": "msg_1", "type": "message", "content": [], "role": "assistant"},
    },
    {
        "type": "response.output_item.added",
        "output_index": 2,
        "item": {"id": "fc_1", "type": "function_call", "call_id": "c", "name": "f"},
    },
    {
        "type": "response.content_part.added",
        "item_id": "msg_1",
        "output_index": 1,
        "content_index": 0,
        "part": {"type": "output_text", "text": ""},
    },
    {**DELTA, "output_index": 1},
    {**DELTA, "output_index": 3, "delta": "There."},
    {key: value for key, value in DELTA.items() if key != "output_index"},
    {**DELTA, "item_id": "msg_2", "output_index": None},
    {"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 1, "delta": "No."},
    {"type": "response.refusal.done", "item_id": "msg_1", "output_index": 1, "refusal": "No."},
    {"type": "response.output_text.done", "item_id": "msg_1", "output_index": 1, "text": "Hi"},
    {"type": "response.content_part.done", "part": {"type": "output_text", "text": "Hi"}},
    {"type": "response.content_part.done", "part": {"type": "refusal", "refusal": "No."}},
    {
        "type": "response.output_item.done",
        "output_index": 1,
        "item": {"type": "message", "content": [{"type": "output_text", "text": "Hi"}]},
    },
    {
        "type": "response.output_item.done",
        "output_index": 1,
        "item": {"type": "message", "content": [{"type": "refusal", "refusal": "No."}]},
    },
    {
        "type": "response.output_item.done",
        "output_index": 2,
        "item": {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
    },
    {"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "{"},
    {"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "Hm"},
    {"type": "response.output_text.annotation.added", "annotation": {"type": "url_citation"}},
    {
        "type": "response.completed",
        "response": {
            **_OBJECT,
            "status": "completed",
            "output": RICH["output"],
            "moderation": RICH["moderation"],
            "usage": RICH["usage"],
        },
    },
    {"type": "response.incomplete", "response": {**INCOMPLETE, "usage": None}},
    {"type": "response.failed", "response": {**FAILED, "status": None}},
    {"type": "response.completed"},
    {"type": "error", "code": "server_error", "message": "Down.", "sequence_number": 9},
]

event_template = st.sampled_from(TEMPLATES)
NAMES = ["openai-responses", "azure"]


@st.composite
def wire_event(draw: st.DrawFn) -> tuple[str | None, bytes]:
    payload: Any = orjson.loads(orjson.dumps(draw(event_template)))
    for _ in range(draw(st.integers(0, 2))):
        paths = [path for path in json_paths(payload) if path]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        if draw(st.booleans()):
            payload = replace_at(payload, path, draw(WRONG_VALUES))
        else:
            parent = payload
            for key in path[:-1]:
                parent = parent[key]
            del parent[path[-1]]
    kind = payload.get("type") if isinstance(payload, dict) else None
    name = draw(
        st.sampled_from(
            [kind if isinstance(kind, str) else None, None, "response.output_text.delta"]
        )
    )
    return name, _dump(payload)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(wire_event(), min_size=1, max_size=12), st.sampled_from(["openai-responses", "azure"])
)
def test_generated_event_sequences_leave_the_same_state(
    events: list[tuple[str | None, bytes]], provider: str
) -> None:
    events_both_ways(list(events), provider)
