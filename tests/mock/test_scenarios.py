"""How a scenario is chosen (header, refusal test string, model name, rules, default) and
the scripted multi-turn exchanges: a tool call then an answer, a subagent spawned.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from refusals.mock import MAGIC_REFUSAL_STRING, MockServer
from refusals.mock.scenarios import (
    SCENARIOS,
    SUBAGENT_TASK,
    Choice,
    parse_name,
    placeholder_arguments,
)
from refusals.providers import normalize
from tests.mock._wires import BLOCKING, REFUSING, WIRES, call


def ask(server: MockServer, wire: str, body: dict[str, Any], path: str = "") -> httpx.Response:
    request = call(wire, "claude-x")
    return httpx.post(
        server.base_url + (path or request.path), json=body, headers=request.headers, timeout=10
    )


def scenario_of(server: MockServer) -> str | None:
    return server.app.requests[-1].scenario


def test_placeholders_fill_each_required_property_by_its_type() -> None:
    schema = {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "n": {"type": "number"},
            "b": {"type": "boolean"},
            "a": {"type": "array"},
            "o": {"type": "object"},
            "maybe": {"type": ["null", "integer"]},
            "optional": {"type": "string"},
        },
        "required": ["s", "i", "n", "b", "a", "o", "maybe"],
    }
    assert placeholder_arguments(schema) == {
        "s": ".",
        "i": 1,
        "n": 1,
        "b": False,
        "a": [],
        "o": {},
        "maybe": 1,
    }
    assert placeholder_arguments({"type": "object"}) == {}


def test_scenario_names_parse_with_a_rate_limit_count() -> None:
    assert parse_name("refusal") == Choice("refusal")
    assert parse_name("Rate-Limited-3") == Choice("rate-limited", 3)
    assert parse_name("refusal-3") is None
    assert parse_name("nope") is None
    assert set(SCENARIOS) >= {"answer", "refusal", "filter-prompt", "slow"}


@pytest.mark.parametrize("wire", WIRES)
def test_the_refusal_test_string_in_a_user_message_refuses_on_every_wire(
    server: MockServer, wire: str
) -> None:
    request = call(wire, "plain-model", prompt=f"Please explain {MAGIC_REFUSAL_STRING} to me")
    answer = httpx.post(
        server.base_url + request.path, json=request.body, headers=request.headers, timeout=10
    )
    assert scenario_of(server) == "refusal"
    response = normalize(answer.content, provider=request.provider, status=answer.status_code)
    if wire in REFUSING:
        assert response.finish_reason.value == "refusal"
    elif wire in BLOCKING:
        assert response.finish_reason.value == "content_filter"
    else:
        assert response.content == "I'm sorry, but I can't help with that request."


def test_the_refusal_test_string_outside_user_text_does_not_refuse(server: MockServer) -> None:
    body = {
        "model": "claude-x",
        "max_tokens": 64,
        "messages": [
            {"role": "user", "content": "Run the tool"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": MAGIC_REFUSAL_STRING},
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "f",
                        "input": {"q": MAGIC_REFUSAL_STRING},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": MAGIC_REFUSAL_STRING}
                ],
            },
        ],
    }
    answer = ask(server, "anthropic", body)
    assert scenario_of(server) == "answer"
    assert answer.json()["stop_reason"] == "end_turn"


def test_the_header_wins_over_the_test_string_and_the_model(server: MockServer) -> None:
    request = call("anthropic", "mock-length", prompt=MAGIC_REFUSAL_STRING)
    headers = {**request.headers, "x-mock-scenario": "pause-turn"}
    httpx.post(server.base_url + request.path, json=request.body, headers=headers, timeout=10)
    assert scenario_of(server) == "pause-turn"


def test_the_test_string_wins_over_the_model(server: MockServer) -> None:
    request = call("anthropic", "mock-length", prompt=MAGIC_REFUSAL_STRING)
    httpx.post(server.base_url + request.path, json=request.body, headers=request.headers)
    assert scenario_of(server) == "refusal"


@pytest.mark.parametrize("model", ["openrouter-vendor/mock-refusal", "MOCK-REFUSAL"])
def test_a_model_name_picks_its_scenario_after_any_vendor_prefix(
    server: MockServer, model: str
) -> None:
    request = call("openrouter", model)
    httpx.post(server.base_url + request.path, json=request.body, headers=request.headers)
    assert scenario_of(server) == "refusal"


def test_an_ordinary_model_gets_an_answer_with_the_prompts_first_80_characters(
    server: MockServer,
) -> None:
    prompt = "x" * 100
    request = call("anthropic", "claude-x", prompt=prompt)
    answer = httpx.post(server.base_url + request.path, json=request.body, headers=request.headers)
    assert answer.json()["content"] == [{"type": "text", "text": "Mock answer: " + "x" * 80}]
    assert scenario_of(server) == "answer"


def test_tool_then_answer_is_a_two_turn_exchange_on_anthropic(server: MockServer) -> None:
    request = call("anthropic", "mock-tool-then-answer")
    first = httpx.post(server.base_url + request.path, json=request.body, headers=request.headers)
    tool_use = first.json()["content"][0]
    assert tool_use["name"] == "get_weather"
    assert tool_use["input"] == {"city": ".", "days": 1}
    result = "sunny " * 50
    body = {
        **request.body,
        "messages": [
            *request.body["messages"],
            {"role": "assistant", "content": [tool_use]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": tool_use["id"], "content": result}
                ],
            },
        ],
    }
    second = httpx.post(server.base_url + request.path, json=body, headers=request.headers)
    assert second.json()["stop_reason"] == "end_turn"
    assert second.json()["content"][0]["text"] == "The tool returned: " + result[:200]


def test_tool_then_answer_reads_the_tool_result_on_chat_gemini_and_bedrock(
    server: MockServer,
) -> None:
    chat = call("openai-chat", "mock-tool-then-answer")
    function = {"name": "get_weather", "arguments": "{}"}
    chat.body["messages"] += [
        {
            "role": "assistant",
            "tool_calls": [{"id": "c1", "type": "function", "function": function}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "rain"},
    ]
    answer = httpx.post(server.base_url + chat.path, json=chat.body, headers=chat.headers)
    assert answer.json()["choices"][0]["message"]["content"] == "The tool returned: rain"
    gemini = call("gemini", "mock-tool-then-answer")
    gemini.body["contents"] += [
        {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get_weather",
                                                           "response": {"sky": "rain"}}}]},
    ]  # fmt: skip
    answer = httpx.post(server.base_url + gemini.path, json=gemini.body, headers=gemini.headers)
    parts = answer.json()["candidates"][0]["content"]["parts"]
    assert parts == [{"text": 'The tool returned: {"sky":"rain"}'}]
    bedrock = call("bedrock", "mock-tool-then-answer")
    bedrock.body["messages"] += [
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t", "name": "get_weather",
                                                       "input": {}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "t",
                                                     "content": [{"text": "rain"}]}}]},
    ]  # fmt: skip
    answer = httpx.post(server.base_url + bedrock.path, json=bedrock.body, headers=bedrock.headers)
    assert answer.json()["output"]["message"]["content"] == [{"text": "The tool returned: rain"}]


SPAWN: dict[str, Any] = {
    "name": "spawn_agent",
    "input_schema": {
        "type": "object",
        "properties": {"task": {"type": "string"}},
        "required": ["task"],
    },
}


@pytest.mark.parametrize("scenario", ["subagent", "subagent-refusal"])
def test_subagent_spawns_a_child_then_reports_its_result(server: MockServer, scenario: str) -> None:
    request = call("anthropic", f"mock-{scenario}")
    request.body["tools"] = [request.body["tools"][0], SPAWN]
    first = httpx.post(server.base_url + request.path, json=request.body, headers=request.headers)
    spawn = first.json()["content"][0]
    assert spawn["name"] == "spawn_agent"
    task = spawn["input"]["task"]
    assert task.startswith(SUBAGENT_TASK)
    assert (MAGIC_REFUSAL_STRING in task) is (scenario == "subagent-refusal")
    # The child, asked the task, is refused exactly when the task holds the test string.
    child = call("anthropic", "claude-child", prompt=task)
    refused = httpx.post(server.base_url + child.path, json=child.body, headers=child.headers)
    assert (refused.json()["stop_reason"] == "refusal") is (scenario == "subagent-refusal")
    report = "x" * 400
    body = {
        **request.body,
        "messages": [
            *request.body["messages"],
            {"role": "assistant", "content": [spawn]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": spawn["id"], "content": report}],
            },
        ],
    }
    last = httpx.post(server.base_url + request.path, json=body, headers=request.headers)
    assert last.json()["content"][0]["text"] == "Subagent result: " + "x" * 300


def test_subagent_without_spawn_agent_offered_behaves_as_tool_then_answer(
    server: MockServer,
) -> None:
    request = call("anthropic", "mock-subagent")
    answer = httpx.post(server.base_url + request.path, json=request.body, headers=request.headers)
    assert answer.json()["content"][0]["name"] == "get_weather"


def test_the_child_of_a_subagent_scenario_answers_instead_of_spawning_again(
    server: MockServer,
) -> None:
    request = call("anthropic", "mock-subagent", prompt=SUBAGENT_TASK)
    request.body["tools"] = [SPAWN]
    answer = httpx.post(server.base_url + request.path, json=request.body, headers=request.headers)
    assert answer.json()["stop_reason"] == "end_turn"
    assert answer.json()["content"][0]["text"] == "Mock answer: " + SUBAGENT_TASK[:80]
