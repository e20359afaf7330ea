"""Fallback hops on every exec surface: one human line per hop, a typed `fallback` event
in --json, and `served_by` in thread.completed (issue 20)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from refusals.loop import Agent, Outcome
from refusals.loop.events import Event, FallbackReported, ThreadCompleted
from refusals.mock import MockApp, MockServer
from refusals.transport.clients import client_for
from refusals.transport.fallback import FallbackChain
from tests.cli._exec_support import WIRES, ExecRun, run_exec

ANTHROPIC = WIRES["anthropic"]


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer(MockApp()) as running:
        yield running


@pytest.fixture
def mock(server: MockServer) -> MockServer:
    server.app.reset()
    return server


def chain(server: MockServer, primary: str, *fallbacks: str, as_json: bool = True) -> ExecRun:
    options = [arg for name in fallbacks for arg in ("--fallback-model", ANTHROPIC.model(name))]
    return run_exec(
        "--model",
        ANTHROPIC.model(primary),
        *options,
        "--base-url",
        server.base_url,
        "Say hello.",
        env=dict(ANTHROPIC.env),
        as_json=as_json,
    )


def test_a_fallback_that_answers_is_an_event_and_the_final_event_names_who_served(
    mock: MockServer,
) -> None:
    run = chain(mock, "refusal", "answer")
    assert run.exit_code == 0
    hop = run.one("fallback")
    primary, fallback = ANTHROPIC.model("refusal"), ANTHROPIC.model("answer")
    assert hop == {
        "type": "fallback",
        "outcome": "answered",
        "direction": "retry",
        "source": "client",
        "original_model": primary,
        "fallback_model": fallback,
        "trigger": "refusal",
        "category": "cyber",
        "explanation": (
            "This request triggered the mock provider's refusal scenario and was declined."
        ),
        "request_id": "msg_mock_000001",
        "fallback_scope": "turn",
        "scope": "session",
        "refused_item_id": run.one("turn.started")["prompt_item_id"],
        "retracted_item_ids": [],
        "error": None,
        "content": f"fallback: {primary} declined (category: cyber); {fallback} answered",
    }
    done = run.events[-1]
    assert done["served_by"] == ANTHROPIC.model("answer")
    assert done["served_by_fallback"] is True
    assert done["result"] == "Mock answer: Say hello."
    # The declined call's tokens count too, under the model that spent them.
    assert set(done["model_usage"]) == {ANTHROPIC.model("refusal"), ANTHROPIC.model("answer")}
    total = sum(u["output_tokens"] for u in done["model_usage"].values())
    assert done["usage"]["output_tokens"] == total
    assert done["duration_ms"] >= done["duration_api_ms"] >= 0
    assert mock.app.count(model="mock-refusal") == 1


def test_each_hop_is_one_human_line_and_the_summary_says_who_served(mock: MockServer) -> None:
    run = chain(mock, "refusal", "answer", as_json=False)
    assert run.exit_code == 0
    assert run.stdout == "Mock answer: Say hello.\n"
    lines = run.stderr.splitlines()
    primary, fallback = ANTHROPIC.model("refusal"), ANTHROPIC.model("answer")
    assert f"fallback: {primary} declined (category: cyber); {fallback} answered" in lines
    assert lines[-1].endswith(f"2 requests, served by {fallback}")


def test_a_fallback_that_fails_and_one_that_declines_are_both_reported(
    mock: MockServer,
) -> None:
    run = chain(mock, "refusal", "server-error", "refusal-mid-stream")
    assert run.exit_code == 3
    failed, declined = run.of_type("fallback")
    assert failed["outcome"] == "failed"
    assert failed["fallback_model"] == ANTHROPIC.model("server-error")
    assert "Internal server error" in failed["error"]
    assert declined["outcome"] == "declined"
    assert declined["original_model"] == ANTHROPIC.model("refusal")
    assert declined["fallback_model"] == ANTHROPIC.model("refusal-mid-stream")
    refusal = run.one("refusal")
    assert "also declined" in refusal["notice"]
    # Each refused prompt reached its model once (the 500s were retried, not refused).
    assert mock.app.count(model="mock-refusal") == 1
    assert mock.app.count(model="mock-refusal-mid-stream") == 1
    human = chain(mock, "refusal", "server-error", as_json=False)
    assert any(
        line.startswith(f"fallback: {ANTHROPIC.model('refusal')} declined (category: cyber); ")
        and "could not be asked (Internal server error" in line
        for line in human.stderr.splitlines()
    )


def test_a_refusal_with_no_fallback_says_so_in_one_event(mock: MockServer) -> None:
    run = chain(mock, "filter-output")
    assert run.exit_code == 4
    event = run.one("fallback")
    assert event["outcome"] == "no_fallback"
    assert event["trigger"] == "content_filter"
    assert event["original_model"] == ANTHROPIC.model("filter-output")
    assert event["fallback_model"] is None and event["source"] is None
    assert event["direction"] is None  # nothing was retried, as in model_refusal_no_fallback
    assert run.events[-1]["served_by"] == ANTHROPIC.model("filter-output")
    assert run.events[-1]["result"] is None


def test_a_provider_side_fallback_is_reported_with_source_server(mock: MockServer) -> None:
    events: list[Event] = []
    client = client_for("anthropic:mock-fallback-served", base_url=mock.base_url, api_key="k")
    agent = Agent(client, server_fallbacks=["mock-answer"], emit=events.append)
    result = asyncio.run(asyncio.wait_for(agent.run("hello"), 20))
    assert result.outcome is Outcome.SUCCESS
    (hop,) = [e for e in events if isinstance(e, FallbackReported)]
    assert (hop.outcome, hop.source) == ("answered", "server")
    assert hop.original_model == "mock-fallback-served"
    assert hop.fallback_model == "mock-answer"
    done = events[-1]
    assert isinstance(done, ThreadCompleted)
    assert done.served_by == "anthropic:mock-answer" and done.served_by_fallback


def test_a_turn_scoped_chain_going_back_to_its_primary_is_reported(mock: MockServer) -> None:
    events: list[Event] = []
    primary = client_for("anthropic:mock-refusal", base_url=mock.base_url, api_key="k")
    fallback = client_for("anthropic:mock-answer", base_url=mock.base_url, api_key="k")
    agent = Agent(FallbackChain([primary, fallback]), emit=events.append)

    async def two_turns() -> None:
        agent.start()
        await agent.run_turn("first")
        await agent.run_turn("second")

    asyncio.run(asyncio.wait_for(two_turns(), 20))
    hops = [e.to_json() for e in events if isinstance(e, FallbackReported)]
    assert [(h["outcome"], h["direction"]) for h in hops] == [
        ("answered", "retry"),
        ("returned", "revert"),
        ("answered", "retry"),
    ]
    assert hops[1]["original_model"] == "anthropic:mock-refusal"
    assert hops[1]["fallback_model"] == "anthropic:mock-answer"


def test_a_hop_after_partial_output_names_the_items_it_withdrew(mock: MockServer) -> None:
    run = chain(mock, "refusal-mid-stream", "answer")
    assert run.exit_code == 0
    hop = run.one("fallback")
    fragment = run.items("agent_message")[0]
    assert fragment["retracted"] is True
    assert hop["retracted_item_ids"] == [fragment["id"]]
    assert hop["refused_item_id"] == run.one("turn.started")["prompt_item_id"]
