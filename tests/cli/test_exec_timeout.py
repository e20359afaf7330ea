"""`--timeout` bounds one provider call as a whole: keep-alive pings do not extend it."""

from __future__ import annotations

import time

import pytest

from refusals.mock import MockServer

from .._faults import PingServer
from ._exec_support import run_exec


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
def test_a_stream_of_keep_alives_ends_at_the_timeout_and_is_not_resent(stream: bool) -> None:
    with PingServer(interval=0.05) as server:
        started = time.monotonic()
        run = run_exec(
            "--model",
            "anthropic:claude-x",
            "--base-url",
            server.base_url,
            "--timeout",
            "1",
            *([] if stream else ["--no-stream"]),
            "hi",
            env={"ANTHROPIC_API_KEY": "k"},
        )
        elapsed = time.monotonic() - started
    assert run.exit_code == 124
    assert elapsed < 8
    # Pings are bytes of the body: the request reached the model, and is not sent again.
    assert server.requests == 1
    failed = run.one("turn.failed")
    assert "longer than its 1 s limit (--timeout)" in failed["error"]["message"]
    assert failed["outcome_code"] == "timed_out"
    done = run.events[-1]
    assert (done["subtype"], done["exit_code"]) == ("error_timeout", 124)


def test_a_call_whose_first_byte_never_comes_in_time_is_a_timeout_in_human_mode() -> None:
    with MockServer() as server:
        run = run_exec(
            "--model",
            "anthropic:mock-slow",
            "--base-url",
            server.base_url,
            "--timeout",
            "0.3",
            "hi",
            env={"ANTHROPIC_API_KEY": "k"},
            as_json=False,
        )
        # No byte of an answer arrived: the transport's retries may send it again.
        assert 1 <= server.app.count() <= 3
    assert run.exit_code == 124
    assert run.stderr.splitlines()[-1].startswith("refusals exec: timed_out (exit 124)")


def test_timeout_must_be_positive() -> None:
    run = run_exec("--timeout", "0", "hi", as_json=False)
    assert run.exit_code == 2
    assert "--timeout" in run.stderr
