"""The Chat Completions fast path (`openai_chat.parse_fast`, `ChatStreamReader.read_strict`) gives
exactly what the dict path gives, and is taken for the bodies and chunks it is built for.

The cases probe the checks the fast path makes instead of the dict path's detection:
bodies of other formats with Chat keys grafted on, every declared field given values of
other types, null against absent, integers past 64 bits, duplicate keys, choices out of
order, and the vendor dialects (Azure filters, OpenRouter, moderation, errors in a body).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals.events import StreamEvent, TextDelta
from refusals.providers import openai_chat
from tests.providers._fast_support import (
    FIXTURES,
    agree,
    fixture_bodies,
    provider_of,
    run_stream,
    strict_off,
    taken_fast,
)
from tests.providers._support import WRONG_VALUES, mutated, mutated_bytes

CHAT_FOLDERS = (
    "openai-chat",
    "azure",
    "openrouter",
    "deepseek",
    "xai",
    "groq",
    "mistral",
    "ollama",
)
CHAT_PROVIDERS = ("openai", "azure", "openrouter", "deepseek", "xai", "groq", "mistral", "ollama")

CHAT_BODIES = [
    (name, data)
    for name, data in fixture_bodies()
    if name.split("/", 1)[0] in CHAT_FOLDERS and b'"choices"' in data
]


def _load(name: str) -> dict[str, Any]:
    body: dict[str, Any] = orjson.loads((FIXTURES / name).read_bytes())
    return body


def _dumps(body: Any) -> bytes:
    try:
        return orjson.dumps(body)
    except TypeError:  # integers past 64 bits: the standard library writes them
        return json.dumps(body).encode()


def agree_all(body: Any, providers: tuple[str | None, ...] = (None, *CHAT_PROVIDERS)) -> None:
    """Fast and dict paths agree on `body`, without a provider and with every chat one."""
    data = body if isinstance(body, bytes) else _dumps(body)
    for provider in providers:
        agree(data, provider)
    agree(data.decode("utf-8", "replace"), None)


BASE = _load("openai-chat/length.json")
AZURE = _load("azure/chat-content-filter-results.json")
OPENROUTER = _load("openrouter/gemini-length-native-max-tokens.json")
TOOLS = _load("openai-chat/tool-calls.json")
MODERATION = _load("openai-chat/moderation-flagged.json")


# --- (a) the bodies it is built for take it -------------------------------------------


@pytest.mark.parametrize(("name", "data"), CHAT_BODIES, ids=[n for n, _ in CHAT_BODIES])
def test_chat_fixture_takes_the_fast_path_with_and_without_its_provider(
    name: str, data: bytes
) -> None:
    provider = provider_of(name)
    assert taken_fast(data, None)
    assert taken_fast(data, provider)
    agree(data, None)
    agree(data, provider)


def test_the_fast_path_names_each_vendor_as_detection_does() -> None:
    expected = {
        "openai-chat/length.json": "openai",
        "azure/chat-content-filter-results.json": "azure",
        "openrouter/gemini-length-native-max-tokens.json": "openrouter",
        "deepseek/written/response-reasoner.json": "deepseek",
        "xai/written/response-reasoning.json": "xai",
        "groq/written/response.json": "groq",
        "mistral/written/response-thinking.json": "mistral",
        "ollama/written/response.json": "ollama",
    }
    for name, provider in expected.items():
        result = openai_chat.parse_fast((FIXTURES / name).read_bytes(), None)
        assert result is not None and result.provider == provider, name


def test_a_responses_object_or_an_unknown_provider_name_is_left_to_the_dict_path() -> None:
    data = _dumps({**BASE, "object": "response"})
    assert openai_chat.parse_fast(data, "openai") is None
    assert openai_chat.parse_fast(_dumps(BASE), "OpenAI") is None
    assert openai_chat.parse_fast(_dumps(BASE), "anthropic") is None
    agree(data, "openai")
    agree(_dumps(BASE), "OpenAI")


# --- (b) cases that probe the checks ----------------------------------------------------


def _parent(body: Any, path: tuple[Any, ...]) -> Any:
    """The object or array that holds (or can take) `path`'s last part; None if gone."""
    target = body
    for part in path[:-1]:
        if isinstance(target, dict):
            holds = part in target
        else:
            holds = isinstance(target, list) and isinstance(part, int) and part < len(target)
        if not holds:
            return None
        target = target[part]
    last = path[-1]
    if isinstance(target, dict) and isinstance(last, str):
        return target
    if isinstance(target, list) and isinstance(last, int) and last < len(target):
        return target
    return None


