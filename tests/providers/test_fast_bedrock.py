"""The typed fast path of Bedrock Converse bodies gives what the dict path gives.

Converse bodies take it, with and without the provider name; InvokeModel bodies (native or
with Bedrock's marker keys) and error bodies keep the dict path; bodies that detection
routes to another format, wrong types in every key the Structs declare, null against
absent, big numbers, duplicate keys and guardrail traces of every shape come out the same
both ways. Stream events (recorded, named by their event-stream type, mutated, and Claude's
inside InvokeModel chunks) give the same events read strictly as read from their decoded
value through the lenient pass.
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals.model import FinishReason, LLMResponse
from refusals.providers import bedrock
from tests.providers._fast_support import FIXTURES, agree, decoded_fixtures, taken_fast

BEDROCK = FIXTURES / "bedrock"
CONVERSE = sorted(
    path for path in BEDROCK.rglob("*.json") if not path.name.startswith(("error-", "invoke-"))
)
INVOKE = sorted(BEDROCK.rglob("invoke-*.json"))
ERRORS = sorted(BEDROCK.rglob("error-*.json"))
END_TURN = orjson.loads((BEDROCK / "converse-end-turn.json").read_bytes())
NO_ACTION = orjson.loads((BEDROCK / "converse-guardrail-trace-no-action.json").read_bytes())
TOOLS = {
    **orjson.loads((BEDROCK / "written" / "tool-use-reasoning.json").read_bytes()),
    # What a boto3 response dict adds.
    "ResponseMetadata": {"RequestId": "4b1c-req", "HTTPStatusCode": 200},
}
PII_ID = "k2l8pq0v4n1x"
PII = orjson.loads((BEDROCK / "written" / "guardrail-intervened-output-pii.json").read_bytes())
BODIES = {"end_turn": END_TURN, "no_action": NO_ACTION, "tools": TOOLS, "pii": PII}


def _name(path: Path) -> str:
    return str(path.relative_to(BEDROCK))


def _both(body: Any, *providers: str | None) -> None:
    """`agree` on a body, as bytes and as text, without and with the provider name."""
    data = body if isinstance(body, bytes) else _dumps(body)
    for provider in providers or (None, "bedrock"):
        agree(data, provider)
        agree(data.decode("utf-8", "replace"), provider)


def _dumps(body: Any) -> bytes:
    try:
        return orjson.dumps(body)
    except TypeError:  # integers past 64 bits
        return json.dumps(body).encode()


def _set(body: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A copy of `body` with `value` at `path` (a missing `...` value deletes the key)."""
    copied = copy.deepcopy(body)
    target = copied
    for part in path[:-1]:
        target = target[part]
    if value is ...:
        target.pop(path[-1], None)
    else:
        target[path[-1]] = value
    return copied


# --- which bodies take the fast path -----------------------------------------------------


@pytest.mark.parametrize("path", CONVERSE, ids=_name)
def test_converse_fixtures_take_the_fast_path(path: Path) -> None:
    data = path.read_bytes()
    assert taken_fast(data, None)
    assert taken_fast(data, "bedrock")
    _both(data)


@pytest.mark.parametrize("path", INVOKE + ERRORS, ids=_name)
def test_invoke_and_error_bodies_keep_the_dict_path(path: Path) -> None:
    data = path.read_bytes()
    assert not taken_fast(data, None)
    assert not taken_fast(data, "bedrock")
    _both(data)


def test_a_trace_with_policies_is_read_and_still_fast() -> None:
    # The trace stays raw in the schema and is read by the guardrail rules.
    data = _dumps(PII)
    assert taken_fast(data, None)
    result = agree(data, "bedrock")
    assert isinstance(result, LLMResponse)
    assert result.finish_reason is FinishReason.CONTENT_FILTER
    assert result.stop_details is not None
    assert result.stop_details.categories == ("email", "AccountNumber")


def test_an_ordinary_stop_with_a_no_action_trace_adds_no_details() -> None:
    result = agree(_dumps(NO_ACTION), None)
    assert isinstance(result, LLMResponse)
    assert result.finish_reason is FinishReason.STOP
    assert result.reasoning_details == []


@pytest.mark.parametrize("reason", ["Guardrail blocked.", "", None, ...])
@pytest.mark.parametrize("stop", ["guardrail_intervened", "content_filtered", "end_turn"])
def test_a_filter_stop_with_a_no_action_trace_explains_itself(reason: Any, stop: str) -> None:
    body = _set(NO_ACTION, ("stopReason",), stop)
    body = _set(body, ("trace", "guardrail", "actionReason"), reason)
    assert taken_fast(_dumps(body), None)
    _both(body)


