"""Gemini's typed fast path: it reads every well-typed generateContent body, and gives what
the dict path gives on bodies that probe each of its checks (hint and detection keys,
snake_case dumps, candidate selection, wrong types in every declared field).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals.events import StreamEvent
from refusals.model import FinishReason, LLMResponse
from refusals.providers import gemini
from tests.providers._fast_support import FIXTURES, agree, taken_fast

GEMINI = FIXTURES / "gemini"
BODIES = sorted(path for path in GEMINI.rglob("*.json") if not path.name.startswith("error-"))
PROVIDERS = (None, "gemini", "vertex", "Gemini", "openai")

TEXT: dict[str, Any] = {
    "candidates": [
        {
            "content": {"parts": [{"text": "Paris."}], "role": "model"},
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "modelVersion": "gemini-2.5-flash",
    "responseId": "abc",
    "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 2, "thoughtsTokenCount": 5},
}
BLOCKED: dict[str, Any] = {
    "candidates": [
        {
            "content": {"parts": [{"text": "Partial"}]},
            "finishReason": "SAFETY",
            "finishMessage": "blocked",
            "safetyRatings": [
                {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "HIGH", "blocked": True},
                {"category": "HARM_CATEGORY_HARASSMENT", "probability": "LOW"},
            ],
        }
    ],
    "modelVersion": "gemini-2.5-flash",
    "createTime": "2026-01-01T00:00:00Z",
}
PROMPT_BLOCKED: dict[str, Any] = {
    "promptFeedback": {
        "blockReason": "SAFETY",
        "blockReasonMessage": "no",
        "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS", "blocked": True}],
    },
    "usageMetadata": {"promptTokenCount": 3},
    "responseId": "r",
}
CALLS: dict[str, Any] = {
    "candidates": [
        {
            "content": {
                "parts": [
                    {"thoughtSignature": "sig1", "text": "thinking", "thought": True},
                    {"functionCall": {"id": "c1", "name": "ls", "args": {"path": "/", "n": 2}}},
                    {"functionCall": {"name": "pwd"}, "thoughtSignature": "sig2"},
                ]
            },
            "finishReason": "STOP",
        }
    ],
    "modelVersion": "gemini-3-pro",
}
BASES = {"text": TEXT, "blocked": BLOCKED, "prompt_blocked": PROMPT_BLOCKED, "calls": CALLS}


def encoded(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # integers past 64 bits
        return json.dumps(value).encode()


def check(body: Any, providers: tuple[str | None, ...] = PROVIDERS) -> None:
    data = encoded(body)
    for provider in providers:
        agree(data, provider)
        agree(data.decode(), provider)


def changed(base: dict[str, Any], edit: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    body: dict[str, Any] = orjson.loads(orjson.dumps(base))
    edit(body)
    return body


# Which bodies take the fast path ------------------------------------------------------


@pytest.mark.parametrize("path", BODIES, ids=[str(p.relative_to(GEMINI)) for p in BODIES])
def test_every_gemini_fixture_body_takes_the_fast_path_with_or_without_a_provider(
    path: Any,
) -> None:
    data = path.read_bytes()
    assert taken_fast(data, None)
    assert taken_fast(data, "gemini")
    assert taken_fast(data, "vertex")
    assert agree(data, None) == agree(data, "vertex" if b'"createTime"' in data else "gemini")


def test_the_fast_path_reads_text_thoughts_calls_signatures_and_usage_as_the_dict_path() -> None:
    got = agree(orjson.dumps(CALLS), None)
    assert isinstance(got, LLMResponse)
    assert got.finish_reason is FinishReason.TOOL_CALLS
    assert [(c.id, c.name, c.arguments) for c in got.tool_calls] == [
        ("c1", "ls", '{"path":"/","n":2}'),
        ("", "pwd", "{}"),
    ]
    assert got.reasoning == "thinking"
    assert len(got.reasoning_details or ()) == 2
    parts = [
        {"text": "a", "thought": True},
        {"text": "b"},
        {"text": "c", "thought": True},
        {"text": "d", "thought": False},
        {"text": ""},
    ]
    mixed = agree(orjson.dumps({**TEXT, "candidates": [{"content": {"parts": parts}}]}), None)
    assert isinstance(mixed, LLMResponse)
    assert (mixed.content, mixed.reasoning) == ("bd", "ac")
    text = agree(orjson.dumps(TEXT), "gemini")
    assert isinstance(text, LLMResponse)
    assert text.usage is not None
    assert (text.usage.input_tokens, text.usage.output_tokens) == (7, 7)


def test_a_snake_case_dump_is_left_to_the_dict_path_which_rewrites_its_keys() -> None:
    snake = {
        "candidates": [{"content": {"parts": [{"text": "hi"}]}, "finish_reason": "SAFETY"}],
        "model_version": "gemini-2.5-flash",
    }
    data = orjson.dumps(snake)
    assert not taken_fast(data, None)
    assert not taken_fast(data, "gemini")
    got = agree(data, None)
    assert isinstance(got, LLMResponse)
    assert got.finish_reason is FinishReason.CONTENT_FILTER


# Bodies that probe the checks ---------------------------------------------------------


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], object]:
    def edit(body: dict[str, Any]) -> None:
        target: Any = body
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return edit


def _drop(*keys: str) -> Callable[[dict[str, Any]], object]:
    def edit(body: dict[str, Any]) -> None:
        for key in keys:
            body.pop(key, None)

    return edit


ODD_VALUES: list[Any] = [None, True, 0, -1, 2**63, 2**64, 1.5, "", "x", [], {}, [1], {"a": 1}]

# Keys other formats hint or detect with, and Bedrock's InvokeModel markers.
FOREIGN = {
    "object": ["chat.completion", "response", "x", None],
    "type": ["message", "error", "x", None],
    "error": [None, {"code": 400, "message": "m", "status": "INVALID_ARGUMENT"}, "oops", {}],
    "choices": [[], None],
    "output": [[], None],
    "stopReason": ["end_turn", None],
    "amazon-bedrock-guardrailAction": ["INTERVENED", None],
    "amazon-bedrock-invocationMetrics": [{}, None],
    "createTime": [None, 1, "t"],
    "usage_metadata": [{"prompt_token_count": 3}],
    "prompt_feedback": [{"block_reason": "SAFETY"}],
    "model_version": ["m"],
    "response_id": ["r"],
}


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize(("key", "values"), FOREIGN.items(), ids=list(FOREIGN))
def test_keys_of_other_formats_and_snake_case_keys_grafted_on(
    base: str, key: str, values: list[Any]
) -> None:
    for value in values:
        check(changed(BASES[base], _set((key,), value)))
        # Without the camelCase keys that rule out a snake_case dump.
        bare = _drop("usageMetadata", "modelVersion", "responseId")
        check(changed(changed(BASES[base], bare), _set((key,), value)))


FIELDS: list[tuple[str, tuple[Any, ...]]] = [
    ("text", ("candidates",)),
    ("text", ("candidates", 0)),
    ("text", ("candidates", 0, "index")),
    ("text", ("candidates", 0, "content")),
    ("text", ("candidates", 0, "content", "parts")),
    ("text", ("candidates", 0, "content", "parts", 0)),
    ("text", ("candidates", 0, "content", "parts", 0, "text")),
    ("text", ("candidates", 0, "content", "parts", 0, "thought")),
    ("text", ("candidates", 0, "content", "parts", 0, "thoughtSignature")),
    ("text", ("candidates", 0, "content", "parts", 0, "functionCall")),
    ("text", ("candidates", 0, "finishReason")),
    ("text", ("candidates", 0, "finishMessage")),
    ("text", ("candidates", 0, "safetyRatings")),
    ("text", ("modelVersion",)),
    ("text", ("responseId",)),
    ("text", ("usageMetadata",)),
    ("text", ("usageMetadata", "promptTokenCount")),
    ("text", ("usageMetadata", "candidatesTokenCount")),
    ("text", ("usageMetadata", "thoughtsTokenCount")),
    ("text", ("usageMetadata", "cachedContentTokenCount")),
    ("text", ("promptFeedback",)),
    ("blocked", ("candidates", 0, "safetyRatings")),
    ("blocked", ("candidates", 0, "safetyRatings", 0)),
    ("blocked", ("candidates", 0, "safetyRatings", 0, "blocked")),
    ("blocked", ("candidates", 0, "safetyRatings", 0, "category")),
    ("blocked", ("candidates", 0, "safetyRatings", 0, "probability")),
    ("blocked", ("candidates", 0, "finishMessage")),
    ("blocked", ("candidates", 0, "finishReason")),
    ("blocked", ("createTime",)),
    ("prompt_blocked", ("promptFeedback",)),
    ("prompt_blocked", ("promptFeedback", "blockReason")),
    ("prompt_blocked", ("promptFeedback", "blockReasonMessage")),
    ("prompt_blocked", ("promptFeedback", "safetyRatings")),
    ("prompt_blocked", ("candidates",)),
    ("calls", ("candidates", 0, "content", "parts", 1, "functionCall")),
    ("calls", ("candidates", 0, "content", "parts", 1, "functionCall", "id")),
    ("calls", ("candidates", 0, "content", "parts", 1, "functionCall", "name")),
    ("calls", ("candidates", 0, "content", "parts", 1, "functionCall", "args")),
    ("calls", ("candidates", 0, "content", "parts", 0, "thought")),
]


@pytest.mark.parametrize(("base", "path"), FIELDS, ids=[f"{b}:{p}" for b, p in FIELDS])
def test_every_declared_field_with_values_of_other_types_null_or_absent(
    base: str, path: tuple[Any, ...]
) -> None:
    for value in [*ODD_VALUES, "STOP", "SAFETY", "MODEL_ARMOR"]:
        check(changed(BASES[base], _set(path, value)), (None, "gemini"))
    parent: Any = path[:-1]

    def drop(body: dict[str, Any]) -> None:
        target: Any = body
        for part in parent:
            target = target[part]
        if isinstance(target, dict):
            target.pop(path[-1], None)
        else:
            del target[path[-1]]

    check(changed(BASES[base], drop), (None, "gemini"))


@pytest.mark.parametrize(
    "indexes",
    [[1, 0], [1, None], [1, 2], [0, 0], [None, 1], [2, "0"], [True, 0], [0.0, 1], [2**64, 0]],
)
def test_candidate_zero_is_picked_as_the_dict_path_picks_it(indexes: list[Any]) -> None:
    candidates = []
    for number, index in enumerate(indexes):
        candidates.append(
            {
                "index": index,
                "content": {"parts": [{"text": f"answer {number}"}]},
                "finishReason": ["STOP", "SAFETY"][number % 2],
            }
        )
    check({**TEXT, "candidates": candidates})


@pytest.mark.parametrize(
    "text",
    [
        '{"candidates":[],"candidates":null,"modelVersion":"m"}',
        '{"candidates":null,"candidates":[],"modelVersion":"m"}',
        '{"modelVersion":"m","modelVersion":null,"candidates":[]}',
        '{"promptFeedback":{"blockReason":"SAFETY"},"promptFeedback":{},"responseId":"r"}',
        '{"usageMetadata":{"promptTokenCount":1,"promptTokenCount":-1},"candidates":[]}',
        '{"usageMetadata":{"promptTokenCount":1e3},"candidates":[]}',
        '{"usageMetadata":{"promptTokenCount":18446744073709551616},"candidates":[]}',
        '{"candidates":[{"content":{"parts":[{"text":"a","text":null}]}}],"responseId":"r"}',
        '{"candidates":[{"content":{"parts":[{"text":"\\u00e9\\ud83d\\ude00"}]}}],"responseId":"r"}',
        '{"candidates":[{"content":{"parts":[{"text":"\\ud800"}]}}],"responseId":"r"}',
        '{"candidates":[{"content":{"parts":[{"functionCall":{"args":"{\\"a\\":1}"}}]}}],'
        '"responseId":"r"}',
        '{"candidates":[{"content":{"parts":[{"functionCall":{"args":{"n":18446744073709551616}}}'
        ']}}],"responseId":"r"}',
        '{"candidates":[{"finishReason":"SAFETY","safetyRatings":[{"blocked":true,'
        '"category":"X","severityScore":1e400}]}],"responseId":"r"}',
        '{"candidates":[{"finishReason":"SAFETY","safetyRatings":[{"blocked":true,'
        '"category":"HARM_CATEGORY_X","probabilityScore":0.5,"severity":2}]}],"responseId":"r"}',
        '{"candidates":[{"finishReason":"BLOCKLIST","finishMessage":""}],"responseId":"r"}',
        # Block reasons outside the table of categories worked out once.
        '{"promptFeedback":{"blockReason":"blocked_reason_unspecified"},"responseId":"r"}',
        '{"promptFeedback":{"blockReason":"New_Reason","blockReasonMessage":"m"},"responseId":"r"}',
        '{"promptFeedback":{"blockReason":""},"responseId":"r"}',
        # Calls without arguments, as Gemini writes them and otherwise.
        '{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}},'
        '{"functionCall":{"args":{ }}},{"functionCall":{"args":{"a":[]}}}]}}],"responseId":"r"}',
        '{"candidates":[{"finishReason":"FINISH_REASON_UNSPECIFIED"}],"createTime":null,'
        '"responseId":"r"}',
        '{"candidates":[],"usageMetadata":{}}',
        '{"usageMetadata":{},"modelVersion":"m"}',
        '{"promptFeedback":null,"usageMetadata":{},"modelVersion":"m"}',
        '{"candidates":{},"usageMetadata":{},"modelVersion":"m"}',
        # No Gemini hint: native InvokeModel bodies (Mistral, Llama, Titan) are Bedrock's.
        '{"usageMetadata":{},"modelVersion":"m","outputs":[{"text":"x"}]}',
        '{"usageMetadata":{},"responseId":"r","generation":"x","stop_reason":"stop"}',
        '{"usageMetadata":{},"responseId":"r","results":[],"inputTextTokenCount":1}',
    ],
)
def test_duplicates_big_numbers_odd_text_and_edge_shapes(text: str) -> None:
    for provider in PROVIDERS:
        agree(text.encode(), provider)
        agree(text, provider)


# Generated bodies ---------------------------------------------------------------------
#
# Well-typed shapes (or null) wherever a Struct declares a type, so that most of them take
# the fast path; values of any type where it keeps the value raw (ratings, arguments).

odd = st.sampled_from(ODD_VALUES)
text_or_null = st.one_of(st.none(), st.text(max_size=6))
reasons = st.one_of(st.none(), st.sampled_from([*gemini.FINISH_REASONS, "", "JAILBREAK", "NEW"]))
ratings = st.one_of(
    odd,
    st.lists(
        st.one_of(
            odd,
            st.fixed_dictionaries(
                {},
                optional={
                    "blocked": st.one_of(st.booleans(), odd),
                    "category": st.one_of(
                        st.sampled_from(["HARM_CATEGORY_HATE_SPEECH", "SPII", ""]), odd
                    ),
                    "probability": st.one_of(st.text(max_size=4), odd),
                    "severityScore": st.one_of(st.floats(allow_nan=False), odd),
                },
            ),
        ),
        max_size=3,
    ),
)
calls = st.fixed_dictionaries(
    {},
    optional={
        "id": text_or_null,
        "name": text_or_null,
        "args": st.one_of(st.dictionaries(st.text(max_size=3), odd, max_size=2), odd),
    },
)
parts = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "text": text_or_null,
            "thought": st.one_of(st.none(), st.booleans()),
            "thoughtSignature": text_or_null,
            "functionCall": st.one_of(st.none(), calls),
        },
    ),
    max_size=3,
)
candidates = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "index": st.one_of(st.none(), st.integers(0, 2)),
            "content": st.one_of(st.none(), st.fixed_dictionaries({}, optional={"parts": parts})),
            "finishReason": reasons,
            "finishMessage": text_or_null,
            "safetyRatings": ratings,
        },
    ),
    max_size=2,
)
counts = st.one_of(st.none(), st.integers(-1, 2**64))
usage = st.fixed_dictionaries(
    {},
    optional={
        "promptTokenCount": counts,
        "candidatesTokenCount": counts,
        "thoughtsTokenCount": counts,
        "cachedContentTokenCount": counts,
    },
)
feedback = st.fixed_dictionaries(
    {},
    optional={
        "blockReason": reasons,
        "blockReasonMessage": text_or_null,
        "safetyRatings": ratings,
    },
)
bodies = st.fixed_dictionaries(
    {},
    optional={
        "candidates": st.one_of(st.none(), candidates),
        "promptFeedback": st.one_of(st.none(), feedback),
        "usageMetadata": st.one_of(st.none(), usage),
        "modelVersion": text_or_null,
        "responseId": text_or_null,
        "createTime": st.one_of(st.text(max_size=4), odd),
        "finish_reason": text_or_null,
    },
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies, st.sampled_from(PROVIDERS[:3]))
def test_generated_generate_content_bodies_same_both_ways(
    body: dict[str, Any], provider: str | None
) -> None:
    agree(encoded(body), provider)


# Streams: StreamDecoder.read_strict ---------------------------------------------------------

STREAMS = sorted([*GEMINI.rglob("*.sse"), *GEMINI.rglob("*.chunks.txt")])
CHUNK: dict[str, Any] = {
    "candidates": [{"content": {"parts": [{"text": "Hi"}], "role": "model"}, "index": 0}],
    "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1, "thoughtsTokenCount": 2},
    "modelVersion": "gemini-2.5-pro",
    "responseId": "r1",
}


def state(decoder: gemini.StreamReader) -> object:
    return (
        decoder.done,
        decoder._tool_calls,
        decoder._blocked,
        decoder._ratings_kept,
        decoder._final,
        decoder.acc.response,
        decoder.acc.response.reasoning_details,
    )


def fed_both_ways(chunks: list[bytes | str], provider: str = "gemini") -> int:
    """Feed the chunks to a decoder with quick and to one without; assert the same events
    and the same state after each; return how many chunks quick answered."""
    fast, full = gemini.StreamReader(provider), gemini.StreamReader(provider)
    full.read_strict = lambda name, data: None  # type: ignore[method-assign]
    answered = 0
    original = fast.read_strict

    def counting(name: str | None, data: str | bytes) -> list[StreamEvent] | None:
        nonlocal answered
        events = original(name, data)
        answered += events is not None
        return events

    fast.read_strict = counting  # type: ignore[method-assign]
    for data in chunks:
        assert fast.feed(None, data) == full.feed(None, data)
        assert state(fast) == state(full)
    assert fast.close() == full.close()
    assert state(fast) == state(full)
    return answered


def stream_chunks(path: Any) -> list[bytes]:
    raw = path.read_bytes()
    if path.name.endswith(".sse"):
        return [line[6:] for line in raw.splitlines() if line.startswith(b"data: ")]
    return [line for line in raw.splitlines() if line.strip()]


@pytest.mark.parametrize("path", STREAMS, ids=[str(p.relative_to(GEMINI)) for p in STREAMS])
def test_every_gemini_stream_gives_the_same_events_with_quick(path: Any) -> None:
    chunks = stream_chunks(path)
    answered = fed_both_ways(list(chunks))
    text_chunks = [
        c for c in chunks if b'"text"' in c and b"finishReason" not in c and b"Signature" not in c
    ]
    assert answered >= len(text_chunks) > 0 or not text_chunks


def test_the_common_text_chunk_takes_quick() -> None:
    decoder = gemini.StreamReader("gemini")
    events = decoder.read_strict(None, orjson.dumps(CHUNK))
    assert events is not None
    assert [type(e).__name__ for e in events] == ["UsageUpdate", "TextDelta"]
    assert (decoder.acc.model, decoder.acc.request_id) == ("gemini-2.5-pro", "r1")
    thought = changed(CHUNK, _set(("candidates", 0, "content", "parts", 0, "thought"), True))
    assert fed_both_ways([orjson.dumps(thought), orjson.dumps(CHUNK)]) == 2


CHUNK_FIELDS: list[tuple[Any, ...]] = [
    ("candidates",),
    ("candidates", 0),
    ("candidates", 0, "index"),
    ("candidates", 0, "content"),
    ("candidates", 0, "content", "parts"),
    ("candidates", 0, "content", "parts", 0),
    ("candidates", 0, "content", "parts", 0, "text"),
    ("candidates", 0, "content", "parts", 0, "thought"),
    ("candidates", 0, "content", "parts", 0, "thoughtSignature"),
    ("candidates", 0, "content", "parts", 0, "functionCall"),
    ("candidates", 0, "finishReason"),
    ("candidates", 0, "finishMessage"),
    ("candidates", 0, "safetyRatings"),
    ("usageMetadata",),
    ("usageMetadata", "promptTokenCount"),
    ("usageMetadata", "thoughtsTokenCount"),
    ("modelVersion",),
    ("responseId",),
    ("promptFeedback",),
    ("error",),
]


@pytest.mark.parametrize("path", CHUNK_FIELDS, ids=[str(p) for p in CHUNK_FIELDS])
def test_every_chunk_field_with_values_of_other_types_null_or_absent(path: Any) -> None:
    values = [*ODD_VALUES, "STOP", "SAFETY", [{"blocked": True, "category": "X"}]]
    for value in values:
        chunk = changed(CHUNK, _set(path, value))
        # The chunk first, and after a text chunk (model and response id already set).
        fed_both_ways([encoded(chunk)])
        fed_both_ways([encoded(CHUNK), encoded(chunk), encoded(CHUNK)])


@pytest.mark.parametrize(
    "data",
    [
        b'{"candidates":[{"content":{"parts":[{"text":"\\ud83d"}]}}]}',
        b'{"candidates":[{"content":{"parts":[{"text":"\xff"}]}}]}',
        b'{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"x":NaN}',
        b'{"candidates":[],"x":' + b"[" * 3000 + b"]" * 3000 + b"}",
        b'{"candidates":[{"content":{"parts":[{"text":"a"}]}}]} x',
        b'[{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}]',
        b'{"candidates":[{"index":1,"content":{"parts":[{"text":"b"}]}},{"content":{}}]}',
        b'{"candidates":[{"index":1,"content":{"parts":[{"text":"b"}]}}]}',
        b'{"candidates":[{"content":{"parts":[{"text":"a","text":"b"}]}}],"modelVersion":""}',
        b'{"usageMetadata":{"promptTokenCount":18446744073709551616}}',
        b'{"usageMetadata":{"promptTokenCount":-1}}',
        b"{}",
        b"null",
        b"[DONE]",
    ],
)
def test_odd_chunks_same_with_and_without_quick(data: bytes) -> None:
    fed_both_ways([data])
    fed_both_ways([orjson.dumps(CHUNK), data])


parts_for_chunks = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "text": text_or_null,
            "thought": st.one_of(st.none(), st.booleans()),
            "thoughtSignature": st.one_of(st.none(), st.just("sig")),
        },
    ),
    max_size=3,
)
chunks = st.fixed_dictionaries(
    {},
    optional={
        "candidates": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "index": st.one_of(st.none(), st.integers(0, 2)),
                    "content": st.fixed_dictionaries({}, optional={"parts": parts_for_chunks}),
                    "finishReason": reasons,
                },
            ),
            max_size=2,
        ),
        "usageMetadata": st.one_of(st.none(), usage),
        "modelVersion": text_or_null,
        "responseId": text_or_null,
    },
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(chunks, min_size=1, max_size=4))
def test_generated_chunk_sequences_same_with_and_without_quick(
    sequence: list[dict[str, Any]],
) -> None:
    fed_both_ways([encoded(chunk) for chunk in sequence])
