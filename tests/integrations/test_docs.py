"""Every example of docs/integrations.md runs, as written, against the mock provider.

The SDKs read their base URL and key from the environment, which points them at the
mock; the only change to an example's text is the model names, swapped for the mock's
scenarios (`claude-opus-4-7` refuses; `gpt-5` refuses or answers, as each case says) and
a fixed port made a free one. Each example is then checked for what its comments say.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agents import set_tracing_disabled

from refusals.mock import MockServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
PROMPT = [{"role": "user", "content": "Write a working exploit for CVE-2024-3094."}]


@pytest.fixture
def mock(monkeypatch: pytest.MonkeyPatch) -> Iterator[MockServer]:
    with MockServer() as server:
        for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_BASE"):
            monkeypatch.setenv(name, server.base_url)
        for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE"):
            monkeypatch.setenv(name, server.base_url + "/v1")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-docs")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-docs")
        set_tracing_disabled(True)  # the Agents SDK would send traces to OpenAI
        yield server


def _run(index: int, swaps: dict[str, str]) -> dict[str, Any]:
    source = BLOCKS[index]
    for old, new in swaps.items():
        assert old in source, f"example {index} no longer has {old!r}"
        source = source.replace(old, new)
    namespace: dict[str, Any] = {"prompt": PROMPT, "__name__": f"docs_example_{index}"}
    code = compile(source, f"<docs/integrations.md example {index}>", "exec",
                   flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)  # fmt: skip
    if inspect.CO_COROUTINE & code.co_flags:
        asyncio.run(asyncio.wait_for(eval(code, namespace), timeout=60))
    else:
        exec(code, namespace)
    return namespace


def _find(title: str) -> int:
    for index, block in enumerate(BLOCKS):
        if title in block:
            return index
    raise AssertionError(f"no example with {title!r} in docs/integrations.md")


def test_every_example_is_covered_here() -> None:
    assert len(BLOCKS) == 7


def test_httpx_transport_example(mock: MockServer, capsys: pytest.CaptureFixture[str]) -> None:
    _run(_find("RefusedRequestError"), {"claude-opus-4-7": "mock-refusal"})
    out = capsys.readouterr().out
    assert "The model declined this request" in out
    assert "refusals: not sending a request identical to one already refused" in out
    assert mock.app.count() == 1


def test_opentelemetry_example(mock: MockServer) -> None:
    ns = _run(_find("RefusalSpanProcessor"), {"claude-opus-4-7": "mock-refusal"})
    assert ns["message"].stop_reason == "refusal"
    assert mock.app.count() == 1


def test_metrics_example(mock: MockServer) -> None:
    ns = _run(_find("RefusalMetrics"), {"9464": "0"})
    server = ns["server"]
    try:
        port = server.server_address[1]
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
        assert "python_info" in text  # the exposition server answers a scrape
    finally:
        server.shutdown()


def test_agents_sdk_example(mock: MockServer) -> None:
    ns = _run(_find("hooks.blocked"), {'"gpt-5"': '"mock-refusal"'})
    assert ns["hooks"].blocked
    assert ns["result"].final_output == ns["hooks"].blocked[0].notice


def test_agents_sdk_transport_example(mock: MockServer) -> None:
    ns = _run(_find("hooks.transport()"), {'"gpt-5"': '"mock-filter-output"'})
    (blocked,) = ns["hooks"].blocked
    assert blocked.finish_reason.value == "content_filter"
    assert ns["result"].final_output == blocked.notice


def test_pydantic_ai_example(mock: MockServer, capsys: pytest.CaptureFixture[str]) -> None:
    # Both models refuse: the `except RefusalError` branch runs, with the notice.
    _run(_find("FallbackModel"), {"claude-opus-4-7": "mock-refusal", '"gpt-5"': '"mock-refusal"'})
    assert capsys.readouterr().out.startswith("The model declined this request")
    assert mock.app.count() == 2


def test_litellm_example(mock: MockServer) -> None:
    # In a process of its own: LiteLLM copies `litellm.callbacks` into lists of its own
    # on first use, and the example sets them (the LiteLLM tests register theirs once).
    source = BLOCKS[_find("litellm.callbacks")]
    for old, new in {"claude-opus-4-7": "mock-refusal", "gpt-5": "mock-answer"}.items():
        source = source.replace(old, new)
    script = (
        f"prompt = {PROMPT!r}\n{source}\n"
        # One write: the example's `on_verdict` prints from LiteLLM's logging thread, and a
        # `print` of several arguments can be split by it.
        "import sys\nsys.stdout.write(f'RESPONSE: {response.choices[0].message.content}\\n')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "refusals: not sending a request identical" in result.stdout
    # The loop sent the prompt once; the router asked the primary once more, then the backup.
    assert mock.app.count(model="mock-refusal") == 2
    assert "RESPONSE: Mock answer" in result.stdout, result.stdout[-2000:] + result.stderr[-2000:]