@pytest.mark.parametrize("provider", ["Bedrock", "BEDROCK", "anthropic", "openai", "gemini"])
def test_other_provider_names_are_declined(provider: str) -> None:
    assert bedrock.parse_fast(_dumps(END_TURN), provider) is None
    agree(_dumps(END_TURN), provider)


# --- bodies that detection routes elsewhere ------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("object", "chat.completion"),
        ("object", "response"),
        ("object", "list"),
        ("object", 5),
        ("type", "message"),
        ("type", "error"),
        ("type", "text"),
        ("type", None),
        ("candidates", []),
        ("candidates", None),
        ("promptFeedback", {"blockReason": "SAFETY"}),
        ("prompt_feedback", {"blockReason": "SAFETY"}),
        (bedrock.GUARDRAIL_ACTION, "INTERVENED"),
        (bedrock.GUARDRAIL_ACTION, "NONE"),
        (bedrock.GUARDRAIL_ACTION, None),
        (bedrock.INVOCATION_METRICS, {"inputTokenCount": 3}),
        (bedrock.INVOCATION_METRICS, None),
        ("amazon-bedrock-trace", {"guardrail": {}}),
        ("__type", "ValidationException"),
        ("Error", {"Code": "ThrottlingException"}),
        ("message", "Too many requests"),
        ("error", {"message": "x"}),
        ("choices", []),
        ("content", [{"type": "text", "text": "hi"}]),
        ("stop_reason", "end_turn"),
        ("results", []),
        ("inputTextTokenCount", 1),
        ("generation", "hi"),
        ("outputs", [{"text": "hi"}]),
    ],
)
@pytest.mark.parametrize("base", ["end_turn", "no_action"])
def test_keys_of_other_formats_grafted_on(base: str, key: str, value: Any) -> None:
    _both(_set(BODIES[base], (key,), value))


@pytest.mark.parametrize(
    "key", ["candidates", "promptFeedback", bedrock.GUARDRAIL_ACTION, bedrock.INVOCATION_METRICS]
)
@pytest.mark.parametrize("value", [None, "NONE", {}])
def test_gemini_and_invoke_marker_keys_decline_by_presence_alone(key: str, value: Any) -> None:
    data = _dumps(_set(END_TURN, (key,), value))
    assert bedrock.parse_fast(data, None) is None
    assert bedrock.parse_fast(data, "bedrock") is None
    _both(data)


@pytest.mark.parametrize("output", [..., None, [], "text", 0, {}, {"message": None}])
@pytest.mark.parametrize("stop", [..., None, "end_turn", 3, ["end_turn"], "", "no_such_reason"])
def test_output_and_stop_reason_present_absent_null_or_odd(output: Any, stop: Any) -> None:
    body = _set(END_TURN, ("output",), output)
    _both(_set(body, ("stopReason",), stop))


@pytest.mark.parametrize(
    ("name", "body"), decoded_fixtures(), ids=[name for name, _ in decoded_fixtures()]
)
def test_other_formats_with_a_stop_reason_and_output_grafted_on(name: str, body: Any) -> None:
    if name.startswith("bedrock/"):
        return
    grafted = _set(body, ("stopReason",), "end_turn")
    _both(grafted, None, "bedrock")
    _both(_set(grafted, ("output",), END_TURN["output"]), None, "bedrock")


@pytest.mark.parametrize("path", INVOKE, ids=_name)
def test_invoke_bodies_with_converse_keys_grafted_on(path: Path) -> None:
    body = orjson.loads(path.read_bytes())
    grafted = _set(body, ("stopReason",), "end_turn")
    _both(grafted)
    _both(_set(grafted, ("output",), END_TURN["output"]))


# --- wrong types, null against absent, numbers ---------------------------------------------

ODD_VALUES = [..., None, True, 0, -1, 1.5, 2**63, "", "x", [], [1], {}, {"a": 1}]

