"""`ollama:`, `vllm:` and `openai-compatible:` need no key: none is sent to a server that
needs none, and a server that wants one gets a message naming the variable to set."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import ClassVar

import orjson
import pytest

from refusals.mock import MockServer

from ._exec_support import run_exec

PREFIXES = ("ollama", "vllm", "openai-compatible")
KEY_VARIABLES = {
    "ollama": "OLLAMA_API_KEY",
    "vllm": "VLLM_API_KEY",
    "openai-compatible": "OPENAI_COMPATIBLE_API_KEY",
}
NO_KEYS: dict[str, str | None] = dict.fromkeys(KEY_VARIABLES.values())
"""Unset for the run (CliRunner removes a variable given as None)."""


class _Keyless(http.server.BaseHTTPRequestHandler):
    """A local OpenAI-compatible server that checks no key (as Ollama and vLLM ship)."""

    seen: ClassVar[list[str | None]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.seen.append(self.headers.get("authorization"))
        body = orjson.dumps(
            {
                "id": "chatcmpl-local",
                "object": "chat.completion",
                "model": "local",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "local answer"},
                        "finish_reason": "stop",
                    }
                ],
            }
        )
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def keyless() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Keyless)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Keyless.seen = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.mark.parametrize("prefix", PREFIXES)
def test_no_key_is_needed_or_sent_to_a_server_that_needs_none(keyless: str, prefix: str) -> None:
    run = run_exec(
        "--model", f"{prefix}:local", "--base-url", keyless, "--no-stream", "hi", env=NO_KEYS
    )
    assert run.exit_code == 0, run.stderr
    assert run.events[-1]["result"] == "local answer"
    assert _Keyless.seen == [None]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_server_that_wants_a_key_names_the_variable_to_set(prefix: str) -> None:
    with MockServer() as server:
        run = run_exec(
            "--model",
            f"{prefix}:mock-answer",
            "--base-url",
            f"{server.base_url}/v1",
            "hi",
            env=NO_KEYS,
            as_json=False,
        )
    assert run.exit_code == 1
    assert f"no key was sent: {server.base_url}/v1 wants one; set {KEY_VARIABLES[prefix]}" in (
        run.stderr
    )
    # The provider's own words are kept whole: "Bearer header" is prose, not a secret.
    assert "send it in an Authorization: Bearer header" in run.stderr
