"""Ctrl-C on a real `refusals exec` process in the middle of a slow provider call."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from refusals.mock import MockServer
from tests._faults import FaultProxy, through_event
from tests.cli._exec_support import VALIDATOR

DEADLINE_SECONDS = 20


def start_exec(server: MockServer, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key-h5"}
    command = [sys.executable, "-m", "refusals", "exec", "--model", "anthropic:mock-slow"]
    return subprocess.Popen(
        [*command, "--base-url", server.base_url, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def wait_for_request(server: MockServer) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while server.app.count() == 0:
        assert time.monotonic() < deadline, "the request never reached the mock"
        time.sleep(0.02)


def read_line(process: subprocess.Popen[bytes]) -> bytes:
    """One line of stdout, read a byte at a time from the descriptor: a buffered read
    could take more, which `communicate` (reading the descriptor) would then miss."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    deadline = time.monotonic() + DEADLINE_SECONDS
    line = b""
    while not line.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
        assert ready, "no event within the deadline"
        byte = os.read(fd, 1)
        assert byte, "stdout closed before a whole line"
        line += byte
    return line


def read_until(process: subprocess.Popen[bytes], event_type: str) -> bytes:
    """The event lines of stdout up to and including the first of `event_type`."""
    lines = b""
    for _ in range(16):
        line = read_line(process)
        lines += line
        if orjson.loads(line)["type"] == event_type:
            return lines
    raise AssertionError(f"no {event_type} event among the first 16: {lines!r}")


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "human"])
def test_ctrl_c_ends_the_run_as_cancelled_with_exit_130_and_nothing_half_written(
    tmp_path: Path, as_json: bool
) -> None:
    target = tmp_path / "last.txt"
    flags = ["--json"] if as_json else []
    with MockServer() as server:
        process = start_exec(server, *flags, "--output-last-message", str(target), "Hello.")
        try:
            # SIGINT goes only once the turn is under way: its turn.started was written
            # and its request reached the server (the call is in flight).
            first = read_until(process, "turn.started") if as_json else b""
            wait_for_request(server)
            process.send_signal(signal.SIGINT)
            rest, stderr = process.communicate(timeout=DEADLINE_SECONDS)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=DEADLINE_SECONDS)
    assert process.returncode == 130
    assert b"Traceback" not in stderr
    assert not list(tmp_path.iterdir()), "no last message, and no temporary file, was left"
    if not as_json:
        assert b"cancelled (exit 130)" in stderr
        assert rest == b""
        return
    assert rest.endswith(b"\n")
    events = [orjson.loads(line) for line in (first + rest).splitlines()]
    for event in events:
        VALIDATOR.validate(event)
    assert [e["type"] for e in events] == [
        "thread.started",
        "turn.started",
        "turn.failed",
        "thread.completed",
    ]
    assert events[2]["error"]["message"] == "The run was cancelled."
    assert events[3]["outcome_code"] == "cancelled"
    assert events[3]["subtype"] == "error_cancelled"
    assert events[3]["exit_code"] == 130
    assert events[3]["requests"] == 1


def test_ctrl_c_after_the_refusal_verdict_keeps_the_refusal_and_exit_3() -> None:
    # The verdict event arrives, then the provider stalls: exec reads on for the notice's
    # details (bounded), and Ctrl-C then must not turn the refusal into "cancelled".
    with (
        MockServer() as server,
        FaultProxy(server.base_url, through_event(b'"stop_reason":"refusal"'), stall=10.0) as proxy,
    ):
        env = {**os.environ, "ANTHROPIC_API_KEY": "test-key-h5"}
        command = [sys.executable, "-m", "refusals", "exec", "--json"]
        process = subprocess.Popen(
            [*command, "--model", "anthropic:mock-refusal", "--base-url", proxy.base_url, "Hi"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        try:
            deadline = time.monotonic() + DEADLINE_SECONDS
            while not proxy.sent:
                assert time.monotonic() < deadline, "the verdict was never sent"
                time.sleep(0.02)
            time.sleep(0.3)
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=DEADLINE_SECONDS)
        finally:
            process.kill()
    events = [orjson.loads(line) for line in out.splitlines()]
    for event in events:
        VALIDATOR.validate(event)
    assert process.returncode == 3, (out, err)
    refusal = next(event for event in events if event["type"] == "refusal")
    failed = next(event for event in events if event["type"] == "turn.failed")
    assert refusal["notice"] == failed["error"]["message"]
    assert events[-1]["type"] == "thread.completed"
    assert events[-1]["outcome_code"] == "refused"
    assert server.app.count() == 1


def test_sigterm_before_the_run_starts_exits_130_like_ctrl_c() -> None:
    # Waiting for the prompt on stdin: the run has not started, no handler of its own.
    process = subprocess.Popen(
        [sys.executable, "-m", "refusals", "exec", "--json", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        time.sleep(1.5)  # past the interpreter's start-up, into the read of stdin
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=DEADLINE_SECONDS)
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert b"Traceback" not in err


# A child that sends itself SIGTERM the moment click is first imported, the earliest
# point of `refusals exec` that a test can pin down (the window before the command's own
# handler is in place).
_SIGTERM_AT_CLICK_IMPORT = """
import os, signal, sys

class SignalAtClick:
    def find_spec(self, name, path=None, target=None):
        if name == "click":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGTERM)
        return None

sys.meta_path.insert(0, SignalAtClick())
sys.argv = ["refusals", "exec", "--json", "Hello."]
from refusals.cli import main
main()
"""


def test_sigterm_while_the_command_line_loads_exits_130_not_143() -> None:
    process = subprocess.run(
        [sys.executable, "-c", _SIGTERM_AT_CLICK_IMPORT],
        capture_output=True,
        timeout=DEADLINE_SECONDS,
        check=False,
    )
    assert process.returncode == 130, process.stderr
    assert process.stdout == b""  # no run started: no events, nothing half-written
    assert b"Traceback" not in process.stderr
    assert b"Interrupted." in process.stderr
