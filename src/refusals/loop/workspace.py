"""Built-in workspace tools for the command line, confined to one directory.

`list_files`, `read_file` and `search_text` are always offered; `write_file` and
`edit_file` only with `allow_write` (`--allow-write`), `run_command` only with
`allow_commands` (`--allow-commands`).

Confinement does not trust a path check made before the file is opened: a symlink
swapped in between would lead out. Every path is opened one component at a time from
the workspace's own directory descriptor, never following a symlink by the kernel
(`O_NOFOLLOW`); a symlink on the way is read and followed by hand only while it stays
beneath the workspace (what `openat2`'s `RESOLVE_BENEATH` does), and one that appears
between two steps makes the open fail, never escape. Only regular files are read (a
FIFO, device or socket never is, so nothing hangs), never past a size bound, and a file
with other hard links is not read (its other name may be outside). Writes keep a file's
mode and line endings, and never touch what would run code (`.git/`, hooks, editor task
files) unless commands are allowed anyway. `run_command` runs through
`refusals.loop.sandbox`: scrubbed environment, sandbox, bounded output, nothing left.
"""

from __future__ import annotations

import contextlib
import errno
import io
import itertools
import os
import re
import secrets
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from refusals.loop.sandbox import Sandbox, run_bounded, scrubbed_environment
from refusals.loop.tools import (
    MAX_OUTPUT_CHARS,
    Tool,
    ToolError,
    ToolRegistry,
    ToolResult,
    truncate_output,
)

# Below the registry's bound on any result, so that the note saying what was cut survives.
MAX_READ_CHARS = MAX_OUTPUT_CHARS - 200
MAX_READ_BYTES = 4 * MAX_READ_CHARS
MAX_LIST_ENTRIES = 500
MAX_SEARCH_MATCHES = 200
MAX_SEARCH_FILE_BYTES = 8 << 20
"""Bytes of one file `search_text` reads at most (a bigger file: its first 8 MiB)."""
MAX_SEARCH_LINE_BYTES = 64 << 10
"""A longer line is searched in its first 64 KiB only."""
MAX_EDIT_BYTES = 8 << 20
"""`edit_file` edits files up to 8 MiB: it holds the file and its edit in memory."""
MAX_COMMAND_OUTPUT_CHARS = 16_000
DEFAULT_COMMAND_TIMEOUT = 30.0
MAX_COMMAND_TIMEOUT = 300.0
# Directories nobody wants listed or searched by an agent.
_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "node_modules"})
_MAX_SYMLINKS = 40  # as the kernel's ELOOP limit

