"""The workspace confines: no tool reaches outside it or sees a credential (C6, C7, C8).

The attacks are the ones a model can make with tool calls: symlinks swapped in while a
tool opens a path, FIFOs and devices, hard links, files that run code, and shell
commands reading keys, files outside, or leaving daemons behind.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import socket
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from refusals.loop.sandbox import find_sandbox, scrubbed_environment
from refusals.loop.tools import ToolRegistry, ToolResult
from refusals.loop.workspace import MAX_SEARCH_FILE_BYTES, Workspace
from refusals.model import ToolCall

SECRET = "outside-secret-7d1f"
SANDBOX = find_sandbox()
needs_sandbox = pytest.mark.skipif(
    SANDBOX is None, reason="bubblewrap (bwrap) is not installed or cannot run here"
)


def call(tools: ToolRegistry, name: str, **arguments: object) -> ToolResult:
    request = ToolCall("c1", name, orjson.dumps(arguments).decode())
    return asyncio.run(asyncio.wait_for(tools.call(request), 30))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    (tmp_path / "outside.txt").write_text(SECRET)
    (tmp_path / "outdir").mkdir()
    return root


def test_a_symlink_swapped_in_while_reading_never_yields_the_outside_file(
    workspace: Path,
) -> None:
    victim = workspace / "victim.txt"
    outside = workspace.parent / "outside.txt"
    victim.write_text("inside")
    tools = Workspace(workspace).tools()
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            spare = workspace / ".spare"
            try:
                spare.symlink_to(outside)
                os.replace(spare, victim)
                spare.write_text("inside")
                os.replace(spare, victim)
            except OSError:
                pass

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    seen = set()
    deadline = time.monotonic() + 4
    tries = 0
    try:
        while tries < 3000 and time.monotonic() < deadline:
            seen.add(call(tools, "read_file", path="victim.txt").output)
            tries += 1
    finally:
        stop.set()
        swapper.join(5)
    assert tries > 200
    assert not any(SECRET in output for output in seen)
    assert "inside" in seen


def test_a_directory_swapped_for_a_symlink_while_writing_never_writes_outside(
    workspace: Path,
) -> None:
    outdir = workspace.parent / "outdir"
    tools = Workspace(workspace, allow_write=True).tools()
    stop = threading.Event()
    target = workspace / "sub"
    target.mkdir()

    def swap() -> None:
        spare = workspace / ".spare"
        while not stop.is_set():
            try:
                spare.symlink_to(outdir, target_is_directory=True)
                os.rename(target, workspace / ".real")
                os.replace(spare, target)
                os.replace(target, spare)
                spare.unlink()
                os.rename(workspace / ".real", target)
            except OSError:
                pass

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    # A count of tries, not a time: on a loaded machine (CI runs the suite on every core)
    # 4 s gave fewer than 200. The deadline only bounds a machine that is slower still.
    deadline = time.monotonic() + 30
    tries = 0
    try:
        while tries < 300 and time.monotonic() < deadline:
            call(tools, "write_file", path="sub/new.txt", content="x")
            tries += 1
    finally:
        stop.set()
        swapper.join(5)
    assert tries > 200
    assert list(outdir.iterdir()) == []


def test_symlinks_inside_the_workspace_are_followed_and_ones_leading_out_are_refused(
    workspace: Path,
) -> None:
    (workspace / "inner").symlink_to("src/main.py")
    (workspace / "up").symlink_to("../outside.txt")
    (workspace / "abs").symlink_to(workspace.parent / "outside.txt")
    (workspace / "loop").symlink_to("loop")
    tools = Workspace(workspace).tools()
    assert call(tools, "read_file", path="inner").output == "print('hi')\n"
    for name in ("up", "abs"):
        result = call(tools, "read_file", path=name)
        assert result.is_error and "leads outside the workspace" in result.output
    assert "too many levels of symlinks" in call(tools, "read_file", path="loop").output
    # search_text and list_files do not follow them (nor loop on them).
    assert SECRET not in call(tools, "search_text", pattern="outside").output
    assert call(tools, "search_text", pattern="hi").output == "src/main.py:1: print('hi')"


def test_fifos_devices_and_hard_links_are_never_read(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    (workspace / "zero").symlink_to("/dev/zero")
    os.link(workspace.parent / "outside.txt", workspace / "hard.txt")
    tools = Workspace(workspace).tools()
    started = time.monotonic()
    pipe = call(tools, "read_file", path="pipe")
    assert pipe.is_error and "not a regular file" in pipe.output
    assert "leads outside" in call(tools, "read_file", path="zero").output
    hard = call(tools, "read_file", path="hard.txt")
    assert hard.is_error and "other hard links" in hard.output
    # The search skips all three, and does not hang on the FIFO.
    assert SECRET not in call(tools, "search_text", pattern="secret").output
    assert time.monotonic() - started < 10


def test_search_reads_a_huge_file_only_up_to_its_bound(workspace: Path) -> None:
    with (workspace / "big.log").open("wb") as handle:
        handle.truncate(MAX_SEARCH_FILE_BYTES * 4)  # sparse: 32 MiB of NULs past the bound
    (workspace / "long.txt").write_bytes(b"x" * (1 << 20) + b" needle\nneedle here\n")
    tools = Workspace(workspace).tools()
    assert call(tools, "search_text", pattern="needle").output == "long.txt:2: needle here"


def test_a_non_utf8_file_name_is_listed_and_searched_without_ending_the_turn(
    workspace: Path,
) -> None:
    with open(os.fsencode(workspace) + b"/caf\xe9.txt", "wb") as handle:
        handle.write(b"needle\n")
    tools = Workspace(workspace).tools()
    assert "caf\ufffd.txt" in call(tools, "list_files").output
    assert call(tools, "search_text", pattern="needle").output == "caf\ufffd.txt:1: needle"


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".git/hooks/pre-commit",
        ".GIT/config",
        "sub/.git/config",
        ".envrc",
        ".vscode/tasks.json",
        ".vscode/settings.json",
        ".husky/pre-commit",
    ],
)
def test_files_that_run_code_are_not_writable_without_allow_commands(
    workspace: Path, path: str
) -> None:
    tools = Workspace(workspace, allow_write=True).tools()
    result = call(tools, "write_file", path=path, content="x")
    assert result.is_error and "needs --allow-commands" in result.output
    assert not (workspace / path).exists()
    allowed = Workspace(workspace, allow_write=True, allow_commands=True).tools()
    assert not call(allowed, "write_file", path=path, content="x").is_error


def test_edits_keep_crlf_line_ends_and_the_file_mode(workspace: Path) -> None:
    script = workspace / "run.sh"
    script.write_bytes(b"#!/bin/sh\r\necho one\r\necho two\r\n")
    script.chmod(0o755)
    tools = Workspace(workspace, allow_write=True).tools()
    result = call(tools, "edit_file", path="run.sh", old_text="one\necho two", new_text="1\necho 2")
    assert result.output == "edited run.sh"
    assert script.read_bytes() == b"#!/bin/sh\r\necho 1\r\necho 2\r\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    call(tools, "write_file", path="run.sh", content="#!/bin/sh\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


def test_the_command_environment_holds_no_key_token_or_cloud_credential() -> None:
    environ = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "ANTHROPIC_API_KEY": "sk-ant-x",
        "OPENAI_API_KEY": "sk-x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_SESSION_TOKEN": "x",
        "GITHUB_TOKEN": "x",
        "GOOGLE_APPLICATION_CREDENTIALS": "/x.json",
        "SSH_AUTH_SOCK": "/tmp/agent",
    }
    assert scrubbed_environment(environ) == {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }


def command(workspace: Path, line: str, *, timeout: float = 20.0) -> str:
    tools = Workspace(
        workspace, allow_commands=True, sandbox=SANDBOX, command_timeout=timeout
    ).tools()
    return call(tools, "run_command", command=line).output


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-SENTINEL-c6")
    yield


@pytest.mark.usefixtures("keyed")
def test_a_command_cannot_print_the_users_api_key(workspace: Path) -> None:
    output = command(workspace, "printenv ANTHROPIC_API_KEY; env")
    assert "SENTINEL-c6" not in output


@needs_sandbox
def test_a_sandboxed_command_cannot_read_or_write_outside_the_workspace(workspace: Path) -> None:
    output = command(
        workspace,
        f"cat ../outside.txt; cat {workspace.parent}/outside.txt; echo x > ../written.txt; "
        "echo y > inside.txt; ls ~ 2>&1 | head -3",
    )
    assert SECRET not in output
    assert not (workspace.parent / "written.txt").exists()
    assert (workspace / "inside.txt").read_text() == "y\n"


@needs_sandbox
@pytest.mark.parametrize("network", [False, True], ids=["default", "allow-network"])
def test_a_sandboxed_command_has_no_network_unless_asked(workspace: Path, network: bool) -> None:
    assert SANDBOX is not None
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        probe = (
            "python3 -c \"import socket\ntry:\n socket.create_connection(('127.0.0.1', "
            f"{port}), 2); print('reached')\nexcept OSError as e: print('no network', e)\""
        )
        sandbox = dataclasses.replace(SANDBOX, network=network)
        tools = Workspace(workspace, allow_commands=True, sandbox=sandbox).tools()
        output = call(tools, "run_command", command=probe).output
    assert ("reached" in output) is network, output


def test_a_detached_child_ends_with_the_command_and_its_timeout_holds(workspace: Path) -> None:
    marker = workspace / "still-running"
    started = time.monotonic()
    output = command(
        workspace,
        f"setsid sh -c 'sleep 3; touch {marker}' > /dev/null 2>&1 & "
        "(sleep 30; echo late) & echo started",
        timeout=5.0,
    )
    assert time.monotonic() - started < 4
    assert output.startswith("exit status 0\nstarted")
    time.sleep(3.5)
    assert not marker.exists()


def test_a_command_writing_without_end_is_bounded_in_memory_and_time(workspace: Path) -> None:
    started = time.monotonic()
    output = command(workspace, "cat /dev/zero", timeout=1.0)
    assert output == "error: the command timed out after 1 seconds"
    assert time.monotonic() - started < 8
