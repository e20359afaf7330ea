"""Tool calls as Codex's item types in `exec --json`: `command_execution`,
`file_change` and `mcp_tool_call`, started in progress and completed with a status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from refusals.loop.sandbox import find_sandbox
from refusals.mock import MockApp, MockServer
from tests.chat._pty import ANSWER_TOOL_RESULTS, anthropic_events, scenario_file

from ._exec_support import ExecRun, run_exec


def calls(*blocks: dict[str, Any]) -> list[dict[str, Any]]:
    return anthropic_events(list(blocks), stop_reason="tool_use")


def use(n: int, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": arguments}


def run_tools(tmp_path: Path, *flags: str, blocks: list[dict[str, Any]]) -> tuple[ExecRun, Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "old.txt").write_text("before\n")
    rules = [ANSWER_TOOL_RESULTS, {"prompt_contains": "go", "events": calls(*blocks)}]
    app = MockApp(scenario_file(tmp_path / "rules.json", rules))
    with MockServer(app) as server:
        run = run_exec(
            "--model",
            "anthropic:claude-items",
            "--base-url",
            server.base_url,
            "--workspace",
            str(workspace),
            *flags,
            "go",
            env={"ANTHROPIC_API_KEY": "k"},
        )
    return run, workspace


def test_writes_are_file_changes_that_say_whether_the_file_was_added(tmp_path: Path) -> None:
    run, workspace = run_tools(
        tmp_path,
        "--allow-write",
        blocks=[
            use(1, "write_file", path="new.txt", content="hello"),
            use(2, "write_file", path="old.txt", content="after"),
            use(3, "edit_file", path="old.txt", old_text="after", new_text="again"),
        ],
    )
    assert run.exit_code == 0, run.stderr
    changes = run.items("file_change")
    assert [c["changes"] for c in changes] == [
        [{"path": "new.txt", "kind": "add"}],
        [{"path": "old.txt", "kind": "update"}],
        [{"path": "old.txt", "kind": "update"}],
    ]
    assert [c["status"] for c in changes] == ["completed"] * 3
    assert changes[0]["output"] == "wrote 5 characters to new.txt"
    assert (workspace / "old.txt").read_text() == "again"
    # As in Codex, a file change is sent once, when it is done.
    started = [e["item"] for e in run.of_type("item.started")]
    assert [s for s in started if s["type"] == "file_change"] == []


def test_a_write_that_is_not_allowed_is_a_failed_file_change(tmp_path: Path) -> None:
    run, workspace = run_tools(tmp_path, blocks=[use(1, "write_file", path="x.txt", content="x")])
    [change] = run.items("file_change")
    assert change["status"] == "failed"
    assert "there is no tool named 'write_file'" in change["output"]
    assert not (workspace / "x.txt").exists()


def test_reads_are_mcp_tool_calls_with_their_result_or_error(tmp_path: Path) -> None:
    run, _ = run_tools(
        tmp_path,
        blocks=[use(1, "read_file", path="old.txt"), use(2, "read_file", path="missing.txt")],
    )
    found, missing = run.items("mcp_tool_call")
    assert found["arguments"] == {"path": "old.txt"}
    assert found["status"] == "completed" and "error" not in found
    assert "before" in found["result"]["content"][0]["text"]
    assert found["result"]["structured_content"] is None
    assert missing["status"] == "failed" and "result" not in missing
    assert "missing.txt" in missing["error"]["message"]


@pytest.mark.skipif(find_sandbox() is None, reason="bubblewrap (bwrap) is not installed here")
def test_commands_are_command_executions_with_exit_code_and_status(tmp_path: Path) -> None:
    run, _ = run_tools(
        tmp_path,
        "--allow-commands",
        blocks=[use(1, "run_command", command="echo hi"), use(2, "run_command", command="exit 3")],
    )
    ok, failed = run.items("command_execution")
    assert (ok["command"], ok["aggregated_output"], ok["exit_code"], ok["status"]) == (
        "echo hi",
        "hi\n",
        0,
        "completed",
    )
    assert (failed["exit_code"], failed["status"]) == (3, "failed")
