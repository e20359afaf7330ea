"""The command group: lazy command loading and what Ctrl-C means outside a command."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from refusals.cli import COMMANDS, main


@click.command("interrupted")
def interrupted_command() -> None:
    raise KeyboardInterrupt


def test_ctrl_c_outside_a_command_exits_130_with_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(
        COMMANDS, "interrupted", (__name__, "interrupted_command", "Raises Ctrl-C.")
    )
    result = CliRunner().invoke(main, ["interrupted"])
    assert result.exit_code == 130
    assert result.output == "Interrupted.\n"


def test_help_lists_every_command_without_importing_any_of_them() -> None:
    code = (
        "import sys\n"
        "from refusals.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('refusals.cli.') or m == 'rich')\n"
        "print('LOADED', loaded)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    for name in COMMANDS:
        assert f"  {name} " in out
    assert out.strip().endswith("LOADED []")


def test_an_unknown_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["nonsense"])
    assert result.exit_code == 2
    assert "No such command 'nonsense'" in result.output
