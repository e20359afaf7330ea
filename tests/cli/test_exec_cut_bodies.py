"""`refusals exec` when a refused or filtered body is cut off in transit (C1, C2).

The fault proxy forwards to the mock server and cuts the answer one byte short, then
resets the connection: the run still reports the refusal (exit 3) or filter (exit 4),
with the notice, and the mock saw the prompt once.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from refusals.mock import MockServer

from .._faults import FaultProxy, short_by
from ._exec_support import WIRES, exec_on

NO_REFUSAL_SIGNAL = frozenset({"gemini", "vertex", "bedrock", "cohere"})


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer() as running:
        yield running


@pytest.mark.parametrize("stream", [False, True], ids=["no-stream", "stream"])
@pytest.mark.parametrize("scenario", ["refusal", "filter-prompt"])
@pytest.mark.parametrize("wire", list(WIRES))
def test_a_cut_blocked_body_exits_with_its_verdict_after_one_request(
    wire: str, scenario: str, stream: bool, server: MockServer
) -> None:
    server.app.reset()
    with FaultProxy(server.base_url, short_by(1), "rst") as proxy:
        run = exec_on(
            WIRES[wire], proxy.base_url, scenario, *([] if stream else ["--no-stream"]), "hi"
        )
    refused = scenario == "refusal" and wire not in NO_REFUSAL_SIGNAL
    assert run.exit_code == (3 if refused else 4), run.stdout
    assert server.app.count() == 1
    refusal = run.one("refusal")
    assert refusal["notice"] == run.one("turn.failed")["error"]["message"]
