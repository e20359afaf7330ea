"""The `refusals` command line: one module per command, registered on one click group.

Commands are imported only when they run (or when `--help` lists them), so that start-up
stays cheap: a command's own imports (rich, httpx, uvicorn…) load with that command.
"""

from __future__ import annotations

import importlib

import click

from refusals import __version__

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
    "scan": (
        "refusals.cli.scan",
        "scan_command",
        "Count refusals and filter stops across recorded responses and logs.",
    ),
}


EXIT_INTERRUPTED = 130


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
