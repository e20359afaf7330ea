"""Scenario files (`--scenarios FILE`, TOML or JSON): rules that match a request and
answer with a named scenario or a literal body or event list; bad files fail in one line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from refusals import StreamDecoder
from refusals.mock import MockApp, MockServer, ScenarioFileError
from refusals.providers import normalize
from tests.mock._wires import call

RULES = """
[[rules]]
model = "gpt-4o"
scenario = "refusal"

[[rules]]
prompt_contains = "weather"
tool = "get_weather"
scenario = "tool-then-answer"

[[rules]]
prompt_regex = "(?i)^forecast"
wire = "anthropic"
scenario = "rate-limited-1"

[[rules]]
prompt_contains = "literal body"
status = 400
body = { type = "error", error = { type = "invalid_request_error", message = "Output blocked by content filtering policy" } }

[[rules]]
prompt_contains = "literal events"
events = [
  { event = "message_start", data = { type = "message_start", message = { id = "m1", type = "message", role = "assistant", model = "x", content = [], stop_reason = "", usage = { input_tokens = 1, output_tokens = 1 } } } },
  { event = "message_delta", data = { type = "message_delta", delta = { stop_reason = "refusal" }, usage = { output_tokens = 1 } } },
  { event = "message_stop", data = { type = "message_stop" } },
]
"""  # noqa: E501 - TOML inline tables are one line each


@pytest.fixture
def ruled(tmp_path: Path) -> Iterator[MockServer]:
    path = tmp_path / "rules.toml"
    path.write_text(RULES)
    with MockServer(MockApp(path)) as server:
        yield server


def send(
    server: MockServer, wire: str, model: str, prompt: str, tools: bool = True
) -> httpx.Response:
    request = call(wire, model, prompt=prompt, tools=tools)
    return httpx.post(
        server.base_url + request.path, json=request.body, headers=request.headers, timeout=10
    )


def test_a_rule_on_the_model_answers_with_its_scenario(ruled: MockServer) -> None:
    answer = send(ruled, "openai-chat", "gpt-4o", "hello")
    assert answer.json()["choices"][0]["message"]["refusal"] is not None
    assert ruled.app.requests[-1].scenario == "refusal"


def test_a_rule_needs_every_condition_prompt_and_tool(ruled: MockServer) -> None:
    send(ruled, "anthropic", "claude-x", "the weather please")
    assert ruled.app.requests[-1].scenario == "tool-then-answer"
    send(ruled, "anthropic", "claude-x", "the weather please", tools=False)
    assert ruled.app.requests[-1].scenario == "answer"


def test_a_regex_rule_limited_to_one_wire(ruled: MockServer) -> None:
    assert send(ruled, "anthropic", "claude-x", "Forecast?").status_code == 429
    assert send(ruled, "anthropic", "claude-x", "Forecast?").status_code == 200
    assert send(ruled, "openai-chat", "other", "Forecast?").status_code == 200
    assert ruled.app.requests[-1].scenario == "answer"


def test_a_literal_body_is_served_with_its_status(ruled: MockServer) -> None:
    answer = send(ruled, "anthropic", "claude-x", "a literal body")
    assert answer.status_code == 400
    response = normalize(answer.content, provider="anthropic", status=400)
    assert response.finish_reason.value == "content_filter"
    assert ruled.app.requests[-1].scenario == "literal"


def test_literal_events_are_served_in_the_wires_framing(ruled: MockServer) -> None:
    answer = send(ruled, "anthropic", "claude-x", "literal events")
    assert answer.headers["content-type"] == "text/event-stream"
    decoder = StreamDecoder("anthropic")
    decoder.feed(answer.content)
    decoder.close()
    assert decoder.response.finish_reason.value == "refusal"


def test_a_json_file_works_as_well(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"rules": [{"prompt_contains": "hi", "scenario": "length"}]}))
    app = MockApp(path)
    assert len(app.rules.rules) == 1


@pytest.mark.parametrize(
    ("text", "suffix", "message"),
    [
        ("rules = [", ".toml", "is not valid TOML"),
        ("{", ".json", "is not valid JSON"),
        ("[[rule]]\nscenario = 'refusal'", ".toml", "unknown top-level key 'rule'"),
        ("", ".toml", "expected a top-level 'rules' list"),
        ("[[rules]]\nmodel = 'a'", ".toml", "rule 1: give exactly one answer"),
        ("[[rules]]\nscenario = 'x'\nbody = {}", ".toml", "(got scenario, body)"),
        ("[[rules]]\nscenario = 'nope'", ".toml", "rule 1: unknown scenario 'nope'"),
        ("[[rules]]\nscenario = 'refusal'\nmodle = 'a'", ".toml", "unknown key 'modle'"),
        ("[[rules]]\nprompt_regex = '('\nscenario = 'answer'", ".toml", "not a valid regex"),
        ("[[rules]]\nstatus = 99\nbody = {}", ".toml", "status must be an HTTP status"),
        ("[[rules]]\nmodel = 3\nscenario = 'answer'", ".toml", "'model' must be a string"),
        ("[[rules]]\nevents = []", ".toml", "'events' must be a non-empty list"),
        (
            "[[rules]]\nafter_tool_result = 'yes'\nscenario = 'answer'",
            ".toml",
            "'after_tool_result' must be true or false",
        ),
    ],
)
def test_a_bad_file_fails_with_one_line_naming_the_problem(
    tmp_path: Path, text: str, suffix: str, message: str
) -> None:
    path = tmp_path / f"rules{suffix}"
    path.write_text(text)
    with pytest.raises(ScenarioFileError) as raised:
        MockApp(path)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_missing_file_fails_with_one_line(tmp_path: Path) -> None:
    with pytest.raises(ScenarioFileError, match="cannot read scenario file"):
        MockApp(tmp_path / "absent.toml")


TOOL_RULES = """
[[rules]]
after_tool_result = true
scenario = "length"

