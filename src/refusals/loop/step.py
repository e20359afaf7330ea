"""One provider call, classified: what the loop does next depends only on the `Step`.

The refusal and content-filter checks come first, right after the call (or at the
stream event that carries the verdict), before anything else looks at the result: no
auto-continue, recovery or retry decision ever sees a refused step as recoverable.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from enum import Enum

from refusals.events import (
    FallbackSeam,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    Verdict,
)
from refusals.model import FinishReason, LLMResponse
from refusals.refusal import notice
from refusals.request import Request
from refusals.transport.base import ModelClient

_TERMINAL = frozenset({FinishReason.REFUSAL, FinishReason.CONTENT_FILTER})

# After a terminal verdict nothing more is shown or acted on, but the stream is read on,
# this long at most, for the facts that complete the notice: OpenAI's refusal text and
# Azure's filtered refusal message arrive over several deltas after the one that decided
# the verdict, Bedrock's guardrail trace in the metadata event after messageStop.
DETAIL_DRAIN_SECONDS = 2.0
DETAIL_DRAIN_EVENTS = 4096


class StepKind(Enum):
    """What one model call produced, in the order the loop checks for it."""

    REFUSED = "refused"
    FILTERED = "content_filtered"
    FAILED = "failed"
    TRUNCATED = "truncated"
    PAUSED = "paused"
    TOOL_CALLS = "tool_calls"
    TEXT = "text"
    EMPTY = "empty"

    @property
    def is_terminal(self) -> bool:
        """A refused or filtered step ends its turn; nothing may act on it."""
        return self in (StepKind.REFUSED, StepKind.FILTERED)


@dataclass(slots=True)
class Step:
    kind: StepKind
    response: LLMResponse
    notice: str | None = None
    """`refusals.notice(response)` for a refused or filtered step, unchanged."""
    stopped_at_verdict: bool = False
    """Whether reading stopped at the stream's refusal or filter verdict."""


def classify(response: LLMResponse) -> StepKind:
    """The kind of step `response` is; refusal and filter are checked first."""
    finish = response.finish_reason
    if finish is FinishReason.REFUSAL:
        return StepKind.REFUSED
    if finish is FinishReason.CONTENT_FILTER:
        return StepKind.FILTERED
    if finish is FinishReason.ERROR:
        return StepKind.FAILED
    if finish is FinishReason.LENGTH:
        return StepKind.TRUNCATED
    if finish is FinishReason.PAUSE:
        return StepKind.PAUSED
    if response.tool_calls:
        return StepKind.TOOL_CALLS
    if (response.content or "").strip():
        return StepKind.TEXT
    return StepKind.EMPTY


def _step(response: LLMResponse, stopped: bool = False) -> Step:
    kind = classify(response)
    return Step(kind, response, notice(response) if kind.is_terminal else None, stopped)


TextSink = Callable[[str], None]


async def run_step(
    client: ModelClient,
    request: Request,
    *,
    stream: bool = True,
    on_text: TextSink | None = None,
    on_reasoning: TextSink | None = None,
    on_seam: Callable[[FallbackSeam], None] | None = None,
) -> Step:
    """Make one call and classify it; streamed text goes to `on_text` as it arrives.

    Streaming stops at a refusal or filter verdict: no output after it is shown, and the
    connection is closed once the facts the notice needs have arrived (bounded). A
    fallback chain's `FallbackSeam` (another model takes over) goes to `on_seam`.
    """
    if not stream:
        return _step(await client.complete(request))
    call = client.stream(request)
    events = call.__aiter__()
    stopped = False
    interrupted = False
    try:
        async for event in events:
            if isinstance(event, Verdict) and event.finish_reason in _TERMINAL:
                stopped = True
                try:
                    await _drain_details(events)
                except asyncio.CancelledError:
                    # Ctrl-C while the details arrive: the verdict stands (a refused
                    # prompt reported as "cancelled" would invite sending it again).
                    interrupted = True
                break
            if isinstance(event, TextDelta) and on_text is not None:
                on_text(event.text)
            elif isinstance(event, ReasoningDelta) and on_reasoning is not None:
                on_reasoning(event.text)
            elif isinstance(event, FallbackSeam) and on_seam is not None:
                on_seam(event)
    finally:
        # A closed stream keeps what it read (the `ModelStream.aclose` contract), so the
        # response holds the verdict and its details even when reading stopped early.
        try:
            await call.aclose()
        except asyncio.CancelledError:
            if not stopped:
                raise
            interrupted = True
    if interrupted:
        # The cancellation was spent stopping the read; the turn ends as refused now.
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
    return _step(call.response, stopped)


async def _drain_details(events: AsyncIterator[StreamEvent]) -> None:
    """Read on after a terminal verdict, showing nothing, within the drain bounds (the
    client folds what is read into its response)."""
    deadline = time.monotonic() + DETAIL_DRAIN_SECONDS
    for _ in range(DETAIL_DRAIN_EVENTS):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        try:
            await asyncio.wait_for(anext(events), remaining)
        except (StopAsyncIteration, TimeoutError):
            return