def _with(body: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(body)
    parent = _parent(changed, path)
    if parent is not None:
        parent[path[-1]] = value
    return changed


def _without(body: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any]:
    changed = copy.deepcopy(body)
    parent = _parent(changed, path)
    if isinstance(parent, dict):
        parent.pop(path[-1], None)
    elif parent is not None:
        del parent[path[-1]]
    return changed


ODD_VALUES = [
    None,
    True,
    False,
    0,
    -1,
    7,
    2**63 - 1,
    2**63,
    2**64,
    1.5,
    "",
    " ",
    "stop",
    "chat.completion",
    [],
    [1],
    {},
    {"a": 1},
]

# Every key the Structs declare, at the place it is read.
DECLARED = [
    ("object",),
    ("id",),
    ("model",),
    ("choices",),
    ("usage",),
    ("moderation",),
    ("error",),
    ("prompt_filter_results",),
    ("prompt_annotations",),
    ("provider",),
    ("x_groq",),
    ("system_fingerprint",),
    ("amazon-bedrock-guardrailAction",),
    ("amazon-bedrock-invocationMetrics",),
    ("choices", 0),
    ("choices", 0, "index"),
    ("choices", 0, "message"),
    ("choices", 0, "delta"),
    ("choices", 0, "finish_reason"),
    ("choices", 0, "native_finish_reason"),
    ("choices", 0, "content_filter_results"),
    ("choices", 0, "message", "content"),
    ("choices", 0, "message", "refusal"),
    ("choices", 0, "message", "reasoning_content"),
    ("choices", 0, "message", "reasoning"),
    ("choices", 0, "message", "reasoning_details"),
    ("choices", 0, "message", "tool_calls"),
    ("choices", 0, "message", "function_call"),
    ("usage", "prompt_tokens"),
    ("usage", "completion_tokens"),
    ("usage", "prompt_cache_hit_tokens"),
    ("usage", "prompt_tokens_details"),
    ("usage", "prompt_tokens_details", "cached_tokens"),
    ("usage", "prompt_tokens_details", "cache_write_tokens"),
]


def _base_for(path: tuple[Any, ...]) -> dict[str, Any]:
    body = copy.deepcopy(OPENROUTER)
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": 3, "cache_write_tokens": 2}
    return body


@pytest.mark.parametrize("path", DECLARED, ids=["/".join(map(str, p)) for p in DECLARED])
def test_every_declared_field_with_values_of_other_types(path: tuple[Any, ...]) -> None:
    body = _base_for(path)
    agree_all(_without(body, path))
    for value in ODD_VALUES:
        agree_all(_with(body, path, value), (None, "openai", "openrouter", "azure"))


@pytest.mark.parametrize(
    "path",
    [
        ("choices", 0, "function", "name"),
        ("choices", 0, "function", "arguments"),
        ("choices", 0, "function"),
        ("choices", 0, "id"),
        ("choices", 0, "custom"),
    ],
)
def test_tool_call_fields_with_values_of_other_types(path: tuple[Any, ...]) -> None:
    calls = TOOLS["choices"][0]["message"]["tool_calls"]
    for value in ODD_VALUES:
        changed = _with({"choices": calls}, path, value)["choices"]
        body = _with(TOOLS, ("choices", 0, "message", "tool_calls"), changed)
        agree_all(body, (None, "openai"))


def test_other_formats_with_chat_keys_grafted_on() -> None:
    others = [
        name
        for name, _ in fixture_bodies()
        if name.split("/", 1)[0] not in CHAT_FOLDERS or b'"choices"' not in _
    ]
    for name in others:
        body = orjson.loads((FIXTURES / name).read_bytes())
        if not isinstance(body, dict):
            continue
        for graft in (
            {"object": "chat.completion"},
            {"choices": BASE["choices"]},
            {"object": "chat.completion", "choices": BASE["choices"]},
            {"object": "chat.completion", "choices": []},
        ):
            agree_all({**body, **graft}, (None, provider_of(name), "openai", "ollama"))


def test_chat_bodies_with_other_formats_keys_grafted_on() -> None:
    grafts: list[dict[str, Any]] = [
        {"type": "message"},
        {"type": "error"},
        {"stop_reason": "refusal"},
        {"candidates": []},
        {"promptFeedback": {"blockReason": "SAFETY"}},
        {"stopReason": "guardrail_intervened"},
        {"output": [], "status": "completed"},
        {"amazon-bedrock-guardrailAction": "INTERVENED"},
        {"amazon-bedrock-invocationMetrics": {}},
        {"error": {"message": "Provider returned error", "code": 502}},
        {"error": {"message": "flagged", "metadata": {"error_type": "refusal"}}},
        {"error": "boom"},
        {"error": None},
        {"done": True},
        {"finish_reason": "COMPLETE"},
    ]
    for graft in grafts:
        for body in (BASE, AZURE, OPENROUTER):
            agree_all({**body, **graft})
            agree_all({**graft, **body})


def test_null_against_absent_for_vendor_markers() -> None:
    for key in ("provider", "x_groq", "prompt_filter_results", "prompt_annotations"):
        agree_all({**BASE, key: None})
        agree_all(_without({**BASE, key: None}, (key,)))
    agree_all(_with(BASE, ("choices", 0, "native_finish_reason"), None))
    agree_all(_with(BASE, ("choices", 0, "content_filter_results"), None))
    agree_all(_with(BASE, ("choices", 0, "content_filter_results"), {}))
    agree_all({**BASE, "prompt_filter_results": []})
    agree_all(
        {
            **BASE,
            "prompt_filter_results": None,
            "prompt_annotations": AZURE["prompt_filter_results"],
        }
    )


def test_vendor_markers_on_a_later_choice() -> None:
    second = {**BASE["choices"][0], "index": 1}
    markers: list[dict[str, Any]] = [
        {"native_finish_reason": None},
        {"content_filter_results": {}},
    ]
    for marker in markers:
        body = {**BASE, "choices": [BASE["choices"][0], {**second, **marker}]}
        agree_all(body)
        assert openai_chat.parse_fast(_dumps(body), None) is not None


def test_an_azure_marker_on_any_choice_outweighs_an_openrouter_one_on_another() -> None:
    first = BASE["choices"][0]
    native = {**first, "native_finish_reason": "stop"}
    filtered = {**first, "index": 1, "content_filter_results": {}}
    for choices in ([native, filtered], [filtered, native]):
        data = _dumps({**BASE, "choices": choices})
        result = openai_chat.parse_fast(data, None)
        assert result is not None and result.provider == "azure"
        agree(data, None)


def test_the_markers_of_a_lone_choice_that_is_not_choice_zero_still_name_the_vendor() -> None:
    lone = {**BASE["choices"][0], "index": 3}
    for marker, vendor in (
        ({"native_finish_reason": None}, "openrouter"),
        ({"content_filter_results": {}}, "azure"),
    ):
        data = _dumps({**BASE, "choices": [{**lone, **marker}]})
        result = openai_chat.parse_fast(data, None)
        assert result is not None and result.provider == vendor
        agree_all(data)


def test_choice_zero_wherever_it_is() -> None:
    first = BASE["choices"][0]
    other = {**first, "message": {"role": "assistant", "content": "other"}, "finish_reason": "stop"}
    for order in (
        [{**other, "index": 1}, first],
        [{**other, "index": 1}, {**first, "index": None}],
        [{**other, "index": 1}, _without(first, ("index",))],
        [{**other, "index": 2}, {**other, "index": 1}],
        [{**other, "index": True}, first],
        [{**other, "index": 0.0}, first],
        [{**other, "index": -1}, first],
        [first, {**other, "index": 0}],
        [],
        [None, first],
        ["x"],
    ):
        agree_all({**BASE, "choices": order})


def test_a_delta_instead_of_a_message() -> None:
    choice = BASE["choices"][0]
    delta = {"role": "assistant", "content": "from the delta"}
    for message in (None, {}, {"content": "kept"}, "x"):
        body = _with(BASE, ("choices", 0), {**_without(choice, ("message",)), "delta": delta})
        if message is not None:
            body["choices"][0]["message"] = message
        agree_all(body)


def test_big_integers_and_odd_counts_in_usage() -> None:
    for value in (2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**70, -5, 0, 1.0, True, "3"):
        for key in ("prompt_tokens", "completion_tokens", "prompt_cache_hit_tokens"):
            agree_all(_with(BASE, ("usage", key), value), (None, "openai"))
        for key in ("cached_tokens", "cache_write_tokens"):
            agree_all(
                _with(BASE, ("usage", "prompt_tokens_details"), {key: value}), (None, "openai")
            )
    agree_all(_with(BASE, ("usage", "prompt_cache_hit_tokens"), 9), (None, "deepseek"))
    agree_all({**BASE, "usage": {}})
    agree_all({**BASE, "usage": None})


def test_duplicate_keys_read_as_the_last_one() -> None:
    data = _dumps(BASE)
    for extra in (
        b'"choices":[],',
        b'"object":"response",',
        b'"object":"chat.completion",',
        b'"model":"grok-3",',
        b'"usage":{"prompt_tokens":5},',
        b'"provider":"x",',
    ):
        agree_all(b"{" + extra + data[1:])
        agree_all(data[:-1] + b"," + extra[:-1] + b"}")
    message = b'"message":{"role":"assistant","content":"{\\"","refusal":null}'
    assert message in data
    for repeat in (b'"refusal":"no"', b'"content":"again"', b'"refusal":null'):
        agree_all(data.replace(message, message[:-1] + b"," + repeat + b"}"))


def test_refusals_reasoning_and_content_parts() -> None:
    message = ("choices", 0, "message")
    cases: list[dict[str, Any]] = [
        {"content": "partial", "refusal": "I can't help with that."},
        {"content": None, "refusal": "   "},
        {"content": "", "refusal": "no"},
        {"content": [{"type": "text", "text": "a"}, {"type": "refusal", "refusal": "no"}]},
        {"content": [{"type": "refusal", "refusal": " "}, "plain", {"type": "output_text"}]},
        {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "t"}]}]},
        {"content": [1, None, {"type": 3}], "refusal": None},
        {"content": "x", "reasoning_content": " ", "reasoning": "r"},
        {"content": "x", "reasoning_content": "rc", "reasoning": "r"},
        {"content": "x", "reasoning": None, "reasoning_details": [{"text": "d1"}, {"text": ""}]},
        {"content": "x", "reasoning_details": [{"type": "reasoning.text", "text": "d"}, 5]},
        {"content": "x", "reasoning_details": {"text": "not a list"}},
        {
            "content": [{"type": "thinking", "thinking": "inline"}],
            "reasoning_details": [{"text": "d"}],
        },
        {"content": "x\ud83d\ude00 y", "refusal": "\u00a0"},
    ]
    for fields in cases:
        body = _with(BASE, message, {"role": "assistant", **fields})
        for finish in ("stop", "length", "content_filter", "refusal", None, "weird"):
            agree_all(_with(body, ("choices", 0, "finish_reason"), finish), (None, "openai"))


