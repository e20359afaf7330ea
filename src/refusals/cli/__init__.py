"""The `refusals` command line: one module per command, registered on one click group.

Commands are imported only when they run (or when `--help` lists them), so that start-up
stays cheap: a command's own imports (rich, httpx, uvicorn…) load with that command.

Click itself costs about 20 ms to import, most of a bare `refusals --help`. So the entry
point answers the four invocations that need no parsing (`refusals`, `refusals -h`,
`refusals --help`, `refusals --version`) from text that tests/test_startup.py asserts is
byte-identical to what click prints, and only in the conditions that test covers (click's
help width, an untranslated click, no shell completion request). Everything else, and
every call with arguments (`main([...])`, `CliRunner().invoke(main, ...)`), goes to the
click group.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys

from refusals import __version__

# Not `typing.TYPE_CHECKING`: the fast path must not pay for importing typing.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

    import click

# name -> (module, attribute, one-line summary shown by `refusals --help`)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "chat": (
        "refusals.cli.chat",
        "chat_command",
        "Talk to a model at the terminal; refusals explained, never resent.",
    ),
    "exec": (
        "refusals.cli.exec",
        "exec_command",
        "Run one agent task headless; --json writes JSONL events.",
    ),
    "inspect": (
        "refusals.cli.inspect",
        "inspect_command",
        "Show the verdict on a recorded response body, stream or HTTP error body.",
    ),
    "mock-server": (
        "refusals.cli.mock_server",
        "mock_server_command",
        "Serve every provider's wire format on 127.0.0.1, "
        "with refusal, filter and fault scenarios.",
    ),
    "proxy": (
        "refusals.cli.proxy",
        "proxy_command",
        "A gateway for any tool: refused prompts answered from memory, never resent.",
    ),
    "scan": (
        "refusals.cli.scan",
        "scan_command",
        "Count refusals and filter stops across recorded responses and logs.",
    ),
}


EXIT_INTERRUPTED = 130


def _build_group() -> click.Group:
    import click  # noqa: PLC0415 - importing this module must not import click

    class _LazyGroup(click.Group):
        def invoke(self, ctx: click.Context) -> object:
            # click turns Ctrl-C into "Aborted!" and exit 1; a shell expects 130, and a
            # command that handles it itself (inspect, exec, chat) never gets here.
            try:
                return super().invoke(ctx)
            except KeyboardInterrupt:
                click.echo("Interrupted.", err=True)
                ctx.exit(EXIT_INTERRUPTED)

        def list_commands(self, ctx: click.Context) -> list[str]:
            return sorted(COMMANDS)

        def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
            entry = COMMANDS.get(cmd_name)
            if entry is None:
                return None
            module = importlib.import_module(entry[0])
            command: click.Command = getattr(module, entry[1])
            return command

        def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
            # The summaries come from the table, so `--help` imports no command module.
            rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
            if rows:
                with formatter.section("Commands"):
                    formatter.write_dl(rows)

    @click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(__version__, prog_name="refusals")
    def main() -> None:
        """Make LLM refusals first-class: detect, explain and never retry them.

        \b
        Examples:
          refusals inspect response.json          what a recorded response says
          refusals inspect stream.sse             a recorded stream, and its verdict event
          refusals inspect --json --status 400 error.json
          curl ... | refusals inspect -           standard input
        """

    return main


# The help as click renders it at its widest (terminals of 80 columns or more, and
# output that is not a terminal), after the usage line. When the group's help, options
# or COMMANDS change, tests/test_startup.py fails and prints click's new rendering.
HELP_WIDTH = 78
_USAGE_ARGS = "[OPTIONS] COMMAND [ARGS]..."
_HELP_BODY = """
  Make LLM refusals first-class: detect, explain and never retry them.

  Examples:
    refusals inspect response.json          what a recorded response says
    refusals inspect stream.sse             a recorded stream, and its verdict event
    refusals inspect --json --status 400 error.json
    curl ... | refusals inspect -           standard input

Options:
  --version   Show the version and exit.
  -h, --help  Show this message and exit.

Commands:
  chat         Talk to a model at the terminal; refusals explained, never
               resent.
  exec         Run one agent task headless; --json writes JSONL events.
  inspect      Show the verdict on a recorded response body, stream or HTTP
               error body.
  mock-server  Serve every provider's wire format on 127.0.0.1, with refusal,
               filter and fault scenarios.
  proxy        A gateway for any tool: refused prompts answered from memory,
               never resent.
  scan         Count refusals and filter stops across recorded responses and
               logs.
