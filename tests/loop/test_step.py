"""One step: classification order, and reading a stream up to and just past its verdict."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from refusals.events import StreamAccumulator, StreamEvent, TextDelta, Verdict
from refusals.loop import step as step_module
from refusals.loop.gates import GateAction, Gates
from refusals.loop.step import Step, StepKind, classify, run_step
from refusals.model import FinishReason, LLMResponse, StopDetails, ToolCall
from refusals.refusal import notice
from refusals.request import Request
from refusals.transport.base import Attempt


@pytest.mark.parametrize(
    ("response", "kind"),
    [
        (LLMResponse(content="no", finish_reason=FinishReason.REFUSAL), StepKind.REFUSED),
        (LLMResponse(finish_reason=FinishReason.CONTENT_FILTER), StepKind.FILTERED),
        # A refusal with tool calls is still a refusal: it is checked first.
        (
            LLMResponse(tool_calls=[ToolCall("c", "t", "{}")], finish_reason=FinishReason.REFUSAL),
            StepKind.REFUSED,
        ),
        (LLMResponse(finish_reason=FinishReason.ERROR), StepKind.FAILED),
        (LLMResponse(content="half", finish_reason=FinishReason.LENGTH), StepKind.TRUNCATED),
        (LLMResponse(finish_reason=FinishReason.PAUSE), StepKind.PAUSED),
        (LLMResponse(tool_calls=[ToolCall("c", "t", "{}")]), StepKind.TOOL_CALLS),
        (LLMResponse(content="Paris."), StepKind.TEXT),
        (LLMResponse(content="  \n"), StepKind.EMPTY),
    ],
)
def test_a_response_is_classified_with_refusal_and_filter_first(
    response: LLMResponse, kind: StepKind
) -> None:
    assert classify(response) is kind


class LateStream:
    """A stream with a tail that never ends after the verdict; like every `ModelStream`,
    its response keeps what was read when it is closed early."""

    def __init__(self, head: list[StreamEvent], hang: bool) -> None:
        self.head = head
        self.hang = hang
        self.closed = False
        self.finished = False
        self._acc = StreamAccumulator(provider="anthropic", model="late")

    async def _events(self) -> AsyncIterator[StreamEvent]:
        for index, event in enumerate(self.head):
            self._acc.apply(event, index)
            yield event
        if self.hang:
            await asyncio.sleep(60)
        self.finished = True

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        return self._events()

    @property
    def response(self) -> LLMResponse:
        return self._acc.response

    @property
    def attempts(self) -> list[Attempt]:
        return []

    async def aclose(self) -> None:
        self.closed = True


class LateClient:
    model = "anthropic:late"
    attempts: list[Attempt] = []  # noqa: RUF012 - a test double's fixed answer

    def __init__(self, stream: LateStream) -> None:
        self._stream = stream

    def stream(self, request: Request) -> LateStream:
        return self._stream

    async def complete(self, request: Request) -> LLMResponse:
        raise AssertionError("not called")

    def begin_turn(self) -> None:
        return None


def test_a_stream_that_never_ends_after_its_verdict_is_closed_within_the_drain_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(step_module, "DETAIL_DRAIN_SECONDS", 0.2)
    details = StopDetails(category="cyber", explanation="Blocked.")
    stream = LateStream([TextDelta("a"), Verdict(FinishReason.REFUSAL, "refusal", details)], True)
    shown: list[str] = []

    async def call() -> Step:
        client: Any = LateClient(stream)
        return await run_step(client, Request(model="late"), on_text=shown.append)

    result = asyncio.run(asyncio.wait_for(call(), 5))
    assert stream.closed
    assert shown == ["a"]
    assert not stream.finished
    # The stream's own response, kept at the early close, is what the step reports.
    assert result.kind is StepKind.REFUSED and result.stopped_at_verdict
    assert result.notice == notice(result.response)
    assert result.notice == (
        "The model declined this request (category: cyber): blocked. "
        "The request was not retried; rephrase it or switch models."
    )
    assert result.response.provider == "anthropic" and result.response.cut_off


def test_gates_never_act_on_a_refused_or_filtered_step_or_on_notice_text() -> None:
    gates = Gates(max_continuations=5, max_recoveries=5)
    refused = LLMResponse(content="no", finish_reason=FinishReason.REFUSAL)
    filtered = LLMResponse(finish_reason=FinishReason.CONTENT_FILTER)
    for response in (refused, filtered):
        assert gates.decide(Step(classify(response), response, notice(response)), turn=1) is None
    echoed = LLMResponse(
        content="  The model declined this request: no. The request was not retried.",
        finish_reason=FinishReason.LENGTH,
    )
    assert gates.decide(Step(StepKind.TRUNCATED, echoed), turn=1) is None
    blocked_empty = LLMResponse(content="The provider's content filter blocked this request.")
    assert gates.decide(Step(StepKind.EMPTY, blocked_empty), turn=1) is None
    assert gates.fired == []


def test_gates_are_bounded_per_turn_and_reset_for_the_next() -> None:
    gates = Gates(max_continuations=2, max_recoveries=1)
    cut = Step(StepKind.TRUNCATED, LLMResponse(content="a", finish_reason=FinishReason.LENGTH))
    empty = Step(StepKind.EMPTY, LLMResponse())
    assert [gates.decide(cut, turn=1) for _ in range(3)] == [
        GateAction.CONTINUE,
        GateAction.CONTINUE,
        None,
    ]
    assert [gates.decide(empty, turn=1) for _ in range(2)] == [GateAction.RECOVER, None]
    gates.begin_turn()
    assert gates.decide(cut, turn=2) is GateAction.CONTINUE
    assert [(f.action, f.turn) for f in gates.fired][-1] == (GateAction.CONTINUE, 2)