def test_tool_calls_and_legacy_function_calls() -> None:
    call = TOOLS["choices"][0]["message"]["tool_calls"][0]
    message = ("choices", 0, "message")
    cases: list[dict[str, Any]] = [
        {"tool_calls": [call, {**call, "id": None}, {"id": "c2"}]},
        {"tool_calls": [{**call, "function": None}]},
        {"tool_calls": [{**call, "function": {}}]},
        {"tool_calls": [{**call, "function": {"name": "f", "arguments": {"a": 1}}}]},
        {"tool_calls": [{"id": "c", "type": "custom", "custom": {"name": "g", "input": "x"}}]},
        {"tool_calls": [{"id": "c", "function": {}, "custom": {"name": "g", "input": "x"}}]},
        {"tool_calls": None, "function_call": {"name": "f", "arguments": "{}"}},
        {"tool_calls": [call], "function_call": {"name": "f"}},
        {"function_call": {}},
        {"function_call": None},
        {"function_call": "x"},
        {"tool_calls": []},
    ]
    for fields in cases:
        body = _with(TOOLS, message, {"role": "assistant", "content": None, **fields})
        for finish in ("tool_calls", "content_filter", "stop"):
            agree_all(_with(body, ("choices", 0, "finish_reason"), finish), (None, "openai"))


