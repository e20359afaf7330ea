"""Faults inside a stream and Anthropic's prefill claim, served literally by the mock.

A scenario file gives the mock exact wire events: an `overloaded_error` event before any
output (retried), the same after output (reported, never replayed), and a refusal that
grants a prefill claim (the next hop continues the partial answer).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import refusals
from refusals.events import StreamError, StreamEvent, TextDelta
from refusals.mock import MockApp, MockServer
from refusals.model import ErrorKind, FinishReason, LLMResponse
from refusals.transport.clients import client_for
from refusals.transport.fallback import FallbackChain
from refusals.transport.retry import RetryPolicy

from ._mockwire import SENTINEL_KEY, Sleeps, hello, run

START = {
    "event": "message_start",
    "data": {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-flaky",
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 5, "output_tokens": 0},
        },
    },
}
OVERLOADED = {
    "event": "error",
    "data": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
}
TEXT = [
    {
        "event": "content_block_start",
        "data": {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": ""},
        },
    },
    {
        "event": "content_block_delta",
        "data": {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Hello"},
        },
    },
]
REFUSED_WITH_CLAIM = {
    "id": "msg_2",
    "type": "message",
    "role": "assistant",
    "model": "claude-fable-5",
    "content": [{"type": "text", "text": "Partial answer  "}],
    "stop_reason": "refusal",
    "stop_details": {
        "type": "refusal",
        "category": "cyber",
        "explanation": None,
        "fallback_credit_token": "tok_claim_1",
        "fallback_has_prefill_claim": True,
    },
    "usage": {"input_tokens": 5, "output_tokens": 3},
}
RULES = {
    "rules": [
        {"model": "claude-overloaded-early", "events": [START, OVERLOADED]},
        {"model": "claude-overloaded-late", "events": [START, *TEXT, OVERLOADED]},
        {"model": "claude-fable-5", "body": REFUSED_WITH_CLAIM},
    ]
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockServer]:
    path: Path = tmp_path_factory.mktemp("scenarios") / "rules.json"
    path.write_text(json.dumps(RULES))
    with MockServer(MockApp(scenarios_file=path)) as running:
        yield running


def stream_once(client: Any) -> tuple[LLMResponse, list[StreamEvent]]:
    async def go() -> tuple[LLMResponse, list[StreamEvent]]:
        handle = client.stream(hello())
        events = [event async for event in handle]
        return handle.response, events

    return run(go())


def test_an_overloaded_event_before_any_output_is_retried(server: MockServer) -> None:
    server.app.reset()
    sleeps = Sleeps()
    policy = RetryPolicy(jitter=0.0, sleep=sleeps)
    client = client_for(
        "anthropic:claude-overloaded-early",
        base_url=server.base_url,
        api_key=SENTINEL_KEY,
        retry=policy,
    )
    response, events = stream_once(client)
    assert server.app.count() == 3
    assert sleeps.delays == [policy.backoff(1), policy.backoff(2)]
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    # The failed attempts' events were never shown: only the last one's are.
    assert [type(e) for e in events].count(StreamError) == 1


def test_an_overloaded_event_after_output_is_reported_and_not_replayed(server: MockServer) -> None:
    server.app.reset()
    sleeps = Sleeps()
    client = client_for(
        "anthropic:claude-overloaded-late",
        base_url=server.base_url,
        api_key=SENTINEL_KEY,
        retry=RetryPolicy(jitter=0.0, sleep=sleeps),
    )
    response, events = stream_once(client)
    assert server.app.count() == 1
    assert sleeps.delays == []
    assert response.finish_reason is FinishReason.ERROR
    assert response.cut_off
    assert response.content == "Hello"
    assert any(isinstance(e, TextDelta) for e in events)
    assert any(isinstance(e, StreamError) for e in events)


def test_a_slow_first_byte_past_the_timeout_is_retried_then_reported(server: MockServer) -> None:
    server.app.reset()
    sleeps = Sleeps()
    client = client_for(
        "anthropic:mock-slow",
        base_url=server.base_url,
        api_key=SENTINEL_KEY,
        retry=RetryPolicy(jitter=0.0, sleep=sleeps),
        timeout=0.3,
    )
    response = run(client.complete(hello()))
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.message is not None
    assert "CallTimeout" in response.error.message
    assert response.error.code == "timeout"
    assert [a.status for a in client.attempts] == [None, None, None]
    assert len(sleeps.delays) == 2


def test_a_prefill_claim_sends_the_partial_answer_to_the_next_hop(server: MockServer) -> None:
    server.app.reset()
    chain = client_for(
        "anthropic:claude-fable-5",
        base_url=server.base_url,
        api_key=SENTINEL_KEY,
        fallbacks=["anthropic:mock-answer"],
        retry=RetryPolicy.never(),
    )
    assert isinstance(chain, FallbackChain)
    response = run(chain.complete(hello()))
    refused, hop = server.app.requests
    assert refused.model == "claude-fable-5"
    assert hop.model == "mock-answer"
    assert hop.body["fallback_credit_token"] == "tok_claim_1"
    assert hop.body["messages"][:-1] == refused.body["messages"]
    assert hop.body["messages"][-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Partial answer"}],
    }
    assert response.finish_reason is FinishReason.STOP
    assert response.content is not None
    assert response.content.startswith("Partial answer")
    [record] = [d for d in response.decoded_details() if d.get("source") == "client"]
    assert record["prefill"] is True
    assert refusals.notice(response) is None
