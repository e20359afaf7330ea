"""Ollama's typed fast path (`ollama.parse_fast`) gives what the dict path gives.

Native Ollama bodies carry no hint key and are asked after Cohere's, so with no provider
named the fast path must decline every body that detection would give to another module:
any key an earlier format claims on, `choices`, a Bedrock InvokeModel shape, a body Cohere
claims, an error body. The cases below probe each of those checks and every declared field
with values of other types, null and absent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals.providers import _CLAIMED_EARLIER, normalize
from refusals.providers import ollama as ollama_module
from tests.providers._fast_support import FIXTURES, agree, taken_fast

NATIVE = sorted(
    path for path in (FIXTURES / "other").rglob("ollama-*.json") if "ollama-error-" not in path.name
)

# Keys whose presence sends a body elsewhere: the ones earlier formats claim on, the
# OpenAI-style `choices`, the ones `bedrock.is_invoke_body` reads, and the ones Cohere's
# detection (asked first) would claim the body by.
ELSEWHERE = sorted(
    _CLAIMED_EARLIER
    | {
        "choices",
        "amazon-bedrock-guardrailAction",
        "amazon-bedrock-invocationMetrics",
        "results",
        "generation",
        "outputs",
        "finish_reason",
        "generation_id",
    }
)

CHAT: dict[str, Any] = {
    "model": "llama3.2",
    "created_at": "2025-05-14T09:12:43.416799Z",
    "message": {"role": "assistant", "content": "Hello", "thinking": "hm"},
    "done_reason": "stop",
    "done": True,
    "total_duration": 5191566416,
    "prompt_eval_count": 26,
    "eval_count": 298,
}
GENERATE: dict[str, Any] = {
    "model": "codellama:code",
    "response": "def f(): pass",
    "thinking": "hm",
    "done": True,
    "done_reason": "stop",
    "context": [1, 2, 3],
    "prompt_eval_count": 17,
    "eval_count": 63,
}


def _both(body: Any) -> None:
    data = _dumps(body) if not isinstance(body, bytes) else body
    agree(data, None)
    agree(data, "ollama")


def _dumps(body: Any) -> bytes:
    try:
        return orjson.dumps(body)
    except TypeError:  # integers past 64 bits
        return json.dumps(body).encode()


def _with(base: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A deep copy of `base` with `value` at `path` (`...` as the value removes the key)."""
    body: dict[str, Any] = orjson.loads(orjson.dumps(base))
    holder = body
    for key in path[:-1]:
        holder = holder[key]
    if value is ...:
        holder.pop(path[-1], None)
    else:
        holder[path[-1]] = value
    return body


@pytest.mark.parametrize("path", NATIVE, ids=[path.name for path in NATIVE])
def test_every_native_response_fixture_takes_the_fast_path(path: Path) -> None:
    data = path.read_bytes()
    assert taken_fast(data, None)
    assert taken_fast(data, "ollama")
    _both(data)


def test_error_bodies_stay_on_the_dict_path() -> None:
    errors = sorted((FIXTURES / "other").rglob("ollama-error-*.json"))
    assert errors
    for path in errors:
        data = path.read_bytes()
        assert not taken_fast(data, None)
        assert not taken_fast(data, "ollama")
        _both(data)


@pytest.mark.parametrize("key", ELSEWHERE)
@pytest.mark.parametrize("base", [CHAT, GENERATE], ids=["chat", "generate"])
@pytest.mark.parametrize("value", [None, "message", {"type": "x"}, [{"text": "x"}], 1])
def test_a_key_that_points_elsewhere_sends_the_body_to_the_dict_path(
    key: str, base: dict[str, Any], value: Any
) -> None:
    data = orjson.dumps({**base, key: value})
    if not (key == "error" and value is None):
        # `"error": null` is no error body and points nowhere: the strict read takes it.
        # Another format's strict read may take the body (Cohere's, for a string
        # `generation_id`); Ollama's never does, and the dict path agrees (`_both`).
        assert ollama_module.parse_fast(data, None) is None
    _both(data)


def test_a_choices_key_that_the_byte_sniff_misses_is_still_declined() -> None:
    # `_fast` sends "ollama" bodies without the bytes `"choices"` here; an escaped key
    # spells it otherwise, and `_module_for` still gives the body to openai_chat.
    data = orjson.dumps(CHAT)[:-1] + b',"\\u0063hoices":[]}'
    assert not taken_fast(data, "ollama")
    _both(data)


def test_other_formats_with_ollama_keys_grafted_in_agree() -> None:
    for path in sorted(FIXTURES.rglob("*.json")):
        try:
            body = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError:
            continue
        if not isinstance(body, dict):
            continue
        _both({**body, "done": True})
        _both({**body, "done": True, "response": "r"})
        _both({**body, "done": False, "message": CHAT["message"]})


