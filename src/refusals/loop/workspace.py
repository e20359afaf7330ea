"""Built-in workspace tools for the command line, confined to one directory.

`list_files`, `read_file` and `search_text` are always offered; `write_file` and
`edit_file` only with `allow_write` (`--allow-write`), `run_command` only with
`allow_commands` (`--allow-commands`). A path must be relative, without `..`, and must
stay inside the workspace once symlinks are resolved. Commands run with a timeout and
bounded output; long outputs are cut with a note.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import tempfile
from pathlib import Path, PurePosixPath

from refusals.loop.tools import MAX_OUTPUT_CHARS, Tool, ToolError, ToolRegistry, truncate_output

# Below the registry's bound on any result, so that the note saying what was cut survives.
MAX_READ_CHARS = MAX_OUTPUT_CHARS - 200
MAX_READ_BYTES = 4 * MAX_READ_CHARS
MAX_LIST_ENTRIES = 500
MAX_SEARCH_MATCHES = 200
MAX_COMMAND_OUTPUT_CHARS = 16_000
DEFAULT_COMMAND_TIMEOUT = 30.0
MAX_COMMAND_TIMEOUT = 300.0
# Directories nobody wants listed or searched by an agent.
_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "node_modules"})


class Workspace:
    """A directory the tools may touch, and what they may do there."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        allow_write: bool = False,
        allow_commands: bool = False,
        command_timeout: float = DEFAULT_COMMAND_TIMEOUT,
    ) -> None:
        self.root = Path(root).resolve(strict=True)
        if not self.root.is_dir():
            raise NotADirectoryError(f"{root} is not a directory")
        self.allow_write = allow_write
        self.allow_commands = allow_commands
        self.command_timeout = command_timeout

    def resolve(self, path: str) -> Path:
        """The real path of `path` inside the workspace, or a ToolError saying why not."""
        if not path or path == ".":
            return self.root
        if "\x00" in path:
            raise ToolError("the path contains a NUL character")
        pure = PurePosixPath(path.replace("\\", "/"))
        if pure.is_absolute() or re.match(r"^[A-Za-z]:", path):
            raise ToolError(f"{path!r} is absolute; give a path relative to the workspace")
        if ".." in pure.parts:
            raise ToolError(f"{path!r} contains '..'; paths must stay inside the workspace")
        resolved = (self.root / pure).resolve()
        if not self._inside(resolved):
            raise ToolError(f"{path!r} leads outside the workspace (through a symlink)")
        return resolved

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() or "."

    # Tools. Their docstrings are what the model reads.

    def list_files(self, path: str = ".") -> str:
        """List the files under a directory of the workspace (recursively, bounded)."""
        base = self.resolve(path)
        if not base.is_dir():
            raise ToolError(f"{path!r} is not a directory")
        found: list[str] = []
        for current, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
            for name in sorted(files):
                if len(found) >= MAX_LIST_ENTRIES:
                    return "\n".join(found) + f"\n[listing truncated at {MAX_LIST_ENTRIES} files]"
                found.append(self.relative(Path(current) / name))
        return "\n".join(found) if found else "(no files)"

    def read_file(self, path: str) -> str:
        """Read a text file of the workspace."""
        target = self.resolve(path)
        if not target.is_file():
            raise ToolError(f"{path!r} is not a file")
        size = target.stat().st_size
        # Never more than a bounded prefix in memory, however large the file is.
        with target.open("rb") as handle:
            head = handle.read(MAX_READ_BYTES)
        text = head.decode("utf-8", "replace")
        if size > len(head):
            return (
                f"{text[:MAX_READ_CHARS]}\n[file truncated: the first {len(head)} of "
                f"{size} bytes read]"
            )
        return truncate_output(text, MAX_READ_CHARS)

    def search_text(self, pattern: str, path: str = ".") -> str:
        """Search the workspace's text files for a literal string; lines as path:line: text."""
        if not pattern:
            raise ToolError("the pattern is empty")
        base = self.resolve(path)
        files = [base] if base.is_file() else sorted(self._walk_files(base))
        matches: list[str] = []
        for file in files:
            try:
                text = file.read_text("utf-8")
            except (UnicodeDecodeError, OSError):
                continue  # binary or unreadable: not text to search
            for number, line in enumerate(text.splitlines(), 1):
                if pattern in line:
                    matches.append(f"{self.relative(file)}:{number}: {line[:300]}")
                    if len(matches) >= MAX_SEARCH_MATCHES:
                        return "\n".join(matches) + (
                            f"\n[search truncated at {MAX_SEARCH_MATCHES} matches]"
                        )
        return "\n".join(matches) if matches else "(no matches)"

    def _walk_files(self, base: Path) -> list[Path]:
        result = []
        for current, dirs, files in os.walk(base):
            dirs[:] = [d for d in dirs if d not in _SKIPPED_DIRS]
            result += [Path(current) / name for name in files]
        # A symlinked file may point outside: its content is not the workspace's.
        return [path for path in result if self._inside(path.resolve())]

    def _inside(self, resolved: Path) -> bool:
        return resolved == self.root or self.root in resolved.parents

    def write_file(self, path: str, content: str) -> str:
        """Write a text file of the workspace (created or replaced whole)."""
        if not self.allow_write:
            raise ToolError("writing files is not allowed; the user must pass --allow-write")
        target = self.resolve(path)
        if target == self.root or target.is_dir():
            raise ToolError(f"{path!r} is a directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(target, content.encode("utf-8"))
        return f"wrote {len(content)} characters to {self.relative(target)}"

    def edit_file(self, path: str, old_text: str, new_text: str) -> str:
        """Replace the one exact occurrence of old_text in a file by new_text."""
        if not self.allow_write:
            raise ToolError("editing files is not allowed; the user must pass --allow-write")
        target = self.resolve(path)
        if not target.is_file():
            raise ToolError(f"{path!r} is not a file")
        text = target.read_text("utf-8")
        count = text.count(old_text) if old_text else 0
        if count != 1:
            found = "does not occur" if count == 0 else f"occurs {count} times"
            raise ToolError(f"old_text {found} in {path!r}; it must occur exactly once")
        write_atomically(target, text.replace(old_text, new_text, 1).encode("utf-8"))
        return f"edited {self.relative(target)}"

    async def run_command(self, command: str, timeout: float | None = None) -> str:
        """Run a shell command in the workspace; its exit status and (bounded) output."""
        if not self.allow_commands:
            raise ToolError("running commands is not allowed; the user must pass --allow-commands")
        limit = min(timeout or self.command_timeout, MAX_COMMAND_TIMEOUT)
        process = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            command,
            cwd=self.root,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # so a timeout can end the whole process group
        )
        try:
            output, _ = await asyncio.wait_for(process.communicate(), limit)
        except (TimeoutError, asyncio.CancelledError):
            _kill_group(process)
            await process.wait()
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            raise ToolError(f"the command timed out after {limit:g} seconds") from None
        text = truncate_output(output.decode("utf-8", "replace"), MAX_COMMAND_OUTPUT_CHARS)
        return f"exit status {process.returncode}\n{text}"

    def tools(self) -> ToolRegistry:
        """The tools this workspace allows, as a registry."""
        registry = ToolRegistry(
            [
                Tool("list_files", self.list_files, _doc(self.list_files), _schema(path=_PATH)),
                Tool(
                    "read_file", self.read_file, _doc(self.read_file), _schema(["path"], path=_PATH)
                ),
                Tool(
                    "search_text",
                    self.search_text,
                    _doc(self.search_text),
                    _schema(["pattern"], pattern={"type": "string"}, path=_PATH),
                ),
            ]
        )
        if self.allow_write:
            registry.add(
                Tool(
                    "write_file",
                    self.write_file,
                    _doc(self.write_file),
                    _schema(["path", "content"], path=_PATH, content={"type": "string"}),
                    "write",
                )
            )
            registry.add(
                Tool(
                    "edit_file",
                    self.edit_file,
                    _doc(self.edit_file),
                    _schema(
                        ["path", "old_text", "new_text"],
                        path=_PATH,
                        old_text={"type": "string"},
                        new_text={"type": "string"},
                    ),
                    "write",
                )
            )
        if self.allow_commands:
            registry.add(
                Tool(
                    "run_command",
                    self.run_command,
                    _doc(self.run_command),
                    _schema(
                        ["command"],
                        command={"type": "string"},
                        timeout={"type": "number", "description": "seconds"},
                    ),
                    "command",
                )
            )
        return registry


_PATH = {"type": "string", "description": "a path relative to the workspace"}


def _schema(required: list[str] | None = None, **properties: object) -> dict[str, object]:
    schema: dict[str, object] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _doc(function: object) -> str:
    return (getattr(function, "__doc__", None) or "").strip()


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def write_atomically(target: Path, data: bytes) -> None:
    """Replace `target` with `data` so that no reader ever sees a half-written file."""
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