def test_openrouter_native_finish_reasons_and_errors_in_the_body() -> None:
    for native in ("MAX_TOKENS", "SAFETY", "refusal", "Content_Filter", "", None, 5):
        agree_all(_with(OPENROUTER, ("choices", 0, "native_finish_reason"), native))
    errors: list[Any] = [
        {"code": 502, "message": "Provider disconnected"},
        {"code": 403, "message": "flagged", "metadata": {"reasons": ["violence"]}},
        {"message": "declined", "metadata": {"error_type": "refusal"}},
        {},
        "text error",
        [],
        None,
    ]
    for error in errors:
        for finish in ("stop", "length", "tool_calls", "error"):
            body = _with({**OPENROUTER, "error": error}, ("choices", 0, "finish_reason"), finish)
            agree_all(body, (None, "openrouter", "openai"))


def test_azure_filter_results_of_every_shape() -> None:
    results = AZURE["choices"][0]["content_filter_results"]
    variants: list[Any] = [
        {**results, "hate": {"filtered": True, "severity": "high"}},
        {**results, "violence": {"filtered": False, "severity": "medium"}},
        {**results, "jailbreak": {"detected": True, "filtered": False}},
        {**results, "SelfHarm": {"filtered": True, "severity": "low"}},
        {**results, "hate": {"filtered": "true", "severity": 3}},
        {**results, "hate": None},
        {**results, "hate": []},
        {**results, "error": {"code": "content_filter_error", "message": "timed out"}},
        {**results, "error": {}},
        {**results, "custom_blocklists": [{"id": "b1", "filtered": True}]},
        {**results, "custom_blocklists": {"filtered": False, "details": []}},
        {**results, "custom_blocklists": {"filtered": True, "details": [{"id": "b2"}]}},
        {"error": {"code": "x", "message": {"nested": True}}},
        {},
        None,
        [],
        "x",
    ]
    for variant in variants:
        body = _with(AZURE, ("choices", 0, "content_filter_results"), variant)
        agree_all(body, (None, "azure", "openai"))
        prompt = _with(AZURE, ("prompt_filter_results", 0, "content_filter_results"), variant)
        agree_all(prompt, (None, "azure"))
    for index in (0, 1, -1, 2**31, None, "0", True):
        agree_all(_with(AZURE, ("prompt_filter_results", 0, "prompt_index"), index))
    for finish in ("content_filter", "stop", None):
        agree_all(_with(AZURE, ("choices", 0, "finish_reason"), finish), (None, "azure"))
    agree_all({**_without(AZURE, ("prompt_filter_results",)), "prompt_annotations": []})
    agree_all({**AZURE, "prompt_filter_results": [None]})