"""


def quick_reply(argv: list[str], prog: str, columns: int) -> tuple[int, str] | None:
    """Exit code and output click gives for `argv`, or None when click must answer.

    Exit code 0 is written to standard output, 2 (click's "no arguments" usage error,
    which shows the help) to standard error. `prog` is the program name click would
    detect, `columns` the terminal width it would read.
    """
    if argv == ["--version"]:
        return 0, f"refusals, version {__version__}\n"
    if argv not in ([], ["-h"], ["--help"]):
        return None
    # Click wraps to min(columns, 80) - 2; only its widest rendering is stored here.
    if max(min(columns, 80) - 2, 50) != HELP_WIDTH:
        return None
    usage = f"Usage: {prog} {_USAGE_ARGS}"
    # A longer name wraps the usage line; control characters change click's measure.
    if len(usage) > HELP_WIDTH or not (prog.isascii() and prog.isprintable()):
        return None
    return (2 if not argv else 0), usage + "\n" + _HELP_BODY


def program_name(path: str, main_module: ModuleType) -> str:
    """The program name click's help shows (`click.utils._detect_program_name`)."""
    package = getattr(main_module, "__package__", None)
    if package in {None, ""} or (
        os.name == "nt"
        and package == ""
        and not os.path.exists(path)
        and os.path.exists(f"{path}.exe")
    ):
        return os.path.basename(path)
    module = str(package)
    name = os.path.splitext(os.path.basename(path))[0]
    if name != "__main__":
        module = f"{module}.{name}"
    return f"python -m {module.lstrip('.')}"


def terminal_columns() -> int:
    """The width click's help formatter reads (`shutil.get_terminal_size().columns`)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        stdout = sys.__stdout__
        columns = os.get_terminal_size(stdout.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80
    return columns or 80


def has_message_catalogue(localedir: str) -> bool:
    """Whether gettext could translate click's messages from `localedir`.

    Click's "Usage:", "Options" and option help go through gettext's default domain
    ("messages") and directory; without a `messages.mo` there they are English.
    """
    try:
        languages = os.listdir(localedir)
    except OSError:
        return False
    return any(
        os.path.exists(os.path.join(localedir, language, "LC_MESSAGES", "messages.mo"))
        for language in languages
    )


def _reply_without_click() -> None:
    """Answer the command line as click would and exit, or return to let click do it."""
    main_module = sys.modules.get("__main__")
    if main_module is None:
        return
    prog = program_name(sys.argv[0], main_module)
    completion = "_" + prog.replace("-", "_").replace(".", "_").upper() + "_COMPLETE"
    if os.environ.get(completion):
        return
    if has_message_catalogue(os.path.join(sys.base_prefix, "share", "locale")):
        return
    reply = quick_reply(sys.argv[1:], prog, terminal_columns())
    if reply is None:
        return
    code, text = reply
    stream = sys.stdout if code == 0 else sys.stderr
    if stream is not None:
        try:
            stream.write(text)
            stream.flush()
        except OSError as error:
            if error.errno != errno.EPIPE:
                raise
            # What click does on a closed pipe: exit 1, and let no later flush complain.
            from click.utils import _PacifyFlushWrapper  # noqa: PLC0415 - rare

            sys.stdout = _PacifyFlushWrapper(sys.stdout)
            sys.stderr = _PacifyFlushWrapper(sys.stderr)
            code = 1
    sys.exit(code)


_group: click.Group | None = None


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _interrupt_on_sigterm_from_now() -> None:
    """SIGTERM as Ctrl-C from the first line of `refusals exec` on: exit 130, never the
    default death (143) while click and the command load. The command and its run put
    their own handlers in place of this one (and restore it)."""
    import signal  # noqa: PLC0415 - only `exec` pays for it

    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _raise_interrupt)


def group() -> click.Group:
    """The click group, built (and click imported) on first use."""
    global _group  # noqa: PLW0603 - one group per process, built once
    if _group is None:
        _group = _build_group()
    return _group


class _Main:
    """`refusals.cli.main`: the click group, with the start-up answers in front of it.

    Called with no arguments, as the console script and `python -m refusals` call it, it
    first tries `_reply_without_click`. Every other call, and every attribute
    (`main.main`, `main.name`, `main.commands`…), goes to the group.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs:
            if sys.argv[1:2] == ["exec"]:
                _interrupt_on_sigterm_from_now()
            try:
                _reply_without_click()
                command = group()
            except KeyboardInterrupt:
                sys.stderr.write("Interrupted.\n")
                sys.exit(EXIT_INTERRUPTED)
            return command.main()
        return group().main(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(group(), name)

    def __repr__(self) -> str:
        return f"<refusals command line {group()!r}>"


# Typed as the group it stands for: callers (CliRunner().invoke(main, ...) in the tests)
# use it as one, and every attribute but the call is the group's own.
main: click.Group = _Main()  # type: ignore[assignment]
