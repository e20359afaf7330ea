"""Bodies cut off in transit: never sent again, and read for the verdict their bytes carry.

A `FaultProxy` on 127.0.0.1 forwards each call to the mock server and writes the real
wire bytes back cut short (one byte short, half, or just after the verdict marker), then
closes (FIN) or resets (RST) the connection. The mock's own request log says how often
the prompt reached the provider: once, on every wire, whole and streamed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import refusals
from refusals.mock import MockServer
from refusals.model import FinishReason
from refusals.request import Message, Request

from .._faults import Cut, FaultProxy, after, half, short_by
from ._mockwire import CASES, Sleeps, WireCase
from .test_clients import call, declined

BLOCKED_SCENARIOS = ["refusal", "filter-prompt", "filter-output"]
CUTS: dict[str, Cut] = {"short-by-1": short_by(1), "half": half, "first-byte": lambda b: 1}


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer() as running:
        yield running


def blocked_as(case: WireCase, scenario: str) -> FinishReason:
    return declined(case) if scenario == "refusal" else FinishReason.CONTENT_FILTER


@pytest.mark.parametrize("ending", ["fin", "rst"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("scenario", BLOCKED_SCENARIOS)
@pytest.mark.parametrize("case", CASES, ids=[c.wire for c in CASES])
def test_a_blocked_body_cut_one_byte_short_is_sent_once_and_keeps_its_verdict(
    case: WireCase,
    scenario: str,
    stream: bool,
    *,
    ending: str,
    server: MockServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    case.prepare(monkeypatch)
    server.app.reset()
    sleeps = Sleeps()
    with FaultProxy(server.base_url, short_by(1), "rst" if ending == "rst" else "fin") as proxy:
        response, _, attempts = call(
            case, proxy.base_url, f"mock-{scenario}", _hello(), stream=stream, sleeps=sleeps
        )
    assert server.app.count() == 1
    assert proxy.requests == 1
    assert sleeps.delays == []
    assert [a.retried for a in attempts] == [False]
    assert response.finish_reason is blocked_as(case, scenario), response.error
    assert refusals.notice(response) is not None


@pytest.mark.parametrize("cut", list(CUTS), ids=list(CUTS))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("case", CASES, ids=[c.wire for c in CASES])
def test_a_refusal_cut_anywhere_after_its_first_byte_is_never_resent(
    case: WireCase, cut: str, stream: bool, server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    case.prepare(monkeypatch)
    server.app.reset()
    sleeps = Sleeps()
    with FaultProxy(server.base_url, CUTS[cut]) as proxy:
        response, _, _ = call(
            case, proxy.base_url, "mock-refusal", _hello(), stream=stream, sleeps=sleeps
        )
    assert server.app.count() == 1
    assert sleeps.delays == []
    # Whatever arrived, the response is never a success: a refusal, or a cut-off error.
    assert response.finish_reason in (declined(case), FinishReason.ERROR)
    assert response.error is not None
    assert response.error.retryable is False


@pytest.mark.parametrize("ending", ["fin", "rst"])
def test_an_anthropic_stream_cut_inside_the_verdict_event_is_a_refusal_sent_once(
    ending: str, server: MockServer
) -> None:
    server.app.reset()
    sleeps = Sleeps()
    marker = b'"stop_reason":"refusal"'
    with FaultProxy(server.base_url, after(marker), "rst" if ending == "rst" else "fin") as proxy:
        response, _, _ = call(
            CASES[0], proxy.base_url, "mock-refusal", _hello(), stream=True, sleeps=sleeps
        )
    assert server.app.count() == 1
    assert marker in proxy.sent[0] and not proxy.sent[0].endswith(b"\n")
    assert response.finish_reason is FinishReason.REFUSAL
    assert refusals.notice(response) is not None


def test_a_body_cut_before_its_first_byte_is_retried_by_the_policy(server: MockServer) -> None:
    server.app.reset()
    sleeps = Sleeps()
    with FaultProxy(server.base_url, lambda body: 0) as proxy:
        response, _, attempts = call(
            CASES[0], proxy.base_url, "mock-answer", _hello(), stream=False, sleeps=sleeps
        )
    # Nothing of the answer arrived: the request may be sent again, as the policy says.
    assert proxy.requests == 3
    assert len(sleeps.delays) == 2
    assert response.finish_reason is FinishReason.ERROR
    assert [a.retried for a in attempts] == [True, True, False]


def _hello() -> Request:
    return Request(messages=[Message("user", "hello there")])
