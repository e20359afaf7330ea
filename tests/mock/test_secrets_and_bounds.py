"""The mock server never logs a secret, and its request log is bounded (C10)."""

from __future__ import annotations

import os
import re
import signal
import subprocess

import httpx

from refusals.mock import MockServer
from refusals.mock.log import OMITTED_BODY, RecordedRequest, RequestLog

from .test_cli import STOP_SECONDS, command, first_line

GEMINI_KEY = "AIzaSyD-SENTINEL-mock-log-0123456789ab"


def test_info_logging_shows_each_request_without_its_query_string() -> None:
    process = subprocess.Popen(
        command("--port", "0", "--log-level", "info"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        url = first_line(process)
        answer = httpx.post(
            f"{url}/v1beta/models/mock-answer:generateContent?key={GEMINI_KEY}",
            json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
            timeout=10,
        )
        assert answer.status_code == 200
        process.send_signal(signal.SIGINT)
        process.wait(STOP_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.stderr is not None and process.stdout is not None
    # uvicorn writes its access lines to stdout, everything else to stderr.
    logged = process.stdout.read() + process.stderr.read()
    # uvicorn up to 0.54 quotes the colon in the path it logs, 0.55 does not.
    assert re.search(r"/v1beta/models/mock-answer(%3A|:)generateContent\?\[query omitted\]", logged)
    assert GEMINI_KEY not in logged and "SENTINEL" not in logged


def _request(n: int) -> RecordedRequest:
    return RecordedRequest(f"/p{n % 2}", "POST", "anthropic", "m", "answer", False, 0.0, {}, 200)


def test_the_log_keeps_the_last_requests_and_counts_every_one() -> None:
    log = RequestLog(max_items=3)
    for n in range(10):
        log.add(_request(n))
    assert len(log.items()) == 3
    assert log.dropped == 7
    assert log.count() == 10
    assert log.count(path="/p0") == 5
    assert log.summary()["counts"]["by_scenario"] == {"answer": 10}
    log.clear()
    assert log.count() == 0 and log.dropped == 0


def test_a_huge_request_body_is_counted_but_not_kept() -> None:
    with MockServer() as server:
        text = "x" * (2 << 20)
        answer = httpx.post(
            server.base_url + "/v1/messages",
            headers={"x-api-key": "k"},
            json={
                "model": "mock-answer",
                "max_tokens": 8,
                "messages": [{"role": "user", "content": text}],
            },
            timeout=30,
        )
        assert answer.status_code == 200
        (recorded,) = server.app.requests
    assert list(recorded.body) == [OMITTED_BODY]
    assert server.app.count(model="mock-answer") == 1
