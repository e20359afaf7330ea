"""A scripted `ModelClient`: our own client protocol, answering from a list of event lists.

Each call consumes the next script (a list of `refusals.events` events); the response is
folded by the real `StreamAccumulator`, as every stream decoder folds it. Requests are
recorded as sent, so tests can read what a later request carried.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from refusals.events import (
    RefusalDelta,
    StreamAccumulator,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Verdict,
)
from refusals.model import FinishReason, LLMResponse, StopDetails, ToolCall
from refusals.request import Request
from refusals.transport.base import Attempt

Script = Sequence[StreamEvent]


def text(answer: str) -> list[StreamEvent]:
    return [TextDelta(answer), Verdict(FinishReason.STOP, "end_turn")]


def tool_call(name: str, arguments: str, call_id: str = "") -> list[StreamEvent]:
    return [
        ToolCallDelta(0, call_id or None, name, arguments),
        Verdict(FinishReason.TOOL_CALLS, "tool_use"),
    ]


def refusal(
    category: str = "cyber", explanation: str = "It breaks the policy."
) -> list[StreamEvent]:
    return [
        Verdict(
            FinishReason.REFUSAL,
            "refusal",
            StopDetails(category=category, explanation=explanation),
        )
    ]


@dataclass
class ScriptedStream:
    script: Script
    provider: str
    attempts: list[Attempt]
    model: str
    read: int = 0
    closed: bool = False
    _acc: StreamAccumulator = field(init=False)

    def __post_init__(self) -> None:
        self._acc = StreamAccumulator(provider=self.provider, model=self.model, request_id="req_1")

    async def _events(self) -> AsyncIterator[StreamEvent]:
        for index, event in enumerate(self.script):
            if self.closed:
                return
            self.read += 1
            self._acc.apply(event, index)
            yield event

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        return self._events()

    @property
    def response(self) -> LLMResponse:
        return self._acc.response

    async def aclose(self) -> None:
        self.closed = True


@dataclass
class ScriptedClient:
    """Answers call N with `scripts[N]`; records every request and stream."""

    scripts: list[Script]
    model: str = "scripted:model-a"
    provider: str = "anthropic"
    requests: list[Request] = field(default_factory=list)
    streams: list[ScriptedStream] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    turns_begun: int = 0

    def _next(self, request: Request) -> Script:
        self.requests.append(copy.deepcopy(request))
        self.attempts.append(Attempt(self.model, 200, 0.0))
        if len(self.requests) > len(self.scripts):
            raise AssertionError(f"call {len(self.requests)} has no script")
        return self.scripts[len(self.requests) - 1]

    def stream(self, request: Request) -> ScriptedStream:
        stream = ScriptedStream(self._next(request), self.provider, self.attempts, "model-a")
        self.streams.append(stream)
        return stream

    async def complete(self, request: Request) -> LLMResponse:
        acc = StreamAccumulator(provider=self.provider, model="model-a", request_id="req_1")
        for index, event in enumerate(self._next(request)):
            acc.apply(event, index)
        return acc.response

    def begin_turn(self) -> None:
        self.turns_begun += 1


def sent_texts(request: Request) -> list[str]:
    """Every text a request carried: message contents and tool-call arguments."""
    texts = []
    for message in request.messages:
        texts.append(message.content)
        texts += [call.arguments for call in message.tool_calls]
    return texts


__all__ = [
    "RefusalDelta",
    "ScriptedClient",
    "ToolCall",
    "refusal",
    "sent_texts",
    "text",
    "tool_call",
]
