"""`refusals proxy` as a user runs it: the URL first, clean stops, one-line errors."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from refusals.cli._models import UsageError
from refusals.cli.proxy import parse_duration, parse_size
from refusals.mock import MockServer


def _proxy(*args: str) -> list[str]:
    return [sys.executable, "-m", "refusals", "proxy", *args]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--upstream", "openai"], "--upstream 'openai' is not NAME=URL"),
        (["--upstream", "openai=ftp://x"], "is not an http:// or https:// URL"),
        (["--upstream", "a=http://x", "--upstream", "a=http://y"], "names one provider twice"),
        (["--listen", "0.0.0.0:8787"], "not a loopback address"),
        (["--listen", "localhost:http"], "is not HOST:PORT"),
        (["--window", "soon"], "--window 'soon' is not a duration"),
        (["--log-max-bytes", "lots"], "is not a size"),
        (["--store", "mongodb://x"], "unknown store mongodb://"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    result = subprocess.run(
        _proxy(*args, "--state-dir", str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_the_url_comes_first_and_sigint_stops_it_cleanly(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        _proxy("--listen", "127.0.0.1:0", "--state-dir", str(tmp_path),
               "--upstream", "mock=http://127.0.0.1:9"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:") and not url.endswith(":0")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=15)
    assert proc.returncode == 0
    assert "mock" in err and "proxy-verdicts.jsonl" in err and "Traceback" not in err


def test_durations_and_sizes() -> None:
    assert parse_duration("90") == 90 and parse_duration("30m") == 1800
    assert parse_duration("1.5h") == 5400 and parse_duration("7d") == 7 * 86400
    assert parse_size("512k") == 512 * 1024 and parse_size("64MB") == 64 * 1024**2
    with pytest.raises(UsageError):
        parse_duration("0")


def test_without_aiohttp_the_error_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['aiohttp'] = None\n"
        "from refusals.cli import main\n"
        "main(['proxy', '--listen', '127.0.0.1:0'])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "refusals proxy: the proxy needs aiohttp, its upstream client: "
        "pip install 'refusals[proxy]'"
    )


def test_the_policy_of_refusals_toml_routes_a_refusal(tmp_path: Path) -> None:
    # OpenAI refusals carry no category: the rule for the kind applies.
    (tmp_path / "refusals.toml").write_text('[policy]\nrefusal = "fallback:mock:mock-answer"\n')
    with MockServer() as mock:
        proc = subprocess.Popen(
            _proxy("--listen", "127.0.0.1:0", "--state-dir", str(tmp_path / "state"),
                   "--upstream", f"mock={mock.base_url}"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            body = {"model": "mock-refusal", "messages": [{"role": "user", "content": "hi"}]}
            headers = {"authorization": "Bearer k"}
            first = httpx.post(url + "/v1/chat/completions", json=body, headers=headers)
            second = httpx.post(url + "/v1/chat/completions", json=body, headers=headers)
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=15)
        for reply in (first, second):
            assert reply.headers["x-refusals-fallback-from"] == "mock-refusal"
            assert reply.json()["choices"][0]["message"]["content"]
        assert [r.model for r in mock.app.requests] == [
            "mock-refusal",
            "mock-answer",
            "mock-answer",
        ]
        assert f"policy from {tmp_path / 'refusals.toml'}" in err
