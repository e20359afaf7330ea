"""The retry policy: transient failures only, backoff, retry-after, budget; never a refusal."""

from __future__ import annotations

import dataclasses
import email.utils
import time

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refusals.model import ErrorKind, FinishReason, LLMResponse, ProviderError
from refusals.transport.retry import (
    DEFAULT_RETRY_STATUSES,
    RetryPolicy,
    is_transient_exception,
    retry_after,
)

NO_JITTER = RetryPolicy(jitter=0.0)


def error(
    status: int | None, kind: ErrorKind = ErrorKind.TRANSIENT, **extra: object
) -> LLMResponse:
    return LLMResponse(
        finish_reason=FinishReason.ERROR,
        error=ProviderError(kind, status=status, message="boom", **extra),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
def test_transient_statuses_are_retried_after_the_first_backoff(status: int) -> None:
    assert NO_JITTER.decide(error(status), 1) == NO_JITTER.base_delay


@pytest.mark.parametrize("status", [200, 400, 403, 404])
def test_a_refusal_is_never_retried_whatever_its_status(status: int) -> None:
    refused = LLMResponse(
        finish_reason=FinishReason.REFUSAL,
        error=ProviderError(ErrorKind.TRANSIENT, status=status) if status >= 400 else None,
    )
    assert NO_JITTER.decide(refused, 1) is None


@pytest.mark.parametrize("status", [None, 200, 400, 429, 500])
def test_a_content_filter_stop_is_never_retried_even_on_a_retryable_status(
    status: int | None,
) -> None:
    filtered = LLMResponse(
        finish_reason=FinishReason.CONTENT_FILTER,
        error=ProviderError(ErrorKind.POLICY, status=status),
    )
    assert NO_JITTER.decide(filtered, 1) is None


@pytest.mark.parametrize(
    ("kind", "status"),
    [
        (ErrorKind.AUTH, 401),
        (ErrorKind.AUTH, 403),
        (ErrorKind.INVALID_REQUEST, 400),
        (ErrorKind.INVALID_REQUEST, 413),
        (ErrorKind.POLICY, 400),
        # Even a retryable status is not retried when the body says it is not transient.
        (ErrorKind.INVALID_REQUEST, 500),
        (ErrorKind.POLICY, 429),
    ],
)
def test_auth_invalid_request_and_policy_errors_are_never_retried(
    kind: ErrorKind, status: int
) -> None:
    assert NO_JITTER.decide(error(status, kind), 1) is None


def test_a_successful_answer_is_not_retried() -> None:
    assert NO_JITTER.decide(LLMResponse(content="hi"), 1) is None


def test_a_transient_stream_error_without_a_status_is_retried() -> None:
    assert NO_JITTER.decide(error(None), 1) == NO_JITTER.base_delay


def test_a_provider_saying_do_not_retry_is_obeyed() -> None:
    assert NO_JITTER.decide(error(429, should_retry=False), 1) is None


def test_backoff_doubles_per_attempt_and_is_capped() -> None:
    policy = RetryPolicy(
        max_attempts=10, base_delay=0.5, max_delay=3.0, jitter=0.0, total_budget=1000
    )
    delays = [policy.decide(error(503), attempt) for attempt in range(1, 6)]
    assert delays == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_jitter_shortens_a_delay_by_at_most_its_fraction() -> None:
    policy = RetryPolicy(base_delay=2.0, jitter=0.25, random=lambda: 1.0)
    assert policy.decide(error(503), 1) == 1.5
    assert dataclasses.replace(policy, random=lambda: 0.0).decide(error(503), 1) == 2.0


def test_no_retry_is_made_once_max_attempts_were_made() -> None:
    policy = RetryPolicy(max_attempts=3, jitter=0.0)
    assert policy.decide(error(503), 2) is not None
    assert policy.decide(error(503), 3) is None
    assert RetryPolicy.never().decide(error(503), 1) is None


def test_retry_after_replaces_the_backoff() -> None:
    assert NO_JITTER.decide(error(429), 1, retry_after=7.0) == 7.0


def test_a_retry_after_longer_than_allowed_is_reported_instead_of_waited_out() -> None:
    policy = RetryPolicy(jitter=0.0, max_retry_after=30.0)
    assert policy.decide(error(429), 1, retry_after=31.0) is None


def test_the_response_s_own_retry_after_is_used_when_no_header_value_is_given() -> None:
    assert NO_JITTER.decide(error(429, retry_after=4.0), 1) == 4.0


def test_the_total_budget_stops_retries_that_would_exceed_it() -> None:
    policy = RetryPolicy(jitter=0.0, total_budget=10.0, base_delay=1.0)
    assert policy.decide(error(503), 1, elapsed=8.5) == 1.0
    assert policy.decide(error(503), 1, elapsed=9.5) is None
    assert policy.decide(error(429), 1, retry_after=5.0, elapsed=6.0) is None


def test_retry_on_is_configurable() -> None:
    policy = RetryPolicy(jitter=0.0, retry_on=frozenset({503}))
    assert policy.decide(error(503), 1) is not None
    assert policy.decide(error(429), 1) is None


def test_the_default_statuses_are_408_409_429_and_every_5xx() -> None:
    assert {408, 409, 429, 529} <= DEFAULT_RETRY_STATUSES
    assert set(range(500, 600)) <= DEFAULT_RETRY_STATUSES
    assert not {400, 401, 403, 404, 413, 422} & DEFAULT_RETRY_STATUSES


@pytest.mark.parametrize(
    "exc",
    [
        httpx.ConnectError("refused"),
        httpx.ConnectTimeout("slow"),
        httpx.ReadTimeout("slow"),
        httpx.RemoteProtocolError("closed"),
        httpx.ReadError("reset"),
    ],
)
def test_connection_errors_and_timeouts_are_retried(exc: Exception) -> None:
    assert is_transient_exception(exc)
    assert NO_JITTER.decide(exc, 1) == NO_JITTER.base_delay


@pytest.mark.parametrize(
    "exc", [ValueError("bug"), httpx.UnsupportedProtocol("ftp"), KeyError("x")]
)
def test_programming_errors_are_not_retried(exc: Exception) -> None:
    assert NO_JITTER.decide(exc, 1) is None


def test_retry_after_ms_is_preferred_to_retry_after() -> None:
    assert retry_after({"Retry-After": "3", "retry-after-ms": "1500"}) == 1.5


def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert retry_after({"retry-after": "12"}) == 12.0
    soon = email.utils.formatdate(time.time() + 30, usegmt=True)
    value = retry_after({"retry-after": soon})
    assert value is not None
    assert 25.0 <= value <= 31.0


@pytest.mark.parametrize(
    "headers", [{}, {"retry-after": "soon"}, {"retry-after": "-1"}, {"retry-after-ms": "nan"}]
)
def test_unreadable_retry_after_values_are_ignored(headers: dict[str, str]) -> None:
    assert retry_after(headers) is None


def test_a_policy_rejects_impossible_settings() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="jitter"):
        RetryPolicy(jitter=2.0)


def test_the_policy_repr_shows_its_settings_not_its_functions() -> None:
    text = repr(RetryPolicy())
    assert "max_attempts=3" in text
    assert "sleep" not in text


@given(
    finish=st.sampled_from([FinishReason.REFUSAL, FinishReason.CONTENT_FILTER]),
    status=st.none() | st.integers(min_value=100, max_value=599),
    kind=st.sampled_from(list(ErrorKind)) | st.none(),
    should_retry=st.none() | st.booleans(),
    attempt=st.integers(min_value=1, max_value=5),
    asked=st.none() | st.floats(min_value=0, max_value=10),
)
def test_no_refusal_or_filter_stop_is_ever_retried(
    *,
    finish: FinishReason,
    status: int | None,
    kind: ErrorKind | None,
    should_retry: bool | None,
    attempt: int,
    asked: float | None,
) -> None:
    error = (
        ProviderError(kind, status=status, should_retry=should_retry) if kind is not None else None
    )
    blocked = LLMResponse(finish_reason=finish, error=error)
    policy = RetryPolicy(max_attempts=10, jitter=0.0)
    assert policy.decide(blocked, attempt, retry_after=asked) is None