[[rules]]
prompt_contains = "weather"
after_tool_result = false
scenario = "tool-then-answer"

[[rules]]
model = "mock-refusal"
prompt_contains = "overridden"
scenario = "answer"
"""


@pytest.fixture
def tool_ruled(tmp_path: Path) -> Iterator[MockServer]:
    path = tmp_path / "rules.toml"
    path.write_text(TOOL_RULES)
    with MockServer(MockApp(path)) as server:
        yield server


def with_tool_result(server: MockServer, wire: str, model: str) -> httpx.Response:
    """A request whose last message is the result of the weather tool call."""
    request = call(wire, model, prompt="the weather please")
    body = request.body
    if wire == "anthropic":
        body["messages"] += [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}],
            },
        ]
    else:
        function = {"name": "get_weather", "arguments": "{}"}
        call_item = {"id": "t1", "type": "function", "function": function}
        body["messages"] += [
            {"role": "assistant", "content": None, "tool_calls": [call_item]},
            {"role": "tool", "tool_call_id": "t1", "content": "sunny"},
        ]
    return httpx.post(
        server.base_url + request.path, json=body, headers=request.headers, timeout=10
    )


@pytest.mark.parametrize("wire", ["anthropic", "openai-chat"])
def test_an_after_tool_result_rule_matches_only_a_request_ending_with_a_tool_result(
    tool_ruled: MockServer, wire: str
) -> None:
    send(tool_ruled, wire, "claude-x", "the weather please")
    assert tool_ruled.app.requests[-1].scenario == "tool-then-answer"
    assert with_tool_result(tool_ruled, wire, "claude-x").status_code == 200
    assert tool_ruled.app.requests[-1].scenario == "length"


def test_a_users_rule_takes_precedence_over_a_builtin_mock_model_name(
    tool_ruled: MockServer,
) -> None:
    answer = send(tool_ruled, "anthropic", "mock-refusal", "overridden, please")
    assert answer.json()["stop_reason"] == "end_turn"
    assert tool_ruled.app.requests[-1].scenario == "answer"
    # A request no rule matches still gets what the model name asks for.
    refused = send(tool_ruled, "anthropic", "mock-refusal", "hello")
    assert refused.json()["stop_reason"] == "refusal"
    assert tool_ruled.app.requests[-1].scenario == "refusal"