DECLARED_PATHS = [
    ("tools", ("output",)),
    ("tools", ("output", "message")),
    ("tools", ("output", "message", "content")),
    ("tools", ("output", "message", "content", 0)),
    ("tools", ("output", "message", "content", 0, "reasoningContent")),
    ("tools", ("output", "message", "content", 0, "reasoningContent", "reasoningText")),
    ("tools", ("output", "message", "content", 0, "reasoningContent", "reasoningText", "text")),
    (
        "tools",
        ("output", "message", "content", 0, "reasoningContent", "reasoningText", "signature"),
    ),
    ("tools", ("output", "message", "content", 1, "reasoningContent", "redactedContent")),
    ("tools", ("output", "message", "content", 2, "text")),
    ("tools", ("output", "message", "content", 2, "citationsContent")),
    ("tools", ("output", "message", "content", 3, "toolUse")),
    ("tools", ("output", "message", "content", 3, "toolUse", "toolUseId")),
    ("tools", ("output", "message", "content", 3, "toolUse", "name")),
    ("tools", ("output", "message", "content", 3, "toolUse", "input")),
    ("tools", ("stopReason",)),
    ("tools", ("usage",)),
    ("tools", ("usage", "inputTokens")),
    ("tools", ("usage", "outputTokens")),
    ("tools", ("usage", "cacheReadInputTokens")),
    ("tools", ("usage", "cacheWriteInputTokens")),
    ("tools", ("ResponseMetadata",)),
    ("tools", ("ResponseMetadata", "RequestId")),
    ("no_action", ("trace",)),
    ("no_action", ("trace", "guardrail")),
    ("no_action", ("trace", "guardrail", "actionReason")),
    ("no_action", ("trace", "guardrail", "inputAssessment")),
    ("no_action", ("trace", "guardrail", "inputAssessment", "xbgw7g293v7o")),
    ("no_action", ("trace", "guardrail", "outputAssessments")),
    ("no_action", ("trace", "guardrail", "outputAssessments", "xbgw7g293v7o")),
    ("no_action", ("trace", "guardrail", "outputAssessments", "xbgw7g293v7o", 0)),
    ("no_action", ("trace", "guardrail", "input")),
    ("no_action", ("trace", "guardrail", "outputs")),
    ("pii", ("trace", "guardrail", "outputAssessments", PII_ID, 0)),
    (
        "pii",
        (
            "trace",
            "guardrail",
            "outputAssessments",
            "k2l8pq0v4n1x",
            0,
            "sensitiveInformationPolicy",
        ),
    ),
]


@pytest.mark.parametrize("value", ODD_VALUES, ids=repr)
@pytest.mark.parametrize(("base", "path"), DECLARED_PATHS, ids=str)
def test_odd_values_in_every_declared_key(base: str, path: tuple[Any, ...], value: Any) -> None:
    body = BODIES[base]
    if value is ... and isinstance(path[-1], int):
        return  # a list element cannot be absent
    _both(_set(body, path, value))


@pytest.mark.parametrize(
    "value", [0, 1, 2**31, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**70, -1, -(2**63), -(2**64)]
)
@pytest.mark.parametrize("key", ["inputTokens", "cacheWriteInputTokens", "totalTokens"])
def test_big_and_negative_counts(key: str, value: int) -> None:
    _both(_set(TOOLS, ("usage", key), value))


@pytest.mark.parametrize(
    "data",
    [
        # The last of duplicate keys counts, on both paths.
        b'{"output":{"message":{"content":[{"text":"a"}]}},"output":null,"stopReason":"end_turn"}',
        b'{"output":null,"output":{"message":{"content":[{"text":"a"}]}},"stopReason":"end_turn"}',
        b'{"output":{},"stopReason":"end_turn","stopReason":"guardrail_intervened"}',
        b'{"output":{},"stopReason":"end_turn","stopReason":null}',
        b'{"output":{"message":{"content":[{"text":"a","text":"b"}]}},"stopReason":"end_turn"}',
        b'{"output":{},"stopReason":"end_turn","usage":{"inputTokens":1,"inputTokens":-1}}',
        b'{"output":{},"stopReason":"guardrail_intervened","trace":{"guardrail":{"outputs":{"g":'
        b'{"topicPolicy":{"topics":[{"name":"T","action":"BLOCKED"}]}}}}},"trace":{"guardrail":'
        b'{"actionReason":"r"}}}',
        b'{"output":{},"stopReason":"guardrail_intervened","trace":{"guardrail":'
        b'{"actionReason":"r"}},"trace":{"guardrail":{"outputs":{"g":{"topicPolicy":{"topics":'
        b'[{"name":"T","action":"BLOCKED"}]}}}}}}',
        b'{"output":{},"stopReason":"end_turn","trace":{"guardrail":{"input":{"g":{},"g":'
        b'{"contentPolicy":{"filters":[{"type":"HATE","action":"BLOCKED"}]}}}}}}',
        b'{"output":{},"stopReason":"end_turn","amazon-bedrock-guardrailAction":"NONE",'
        b'"amazon-bedrock-guardrailAction":null}',
        # Escapes that spell a hint, and text the Structs must not take as is.
        b'{"object":"chat.completio\\u006e","output":{},"stopReason":"end_turn"}',
        b'{"output":{"message":{"content":[{"text":"\\ud800"}]}},"stopReason":"end_turn"}',
        b'{"output":{"message":{"content":[{"text":"\xff"}]}},"stopReason":"end_turn"}',
        b'{"output":{"message":{"content":[{"toolUse":{"input":{"n":18446744073709551616}}}]}},'
        b'"stopReason":"tool_use"}',
        b'{"output":{"message":{"content":[{"toolUse":{"input":"\\ud800"}}]}},'
        b'"stopReason":"tool_use"}',
        b'{"output":{},"stopReason":"end_turn"} ',
        b'{"output":{},"stopReason":"end_turn"}}',
        b'[{"output":{},"stopReason":"end_turn"}]',
    ],
)
def test_duplicate_keys_and_odd_json(data: bytes) -> None:
    _both(data)