def test_moderation_of_every_shape() -> None:
    moderation = MODERATION["moderation"]
    first = moderation["input"]["results"][0]
    variants: list[Any] = [
        {"input": {**moderation["input"], "results": [{**first, "blocked": True}]}},
        {"input": {**moderation["input"], "action": "BLOCK"}},
        {"input": {**moderation["input"], "results": None}},
        {"input": {**first, "type": "moderation_result"}},
        {"input": {"type": "error", "code": "timeout", "message": "moderation timed out"}},
        {"output": {"type": "error", "code": 5, "message": {"detail": "x"}}},
        {"input": {}, "output": None},
        {"input": {**moderation["input"], "results": [{"flagged": False, "categories": {}}]}},
        {"input": {"results": [{"categories": {"violence": True, "hate": False}}]}},
        {"input": {"results": [{"flagged": True, "model": 5}]}},
        {"input": {"results": [{"flagged": "yes", "categories": {"a": "true"}}]}},
        {"input": {"results": [None, 3]}},
        {"input": "x"},
        {},
        [],
        None,
        "x",
    ]
    for variant in variants:
        agree_all({**MODERATION, "moderation": variant}, (None, "openai"))
    blocked = {"input": {**moderation["input"], "results": [{**first, "blocked": True}]}}
    for message in ({"content": "partial"}, {"refusal": "no"}, {"content": None}):
        body = _with({**MODERATION, "moderation": blocked}, ("choices", 0, "message"), message)
        agree_all(body, (None, "openai"))