WRONG_TYPES: list[tuple[tuple[str, ...], Any]] = [
    (("model",), 5),
    (("model",), None),
    (("message",), "text"),
    (("message",), []),
    (("message",), {}),
    (("message",), None),
    (("message",), {"content": None}),
    (("message",), {"images": []}),
    (("message",), {"thinking": "only"}),
    (("message",), {"thinking": None}),
    (("message",), {"content": ""}),
    (("message",), {"role": None}),
    (("message",), {"tool_calls": None}),
    (("message", "role"), 5),
    (("message", "content"), 5),
    (("message", "content"), ["a"]),
    (("message", "thinking"), 5),
    (("message", "thinking"), ""),
    (("message", "tool_calls"), 5),
    (("message", "tool_calls"), [5, {"function": 5}, {"id": 5, "function": {"name": 5}}]),
    (("message", "tool_calls"), [{"function": {"name": "f", "arguments": {"a": [1, 2**70]}}}]),
    (("message", "tool_calls"), [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]),
    (("response",), "beside a message"),
    (("response",), 5),
    (("thinking",), 5),
    (("done",), False),
    (("done",), None),
    (("done",), 1),
    (("done",), "true"),
    (("done_reason",), None),
    (("done_reason",), 5),
    (("done_reason",), "load"),
    (("done_reason",), "unload"),
    (("done_reason",), "length"),
    (("done_reason",), "STOP"),
    (("done_reason",), "new"),
    (("prompt_eval_count",), None),
    (("prompt_eval_count",), -1),
    (("prompt_eval_count",), 2**63),
    (("prompt_eval_count",), 2**64),
    (("prompt_eval_count",), True),
    (("prompt_eval_count",), 1.0),
    (("eval_count",), "5"),
    (("text",), "cohere's v1 text"),
]


@pytest.mark.parametrize(("path", "value"), WRONG_TYPES, ids=[repr(c) for c in WRONG_TYPES])
@pytest.mark.parametrize("base", [CHAT, GENERATE], ids=["chat", "generate"])
def test_fields_of_other_types_agree(
    base: dict[str, Any], path: tuple[str, ...], value: Any
) -> None:
    if path[0] == "message" and len(path) > 1 and not isinstance(base.get("message"), dict):
        base = {**base, "message": {}}
    _both(_with(base, path, value))


@pytest.mark.parametrize("key", sorted({*CHAT, *GENERATE}))
@pytest.mark.parametrize("base", [CHAT, GENERATE], ids=["chat", "generate"])
def test_null_and_absent_keys_agree(key: str, base: dict[str, Any]) -> None:
    _both(_with(base, (key,), None))
    _both(_with(base, (key,), ...))


@pytest.mark.parametrize(
    "body",
    [
        {"done": True, "response": "r"},
        {"done": False, "message": {"role": "assistant"}},
        {"done": True, "message": {"thinking": "only thinking"}, "response": "unread"},
    ],
)
def test_each_rule_of_detection_takes_the_fast_path(body: dict[str, Any]) -> None:
    data = orjson.dumps(body)
    assert normalize(data).provider == "ollama"
    assert taken_fast(data, None)
    _both(data)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"done": None},
        {"done_reason": None},
        {"done_reason": "stop"},
        {"response": None},
        {"message": None},
        {"done": True},
        {"done": True, "message": {}, "response": "read instead"},
        {"done": True, "message": {"images": []}, "response": "not read"},
        {"error": "model not found"},
        {"error": "boom", "message": {"role": "assistant", "content": "x"}, "done": True},
        {"done": True, "response": "x", "text": "x", "finish_reason": "COMPLETE"},
    ],
)
def test_bodies_at_the_edge_of_detection_agree(body: dict[str, Any]) -> None:
    _both(body)


@pytest.mark.parametrize(
    "data",
    [
        b'{"done":true,"done":false,"response":"a"}',
        b'{"done":1,"done":true,"response":"a"}',
        b'{"done":true,"response":5,"response":"a"}',
        b'{"done":true,"message":"x","message":{"role":"assistant","content":"a"}}',
        b'{"done":true,"message":{},"message":{"role":"assistant"},"response":"b"}',
        b'{"done":true,"response":"\\ud83d\\ude00"}',
        b'{"done":true,"response":"\\ud800"}',
        b'{"done":true,"response":"a\xff"}',
        b'{"done":true,"message":{"role":"\\ud800","content":"a"}}',
        b'{"done":true,"message":{"role":"a","tool_calls":[{"id":"\\udc00"}]}}',
        b'{"done":true,"response":"a","eval_count":1e400}',
        b'{"done":true,"response":"a","eval_count":-9223372036854775809}',
    ],
)
def test_duplicate_keys_and_odd_text_agree(data: bytes) -> None:
    _both(data)
    agree(data.decode("utf-8", "replace"), None)


KEYS = sorted(
    {
        *CHAT,
        *GENERATE,
        "role",
        "content",
        "images",
        "tool_calls",
        "function",
        "name",
        "arguments",
        "id",
        "error",
        "choices",
        "object",
        "finish_reason",
    }
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, -1, 7, 2**63 - 1, 2**63, 2**64, 1.5]),
    st.text(max_size=6),
    st.sampled_from(["stop", "length", "load", "assistant", "COMPLETE", ""]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)
    ),
    max_leaves=10,
)
changes = st.dictionaries(st.sampled_from(KEYS), values, max_size=3)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([CHAT, GENERATE]), changes, changes, st.lists(st.sampled_from(KEYS)))
def test_ollama_shaped_bodies_agree(
    base: dict[str, Any], top: dict[str, Any], message: dict[str, Any], dropped: list[str]
) -> None:
    body = _with(base, ("x",), ...)
    if isinstance(body.get("message"), dict):
        body["message"].update(message)
        for key in dropped:
            body["message"].pop(key, None)
    for key in dropped:
        body.pop(key, None)
    body.update(top)
    _both(body)
