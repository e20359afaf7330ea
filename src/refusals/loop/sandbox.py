"""Running a model's shell command: confined, without credentials, bounded, and ended.

`run_command` hands the model a shell, so what the shell can reach is the whole risk.
Every command gets a scrubbed environment (an allowlist: no API keys, tokens or cloud
credentials), its output is bounded in memory as it is read, and when it ends or times
out nothing it started is left running. On Linux with bubblewrap (`bwrap`) installed,
it also runs in a sandbox: the system read-only, the workspace the only writable place,
no home directory, no network unless asked for, its own process namespace (so a daemon
it leaves behind dies with it). Without bubblewrap a command runs unconfined, which the
command line allows only when the user says so explicitly.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import shutil
import signal
import subprocess
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ENV_ALLOWLIST",
    "CommandResult",
    "Sandbox",
    "find_sandbox",
    "run_bounded",
    "scrubbed_environment",
]

ENV_ALLOWLIST = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TERM",
        "TZ",
        "TMPDIR",
        "COLUMNS",
        "LINES",
        "NO_COLOR",
        "PYTHONIOENCODING",
    }
)
"""The variables a command inherits (and `LC_*`): enough to run tools, nothing secret."""

_RUN_MARKER = "REFUSALS_COMMAND_RUN"
# Directories of the system a sandboxed command sees, read-only.
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
# Files of /etc that hold secrets even on a plain machine: hidden in the sandbox.
_HIDDEN_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers")
_EXIT_GRACE_SECONDS = 0.5
"""How long output is read after the shell exited (a child it left may still write)."""


class _ReapedElsewhere(logging.Filter):
    """asyncio's child watcher warns when a killed command was reaped before it looked
    (subprocess's own clean-up does that); `_wait_exit` handles it, so the warning is
    noise on the user's terminal."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Unknown child process pid")


logging.getLogger("asyncio").addFilter(_ReapedElsewhere())


def scrubbed_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a command runs with: the allowlist of `environ`, nothing else."""
    source = os.environ if environ is None else environ
    return {
        name: value
        for name, value in source.items()
        if name in ENV_ALLOWLIST or (name.startswith("LC_") and name.isupper())
    }


@dataclass(frozen=True, slots=True)
class Sandbox:
    """bubblewrap, and how a command is wrapped in it."""

    bwrap: str
    network: bool = False

    def wrap(self, argv: list[str], workspace: Path) -> list[str]:
        """`argv` run inside the sandbox, with `workspace` its one writable directory."""
        wrapped = [self.bwrap, "--die-with-parent", "--new-session", "--unshare-all"]
        if self.network:
            wrapped.append("--share-net")
        for directory in _system_dirs():
            if os.path.islink(directory):
                wrapped += ["--symlink", os.readlink(directory), directory]
            else:
                wrapped += ["--ro-bind", directory, directory]
        for hidden in _HIDDEN_FILES:
            if os.path.exists(hidden):
                wrapped += ["--ro-bind", "/dev/null", hidden]
        for prefix in _toolchain_prefixes(workspace):
            wrapped += ["--ro-bind", prefix, prefix]
        wrapped += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        wrapped += ["--bind", str(workspace), str(workspace), "--chdir", str(workspace)]
        return [*wrapped, "--", *argv]


def _system_dirs() -> list[str]:
    return [directory for directory in _SYSTEM_DIRS if os.path.lexists(directory)]


def _toolchain_prefixes(workspace: Path) -> list[str]:
    """Where the tools on PATH live, outside the system directories and the workspace
    (a pyenv or a virtual environment): bound read-only so that `python` still runs."""
    system = tuple(d + "/" for d in _SYSTEM_DIRS)
    found: list[str] = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue
        real = os.path.realpath(entry)
        if real.startswith(system) or real in _SYSTEM_DIRS:
            continue
        if Path(real) == workspace or workspace in Path(real).parents:
            continue
        # bin/ of a prefix needs the prefix (its lib/ is beside it).
        prefix = os.path.dirname(real) if os.path.basename(real) in ("bin", "shims") else real
        if prefix != "/" and prefix not in found:
            found.append(prefix)
    return found


@functools.cache
def _bwrap_works(bwrap: str) -> bool:
    """Whether bubblewrap can make its namespaces here (a container may forbid it)."""
    argv = [bwrap, "--unshare-all", "--die-with-parent"]
    for directory in _system_dirs():
        if os.path.islink(directory):
            argv += ["--symlink", os.readlink(directory), directory]
        else:
            argv += ["--ro-bind", directory, directory]
    try:
        done = subprocess.run(
            [*argv, "--", "/bin/sh", "-c", "exit 0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def find_sandbox(*, network: bool = False) -> Sandbox | None:
    """bubblewrap when it is installed and works here, else None."""
    bwrap = shutil.which("bwrap")
    if bwrap is None or not _bwrap_works(bwrap):
        return None
    return Sandbox(bwrap, network=network)


@dataclass(frozen=True, slots=True)
class CommandResult:
    returncode: int | None
    """None when the command was stopped at its timeout."""
    output: bytes
    """The first `limit` bytes of its output (stdout and stderr together)."""
    total: int
    """Bytes of output it wrote in all."""


async def run_bounded(
    argv: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    limit: int,
) -> CommandResult:
    """Run `argv` with at most `limit` bytes of output kept, ended at `timeout`.

    Whatever the command started is ended with it: its process group, and every process
    that still carries this run's marker variable (a daemon that left the group), when
    the command exits, times out or the caller is cancelled.
    """
    marker = uuid.uuid4().hex
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env={**env, _RUN_MARKER: marker},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    kept = bytearray()
    total = 0

    async def pump() -> None:
        nonlocal total
        assert process.stdout is not None
        while chunk := await process.stdout.read(65536):
            total += len(chunk)
            room = limit - len(kept)
            if room > 0:
                kept.extend(chunk[:room])
            # A read of a full pipe returns without yielding: without this, a command
            # writing without end (`cat /dev/zero`) would starve the loop, timeout and all.
            await asyncio.sleep(0)

    reader = asyncio.ensure_future(pump())
    returncode: int | None = None
    try:
        returncode = await _wait_exit(process, timeout)
        if returncode is None:
            raise TimeoutError
        # The shell is gone; a child it left may hold the pipe open: read a moment more.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(reader), _EXIT_GRACE_SECONDS)
    except TimeoutError:
        returncode = None
    finally:
        _end_everything(process.pid, marker)
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
        await _reap(process)
        # An exit the watcher missed leaves the transport open, to be closed by the
        # garbage collector after the loop is gone (a traceback at exit): close it now.
        transport = getattr(process, "_transport", None)
        if transport is not None:
            transport.close()
    return CommandResult(returncode, bytes(kept), total)


_REAP_SECONDS = 2.0
_POLL_SECONDS = 0.25


async def _wait_exit(process: asyncio.subprocess.Process, timeout: float) -> int | None:
    """The exit status, or None at `timeout`. asyncio's threaded child watcher (3.11) can
    miss an exit: a process seen to be a zombie that it has not reported is reaped here."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    waiter = asyncio.ensure_future(process.wait())
    try:
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            try:
                return await asyncio.wait_for(asyncio.shield(waiter), min(_POLL_SECONDS, remaining))
            except TimeoutError:
                if not os.path.exists(f"/proc/{process.pid}"):
                    # Reaped elsewhere (subprocess's clean-up): it exited, its status is
                    # lost; 255, as asyncio reports it, never None (None means timed out).
                    return process.returncode if process.returncode is not None else 255
                if _is_zombie(process.pid):
                    await asyncio.sleep(0.05)  # the watcher's last chance
                    if process.returncode is not None:
                        return process.returncode
                    with contextlib.suppress(ChildProcessError):
                        reaped, status = os.waitpid(process.pid, os.WNOHANG)
                        if reaped:
                            return os.waitstatus_to_exitcode(status)
    finally:
        waiter.cancel()


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            # `pid (comm) S ...`: the state follows the last `)`.
            return handle.read().rpartition(b")")[2][1:2] == b"Z"
    except OSError:
        return False


async def _reap(process: asyncio.subprocess.Process) -> None:
    """Wait for a killed process, bounded: asyncio's child watcher can miss the exit of
    a process killed while it starts watching, and the wait would then never end."""
    with contextlib.suppress(ProcessLookupError, asyncio.CancelledError):
        await _wait_exit(process, _REAP_SECONDS)


def _end_everything(pgid: int, marker: str) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    needle = f"{_RUN_MARKER}={marker}".encode()
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def _pids() -> list[int]:
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    return [int(name) for name in names if name.isdigit() and int(name) != os.getpid()]
