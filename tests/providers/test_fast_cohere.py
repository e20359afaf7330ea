"""Cohere's typed fast path (`cohere.parse_fast`) gives what the dict path gives.

Cohere bodies carry no hint key, so with no provider named the fast path must decline
every body that detection would give to another module: any key an earlier format claims
on, `choices`, a Bedrock InvokeModel shape, an error body. The cases below probe each of
those checks and every declared field with values of other types, null and absent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals.model import FinishReason
from refusals.providers import _CLAIMED_EARLIER, normalize
from tests.providers._fast_support import FIXTURES, agree, taken_fast

COHERE = sorted((FIXTURES / "other").rglob("cohere-*.json"))
RESPONSES = [path for path in COHERE if "cohere-error-" not in path.name]

# Keys whose presence sends a body elsewhere: the ones earlier formats claim on, the
# one `detect_provider` refuses, and the ones `bedrock.is_invoke_body` reads.
ELSEWHERE = sorted(
    _CLAIMED_EARLIER
    | {
        "choices",
        "amazon-bedrock-guardrailAction",
        "amazon-bedrock-invocationMetrics",
        "results",
        "generation",
        "outputs",
    }
)

V2: dict[str, Any] = {
    "id": "c0ffee",
    "message": {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]},
    "finish_reason": "COMPLETE",
    "usage": {
        "billed_units": {"input_tokens": 3, "output_tokens": 2},
        "tokens": {"input_tokens": 30, "output_tokens": 2},
        "cached_tokens": 8,
    },
}
V1: dict[str, Any] = {
    "response_id": "r1",
    "text": "Hello",
    "generation_id": "g1",
    "finish_reason": "COMPLETE",
    "meta": {"billed_units": {"input_tokens": 3, "output_tokens": 2}},
}


def _both(body: Any) -> None:
    data = orjson.dumps(body) if not isinstance(body, bytes) else body
    agree(data, None)
    agree(data, "cohere")


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


def _dumps(body: Any) -> bytes:
    try:
        return orjson.dumps(body)
    except TypeError:  # integers past 64 bits
        return json.dumps(body).encode()


@pytest.mark.parametrize("path", RESPONSES, ids=[path.name for path in RESPONSES])
def test_every_cohere_response_fixture_takes_the_fast_path(path: Path) -> None:
    data = path.read_bytes()
    assert taken_fast(data, None)
    assert taken_fast(data, "cohere")
    _both(data)


@pytest.mark.parametrize("path", COHERE, ids=[path.name for path in COHERE])
def test_error_bodies_stay_on_the_dict_path(path: Path) -> None:
    data = path.read_bytes()
    if "cohere-error-" in path.name:
        assert not taken_fast(data, "cohere")
        assert normalize(data, provider="cohere").finish_reason in (
            FinishReason.ERROR,
            FinishReason.CONTENT_FILTER,
        )
    _both(data)


@pytest.mark.parametrize("key", ELSEWHERE)
@pytest.mark.parametrize("base", [V1, V2], ids=["v1", "v2"])
@pytest.mark.parametrize("value", [None, "message", {"type": "x"}, [{"text": "x"}], 1])
def test_a_key_that_points_elsewhere_sends_the_body_to_the_dict_path(
    key: str, base: dict[str, Any], value: Any
) -> None:
    data = orjson.dumps({**base, key: value})
    assert not taken_fast(data, None)
    _both(data)


def test_other_formats_with_cohere_keys_grafted_in_agree() -> None:
    grafts = {"finish_reason": "COMPLETE", "generation_id": "g", "text": "t"}
    for path in sorted(FIXTURES.rglob("*.json")):
        try:
            body = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError:
            continue
        if not isinstance(body, dict):
            continue
        for key, value in grafts.items():
            _both({**body, key: value})
        _both({**body, "message": V2["message"], "finish_reason": "COMPLETE"})


WRONG_TYPES: list[tuple[tuple[str, ...], Any]] = [
    (("id",), 5),
    (("message",), "an error"),
    (("message",), []),
    (("message",), {}),
    (("message", "role"), 5),
    (("message", "role"), None),
    (("message", "content"), "plain text"),
    (("message", "content"), {"text": "x"}),
    (("message", "content"), [5]),
    (("message", "content"), []),
    (("message", "content"), [{"type": 5, "text": "x"}]),
    (("message", "content"), [{"text": "untyped"}]),
    (("message", "content"), [{"type": "text", "text": 5}]),
    (("message", "content"), [{"type": "text", "text": ""}]),
    (("message", "content"), [{"type": "text"}]),
    (("message", "content"), [{"type": "image", "text": "x"}]),
    (("message", "content"), [{"type": "thinking", "thinking": "hm"}, {"type": "text"}]),
    (("message", "content"), [{"type": "thinking", "thinking": 5}]),
    (("message", "content"), [{"type": "text", "text": "a"}, {"type": None, "text": "b"}]),
    (("message", "tool_plan"), "plan"),
    (("message", "tool_plan"), 5),
    (("message", "tool_plan"), ""),
    (("message", "tool_calls"), 5),
    (("message", "tool_calls"), [5, {"function": 5}, {"id": 5, "function": {"name": 5}}]),
    (("message", "tool_calls"), [{"id": "c", "function": {"name": "f", "arguments": {"a": 1}}}]),
    (("message", "tool_calls"), [{"function": {"arguments": 2**70}}]),
    (("finish_reason",), 5),
    (("finish_reason",), "complete"),
    (("finish_reason",), ""),
    (("finish_reason",), "NEW_VALUE"),
    (("finish_reason",), "ERROR_TOXIC"),
    (("finish_reason",), "TOOL_CALL"),
    (("model",), 5),
    (("model",), "command-a"),
    (("usage",), 5),
    (("usage",), []),
    (("usage",), {}),
    (("usage", "tokens"), {}),
    (("usage", "tokens"), {"other": 1}),
    (("usage", "tokens"), {"input_tokens": None}),
    (("usage", "tokens"), {"output_tokens": 4}),
    (("usage", "tokens"), {"input_tokens": 4, "output_tokens": 1, "other": 1}),
    (("usage", "tokens"), {"input_tokens": 4, "output_tokens": -1}),
    (("usage", "tokens"), {"input_tokens": -3, "output_tokens": 0}),
    (("usage", "tokens"), {"input_tokens": 2**63, "output_tokens": 1}),
    (("usage", "tokens"), {"input_tokens": True, "output_tokens": 1}),
    (("usage", "tokens"), {"input_tokens": 1.0, "output_tokens": 1}),
    (("usage", "tokens"), []),
    (("usage", "tokens"), None),
    (("usage", "billed_units"), 5),
    (("usage", "billed_units"), {"input_tokens": 1.5, "output_tokens": 2**64}),
    (("usage", "cached_tokens"), -1),
    (("usage", "cached_tokens"), 2**64),
    (("usage", "cached_tokens"), True),
    (("usage", "cached_tokens"), None),
    (("text",), "a v1 text beside a v2 message"),
    (("generation_id",), "g"),
    (("tool_calls",), [{"name": "v1-style"}]),
]


@pytest.mark.parametrize(("path", "value"), WRONG_TYPES, ids=[repr(c) for c in WRONG_TYPES])
def test_v2_fields_of_other_types_agree(path: tuple[str, ...], value: Any) -> None:
    _both(_dumps(_with(V2, path, value)))


V1_CASES: list[tuple[tuple[str, ...], Any]] = [
    (("text",), 5),
    (("text",), None),
    (("text",), ""),
    (("generation_id",), 5),
    (("generation_id",), None),
    (("response_id",), None),
    (("response_id",), ""),
    (("finish_reason",), None),
    (("finish_reason",), "lower"),
    (("finish_reason",), "ERROR_TOXIC"),
    (("finish_reason",), "USER_CANCEL"),
    (("meta",), None),
    (("meta",), "meta"),
    (("meta", "billed_units"), None),
    (("meta", "tokens"), {"input_tokens": 7, "output_tokens": 1}),
    (("meta", "cached_tokens"), 4),
    (("tool_calls",), 5),
    (("tool_calls",), [{"name": "f", "parameters": {"day": "x"}}]),
    (("tool_calls",), [{"name": 5, "parameters": "text"}, 7]),
    (("message",), "an error message beside a v1 body"),
]


@pytest.mark.parametrize(("path", "value"), V1_CASES, ids=[repr(c) for c in V1_CASES])
def test_v1_fields_of_other_types_agree(path: tuple[str, ...], value: Any) -> None:
    _both(_dumps(_with(V1, path, value)))


@pytest.mark.parametrize("key", [*V1, *V2])
@pytest.mark.parametrize("base", [V1, V2], ids=["v1", "v2"])
def test_null_and_absent_keys_agree(key: str, base: dict[str, Any]) -> None:
    _both(_with(base, (key,), None))
    _both(_with(base, (key,), ...))


@pytest.mark.parametrize(
    "body",
    [
        {"generation_id": "g", "finish_reason": "lower"},
        {"generation_id": "g"},
        {"text": "x", "finish_reason": "NEW_VALUE"},
        {"message": {"role": "assistant"}, "finish_reason": "COMPLETE"},
        {"message": {"role": "", "content": "plain"}, "finish_reason": "ERROR_TOXIC"},
    ],
)
def test_each_rule_of_detection_takes_the_fast_path(body: dict[str, Any]) -> None:
    data = orjson.dumps(body)
    assert normalize(data).provider == "cohere"
    assert taken_fast(data, None)
    _both(data)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"text": None},
        {"finish_reason": None},
        {"generation_id": None},
        {"message": None, "finish_reason": "COMPLETE"},
        {"text": "only text"},
        {"message": {"content": "no role"}, "finish_reason": "COMPLETE"},
        {"message": {"role": "assistant"}, "finish_reason": "lower"},
        {"message": "rate limited", "finish_reason": "COMPLETE"},
        {"message": "rate limited"},
        {"text": "x", "finish_reason": "COMPLETE", "done": True, "response": "ollama"},
    ],
)
def test_bodies_at_the_edge_of_detection_agree(body: dict[str, Any]) -> None:
    _both(body)


@pytest.mark.parametrize(
    "data",
    [
        b'{"text":"a","text":"b","finish_reason":"COMPLETE"}',
        b'{"finish_reason":5,"finish_reason":"COMPLETE","text":"a"}',
        b'{"finish_reason":"COMPLETE","finish_reason":5,"text":"a"}',
        b'{"message":"err","message":{"role":"assistant","content":"x"},"finish_reason":"ERROR"}',
        b'{"text":"a","finish_reason":"COMPLETE","type":"message","type":"x"}',
        b'{"text":"a","finish_reason":"COMPLETE","meta":{"tokens":{},"tokens":{"input_tokens":1}}}',
        b'{"text":"\\ud83d\\ude00","finish_reason":"COMPLETE"}',
        b'{"text":"\\ud800","finish_reason":"COMPLETE"}',
        b'{"text":"a\xff","finish_reason":"COMPLETE"}',
        b'{"text":"a","finish_reason":"COMPLETE","meta":{"billed_units":{"x":"\\udc00"}}}',
        b'{"text":"a","finish_reason":"COMPLETE","tool_calls":[{"name":"\\ud800"}]}',
        b'{"text":"a","finish_reason":"COMPLETE","meta":{"cached_tokens":1e400}}',
    ],
)
def test_duplicate_keys_and_odd_text_agree(data: bytes) -> None:
    _both(data)
    agree(data.decode("utf-8", "replace"), None)


KEYS = sorted(
    {
        "id",
        "response_id",
        "text",
        "generation_id",
        "message",
        "finish_reason",
        "model",
        "meta",
        "usage",
        "tool_calls",
        "role",
        "content",
        "type",
        "thinking",
        "tool_plan",
        "function",
        "name",
        "arguments",
        "parameters",
        "billed_units",
        "tokens",
        "input_tokens",
        "output_tokens",
        "cached_tokens",
        "done",
        "choices",
        "error",
    }
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, -1, 7, 2**63 - 1, 2**63, 2**64, 1.5]),
    st.text(max_size=6),
    st.sampled_from(["COMPLETE", "MAX_TOKENS", "ERROR_TOXIC", "TOOL_CALL", "assistant", "text"]),
    st.sampled_from(["thinking", "lower", ""]),
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
@given(st.sampled_from([V1, V2]), changes, changes, changes, changes)
def test_cohere_shaped_bodies_agree(
    base: dict[str, Any],
    top: dict[str, Any],
    message: dict[str, Any],
    usage: dict[str, Any],
    tokens: dict[str, Any],
) -> None:
    body = _with(base, ("x",), ...)
    for holder in ("message", "usage", "meta"):
        if isinstance(body.get(holder), dict):
            body[holder].update(message if holder == "message" else usage)
            if isinstance(body[holder].get("tokens"), dict):
                body[holder]["tokens"].update(tokens)
    body.update(top)
    _both(_dumps(body))