def test_vendor_of_the_model_name() -> None:
    for model in ("deepseek-chat", "grok-4", "mistral-large", "Codestral", "org/deepseek-v3", ""):
        agree_all({**BASE, "model": model})
    agree_all({**BASE, "system_fingerprint": "fp_ollama"})
    agree_all({**BASE, "x_groq": {"id": "req"}})
    agree_all({**BASE, "provider": "Groq", "x_groq": {}})


def test_odd_json_around_the_declared_fields() -> None:
    data = _dumps(BASE)
    assert data.endswith(b"}")
    for tail in (
        b',"model":"\\ud800"}',
        b',"model":"\xff"}',
        b',"id":"a\\u0000b"}',
        b',"usage":{"prompt_tokens":1e400}}',
        b',"moderation":' + b"[" * 1100 + b"]" * 1100 + b"}",
        b',"error":{"message":"\\ud800"}}',
        b',"moderation":{"input":{"results":[{"flagged":true,"model":"\xfe"}]}}}',
    ):
        agree_all(data[:-1] + tail, (None, "openai"))


# --- (c) hypothesis: every declared field, any JSON value -------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
    st.sampled_from(["stop", "length", "content_filter", "refusal", "chat.completion", "SAFETY"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["text", "type", "filtered", "severity", "flagged", "id", "name"]),
            inner,
            max_size=3,
        ),
    ),
    max_leaves=5,
)
BASES = [BASE, AZURE, OPENROUTER, TOOLS, MODERATION]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(BASES),
    st.lists(st.tuples(st.sampled_from(DECLARED), st.booleans(), values), min_size=1, max_size=3),
    st.sampled_from([None, "openai", "azure", "openrouter", "ollama"]),
)
def test_declared_fields_take_any_value(
    base: dict[str, Any], changes: list[tuple[tuple[Any, ...], bool, Any]], provider: str | None
) -> None:
    body = base
    for path, delete, value in changes:
        body = _without(body, path) if delete else _with(body, path, value)
    agree(_dumps(body), provider)


# --- streams: `StreamDecoder.read_strict` on the plain text chunk ---------------------------

CHAT_STREAMS = sorted(
    path
    for folder in CHAT_FOLDERS
    for path in (FIXTURES / folder).rglob("*")
    if path.name.endswith((".sse", ".chunks.txt"))
)
PLAIN: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "created": 1,
    "model": "gpt-4o",
    "system_fingerprint": "fp_1",
    "choices": [{"index": 0, "delta": {"content": "Hi"}, "logprobs": None, "finish_reason": None}],
}


def same_both_ways(raw: bytes, provider: str | None = None, chunk: int = 4096) -> int:
    """Assert equal events and responses when chunks are decoded strictly (`read_strict`) and
    when they are read from their decoded value by the lenient pass (`read_strict` off);
    return how many chunks the strict decode answered."""
    answered = 0
    original_quick = openai_chat.ChatStreamReader.read_strict

    def counting_quick(
        self: openai_chat.ChatStreamReader, name: str | None, data: str | bytes
    ) -> list[StreamEvent] | None:
        nonlocal answered
        events = original_quick(self, name, data)
        answered += events is not None
        return events

    openai_chat.ChatStreamReader.read_strict = counting_quick  # type: ignore[method-assign]
    try:
        fast = run_stream(raw, provider, chunk)
    finally:
        openai_chat.ChatStreamReader.read_strict = original_quick  # type: ignore[method-assign]
    with strict_off(openai_chat.ChatStreamReader):
        full = run_stream(raw, provider, chunk)
    assert fast == full
    assert fast[1].reasoning_details == full[1].reasoning_details
    return answered


def started() -> openai_chat.ChatStreamReader:
    """A decoder that has read a first chunk (which sets the model and request id)."""
    decoder = openai_chat.ChatStreamReader("openai")
    decoder.feed(None, orjson.dumps({**PLAIN, "choices": [{"index": 0, "delta": {"role": "x"}}]}))
    return decoder


