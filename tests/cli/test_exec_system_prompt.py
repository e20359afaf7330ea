"""`--system-prompt` and `--append-system-prompt`: what the provider receives."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from refusals.cli._models import SYSTEM_PROMPT
from refusals.mock import MockApp, MockServer

from ._exec_support import WIRES, ExecRun, run_exec

ANTHROPIC = WIRES["anthropic"]


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer(MockApp()) as running:
        yield running


@pytest.fixture
def mock(server: MockServer) -> MockServer:
    server.app.reset()
    return server


def exec_with(server: MockServer, *args: str) -> ExecRun:
    return run_exec(
        "--model",
        ANTHROPIC.model("answer"),
        "--base-url",
        server.base_url,
        *args,
        "Say hello.",
        env=dict(ANTHROPIC.env),
    )


def sent_system(server: MockServer) -> str:
    [request] = server.app.requests
    system = request.body["system"]
    return system if isinstance(system, str) else "".join(part["text"] for part in system)


def test_the_built_in_system_prompt_by_default(mock: MockServer) -> None:
    assert exec_with(mock).exit_code == 0
    assert sent_system(mock) == SYSTEM_PROMPT


def test_system_prompt_replaces_and_append_adds_after(mock: MockServer) -> None:
    assert exec_with(mock, "--system-prompt", "Be terse.").exit_code == 0
    assert sent_system(mock) == "Be terse."
    mock.app.reset()
    assert exec_with(mock, "--append-system-prompt", "Answer in French.").exit_code == 0
    assert sent_system(mock) == f"{SYSTEM_PROMPT}\n\nAnswer in French."


def test_a_system_prompt_file_is_read_and_a_missing_one_is_a_usage_error(
    mock: MockServer, tmp_path: Path
) -> None:
    prompt = tmp_path / "system.md"
    prompt.write_text("You review code.\n", encoding="utf-8")
    assert exec_with(mock, "--system-prompt", f"@{prompt}").exit_code == 0
    assert sent_system(mock) == "You review code.\n"
    mock.app.reset()
    missing = exec_with(mock, "--system-prompt", f"@{tmp_path / 'nope.md'}")
    assert missing.exit_code == 2
    assert "--system-prompt:" in missing.stderr and "does not exist" in missing.stderr
    assert "Traceback" not in missing.stderr
    assert mock.app.count() == 0
