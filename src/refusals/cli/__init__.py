"""The `refusals` command line: one module per command, registered on one click group."""

from __future__ import annotations

import click

from refusals import __version__
from refusals.cli.inspect import inspect_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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


main.add_command(inspect_command)
