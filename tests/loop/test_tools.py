"""The tool registry (users' own tools) and the built-in workspace tools."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Literal

import orjson
import pytest

from refusals.loop.tools import MAX_OUTPUT_CHARS, ToolRegistry, ToolResult, truncate_output
from refusals.loop.workspace import (
    MAX_COMMAND_OUTPUT_CHARS,
    MAX_READ_BYTES,
    MAX_READ_CHARS,
    Workspace,
)
from refusals.model import ToolCall


def call(registry: ToolRegistry, name: str, **arguments: object) -> ToolResult:
    tool_call = ToolCall("c1", name, orjson.dumps(arguments).decode())
    return asyncio.run(asyncio.wait_for(registry.call(tool_call), 30))


def test_a_registered_function_gets_a_schema_from_its_signature_and_docstring() -> None:
    tools = ToolRegistry()

    @tools.tool
    def weather(city: str, days: int = 1, unit: Literal["c", "f"] = "c") -> str:
        """The forecast for a city.

        Longer text the model does not need.
        """
        return f"{city}: sunny for {days} days ({unit})"

    (spec,) = tools.specs()
    assert spec.name == "weather"
    assert spec.description == "The forecast for a city."
    assert spec.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "unit": {"enum": ["c", "f"]},
        },
        "required": ["city"],
    }
    assert call(tools, "weather", city="Oslo", days=2).output == "Oslo: sunny for 2 days (c)"


def test_arguments_are_checked_before_the_function_runs() -> None:
    tools = ToolRegistry()
    ran: list[int] = []

    @tools.tool(name="count", description="Count.")
    def count(n: int) -> int:
        ran.append(n)
        return n

    assert call(tools, "count").output == "error: missing required argument 'n'"
    assert call(tools, "count", n="3").output == "error: argument 'n' must be of type integer"
    assert call(tools, "count", n=True).is_error
    assert call(tools, "nope").output.startswith("error: there is no tool named 'nope'")
    malformed = asyncio.run(tools.call(ToolCall("c", "count", '{"n": ')))
    assert malformed.output == "error: the arguments are not valid JSON"
    assert ran == []


def test_a_failing_tool_is_an_error_result_and_async_tools_are_awaited() -> None:
    tools = ToolRegistry()

    @tools.tool
    def broken() -> str:
        raise KeyError("missing")

    @tools.tool
    async def later(value: str) -> dict[str, str]:
        await asyncio.sleep(0)
        return {"value": value}

    assert call(tools, "broken").output == "error: KeyError: 'missing'"
    assert call(tools, "later", value="x").output == '{"value":"x"}'


def test_long_results_are_cut_with_a_note_saying_how_much() -> None:
    tools = ToolRegistry()

    @tools.tool
    def big() -> str:
        return "x" * (MAX_OUTPUT_CHARS + 10)

    output = call(tools, "big").output
    assert output == "x" * MAX_OUTPUT_CHARS + (
        f"\n[output truncated: the first {MAX_OUTPUT_CHARS} of {MAX_OUTPUT_CHARS + 10} "
        "characters shown]"
    )
    assert truncate_output("short") == "short"


def test_a_duplicate_tool_name_is_refused() -> None:
    tools = ToolRegistry()
    tools.tool(name="a")(lambda: "1")
    with pytest.raises(ValueError, match="already registered"):
        tools.tool(name="a")(lambda: "2")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n# TODO: more\n")
    (root / "README.md").write_text("# Demo\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (tmp_path / "secret.txt").write_text("outside")
    return root


def test_read_only_tools_are_the_default(workspace: Path) -> None:
    tools = Workspace(workspace).tools()
    assert tools.names == ["list_files", "read_file", "search_text"]
    assert call(tools, "list_files").output == "README.md\nsrc/main.py"
    assert call(tools, "read_file", path="src/main.py").output == "print('hi')\n# TODO: more\n"
    assert call(tools, "search_text", pattern="TODO").output == "src/main.py:2: # TODO: more"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../secret.txt", "contains '..'"),
        ("src/../../secret.txt", "contains '..'"),
        ("/etc/passwd", "is absolute"),
        ("link/secret.txt", "leads outside the workspace"),
        ("escape.txt", "leads outside the workspace"),
    ],
)
def test_paths_are_confined_to_the_workspace(workspace: Path, path: str, reason: str) -> None:
    (workspace / "link").symlink_to(workspace.parent, target_is_directory=True)
    (workspace / "escape.txt").symlink_to(workspace.parent / "secret.txt")
    tools = Workspace(workspace, allow_write=True).tools()
    for tool, extra in (("read_file", {}), ("write_file", {"content": "x"})):
        result = call(tools, tool, path=path, **extra)
        assert result.is_error and reason in result.output, result.output
    assert (workspace.parent / "secret.txt").read_text() == "outside"


def test_search_never_reads_through_a_symlink_leading_out(workspace: Path) -> None:
    (workspace.parent / "secret.txt").write_text("TODO: the password is hunter2\n")
    (workspace / "escape.txt").symlink_to(workspace.parent / "secret.txt")
    output = call(Workspace(workspace).tools(), "search_text", pattern="TODO").output
    assert output == "src/main.py:2: # TODO: more"


def test_a_huge_file_is_read_only_as_far_as_the_bound(workspace: Path) -> None:
    (workspace / "big.log").write_bytes(b"a" * (MAX_READ_BYTES * 3))
    output = call(Workspace(workspace).tools(), "read_file", path="big.log").output
    assert output == "a" * MAX_READ_CHARS + (
        f"\n[file truncated: the first {MAX_READ_BYTES} of {MAX_READ_BYTES * 3} bytes read]"
    )


def test_writes_need_allow_write_and_are_whole(workspace: Path) -> None:
    denied = Workspace(workspace)
    assert "write_file" not in denied.tools()
    with pytest.raises(Exception, match="--allow-write"):
        denied.write_file("new.txt", "x")
    tools = Workspace(workspace, allow_write=True).tools()
    result = call(tools, "write_file", path="docs/new.txt", content="hello")
    assert result.output == "wrote 5 characters to docs/new.txt"
    assert (workspace / "docs" / "new.txt").read_text() == "hello"
    assert sorted(p.name for p in (workspace / "docs").iterdir()) == ["new.txt"]


def test_edit_file_replaces_exactly_one_occurrence(workspace: Path) -> None:
    tools = Workspace(workspace, allow_write=True).tools()
    (workspace / "twice.txt").write_text("a a")
    assert call(tools, "edit_file", path="twice.txt", old_text="a", new_text="b").output == (
        "error: old_text occurs 2 times in 'twice.txt'; it must occur exactly once"
    )
    assert call(tools, "edit_file", path="twice.txt", old_text="z", new_text="b").is_error
    assert call(tools, "edit_file", path="README.md", old_text="Demo", new_text="Show").output == (
        "edited README.md"
    )
    assert (workspace / "README.md").read_text() == "# Show\n"
    assert (workspace / "twice.txt").read_text() == "a a"


def test_commands_need_allow_commands_and_run_in_the_workspace(workspace: Path) -> None:
    assert "run_command" not in Workspace(workspace).tools()
    tools = Workspace(workspace, allow_commands=True).tools()
    result = call(tools, "run_command", command="pwd; exit 3")
    assert result.output == f"exit status 3\n{os.path.realpath(workspace)}\n"


def test_a_command_is_stopped_at_its_timeout(workspace: Path) -> None:
    tools = Workspace(workspace, allow_commands=True, command_timeout=0.5).tools()
    started = time.monotonic()
    result = call(tools, "run_command", command="sleep 30")
    assert result.output == "error: the command timed out after 0.5 seconds"
    assert time.monotonic() - started < 10


def test_command_output_is_bounded_with_a_note(workspace: Path) -> None:
    tools = Workspace(workspace, allow_commands=True).tools()
    result = call(
        tools,
        "run_command",
        command=f"head -c {MAX_COMMAND_OUTPUT_CHARS * 2} /dev/zero | tr '\\0' y",
    )
    assert result.output.startswith("exit status 0\n" + "y" * 100)
    assert result.output.endswith(
        f"[output truncated: the first {MAX_COMMAND_OUTPUT_CHARS} of "
        f"{MAX_COMMAND_OUTPUT_CHARS * 2} bytes shown]"
    )
