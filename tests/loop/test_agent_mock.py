"""The loop against a real mock server: what later requests carry back to the provider."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from refusals.loop import Agent, Outcome
from refusals.mock import MockApp, MockServer
from refusals.transport.clients import client_for


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer(MockApp()) as running:
        yield running


@pytest.fixture
def mock(server: MockServer) -> MockServer:
    server.app.reset()
    return server


def anthropic(server: MockServer, scenario: str) -> Any:
    return client_for(f"anthropic:mock-{scenario}", base_url=server.base_url, api_key="k")


def test_server_side_fallback_blocks_are_sent_back_in_place(mock: MockServer) -> None:
    agent = Agent(anthropic(mock, "fallback-served"), server_fallbacks=["mock-answer"])

    async def session() -> tuple[Outcome, Outcome]:
        agent.start()
        first = await agent.run_turn("hello")
        second = await agent.run_turn("again")
        return first.outcome, second.outcome

    assert asyncio.run(asyncio.wait_for(session(), 20)) == (Outcome.SUCCESS, Outcome.SUCCESS)
    first_body, second_body = (request.body for request in mock.app.requests)
    assert first_body["fallbacks"] == [{"model": "mock-answer"}]
    assistant = second_body["messages"][1]
    assert assistant["role"] == "assistant"
    assert [block["type"] for block in assistant["content"]] == ["fallback", "text"]
    assert assistant["content"][0]["from"] == {"model": "mock-fallback-served"}
    assert assistant["content"][1]["text"] == "Mock answer: hello"


def test_paused_content_is_sent_back_as_it_is_without_a_new_user_message(
    mock: MockServer,
) -> None:
    agent = Agent(anthropic(mock, "pause-turn"))
    result = asyncio.run(asyncio.wait_for(agent.run("search the web"), 20))
    # The mock pauses every time: three bounded continuations, then the turn fails.
    assert result.outcome is Outcome.ERROR
    assert [firing.action.value for firing in agent.gates.fired] == ["continue"] * 3
    bodies = [request.body for request in mock.app.requests]
    assert len(bodies) == 4
    first_answer = agent.transcript.entries[1].message.content
    resent = bodies[1]["messages"]
    assert [m["role"] for m in resent] == ["user", "assistant"]
    assert resent[1]["content"][0]["text"] == first_answer.rstrip()
