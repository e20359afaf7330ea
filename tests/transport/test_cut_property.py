"""The attack family of C1/C2 as a property: a blocked answer cut anywhere is sent once.

Hypothesis picks the wire, the scenario, streamed or whole, FIN or RST and the byte the
answer is cut after; the fault proxy cuts the real wire bytes there. Whatever it picks,
the mock sees the prompt once, and the response is never a success.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals.mock import MockServer
from refusals.model import FinishReason
from refusals.request import Message, Request

from .._faults import FaultProxy
from ._mockwire import CASES, Sleeps, WireCase
from .test_clients import call

BLOCKED = (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER, FinishReason.ERROR)


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer() as running:
        yield running


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    # Vertex and Bedrock need their environment (a project, AWS keys): the parametrized
    # tests in test_cut_bodies.py cover them.
    case=st.sampled_from([c for c in CASES if c.wire not in ("vertex", "bedrock")]),
    scenario=st.sampled_from(["refusal", "refusal-mid-stream", "filter-prompt", "filter-output"]),
    stream=st.booleans(),
    ending=st.sampled_from(["fin", "rst"]),
    fraction=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
)
def test_a_blocked_answer_cut_at_any_byte_reaches_the_server_once(
    server: MockServer,
    *,
    case: WireCase,
    scenario: str,
    stream: bool,
    ending: str,
    fraction: float,
) -> None:
    server.app.reset()
    sleeps = Sleeps()

    def cut(body: bytes) -> int:
        return max(1, int(len(body) * fraction))

    with FaultProxy(server.base_url, cut, "rst" if ending == "rst" else "fin") as proxy:
        response, _, _ = call(
            case,
            proxy.base_url,
            f"mock-{scenario}",
            Request(messages=[Message("user", "hello there")]),
            stream=stream,
            sleeps=sleeps,
        )
    assert server.app.count() == 1
    assert sleeps.delays == []
    assert response.finish_reason in BLOCKED
