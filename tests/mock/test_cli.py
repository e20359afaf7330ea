"""`refusals mock-server` as a user runs it: a real subprocess on 127.0.0.1."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from refusals.mock import SCENARIOS
from refusals.serving import is_loopback

START_SECONDS = 20.0
STOP_SECONDS = 15.0


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "refusals", "mock-server", *args]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(*args), capture_output=True, text=True, timeout=60, check=False)


def first_line(process: subprocess.Popen[str]) -> str:
    """The first stdout line, waiting at most START_SECONDS for it."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(START_SECONDS):
            raise AssertionError("mock-server printed nothing in time")
    return process.stdout.readline().strip()


@pytest.fixture
def started() -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        command("--port", "0"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(STOP_SECONDS)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_port_0_prints_the_url_serves_requests_and_stops_cleanly(
    started: subprocess.Popen[str], stop: signal.Signals
) -> None:
    url = first_line(started)
    assert url.startswith("http://127.0.0.1:")
    assert int(url.rsplit(":", 1)[1]) > 0
    answer = httpx.post(
        url + "/v1/messages",
        headers={"x-api-key": "k"},
        json={
            "model": "mock-refusal",
            "max_tokens": 8,
            "messages": [{"role": "user", "content": "hi"}],
        },
        timeout=10,
    )
    assert answer.json()["stop_reason"] == "refusal"
    counts = httpx.get(url + "/_mock/requests", timeout=10).json()["counts"]
    assert counts["by_scenario"] == {"refusal": 1}
    started.send_signal(stop)
    assert started.wait(STOP_SECONDS) == 0
    assert started.stderr is not None
    assert "Traceback" not in started.stderr.read()


def test_a_non_loopback_host_is_refused_without_allow_remote() -> None:
    result = run("--host", "0.0.0.0", "--port", "0")
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "refusals mock-server: --host 0.0.0.0 is not a loopback address, and the mock "
        "answers anyone who can reach it; add --allow-remote to bind it anyway"
    ]


def test_list_prints_every_scenario_with_one_line_each() -> None:
    result = run("--list")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(SCENARIOS)
    assert all(SCENARIOS[line.split()[0]] in line for line in lines)


def test_a_bad_scenarios_file_is_a_one_line_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text("[[rules]]\nscenario = 'nope'\n")
    result = run("--scenarios", str(path), "--port", "0")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "rule 1: unknown scenario 'nope'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.2.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("192.168.1.10", False),
        ("::", False),
        ("example.com", False),
    ],
)
def test_only_loopback_hosts_are_bound_without_allow_remote(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_port_in_use_is_a_one_line_error() -> None:
    import socket  # noqa: PLC0415

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run("--port", str(port))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"refusals mock-server: cannot listen on 127.0.0.1:{port}: ")
    assert "address already in use" in result.stderr
