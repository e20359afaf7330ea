"""The bundled examples run as documented."""

from __future__ import annotations

import runpy
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from refusals import FinishReason, decode_stream, notice

ROOT = Path(__file__).parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
EXAMPLE = ROOT / "examples" / "stop_at_verdict.py"


@pytest.fixture(scope="module")
def read_until_verdict() -> Callable[..., Any]:
    function: Callable[..., Any] = runpy.run_path(str(EXAMPLE))["read_until_verdict"]
    return function


class Counted:
    """Chunks of a recorded stream, counting how many the reader pulled."""

    def __init__(self, raw: bytes, size: int = 64) -> None:
        self.chunks = [raw[i : i + size] for i in range(0, len(raw), size)]
        self.pulled = 0

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.chunks:
            self.pulled += 1
            yield chunk


def test_the_streaming_example_stops_reading_at_a_refusal_verdict(
    read_until_verdict: Callable[..., Any],
) -> None:
    raw = (FIXTURES / "anthropic" / "stream-refusal-cyber.sse").read_bytes()
    chunks = Counted(raw)
    response, stopped = read_until_verdict(chunks)
    assert stopped
    assert chunks.pulled < len(chunks.chunks)  # message_stop was never read
    full, _ = decode_stream(raw)
    assert response.finish_reason is FinishReason.REFUSAL
    assert notice(response) == notice(full)
    assert response.error is None


def test_the_streaming_example_reads_a_complete_answer_to_its_end(
    read_until_verdict: Callable[..., Any],
) -> None:
    raw = (FIXTURES / "openai-chat" / "stream-stop.sse").read_bytes()
    chunks = Counted(raw)
    response, stopped = read_until_verdict(chunks)
    assert not stopped
    assert chunks.pulled == len(chunks.chunks)
    full, _ = decode_stream(raw)
    assert response == full
    assert response.finish_reason is FinishReason.STOP


def test_the_streaming_example_runs_from_the_command_line() -> None:
    path = FIXTURES / "anthropic" / "stream-refusal-cyber.sse"
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), str(path)], capture_output=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    full, _ = decode_stream(path.read_bytes())
    assert result.stdout.decode() == f"refusal (stopped early: True)\n{notice(full)}\n"