def test_the_plain_chunk_is_read_strictly() -> None:
    decoder = started()
    assert decoder.read_strict(None, orjson.dumps(PLAIN)) == [TextDelta("Hi")]
    assert decoder._text
    assert decoder.read_strict("message", orjson.dumps(PLAIN).decode()) == [TextDelta("Hi")]
    empty = _with(PLAIN, ("choices", 0, "delta", "content"), "")
    fresh = started()
    assert fresh.read_strict(None, orjson.dumps(empty)) == []
    assert not fresh._text
    # Keys the schema does not declare may hold anything.
    unread: list[Any] = [None, 5, [1], {"a": {}}, 2**70]
    for key in ("created", "service_tier", "obfuscation"):
        for value in unread:
            odd = _dumps({**PLAIN, key: value})
            assert started().read_strict(None, odd) == [TextDelta("Hi")]
    logprobs = _with(PLAIN, ("choices", 0, "logprobs"), {"content": [{"logprob": -0.1}]})
    assert started().read_strict(None, orjson.dumps(logprobs)) == [TextDelta("Hi")]
    role = _with(PLAIN, ("choices", 0, "delta", "role"), 7)
    assert started().read_strict(None, orjson.dumps(role)) == [TextDelta("Hi")]


def test_the_first_chunk_is_read_strictly_too() -> None:
    decoder = openai_chat.ChatStreamReader("openai")
    assert decoder.read_strict(None, orjson.dumps(PLAIN)) == [TextDelta("Hi")]
    assert decoder.acc.model == "gpt-4o"
    assert decoder.acc.request_id == "chatcmpl-1"


OTHER_CHUNKS: list[tuple[str, Any]] = [
    ("other-key", {**PLAIN, "usage": None}),
    ("x-groq", {**PLAIN, "x_groq": {}}),
    ("no-choices", _without(PLAIN, ("choices",))),
    ("two-choices", {**PLAIN, "choices": PLAIN["choices"] * 2}),
    ("no-choice", {**PLAIN, "choices": []}),
    ("choices-object", {**PLAIN, "choices": PLAIN["choices"][0]}),
    ("choice-key", _with(PLAIN, ("choices", 0, "content_filter_results"), {})),
    ("finish", _with(PLAIN, ("choices", 0, "finish_reason"), "stop")),
    ("finish-number", _with(PLAIN, ("choices", 0, "finish_reason"), 0)),
    ("index-1", _with(PLAIN, ("choices", 0, "index"), 1)),
    ("index-null", _with(PLAIN, ("choices", 0, "index"), None)),
    ("index-true", _with(PLAIN, ("choices", 0, "index"), True)),
    ("no-delta", _without(PLAIN, ("choices", 0, "delta"))),
    ("delta-null", _with(PLAIN, ("choices", 0, "delta"), None)),
    ("delta-key", _with(PLAIN, ("choices", 0, "delta", "refusal"), None)),
    ("tool-calls", _with(PLAIN, ("choices", 0, "delta", "tool_calls"), [])),
    ("content-null", _with(PLAIN, ("choices", 0, "delta", "content"), None)),
    ("content-number", _with(PLAIN, ("choices", 0, "delta", "content"), 5)),
    ("content-parts", _with(PLAIN, ("choices", 0, "delta", "content"), [{"text": "a"}])),
    ("no-content", _without(PLAIN, ("choices", 0, "delta", "content"))),
    ("array", [PLAIN]),
]


@pytest.mark.parametrize(
    ("label", "payload"), OTHER_CHUNKS, ids=[label for label, _ in OTHER_CHUNKS]
)
def test_other_chunks_read_alike_both_ways(label: str, payload: Any) -> None:
    same_both_ways(b"data: " + orjson.dumps(PLAIN) + b"\n\ndata: " + orjson.dumps(payload))


