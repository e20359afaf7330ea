"""Parity on every wire format the mock serves: one notice, word for word, on every
surface (exec's human output, `turn.failed.error.message`, `refusal.notice`, a parent's
view of a refused subagent); one request per refused prompt; nothing refused resent."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from refusals import FinishReason, LLMResponse, notice
from refusals.loop.agent import Agent
from refusals.loop.outcome import Outcome
from refusals.loop.subagents import SubagentPolicy
from refusals.mock import MAGIC_REFUSAL_STRING, MockApp, MockServer
from refusals.request import Message, Request
from refusals.transport.base import ModelClient
from refusals.transport.clients import client_for
from tests.cli._exec_support import WIRES, Wire, exec_on

BLOCKED = ("refusal", "refusal-mid-stream", "filter-output", "filter-prompt")
PROMPT = "Say hello."


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer(MockApp()) as running:
        yield running


@pytest.fixture
def mock(server: MockServer, monkeypatch: pytest.MonkeyPatch) -> MockServer:
    # The direct calls of these tests read credentials from the environment, as exec does.
    for wire in WIRES.values():
        for name, value in wire.env:
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    server.app.reset()
    return server


def client(wire: Wire, server: MockServer, scenario: str) -> ModelClient:
    return client_for(
        wire.model(scenario), base_url=wire.base_url(server.base_url), api_key="test-key-h5"
    )


def reference(wire: Wire, server: MockServer, scenario: str, prompt: str) -> tuple[str, int]:
    """The notice of one direct streamed call read to its end, outside the loop, and
    the exit code its kind gives (Gemini and Bedrock block as filters, not refusals)."""

    async def call() -> LLMResponse:
        model = client(wire, server, scenario)
        stream = model.stream(Request(model="", messages=[Message("user", prompt)]))
        async for _ in stream:
            pass
        await stream.aclose()
        return stream.response

    response = asyncio.run(asyncio.wait_for(call(), 20))
    server.app.reset()
    found = notice(response)
    assert found is not None, response
    return found, 3 if response.finish_reason is FinishReason.REFUSAL else 4


def user_texts(body: Any) -> str:
    return orjson.dumps(body).decode()


CASES = [(w, s) for w in sorted(WIRES) for s in sorted(BLOCKED)]


@pytest.mark.parametrize(("wire_name", "scenario"), CASES)
def test_one_notice_on_every_exec_surface_streamed_or_not_and_one_request(
    mock: MockServer, wire_name: str, scenario: str
) -> None:
    wire = WIRES[wire_name]
    expected, code = reference(wire, mock, scenario, PROMPT)
    if scenario.startswith("filter"):
        assert code == 4
    run = exec_on(wire, mock.base_url, scenario, PROMPT)
    assert run.exit_code == code
    assert run.one("refusal")["notice"] == expected
    assert run.one("turn.failed")["error"]["message"] == expected
    assert run.events[-1]["requests"] == 1
    assert mock.app.count() == 1
    mock.app.reset()
    human = exec_on(wire, mock.base_url, scenario, PROMPT, as_json=False)
    assert human.exit_code == code
    assert expected in human.stderr.splitlines()
    assert mock.app.count() == 1
    mock.app.reset()
    whole = exec_on(wire, mock.base_url, scenario, "--no-stream", PROMPT)
    assert whole.exit_code == code
    assert whole.one("refusal")["notice"] == whole.one("turn.failed")["error"]["message"]
    assert whole.one("refusal")["notice"] == expected
    assert mock.app.count() == 1


@pytest.mark.parametrize("wire_name", sorted(WIRES))
def test_a_parent_sees_its_refused_subagent_with_the_same_notice(
    mock: MockServer, wire_name: str
) -> None:
    wire = WIRES[wire_name]
    expected, code = reference(wire, mock, "answer", f"Do this. {MAGIC_REFUSAL_STRING}")
    status = "refused" if code == 3 else "content_filtered"
    run = exec_on(wire, mock.base_url, "subagent-refusal", PROMPT)
    assert run.exit_code == 0
    (subagent,) = run.items("subagent")
    assert subagent["status"] == status
    assert subagent["notice"] == expected
    assert subagent["retry"] is False
    refusal = run.one("refusal")
    assert (refusal["scope"], refusal["notice"]) == ("subagent", expected)
    assert refusal["refused_item_id"] == subagent["id"]
    # parent, refused child (once), parent's answer: the refused task went out once
    bodies = [request.body for request in mock.app.requests]
    assert len(bodies) == 3
    refused = [b for b in bodies if MAGIC_REFUSAL_STRING in _user_messages(b)]
    assert len(refused) == 1
    mock.app.reset()
    human = exec_on(wire, mock.base_url, "subagent-refusal", PROMPT, as_json=False)
    assert human.exit_code == 0
    assert expected in human.stderr.splitlines()


def _user_messages(body: Any) -> str:
    """The text of a request's user turns only (where the mock looks for the magic string)."""
    messages = body.get("messages") or body.get("contents") or body.get("input") or []
    texts = []
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict) and message.get("role") == "user":
            texts.append(orjson.dumps(message.get("content", message.get("parts"))).decode())
    return "\n".join(texts)


@pytest.mark.parametrize("wire_name", sorted(WIRES))
def test_a_session_goes_on_after_a_refusal_without_resending_it(
    mock: MockServer, wire_name: str
) -> None:
    wire = WIRES[wire_name]

    async def session() -> tuple[Agent, Outcome, Outcome]:
        agent = Agent(client(wire, mock, "answer"), subagents=SubagentPolicy())
        agent.start()
        first = await agent.run_turn(f"Please. {MAGIC_REFUSAL_STRING}")
        second = await agent.run_turn("What is 2 + 2?")
        return agent, first.outcome, second.outcome

    agent, first, second = asyncio.run(asyncio.wait_for(session(), 20))
    assert first in (Outcome.REFUSED, Outcome.CONTENT_FILTERED)
    assert second is Outcome.SUCCESS
    assert mock.app.count() == 2
    later = mock.app.requests[1].body
    assert MAGIC_REFUSAL_STRING not in user_texts(later)
    assert agent.gates.fired == []
    assert [e.withdrawn for e in agent.transcript.entries] == [True, False, False]
