"""The one retry policy: which failures are sent again, and after how long.

Only transient failures are retried: connection errors and timeouts before the first
byte, HTTP 408, 409, 429, 5xx and 529, and error events a provider classifies as
transient (Anthropic `overloaded_error`, AWS event-stream service errors) that arrive
before any output. A refusal or a content-filter stop is never retried on the same
model, whatever its HTTP status: resending it is refused again and costs the whole
prompt each time. Authentication and invalid-request errors are never retried either.
A stream that broke after it emitted output is reported, not replayed: the caller has
already shown part of it.

`RetryPolicy` is a value: inspect it, copy it with `dataclasses.replace`, and inject
`sleep` (and `random`) so that tests record delays instead of waiting.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import random as _random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

import httpx

from refusals.model import ErrorKind, FinishReason, LLMResponse

__all__ = ["DEFAULT_RETRY_STATUSES", "RetryPolicy", "is_transient_exception", "retry_after"]

DEFAULT_RETRY_STATUSES: frozenset[int] = frozenset({408, 409, 429} | set(range(500, 600)))
"""HTTP statuses retried by default: timeouts, conflicts, rate limits, server faults."""

_BLOCKED = frozenset({FinishReason.REFUSAL, FinishReason.CONTENT_FILTER})
_NEVER = frozenset({ErrorKind.POLICY, ErrorKind.AUTH, ErrorKind.INVALID_REQUEST})


def is_transient_exception(exc: BaseException) -> bool:
    """Whether an exception raised before any response byte is worth sending again."""
    # Covers connect/read/write/pool timeouts, refused and reset connections, and a
    # server that closed the connection before answering.
    return isinstance(exc, httpx.TransportError) and not isinstance(
        exc, httpx.UnsupportedProtocol | httpx.InvalidURL
    )


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds a response asked the client to wait, from `retry-after-ms` or `retry-after`
    (seconds or an HTTP date); None when neither is present or readable."""
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value
    text = lowered.get("retry-after")
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        value = when.timestamp() - time.time()
        return max(0.0, value)
    return value if math.isfinite(value) and value >= 0 else None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When and how long to wait before sending a failed request again.

    `max_attempts` counts the first request (1 means never retry). The delay before
    attempt n+1 is `base_delay * 2**(n-1)`, capped at `max_delay`, reduced by up to
    `jitter` of itself at random; a `retry-after` the provider sent replaces it, unless
    it exceeds `max_retry_after` (then the failure is reported instead of waited out).
    No retry starts once `total_budget` seconds would be exceeded.
    """

    max_attempts: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    jitter: float = 0.25
    total_budget: float = 60.0
    max_retry_after: float = 60.0
    retry_on: frozenset[int] = DEFAULT_RETRY_STATUSES
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, repr=False)
    random: Callable[[], float] = field(default=_random.random, repr=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1 (1 means no retries)")
        if min(self.base_delay, self.max_delay, self.total_budget, self.max_retry_after) < 0:
            raise ValueError("delays and the total budget cannot be negative")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError("jitter is a fraction between 0 and 1")

    @classmethod
    def never(cls) -> RetryPolicy:
        """A policy that sends every request once."""
        return cls(max_attempts=1)

    def backoff(self, attempt: int) -> float:
        """The delay after failed attempt number `attempt` (from 1), jitter applied."""
        delay = min(self.max_delay, self.base_delay * (2.0 ** max(0, attempt - 1)))
        return delay * (1.0 - self.jitter * self.random())

    def is_retryable(self, outcome: LLMResponse | BaseException) -> bool:
        """Whether this outcome is a transient failure (ignoring attempts and budget)."""
        if isinstance(outcome, BaseException):
            return is_transient_exception(outcome)
        if outcome.finish_reason in _BLOCKED:
            return False
        error = outcome.error
        if outcome.finish_reason is not FinishReason.ERROR or error is None:
            return False
        if error.kind in _NEVER or getattr(error, "should_retry", None) is False:
            return False
        if error.status is not None:
            return error.status in self.retry_on
        return error.kind is ErrorKind.TRANSIENT

    def decide(
        self,
        outcome: LLMResponse | BaseException,
        attempt: int,
        *,
        retry_after: float | None = None,
        elapsed: float = 0.0,
    ) -> float | None:
        """Seconds to wait before sending again, or None to report `outcome` as it is.

        `attempt` is how many attempts were made (1 after the first); `elapsed` is the
        time spent on this call so far; `retry_after` is what the response's headers
        asked for (the response's own `error.retry_after` is read when it is None).
        """
        if attempt >= self.max_attempts or not self.is_retryable(outcome):
            return None
        if retry_after is None and isinstance(outcome, LLMResponse) and outcome.error:
            asked = getattr(outcome.error, "retry_after", None)
            retry_after = asked if isinstance(asked, int | float) else None
        if retry_after is not None:
            if retry_after > self.max_retry_after:
                return None
            delay = float(retry_after)
        else:
            delay = self.backoff(attempt)
        if elapsed + delay > self.total_budget:
            return None
        return delay