@pytest.mark.parametrize(
    "data",
    [
        b'{"choices":[{"delta":{"content":"\\ud83d"}}]}',
        b'{"choices":[{"delta":{"content":"\xff"}}]}',
        b'{"model":NaN,"choices":[{"delta":{"content":"a"}}]}',
        b'{"model":' + b"[" * 3000 + b"]" * 3000 + b',"choices":[{"delta":{"content":"a"}}]}',
        b'{"choices":[{"delta":{"content":"a"}}]} x',
    ],
    ids=["lone-surrogate", "not-utf8", "nan", "deep", "trailing"],
)
def test_text_the_fast_reader_refuses_is_left_to_decode(data: bytes) -> None:
    assert started().read_strict(None, data) is None


@pytest.mark.parametrize(
    "path", CHAT_STREAMS, ids=[str(p.relative_to(FIXTURES)) for p in CHAT_STREAMS]
)
def test_stream_fixture_same_both_ways(path: Path) -> None:
    raw = path.read_bytes()
    answered = same_both_ways(raw)
    same_both_ways(raw, provider_of(str(path.relative_to(FIXTURES))), chunk=7)
    if "responses" not in path.name:  # Azure's Responses streams sit in the same folder
        # Recorded chunks are well typed: the strict decode reads every one.
        assert answered == len(_json_events(path))


RAW_TAILS = [
    b',"choices":[{"delta":{"content":"dup"}}]',
    b',"choices":[{"delta":{"content":"dup"},"finish_reason":"stop"}]',
    b',"choices":null',
    b',"model":"\xff\xfe"',
    b',"id":"\\ud800"',
    b',"created":1e999',
    b',"created":123456789012345678901234567890',
    b',"model":' + b"[" * 600 + b"]" * 600,
]


@st.composite
def mutated_chunk(draw: st.DrawFn) -> bytes:
    """A plain chunk as JSON bytes, edited where the fast reader looks."""
    edited = [
        ("id",),
        ("usage",),
        ("choices",),
        ("choices", 0),
        ("choices", 0, "index"),
        ("choices", 0, "delta"),
        ("choices", 0, "finish_reason"),
        ("choices", 0, "logprobs"),
        ("choices", 0, "delta", "content"),
        ("choices", 0, "delta", "role"),
        ("choices", 0, "delta", "refusal"),
    ]
    payload: Any = copy.deepcopy(PLAIN)
    edit = draw(st.sampled_from(["none", "value", "drop", "tree", "raw"]))
    if edit == "value":
        payload = _with(payload, draw(st.sampled_from(edited)), draw(WRONG_VALUES))
    elif edit == "drop":
        payload = _without(payload, draw(st.sampled_from(edited)))
    elif edit == "tree":
        payload = draw(mutated(payload))
    data = _dumps(payload)
    if edit == "raw" and data.endswith(b"}"):
        data = data[:-1] + draw(st.sampled_from(RAW_TAILS)) + b"}"
    return data


def _json_events(path: Path) -> list[bytes]:
    """The JSON data of each event of a recorded stream (not `[DONE]`)."""
    found = []
    for event in _sse_events(path):
        for line in event.split(b"\n"):
            data = line[5:].strip() if line.startswith(b"data:") else line.strip()
            if data.startswith(b"{"):
                found.append(data)
    return found


def _sse_events(path: Path) -> list[bytes]:
    raw = path.read_bytes()
    if path.name.endswith(".chunks.txt"):
        return [line for line in raw.split(b"\n") if line.strip()]
    return [block for block in raw.split(b"\n\n") if block.strip()]


def _sse_join(path: Path, events: list[bytes]) -> bytes:
    if path.name.endswith(".chunks.txt"):
        return b"\n".join(events) + b"\n"
    return b"\n\n".join(events) + b"\n\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(CHAT_STREAMS),
    st.lists(st.tuples(st.integers(0, 200), mutated_chunk()), max_size=4),
)
def test_mutated_chunks_same_both_ways(path: Path, inserts: list[tuple[int, bytes]]) -> None:
    events = _sse_events(path)
    sse = not path.name.endswith(".chunks.txt")
    for at, data in inserts:
        events.insert(at % (len(events) + 1), b"data: " + data if sse else data)
    raw = _sse_join(path, events)
    same_both_ways(raw)
    same_both_ways(raw, "openai")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_stream_bytes_same_both_ways(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(CHAT_STREAMS))
    raw = data.draw(mutated_bytes(path.read_bytes()))
    same_both_ways(raw)
    same_both_ways(raw, "openai")