def test_text_with_a_lone_surrogate_given_as_str_is_declined() -> None:
    text = '{"output":{"message":{"content":[{"text":"a\ud800"}]}},"stopReason":"end_turn"}'
    assert bedrock.parse_fast(text, None) is None
    assert bedrock.parse_fast(text, "bedrock") is None
    agree(text, "bedrock")


# --- guardrail traces ------------------------------------------------------------------------

ACTIONS = st.sampled_from(["BLOCKED", "blocked", "ANONYMIZED", "NONE", None, 3])
NAMES = st.sampled_from(["EMAIL", "NAME", "Topic A", "HATE", "", None])


def _items(*keys: str) -> st.SearchStrategy[list[dict[str, Any]]]:
    item = st.fixed_dictionaries({}, optional=dict.fromkeys(keys, NAMES) | {"action": ACTIONS})
    return st.lists(item, max_size=2)


POLICIES = {
    "topicPolicy": st.fixed_dictionaries({"topics": _items("name")}),
    "contentPolicy": st.fixed_dictionaries({"filters": _items("type")}),
    "wordPolicy": st.fixed_dictionaries(
        {}, optional={"customWords": _items("match"), "managedWordLists": _items("type")}
    ),
    "sensitiveInformationPolicy": st.fixed_dictionaries(
        {}, optional={"piiEntities": _items("type"), "regexes": _items("name")}
    ),
    "contextualGroundingPolicy": st.fixed_dictionaries({"filters": _items("type")}),
    "automatedReasoningPolicy": st.fixed_dictionaries(
        {"findings": st.lists(st.sampled_from([{"valid": {}}, {"invalid": {}}, {}]), max_size=2)}
    ),
}

assessments = st.fixed_dictionaries(
    {},
    optional={
        **POLICIES,
        "invocationMetrics": st.just({"guardrailProcessingLatency": 1}),
        "appliedGuardrailDetails": st.just({"guardrailId": "g"}),
    },
)
by_id = st.dictionaries(
    st.sampled_from(["g1", "g2"]), st.one_of(assessments, st.lists(assessments, max_size=2))
)
parts = st.one_of(by_id, st.lists(by_id, max_size=2), st.none())
guardrails = st.fixed_dictionaries(
    {},
    optional={
        "actionReason": st.one_of(st.none(), st.sampled_from(["Guardrail blocked.", ""])),
        "inputAssessment": parts,
        "outputAssessments": parts,
        "input": parts,
        "outputs": parts,
        "modelOutput": st.just(["x"]),
    },
)
stop_reasons = st.sampled_from([*bedrock.STOP_REASONS, "something_new"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(guardrails, stop_reasons, st.booleans(), st.sampled_from(["end_turn", "tools"]))
def test_guardrail_traces_same_both_ways(
    guardrail: dict[str, Any], stop: str, named: bool, base: str
) -> None:
    body = _set(BODIES[base], ("stopReason",), stop)
    data = _dumps(_set(body, ("trace",), {"guardrail": guardrail}))
    assert taken_fast(data, None)
    agree(data, "bedrock" if named else None)


texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=4)
counts = st.integers(-(2**63), 2**63 - 1)
blocks = st.fixed_dictionaries(
    {},
    optional={
        "text": st.one_of(texts, st.none()),
        "citationsContent": st.one_of(
            st.none(),
            st.fixed_dictionaries({"content": st.lists(st.fixed_dictionaries({"text": texts}))}),
        ),
        "toolUse": st.fixed_dictionaries(
            {},
            optional={
                "toolUseId": texts,
                "name": texts,
                "input": st.one_of(st.none(), st.dictionaries(texts, counts)),
            },
        ),
        "reasoningContent": st.fixed_dictionaries(
            {},
            optional={
                "reasoningText": st.one_of(
                    st.none(),
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "text": st.one_of(texts, st.none()),
                            "signature": st.one_of(texts, st.none()),
                        },
                    ),
                ),
                "redactedContent": st.one_of(texts, st.none()),
            },
        ),
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(blocks, max_size=4), stop_reasons, st.booleans())
def test_content_blocks_same_both_ways(content: list[Any], stop: str, named: bool) -> None:
    body = _set(END_TURN, ("output", "message", "content"), content)
    data = _dumps(_set(body, ("stopReason",), stop))
    assert taken_fast(data, None)
    agree(data, "bedrock" if named else None)


