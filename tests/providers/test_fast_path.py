"""The typed fast path of `normalize` gives exactly what the dict path gives.

Every fixture body, with and without its provider name, and hypothesis mutations of them
(keys dropped, values of other types, keys of other formats added, numbers past 64 bits,
text that is not UTF-8) must come out the same through both paths.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.providers._fast_support import (
    agree,
    all_keys,
    decoded_fixtures,
    fixture_bodies,
    provider_of,
    taken_fast,
)

BODIES = fixture_bodies()
DECODED = decoded_fixtures()
KEYS = all_keys([value for _, value in DECODED])
VALUES = [value for _, value in DECODED]


@pytest.mark.parametrize(("name", "data"), BODIES, ids=[name for name, _ in BODIES])
def test_fixture_same_both_ways(name: str, data: bytes) -> None:
    agree(data, None)
    agree(data.decode("utf-8", "replace"), None)
    provider = provider_of(name)
    if provider is not None:
        agree(data, provider)
    agree(data, None, status=200)


def test_every_response_fixture_takes_the_fast_path() -> None:
    """Every format has a fast path: a response fixture that falls back to the dict path
    is a fast path that quietly declines (error bodies and Bedrock InvokeModel bodies are
    read by the dict path by design)."""
    missing = []
    checked = 0
    for name, data in BODIES:
        base = name.rsplit("/", 1)[-1]
        if "error" in base or base.startswith("invoke-"):
            continue
        if not isinstance(orjson.loads(data), dict):
            continue
        checked += 1
        provider = provider_of(name)
        if not taken_fast(data, None) or (provider is not None and not taken_fast(data, provider)):
            missing.append(name)
    assert checked > 100
    assert not missing, f"fixtures that fell back to the dict path: {missing}"


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(
        [
            "message",
            "error",
            "text",
            "tool_use",
            "thinking",
            "fallback",
            "refusal",
            "chat.completion",
            "response",
            "end_turn",
            "stop",
            "content_filter",
            "SAFETY",
            "guardrail_intervened",
            "assistant",
            "model",
        ]
    ),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, Any]:
    name, body = draw(st.sampled_from(DECODED))
    body = orjson.loads(orjson.dumps(body))
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(body)
        path = draw(st.sampled_from(paths))
        target = _get(body, path)
        action = draw(st.sampled_from(["replace", "delete", "add", "graft"]))
        if action == "replace" and path:
            _get(body, path[:-1])[path[-1]] = draw(json_values)
        elif action == "delete" and path:
            parent = _get(body, path[:-1])
            del parent[path[-1]]
        elif action in ("add", "graft") and isinstance(target, dict):
            key = draw(st.sampled_from(KEYS))
            if action == "add":
                target[key] = draw(json_values)
            else:
                source = draw(st.sampled_from(VALUES))
                # A copy: a later mutation of the graft must not change VALUES, which
                # later examples draw from (Hypothesis sees that as flaky generation).
                target[key] = copy.deepcopy(source.get(key, draw(json_values)))
    return name, body


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(), st.booleans(), st.booleans())
def test_mutations_same_both_ways(case: tuple[str, Any], named: bool, indent: bool) -> None:
    name, body = case
    try:
        data = orjson.dumps(body, option=orjson.OPT_INDENT_2 if indent else 0)
    except TypeError:  # orjson cannot write integers past 64 bits: write them as text
        data = json.dumps(body, indent=2 if indent else None).encode()
    agree(data, provider_of(name) if named else None)


def test_text_with_a_lone_surrogate_same_both_ways() -> None:
    # Text (not bytes) can hold a raw lone surrogate, which no UTF-8 encoder takes.
    for name, data in BODIES:
        text = data.decode("utf-8", "replace")
        if '"text": "' in text or '"text":"' in text:
            odd = text.replace('"text": "', '"text": "\ud800', 1).replace(
                '"text":"', '"text":"\ud800', 1
            )
            agree(odd, None)
            agree(odd, provider_of(name))


@pytest.mark.parametrize(
    "tail",
    [
        b',"zz":"\\ud800"}',  # a lone surrogate, where the Structs skip it unread
        b',"zz":"\xff"}',  # a byte that is not UTF-8
        b',"zz":1e400}',  # a number orjson cannot read as a double
        b',"zz":18446744073709551616}',  # an integer past 64 bits
        b',"zz":[' + b"[" * 1100 + b"]" * 1100 + b"]}",  # nesting past orjson's limit
        b"}garbage",
        b"} ",
    ],
)
def test_odd_json_same_both_ways(tail: bytes) -> None:
    for name, data in BODIES:
        stripped = data.rstrip()
        if stripped.endswith(b"}") and stripped.startswith(b"{"):
            odd = stripped[:-1] + tail
            agree(odd, None)
            agree(odd, provider_of(name))
