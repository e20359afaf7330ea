"""What every model client offers the loop: one call, streamed or whole, and its attempts.

The loop and the integrations program against `ModelClient` and `ModelStream`; the
clients in `refusals.transport.clients` (one per wire format, plus the fallback chain)
implement them, and `SyncClient` puts any of them behind a blocking facade. Nothing here
does I/O.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from refusals.events import (
    FallbackSeam,
    ReasoningDelta,
    RefusalDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Verdict,
)
from refusals.model import FinishReason, LLMResponse
from refusals.request import Request

TIMEOUT_CODE = "timeout"
"""`ProviderError.code` of a call that ran over its timeout (`--timeout`)."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One HTTP request a call made: to which model, how it ended, how long it took."""

    model: str
    status: int | None
    """The HTTP status, or None when no response arrived (connection error, timeout)."""
    seconds: float
    request_id: str | None = None
    error: str | None = None
    """Why the attempt failed (redacted), or None when it produced the response."""
    retried: bool = False
    """Whether the retry policy sent the request again after this attempt."""


class ModelStream(Protocol):
    """A streamed call in flight: iterate for stream events, then read `response`."""

    def __aiter__(self) -> AsyncIterator[StreamEvent]: ...

    @property
    def response(self) -> LLMResponse:
        """The response accumulated so far (complete once iteration ended)."""
        ...

    @property
    def attempts(self) -> list[Attempt]:
        """Every HTTP attempt this call made, in order (fallback hops included)."""
        ...

    async def aclose(self) -> None:
        """Stop reading (for example at a refusal verdict) and release the connection.

        Closing early keeps what was read: `response` then holds the verdict, text and
        stop details seen so far (no error is added for the early close), and `attempts`
        include the request in flight.
        """
        ...


ResponseObserver = Callable[[LLMResponse], None]
FallbackObserver = Callable[[str, str, str], None]
"""Called with a hop's outcome (`answered`, `declined`, `failed`), from model, to model."""

_RESPONSE_OBSERVERS: list[ResponseObserver] = []
_FALLBACK_OBSERVERS: list[FallbackObserver] = []
_log = logging.getLogger("refusals.transport")


def observe_responses(
    on_response: ResponseObserver | None = None, on_fallback: FallbackObserver | None = None
) -> Callable[[], None]:
    """Have every client report each response it returns (and each fallback hop) to these
    callables, process-wide, as metrics want; returns the function that stops it. A
    failing observer is logged, never allowed to break the call it observes."""
    if on_response is not None:
        _RESPONSE_OBSERVERS.append(on_response)
    if on_fallback is not None:
        _FALLBACK_OBSERVERS.append(on_fallback)

    def stop() -> None:
        if on_response is not None and on_response in _RESPONSE_OBSERVERS:
            _RESPONSE_OBSERVERS.remove(on_response)
        if on_fallback is not None and on_fallback in _FALLBACK_OBSERVERS:
            _FALLBACK_OBSERVERS.remove(on_fallback)

    return stop


def report_response(response: LLMResponse) -> None:
    for observer in tuple(_RESPONSE_OBSERVERS):
        try:
            observer(response)
        except Exception as exc:
            _log.warning("refusals: a response observer failed (%s)", type(exc).__name__)


def report_fallback(outcome: str, from_model: str, to_model: str) -> None:
    for observer in tuple(_FALLBACK_OBSERVERS):
        try:
            observer(outcome, from_model, to_model)
        except Exception as exc:
            _log.warning("refusals: a fallback observer failed (%s)", type(exc).__name__)


class ModelClient(Protocol):
    """A client for one model (or a fallback chain of them)."""

    @property
    def model(self) -> str:
        """The model string it calls, `PROVIDER:MODEL`."""
        ...

    async def complete(self, request: Request) -> LLMResponse:
        """One call, not streamed; a refusal or filter is a response, never an exception."""
        ...

    def stream(self, request: Request) -> ModelStream:
        """One streamed call; the verdict event is yielded as soon as it arrives."""
        ...

    @property
    def attempts(self) -> list[Attempt]:
        """Every HTTP attempt this client made, across calls."""
        ...

    def begin_turn(self) -> None:
        """A new user turn starts: a fallback chain with `scope="turn"` returns to its
        primary model here; plain clients do nothing."""
        ...


def shows_output(event: StreamEvent) -> bool:
    """Whether an event shows the caller something: text, reasoning, a tool call, a
    refusal text, a fallback seam, or a verdict other than an error.

    A stream is never replayed once it yielded such an event (the caller has seen it).
    """
    if isinstance(event, Verdict):
        return event.finish_reason is not FinishReason.ERROR
    return isinstance(
        event, TextDelta | ReasoningDelta | ToolCallDelta | RefusalDelta | FallbackSeam
    )


class SyncClient:
    """A blocking facade over any `ModelClient`, running it on a private event loop.

    Not for use inside a running event loop (call the async client there).
    """

    def __init__(self, client: ModelClient) -> None:
        self.client = client
        self._loop = asyncio.new_event_loop()

    def __repr__(self) -> str:
        return f"SyncClient({self.client!r})"

    @property
    def model(self) -> str:
        return self.client.model

    @property
    def attempts(self) -> list[Attempt]:
        return self.client.attempts

    def begin_turn(self) -> None:
        self.client.begin_turn()

    def complete(self, request: Request) -> LLMResponse:
        """The async `complete`, run to its end."""
        return self._loop.run_until_complete(self.client.complete(request))

    def stream(self, request: Request) -> SyncStream:
        """The async `stream`, as a blocking iterator of events."""
        return SyncStream(self._loop, self.client.stream(request))

    def close(self) -> None:
        """Close the connections the client opened, then the loop."""
        closer = getattr(self.client, "aclose", None)
        if closer is not None:
            self._loop.run_until_complete(closer())
        self._loop.close()

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class SyncStream:
    """A streamed call behind a blocking iterator; `response` and `attempts` as async."""

    def __init__(self, loop: asyncio.AbstractEventLoop, stream: ModelStream) -> None:
        self._loop = loop
        self._stream = stream
        self._iterator = stream.__aiter__()

    @property
    def response(self) -> LLMResponse:
        return self._stream.response

    @property
    def attempts(self) -> list[Attempt]:
        return self._stream.attempts

    def __iter__(self) -> Iterator[StreamEvent]:
        return self

    def __next__(self) -> StreamEvent:
        try:
            return self._loop.run_until_complete(self._iterator.__anext__())
        except StopAsyncIteration:
            raise StopIteration from None

    def close(self) -> None:
        self._loop.run_until_complete(self._stream.aclose())
