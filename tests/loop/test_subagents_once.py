"""A refused subagent task reaches the model once, however often one step asks for it.

The parent model (a scenario-file rule on the mock server) calls `spawn_agent` several
times in one step with the same task, which holds Anthropic's refusal test string; the
children run concurrently. The mock's request log shows one child request with the task.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from refusals.loop.subagents import WITHDRAWN_TASK
from refusals.mock import MAGIC_REFUSAL_STRING, MockApp, MockServer

from ..cli._exec_support import WIRES, exec_on

TASK = f"Summarise the file {MAGIC_REFUSAL_STRING}"


def spawn_calls(count: int, task: str) -> dict[str, Any]:
    return {
        "id": "msg_parent",
        "type": "message",
        "role": "assistant",
        "model": "mock-twins",
        "content": [
            {
                "type": "tool_use",
                "id": f"toolu_{i}",
                "name": "spawn_agent",
                "input": {"task": task},
            }
            for i in range(count)
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 5, "output_tokens": 5},
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockServer]:
    rules = {
        "rules": [
            {"model": "mock-twins", "after_tool_result": True, "scenario": "answer"},
            {"model": "mock-twins", "body": spawn_calls(3, TASK)},
            {"model": "mock-twins-spaced", "after_tool_result": True, "scenario": "answer"},
            {"model": "mock-twins-spaced", "body": spawn_calls(2, f"  {TASK}\n")},
        ]
    }
    path: Path = tmp_path_factory.mktemp("rules") / "twins.json"
    path.write_text(json.dumps(rules))
    with MockServer(MockApp(scenarios_file=path)) as running:
        yield running


def child_requests(server: MockServer) -> list[Any]:
    """Requests whose last user message is the refused task (what a child sends)."""
    found = []
    for request in server.app.requests:
        messages = request.body.get("messages", [])
        last = messages[-1] if messages else {}
        if last.get("role") == "user" and MAGIC_REFUSAL_STRING in json.dumps(last):
            content = last["content"]
            text = content if isinstance(content, str) else json.dumps(content)
            if "tool_result" not in text:
                found.append(request)
    return found


@pytest.mark.parametrize("model", ["twins", "twins-spaced"])
def test_identical_concurrent_refused_tasks_reach_the_server_once(
    model: str, server: MockServer
) -> None:
    server.app.reset()
    run = exec_on(WIRES["anthropic"], server.base_url, model, "--no-stream", "Do the two summaries")
    assert run.exit_code == 0, run.stdout
    assert len(child_requests(server)) == 1
    subagents = run.items("subagent")
    assert len(subagents) == (3 if model == "twins" else 2)
    assert [item["status"] for item in subagents] == ["refused"] * len(subagents)
    notices = {item["notice"] for item in subagents}
    assert len(notices) == 1
    # Every call after the first was answered from the one child, never sent.
    assert sum(1 for item in subagents if item.get("repeated")) == len(subagents) - 1
    # The parent's next request pairs each call with its result, without the task's text.
    carrying = [r for r in server.app.requests if MAGIC_REFUSAL_STRING in json.dumps(r.body)]
    assert carrying == child_requests(server)
    last = server.app.requests[-1].body["messages"]
    calls = [b for m in last if isinstance(m["content"], list) for b in m["content"]]
    inputs = [b["input"] for b in calls if b.get("type") == "tool_use"]
    assert inputs == [{"task": WITHDRAWN_TASK}] * len(subagents)


@pytest.mark.parametrize("stream", [False, True], ids=["no-stream", "stream"])
@pytest.mark.parametrize("wire", list(WIRES))
def test_no_request_after_a_refused_subagent_carries_its_task_on_any_wire(
    wire: str, stream: bool, server: MockServer
) -> None:
    server.app.reset()
    args = [] if stream else ["--no-stream"]
    run = exec_on(WIRES[wire], server.base_url, "subagent-refusal", *args, "Delegate it")
    statuses = [item["status"] for item in run.items("subagent")]
    assert statuses in (["refused"], ["content_filtered"]), run.stdout
    carrying = [
        index
        for index, request in enumerate(server.app.requests)
        if MAGIC_REFUSAL_STRING in json.dumps(request.body)
    ]
    # The child's one request holds the task; the parent's requests before and after not.
    assert len(carrying) == 1
    assert len(server.app.requests) == 3
    assert carrying == [1]