# --- streams: `ConverseStreamReader.read_strict` against the lenient pass -------------------

STREAMS = sorted(BEDROCK.rglob("*.chunks.txt"))
CLAUDE_EVENTS = sorted(BEDROCK.rglob("invoke-stream-claude-*.events.ndjson"))
NATIVE_EVENTS = sorted(
    path for path in BEDROCK.rglob("*.events.ndjson") if path not in CLAUDE_EVENTS
)


def _events(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().splitlines() if line.strip()]


def _invoke_chunks(path: Path) -> list[tuple[str | None, bytes]]:
    """Claude's recorded events as InvokeModelWithResponseStream `chunk` events."""
    return [("chunk", orjson.dumps({"bytes": base64.b64encode(e).decode()})) for e in _events(path)]


def _named(events: list[bytes]) -> list[tuple[str | None, bytes]]:
    """Recorded `{"<eventType>": {...}}` lines as the event-stream frames name them."""
    named: list[tuple[str | None, bytes]] = []
    for line in events:
        value = orjson.loads(line)
        if isinstance(value, dict) and len(value) == 1:
            ((name, payload),) = value.items()
            named.append((name, orjson.dumps(payload)))
        else:
            named.append((None, line))
    return named


def _read(
    items: list[tuple[str | None, bytes]], *, strict: bool
) -> tuple[list[Any], LLMResponse, int]:
    reader = bedrock.ConverseStreamReader("bedrock")
    answered = 0
    if not strict:
        reader.read_strict = lambda name, data: None  # type: ignore[method-assign]
    else:
        original = reader.read_strict

        def counting(name: str | None, data: str | bytes) -> Any:
            nonlocal answered
            events = original(name, data)
            answered += events is not None
            return events

        reader.read_strict = counting  # type: ignore[method-assign]
    events: list[Any] = []
    for name, data in items:
        events += reader.feed(name, data)
    events += reader.close()
    return events, reader.response, answered


def _same_both_ways(items: list[tuple[str | None, bytes]]) -> int:
    strict_events, strict_response, answered = _read(items, strict=True)
    lenient_events, lenient_response, _ = _read(items, strict=False)
    assert strict_events == lenient_events
    assert strict_response == lenient_response
    assert strict_response.reasoning_details == lenient_response.reasoning_details
    return answered


@pytest.mark.parametrize("path", STREAMS, ids=[p.name for p in STREAMS])
def test_stream_fixtures_read_strictly_and_the_same_both_ways(path: Path) -> None:
    events = _events(path)
    answered = _same_both_ways([(None, line) for line in events])
    _same_both_ways(_named(events))
    # Every recorded event but the exceptions (left to the decoded value) is read strictly.
    exceptions = sum(b"Exception" in line for line in events)
    assert answered == len(events) - exceptions


@pytest.mark.parametrize("path", CLAUDE_EVENTS, ids=[p.name for p in CLAUDE_EVENTS])
def test_claude_invoke_chunks_read_strictly_after_the_first(path: Path) -> None:
    chunks = _invoke_chunks(path)
    answered = _same_both_ways(chunks)
    assert answered == len(chunks) - 1  # the first one picks the Messages reader


@pytest.mark.parametrize("path", NATIVE_EVENTS, ids=[p.name for p in NATIVE_EVENTS])
def test_native_invoke_chunks_same_both_ways(path: Path) -> None:
    _same_both_ways(_invoke_chunks(path))


stream_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=4),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(
        st.sampled_from(["text", "toolUse", "input", "guardrail"]), st.none(), max_size=2
    ),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_stream_events_same_both_ways(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(STREAMS))
    events = [orjson.loads(line) for line in _events(path)]
    at = data.draw(st.integers(0, len(events) - 1))
    event = events[at]
    if isinstance(event, dict) and len(event) == 1:
        ((_, payload),) = event.items()
        if isinstance(payload, dict) and payload:
            key = data.draw(st.sampled_from(sorted(payload)))
            payload[key] = data.draw(stream_values)
    items: list[tuple[str | None, bytes]] = [(None, _dumps(e)) for e in events]
    _same_both_ways(items)
    _same_both_ways(_named([_dumps(e) for e in events]))