# Paths whose content runs code: git hooks and config (fsmonitor, core.pager, aliases),
# direnv, editor tasks and settings, pre-commit and husky hooks. Compared case-folded,
# for case-insensitive file systems.
_RUNS_CODE_DIRS = frozenset({".git", ".husky", ".idea"})
_RUNS_CODE_FILES = frozenset(
    {".envrc", ".pre-commit-config.yaml", ".gitmodules", ".lefthook.yml", "lefthook.yml"}
)
_RUNS_CODE_PAIRS = frozenset(
    {(".vscode", "tasks.json"), (".vscode", "settings.json"), (".vscode", "launch.json")}
)

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def shown_name(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 become U+FFFD (they cannot go into
    JSON or a terminal as they are)."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


class Workspace:
    """A directory the tools may touch, and what they may do there."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        allow_write: bool = False,
        allow_commands: bool = False,
        command_timeout: float = DEFAULT_COMMAND_TIMEOUT,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.root = Path(root).resolve(strict=True)
        if not self.root.is_dir():
            raise NotADirectoryError(f"{root} is not a directory")
        self.allow_write = allow_write
        self.allow_commands = allow_commands
        self.command_timeout = command_timeout
        self.sandbox = sandbox
        """Where commands run; None: unconfined (the caller has said so to the user)."""

    # Paths.

    def parts(self, path: str) -> list[str]:
        """The components of a relative path, or a ToolError saying why it is refused."""
        if not path or path == ".":
            return []
        if "\x00" in path:
            raise ToolError("the path contains a NUL character")
        pure = PurePosixPath(path.replace("\\", "/"))
        if pure.is_absolute() or re.match(r"^[A-Za-z]:", path):
            raise ToolError(f"{path!r} is absolute; give a path relative to the workspace")
        if ".." in pure.parts:
            raise ToolError(f"{path!r} contains '..'; paths must stay inside the workspace")
        return [part for part in pure.parts if part != "."]

    @contextlib.contextmanager
    def _root_fd(self) -> Iterator[int]:
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            yield fd
        finally:
            os.close(fd)

    def _walk_to(
        self, root_fd: int, path: str, *, mkdirs: bool = False
    ) -> tuple[int, str, list[str]]:
        """The parent directory of `path` (an open descriptor, the caller closes it), its
        last component with symlinks on the way followed beneath the workspace, and the
        components from the root (for messages)."""
        pending = self.parts(path)
        if not pending:
            raise ToolError(f"{path!r} is the workspace itself")
        stack = [os.dup(root_fd)]
        names: list[str] = []
        links = 0
        try:
            while True:
                name = pending.pop(0)
                if name == "..":
                    if len(stack) == 1:
                        raise ToolError(f"{path!r} leads outside the workspace (through a symlink)")
                    os.close(stack.pop())
                    names.pop()
                    continue
                target = _link_target(stack[-1], name)
                if target is not None:
                    links += 1
                    if links > _MAX_SYMLINKS:
                        raise ToolError(f"{path!r} has too many levels of symlinks")
                    if target.startswith("/"):
                        raise ToolError(f"{path!r} leads outside the workspace (through a symlink)")
                    pending = [p for p in PurePosixPath(target).parts if p != "."] + pending
                    if not pending:
                        raise ToolError(f"{path!r} is the workspace itself")
                    continue
                if not pending:
                    parent = stack.pop()
                    return parent, name, [*names, name]
                try:
                    fd = os.open(name, _DIR_FLAGS, dir_fd=stack[-1])
                except FileNotFoundError:
                    if not mkdirs:
                        raise ToolError(f"{'/'.join([*names, name])!r} does not exist") from None
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, dir_fd=stack[-1])
                    fd = os.open(name, _DIR_FLAGS, dir_fd=stack[-1])
                except NotADirectoryError:
                    raise ToolError(f"{'/'.join([*names, name])!r} is not a directory") from None
                except OSError as exc:
                    raise _changed(path, exc) from None
                stack.append(fd)
                names.append(name)
        finally:
            for fd in stack:
                os.close(fd)

    @contextlib.contextmanager
    def _open_file(self, path: str) -> Iterator[tuple[int, os.stat_result, str]]:
        """An existing regular file of the workspace, opened for reading."""
        with self._root_fd() as root:
            parent, name, names = self._walk_to(root, path)
            try:
                try:
                    fd = os.open(name, _READ_FLAGS, dir_fd=parent)
                except FileNotFoundError:
                    raise ToolError(f"{path!r} does not exist") from None
                except IsADirectoryError:
                    raise ToolError(f"{path!r} is not a file") from None
                except OSError as exc:
                    raise _changed(path, exc) from None
            finally:
                os.close(parent)
        try:
            info = os.fstat(fd)
            problem = _unreadable(info)
            if problem is not None:
                raise ToolError(f"{path!r} {problem}")
            os.set_blocking(fd, True)
            yield fd, info, "/".join(names)
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def _open_dir(self, path: str) -> Iterator[tuple[int, str]]:
        with self._root_fd() as root:
            if not self.parts(path):
                fd, names = os.dup(root), ["."]
            else:
                fd, names = self._open_subdir(root, path)
        try:
            yield fd, "/".join(names)
        finally:
            os.close(fd)

    def _open_subdir(self, root: int, path: str) -> tuple[int, list[str]]:
        parent, name, names = self._walk_to(root, path)
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent), names
        except FileNotFoundError:
            raise ToolError(f"{path!r} does not exist") from None
        except NotADirectoryError:
            raise ToolError(f"{path!r} is not a directory") from None
        except OSError as exc:
            raise _changed(path, exc) from None
        finally:
            os.close(parent)

    def _files(self, path: str) -> Iterator[tuple[str, int, str]]:
        """(relative path, parent descriptor, name) of every file under a directory,
        symlinks not followed, skipped directories left out, in sorted order."""
        with self._open_dir(path) as (base, shown_base):
            prefix = "" if shown_base == "." else shown_base + "/"
            for current, dirs, files, dir_fd in os.fwalk(".", dir_fd=base):
                dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
                here = "" if current == "." else current[2:] + "/"
                for name in sorted(files):
                    yield prefix + here + name, dir_fd, name

    # Tools. Their docstrings are what the model reads.

    def list_files(self, path: str = ".") -> str:
        """List the files under a directory of the workspace (recursively, bounded)."""
        found: list[str] = []
        for relative, _, _ in self._files(path):
            if len(found) >= MAX_LIST_ENTRIES:
                return "\n".join(found) + f"\n[listing truncated at {MAX_LIST_ENTRIES} files]"
            found.append(shown_name(relative))
        return "\n".join(found) if found else "(no files)"

    def read_file(self, path: str) -> str:
        """Read a text file of the workspace."""
        with self._open_file(path) as (fd, info, _):
            # Never more than a bounded prefix in memory, however large the file is.
            head = _read_up_to(fd, MAX_READ_BYTES)
        text = head.decode("utf-8", "replace")
        if info.st_size > len(head):
            return (
                f"{text[:MAX_READ_CHARS]}\n[file truncated: the first {len(head)} of "
                f"{info.st_size} bytes read]"
            )
        return truncate_output(text, MAX_READ_CHARS)

    def search_text(self, pattern: str, path: str = ".") -> str:
        """Search the workspace's text files for a literal string; lines as path:line: text."""
        if not pattern:
            raise ToolError("the pattern is empty")
        needle = pattern.encode("utf-8", "surrogateescape")
        matches: list[str] = []
        for relative, handle in self._searchable(path):
            with handle:
                for number, line in _lines(handle):
                    if needle in line:
                        text = line.decode("utf-8", "replace").rstrip("\r\n")[:300]
                        matches.append(f"{shown_name(relative)}:{number}: {text}")
                        if len(matches) >= MAX_SEARCH_MATCHES:
                            return "\n".join(matches) + (
                                f"\n[search truncated at {MAX_SEARCH_MATCHES} matches]"
                            )
        return "\n".join(matches) if matches else "(no matches)"

    def _searchable(self, path: str) -> Iterator[tuple[str, _Bounded]]:
        """The regular text files to search under `path` (or `path` itself), opened."""
        with self._root_fd() as root:
            is_file = False
            if self.parts(path):
                parent, name, _ = self._walk_to(root, path)
                try:
                    info = os.stat(name, dir_fd=parent, follow_symlinks=False)
                    is_file = not stat.S_ISDIR(info.st_mode)
                except FileNotFoundError:
                    raise ToolError(f"{path!r} does not exist") from None
                finally:
                    os.close(parent)
        if is_file:
            with self._open_file(path) as (fd, _, relative):
                yield relative, _Bounded(os.dup(fd))
            return
        for relative, dir_fd, name in self._files(path):
            try:
                fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
            except OSError:
                continue  # a symlink, or gone: not a file of the workspace to search
            try:
                if _unreadable(os.fstat(fd)) is not None:
                    os.close(fd)
                    continue
                os.set_blocking(fd, True)
            except OSError:
                os.close(fd)
                continue
            yield relative, _Bounded(fd)

    def write_file(self, path: str, content: str) -> ToolResult:
        """Write a text file of the workspace (created or replaced whole)."""
        if not self.allow_write:
            raise ToolError("writing files is not allowed; the user must pass --allow-write")
        self._check_writable(path)
        with self._root_fd() as root:
            parent, name, names = self._walk_to(root, path, mkdirs=True)
            try:
                self._check_writable("/".join(names))
                mode = _existing_mode(parent, name, path)
                _replace(parent, name, content.encode("utf-8"), mode)
            finally:
                os.close(parent)
        shown = shown_name("/".join(names))
        return ToolResult(
            f"wrote {len(content)} characters to {shown}",
            data={"path": shown, "kind": "add" if mode is None else "update"},
        )

    def edit_file(self, path: str, old_text: str, new_text: str) -> str:
        """Replace the one exact occurrence of old_text in a file by new_text."""
        if not self.allow_write:
            raise ToolError("editing files is not allowed; the user must pass --allow-write")
        self._check_writable(path)
        with self._open_file(path) as (fd, info, relative):
            if info.st_size > MAX_EDIT_BYTES:
                raise ToolError(
                    f"{path!r} is {info.st_size} bytes; edit_file edits files up to "
                    f"{MAX_EDIT_BYTES} bytes"
                )
            data = _read_up_to(fd, MAX_EDIT_BYTES + 1)
        self._check_writable(relative)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{path!r} is not UTF-8 text; it was not edited") from None
        old, new = old_text, new_text
        if old and text.count(old) == 0 and "\r\n" in text and "\n" in old:
            # A file with CRLF line ends: the model writes LF; its edit keeps the CRLF.
            old, new = _crlf(old), _crlf(new)
        count = text.count(old) if old else 0
        if count != 1:
            found = "does not occur" if count == 0 else f"occurs {count} times"
            raise ToolError(f"old_text {found} in {path!r}; it must occur exactly once")
        edited = text.replace(old, new, 1).encode("utf-8")
        with self._root_fd() as root:
            parent, name, _ = self._walk_to(root, relative)
            try:
                _replace(parent, name, edited, stat.S_IMODE(info.st_mode))
            finally:
                os.close(parent)
        return f"edited {shown_name(relative)}"

    def _check_writable(self, path: str) -> None:
        """Paths whose content runs code are written only when commands are allowed."""
        if self.allow_commands:
            return
        parts = [part.casefold() for part in self.parts(path)]
        runs = any(part in _RUNS_CODE_DIRS for part in parts[:-1]) or (
            bool(parts) and (parts[-1] in _RUNS_CODE_FILES or parts[-1] in _RUNS_CODE_DIRS)
        )
        runs = runs or any(pair in _RUNS_CODE_PAIRS for pair in itertools.pairwise(parts))
        if runs:
            raise ToolError(
                f"{path!r} can make tools run code (git hooks and config, direnv, editor "
                "tasks); writing it needs --allow-commands"
            )

    async def run_command(self, command: str, timeout: float | None = None) -> ToolResult:
        """Run a shell command in the workspace; its exit status and (bounded) output."""
        if not self.allow_commands:
            raise ToolError("running commands is not allowed; the user must pass --allow-commands")
        limit = min(timeout or self.command_timeout, MAX_COMMAND_TIMEOUT)
        argv = ["/bin/sh", "-c", command]
        if self.sandbox is not None:
            argv = self.sandbox.wrap(argv, self.root)
        result = await run_bounded(
            argv,
            cwd=self.root,
            env=scrubbed_environment(),
            timeout=limit,
            limit=MAX_COMMAND_OUTPUT_CHARS * 4,
        )
        if result.returncode is None:
            raise ToolError(f"the command timed out after {limit:g} seconds")
        text = result.output.decode("utf-8", "replace")
        if result.total > len(result.output) or len(text) > MAX_COMMAND_OUTPUT_CHARS:
            shown = text[:MAX_COMMAND_OUTPUT_CHARS]
            text = (
                f"{shown}\n[output truncated: the first {len(shown.encode('utf-8'))} of "
                f"{result.total} bytes shown]"
            )
        return ToolResult(
            f"exit status {result.returncode}\n{text}",
            data={"exit_code": result.returncode, "output": text},
        )

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


class _Bounded:
    """A file read line by line, never more than `MAX_SEARCH_FILE_BYTES` in all."""

    def __init__(self, fd: int) -> None:
        self.handle = io.BufferedReader(io.FileIO(fd, "rb"), buffer_size=1 << 16)

    def __enter__(self) -> _Bounded:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.handle.close()


def _lines(file: _Bounded) -> Iterator[tuple[int, bytes]]:
    """Numbered lines of a text file (none for a binary one), each cut to its bound."""
    handle = file.handle
    head = handle.peek(8192)[:8192]
    if b"\0" in head:
        return  # binary: not text to search
    read = 0
    number = 0
    while read < MAX_SEARCH_FILE_BYTES:
        line = handle.readline(MAX_SEARCH_LINE_BYTES)
        if not line:
            return
        read += len(line)
        number += 1
        if not line.endswith(b"\n"):
            # The line goes on past its bound: skip the rest of it, within the file bound.
            while read < MAX_SEARCH_FILE_BYTES:
                rest = handle.readline(MAX_SEARCH_LINE_BYTES)
                read += len(rest)
                if not rest or rest.endswith(b"\n"):
                    break
        yield number, line


def _unreadable(info: os.stat_result) -> str | None:
    """Why a file the tools opened is not read (the end of a sentence about it), or None:
    only regular files with no other name are (a FIFO would hang, a device never ends,
    a hard link's other name may be outside the workspace)."""
    if stat.S_ISDIR(info.st_mode):
        return "is not a file"
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file (a FIFO, device or socket is never read)"
    if info.st_nlink > 1:
        return "has other hard links, which may be outside the workspace; it is not read"
    return None


def _link_target(dir_fd: int, name: str) -> str | None:
    """The target of `name` in `dir_fd` when it is a symlink, else None."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.ENOENT, errno.ENOTDIR):
            return None
        raise


def _changed(path: str, exc: OSError) -> ToolError:
    if exc.errno == errno.ELOOP:
        # The component was checked a moment before: a symlink was swapped in since.
        return ToolError(f"{path!r} changed while it was opened (a symlink appeared); not used")
    return ToolError(f"{path!r} cannot be opened: {exc.strerror}")


def _existing_mode(parent: int, name: str, path: str) -> int | None:
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{path!r} is a directory")
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{path!r} is not a regular file; it was not written")
    return stat.S_IMODE(info.st_mode)


def _replace(parent: int, name: str, data: bytes, mode: int | None) -> None:
    """Replace `name` in `parent` by `data`, atomically, with `mode` kept (or the default
    a new file gets)."""
    temporary = f".{name}.{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, 0o666, dir_fd=parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=parent)
        raise


def _crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _read_up_to(fd: int, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(fd, min(1 << 20, limit - size))
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


_PATH = {"type": "string", "description": "a path relative to the workspace"}


def _schema(required: list[str] | None = None, **properties: object) -> dict[str, object]:
    schema: dict[str, object] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _doc(function: object) -> str:
    return (getattr(function, "__doc__", None) or "").strip()


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
