"""A real tool behind the proxy: Gemini CLI retries a safety block (four attempts with
back-off, then exit 0); through the proxy the mock provider sees it once.

Gemini CLI is a Node.js program, installed from the npm registry:
`npm install --prefix /tmp/gcli @google/gemini-cli@0.61.0`, then
`REFUSALS_TEST_GEMINI_CLI=/tmp/gcli/node_modules/.bin/gemini`. Without that variable
(CI does not install Node.js tools) the test skips and says so.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import orjson
import pytest

from refusals.mock import MockServer
from refusals.proxy import ProxyServer

GEMINI_CLI = os.environ.get("REFUSALS_TEST_GEMINI_CLI")


@pytest.mark.skipif(
    not GEMINI_CLI,
    reason="set REFUSALS_TEST_GEMINI_CLI to a Gemini CLI binary (npm @google/gemini-cli)",
)
def test_gemini_cli_retries_reach_the_server_once(
    mock: MockServer, proxy: ProxyServer, tmp_path: Path
) -> None:
    assert GEMINI_CLI is not None
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    settings = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    env = {
        **os.environ,
        "HOME": str(home),
        "GEMINI_API_KEY": "gemini-proxy-test",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "GOOGLE_GEMINI_BASE_URL": proxy.base_url,
    }
    subprocess.run(
        [GEMINI_CLI, "-m", "mock-filter-prompt", "-p", "hello"],
        env=env, cwd=tmp_path, capture_output=True, timeout=240, check=False,
    )  # fmt: skip
    assert mock.app.count() == 1
    assert proxy.app.log is not None and proxy.app.log.flush()
    lines = [orjson.loads(x) for x in (tmp_path / "verdicts.jsonl").read_bytes().splitlines()]
    assert len(lines) >= 2  # the tool did retry
    assert [x["resend_blocked"] for x in lines] == [False] + [True] * (len(lines) - 1)
    assert {x["finish_reason"] for x in lines} == {"content_filter"}
