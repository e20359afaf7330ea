"""`refusals exec --allow-commands`: sandboxed, scrubbed, and never unconfined unawares."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from refusals.loop.sandbox import find_sandbox
from refusals.mock import MockApp, MockServer

from ._exec_support import run_exec

KEY = "sk-ant-SENTINEL-exec-c6"
COMMAND = "printenv ANTHROPIC_API_KEY; cat ../outside.txt; echo done"


def tool_call(command: str) -> dict[str, Any]:
    return {
        "id": "msg_cmd",
        "type": "message",
        "role": "assistant",
        "model": "mock-cmd",
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "run_command",
                "input": {"command": command},
            }
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 3, "output_tokens": 3},
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockServer]:
    rules = {
        "rules": [
            {"model": "mock-cmd", "after_tool_result": True, "scenario": "answer"},
            {"model": "mock-cmd", "body": tool_call(COMMAND)},
        ]
    }
    path: Path = tmp_path_factory.mktemp("rules") / "cmd.json"
    path.write_text(json.dumps(rules))
    with MockServer(MockApp(scenarios_file=path)) as running:
        yield running


@pytest.mark.skipif(find_sandbox() is None, reason="bubblewrap (bwrap) is not installed here")
def test_a_command_sees_no_key_and_nothing_outside_and_no_event_carries_either(
    server: MockServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "outside.txt").write_text("outside-secret-exec")
    run = run_exec(
        "--model",
        "anthropic:mock-cmd",
        "--base-url",
        server.base_url,
        "--no-stream",
        "--allow-commands",
        "--workspace",
        str(workspace),
        "Run it",
        env={"ANTHROPIC_API_KEY": KEY},
    )
    assert run.exit_code == 0, run.stdout + run.stderr
    [command] = run.items("command_execution")
    outputs = [command["aggregated_output"]]
    assert outputs[0].endswith("done\n"), outputs
    assert (command["exit_code"], command["status"]) == (0, "completed")
    assert KEY not in run.stdout and "outside-secret-exec" not in run.stdout
    assert all(KEY not in json.dumps(r.body) for r in server.app.requests)
    assert all("outside-secret-exec" not in json.dumps(r.body) for r in server.app.requests)


def test_allow_commands_without_a_sandbox_is_a_usage_error_naming_the_way_out(
    tmp_path: Path,
) -> None:
    run = run_exec(
        "--allow-commands",
        "--workspace",
        str(tmp_path),
        "hi",
        env={"PATH": str(tmp_path)},
        as_json=False,
    )
    assert run.exit_code == 2
    assert "no sandbox is available" in run.stderr
    assert "--unconfined-commands" in run.stderr and "install bubblewrap" in run.stderr
    assert run.stderr.count("\n") == 1


def test_unconfined_commands_run_only_when_asked_and_say_so(tmp_path: Path) -> None:
    run = run_exec(
        "--allow-commands",
        "--unconfined-commands",
        "--workspace",
        str(tmp_path),
        "hi",
        env={"PATH": str(tmp_path)},
        as_json=False,
    )
    assert run.exit_code == 0, run.stderr
    assert "run_command is NOT sandboxed" in run.stderr
