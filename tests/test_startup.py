"""Start-up stays cheap: `import refusals` and `refusals --help` load nothing heavy.

Each loading check runs in a fresh interpreter and asserts on `sys.modules`, never on
time, so it holds on a slow or busy machine. The answers the entry point gives without
click (`refusals`, `-h`, `--help`, `--version`) are compared byte for byte with click's
own, across terminal widths, program names and the conditions under which it defers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path

import click
import click.utils
import pytest

import refusals
from refusals import cli
from refusals.cli import COMMANDS, main

# Modules a bare import or `--help` must not pay for: rendering, HTTP, wire formats,
# stream decoding and the commands themselves.
HEAVY_PREFIXES = (
    "rich",
    "httpx",
    "refusals.providers",
    "refusals.transport",
    "refusals.model",
    "refusals.events",
)
COMMAND_MODULES = frozenset(module for module, _, _ in COMMANDS.values())

# The invocations the entry point answers without click, and their exit codes.
QUICK_ARGVS = {"no arguments": [], "-h": ["-h"], "--help": ["--help"], "--version": ["--version"]}
QUICK_EXIT = {"no arguments": 2, "-h": 0, "--help": 0, "--version": 0}


def _modules_after(code: str, out: Path) -> set[str]:
    script = (
        "import json, sys\n"
        f"{code}\n"
        f"open({str(out)!r}, 'w').write(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    loaded: list[str] = json.loads(out.read_text())
    return set(loaded)


def _heavy(loaded: set[str]) -> list[str]:
    return sorted(
        name
        for name in loaded
        if name in COMMAND_MODULES
        or any(name == prefix or name.startswith(prefix + ".") for prefix in HEAVY_PREFIXES)
    )


def _entry_point_code(argv: list[str], expected_exit: int) -> str:
    return (
        f"sys.argv = ['refusals', *{argv!r}]\n"
        "from refusals.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit:\n"
        f"    assert exit.code == {expected_exit}, exit.code\n"
        "else:\n"
        "    raise AssertionError('main() returned')\n"
    )


def test_import_refusals_loads_no_provider_transport_or_rendering_module(tmp_path: Path) -> None:
    loaded = _modules_after("import refusals", tmp_path / "modules.json")
    assert "refusals" in loaded
    assert _heavy(loaded) == []
    assert "click" not in loaded


def test_refusals_help_loads_no_command_module_provider_or_rendering_library(
    tmp_path: Path,
) -> None:
    loaded = _modules_after(_entry_point_code(["--help"], 0), tmp_path / "modules.json")
    assert "refusals.cli" in loaded
    assert _heavy(loaded) == []


@pytest.mark.parametrize("form", QUICK_ARGVS)
def test_the_entry_point_answers_help_and_version_without_importing_click(
    form: str, tmp_path: Path
) -> None:
    code = _entry_point_code(QUICK_ARGVS[form], QUICK_EXIT[form])
    loaded = _modules_after(code, tmp_path / "modules.json")
    assert "refusals.cli" in loaded
    assert sorted(name for name in loaded if name.split(".")[0] == "click") == []
    assert _heavy(loaded) == []


def _script(call: str, argv: list[str]) -> str:
    """`python -c` code that runs `call` (`main()`, or click's own `main.main()`) on argv."""
    return (
        f"import sys\nsys.argv = ['refusals', *{argv!r}]\nfrom refusals.cli import main\n{call}\n"
    )


def _subprocess_answer(call: str, argv: list[str]) -> tuple[int, bytes, bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    result = subprocess.run(
        [sys.executable, "-c", _script(call, argv)],
        capture_output=True,
        timeout=60,
        check=False,
        env=env,
    )
    return result.returncode, result.stdout, result.stderr


@pytest.mark.parametrize("form", QUICK_ARGVS)
def test_a_fresh_process_prints_what_click_prints_byte_for_byte(form: str) -> None:
    argv = QUICK_ARGVS[form]
    quick = _subprocess_answer("main()", argv)
    by_click = _subprocess_answer("main.main()", argv)
    assert quick == by_click
    assert quick[0] == QUICK_EXIT[form]


def test_a_closed_pipe_exits_1_quietly_as_click_does() -> None:
    answers = []
    for call in ("main()", "main.main()"):
        read_end, write_end = os.pipe()
        os.close(read_end)
        result = subprocess.run(
            [sys.executable, "-c", _script(call, ["--help"])],
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
        os.close(write_end)
        answers.append((result.returncode, result.stderr))
    assert answers == [(1, b""), (1, b"")]


# Where click reads the terminal width: (COLUMNS, the terminal's columns or None when
# standard output is not a terminal).
WIDTHS = {
    "not a terminal": (None, None),
    "COLUMNS=80": ("80", None),
    "COLUMNS=81": ("81", None),
    "COLUMNS=200": ("200", None),
    "COLUMNS=79": ("79", None),
    "COLUMNS=60": ("60", None),
    "COLUMNS=10": ("10", None),
    "COLUMNS=0": ("0", None),
    "COLUMNS=-3": ("-3", None),
    "COLUMNS=junk": ("junk", None),
    "terminal 120": (None, 120),
    "terminal 80": (None, 80),
    "terminal 79": (None, 79),
    "terminal 40": (None, 40),
    "terminal 0": (None, 0),
    "COLUMNS=100, terminal 60": ("100", 60),
    "COLUMNS=60, terminal 100": ("60", 100),
    "COLUMNS=1, terminal 120": ("1", 120),
}
WIDE = {"not a terminal", "COLUMNS=80", "COLUMNS=81", "COLUMNS=200", "COLUMNS=0"} | {
    "COLUMNS=-3",
    "COLUMNS=junk",
    "terminal 120",
    "terminal 80",
    "terminal 0",
    "COLUMNS=100, terminal 60",
}

# How the program was started: (sys.argv[0], __main__.__package__).
PROGRAMS = {
    "console script": ("/usr/local/bin/refusals", None),
    "python -m refusals": ("/site-packages/refusals/__main__.py", "refusals"),
    "a script run by path": ("tools/run-refusals.py", ""),
}


def _set_terminal(monkeypatch: pytest.MonkeyPatch, width: str) -> None:
    env_columns, terminal = WIDTHS[width]
    for name in ("COLUMNS", "LINES", "_REFUSALS_COMPLETE", "_PYTHON__M_REFUSALS_COMPLETE"):
        monkeypatch.delenv(name, raising=False)
    if env_columns is not None:
        monkeypatch.setenv("COLUMNS", env_columns)

    def get_terminal_size(fd: int = 1) -> os.terminal_size:
        if terminal is None:
            raise OSError("not a terminal")
        return os.terminal_size((terminal, 24))

    monkeypatch.setattr(os, "get_terminal_size", get_terminal_size)


def _set_program(monkeypatch: pytest.MonkeyPatch, program: str, argv: list[str]) -> None:
    path, package = PROGRAMS[program]
    fake_main = types.ModuleType("__main__")
    fake_main.__package__ = package
    monkeypatch.setitem(sys.modules, "__main__", fake_main)
    monkeypatch.setattr(sys, "argv", [path, *argv])


def _answer(
    call: Callable[[], object], capsys: pytest.CaptureFixture[str]
) -> tuple[object, str, str]:
    with pytest.raises(SystemExit) as exit:
        call()
    captured = capsys.readouterr()
    return exit.value.code, captured.out, captured.err


def _no_click(*args: object) -> click.Group:
    raise AssertionError("the entry point went to click")


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("form", QUICK_ARGVS)
def test_the_entry_point_prints_what_click_prints_at_every_width(
    form: str,
    width: str,
    program: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _set_terminal(monkeypatch, width)
    _set_program(monkeypatch, program, QUICK_ARGVS[form])
    by_click = _answer(cli.group().main, capsys)
    # Where the stored text applies, prove it is what answered: click is not reachable.
    if form == "--version" or width in WIDE:
        monkeypatch.setattr(cli, "group", _no_click)
    assert _answer(main, capsys) == by_click
    assert by_click[0] == QUICK_EXIT[form]


def test_the_stored_help_is_clicks_widest_rendering(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _set_terminal(monkeypatch, "not a terminal")
    _set_program(monkeypatch, "console script", ["--help"])
    _, rendered, _ = _answer(cli.group().main, capsys)
    assert cli.quick_reply(["--help"], "refusals", 80) == (0, rendered), (
        "click's help changed; paste this after the usage line into _HELP_BODY:\n"
        + rendered.partition("\n")[2]
    )
    assert rendered.isascii()


@pytest.mark.parametrize(
    "argv",
    [["--hel"], ["-h", "scan"], ["scan", "--help"], ["--help", "--version"], ["--version", "x"]],
    ids=" ".join,
)
def test_every_other_command_line_is_left_to_click(argv: list[str]) -> None:
    assert cli.quick_reply(argv, "refusals", 80) is None


def test_a_program_name_too_long_for_one_usage_line_is_left_to_click() -> None:
    fits = "r" * (cli.HELP_WIDTH - len("Usage:  [OPTIONS] COMMAND [ARGS]..."))
    assert cli.quick_reply(["--help"], fits, 80) is not None
    assert cli.quick_reply(["--help"], fits + "r", 80) is None
    assert cli.quick_reply(["--help"], "refu\x1b[1msals", 80) is None


@pytest.mark.parametrize("program", PROGRAMS)
def test_the_program_name_is_the_one_click_detects(program: str) -> None:
    path, package = PROGRAMS[program]
    fake_main = types.ModuleType("__main__")
    fake_main.__package__ = package
    assert cli.program_name(path, fake_main) == click.utils._detect_program_name(path, fake_main)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_terminal_width_is_the_one_click_reads(
    width: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _set_terminal(monkeypatch, width)
    assert cli.terminal_columns() == shutil.get_terminal_size().columns


def test_a_message_catalogue_for_click_is_noticed(tmp_path: Path) -> None:
    assert not cli.has_message_catalogue(str(tmp_path / "missing"))
    (tmp_path / "de" / "LC_MESSAGES").mkdir(parents=True)
    (tmp_path / "de" / "LC_MESSAGES" / "other.mo").write_bytes(b"")
    assert not cli.has_message_catalogue(str(tmp_path))
    (tmp_path / "de" / "LC_MESSAGES" / "messages.mo").write_bytes(b"")
    assert cli.has_message_catalogue(str(tmp_path))


def _count_group_uses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    uses: list[str] = []
    real = cli.group

    def counted() -> click.Group:
        uses.append("group")
        return real()

    monkeypatch.setattr(cli, "group", counted)
    return uses


def test_a_possible_translation_of_clicks_messages_is_left_to_click(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "share" / "locale" / "de" / "LC_MESSAGES").mkdir(parents=True)
    (tmp_path / "share" / "locale" / "de" / "LC_MESSAGES" / "messages.mo").write_bytes(b"")
    monkeypatch.setattr(sys, "base_prefix", str(tmp_path))
    _set_terminal(monkeypatch, "not a terminal")
    _set_program(monkeypatch, "console script", ["--help"])
    uses = _count_group_uses(monkeypatch)
    code, out, _ = _answer(main, capsys)
    assert (code, uses) == (0, ["group"])
    assert out.startswith("Usage: refusals [OPTIONS] COMMAND [ARGS]...\n")


def test_a_shell_completion_request_is_left_to_click(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _set_terminal(monkeypatch, "not a terminal")
    _set_program(monkeypatch, "console script", [])
    monkeypatch.setenv("_REFUSALS_COMPLETE", "bash_source")
    uses = _count_group_uses(monkeypatch)
    code, out, _ = _answer(main, capsys)
    assert (code, uses) == (0, ["group"])
    assert "_REFUSALS_COMPLETE=bash_complete" in out


def test_a_call_with_arguments_always_goes_to_click(monkeypatch: pytest.MonkeyPatch) -> None:
    _set_terminal(monkeypatch, "not a terminal")
    monkeypatch.setattr(cli, "group", _no_click)
    with pytest.raises(AssertionError, match="went to click"):
        main(["--help"])
    with pytest.raises(AssertionError, match="went to click"):
        main.main()


def test_main_stands_for_the_click_group() -> None:
    assert main.name == "main"
    assert main.list_commands(click.Context(cli.group())) == sorted(COMMANDS)


def test_a_public_name_still_loads_on_first_use(tmp_path: Path) -> None:
    code = "import refusals\nassert callable(refusals.normalize)\n"
    loaded = _modules_after(code, tmp_path / "modules.json")
    assert "refusals.providers" in loaded


def test_every_public_name_resolves_and_dir_lists_it() -> None:
    for name in refusals.__all__:
        assert getattr(refusals, name) is not None, name
    assert set(refusals.__all__) <= set(dir(refusals))
