"""The slash command table: parsing, completion, and that docs/chat.md lists each one."""

from __future__ import annotations

from pathlib import Path

from refusals.chat.commands import COMMANDS, Parsed, completions, help_lines, parse, prompt_text

DOCS = Path(__file__).parents[2] / "docs" / "chat.md"


def test_a_slash_line_is_a_command_with_its_argument_and_other_lines_are_prompts() -> None:
    assert parse("/model anthropic:claude-opus-4-8 ") == Parsed(
        "model", "anthropic:claude-opus-4-8"
    )
    assert parse("  /HELP") == Parsed("help", "")
    assert parse("hello /model") is None
    assert parse("//model is a word") is None
    assert prompt_text("//model is a word") == "/model is a word"
    assert prompt_text("  plain  ") == "plain"


def test_completion_offers_the_commands_that_start_with_what_was_typed() -> None:
    assert completions("/") == [f"/{command.name}" for command in COMMANDS]
    assert completions("/h") == ["/help", "/history"]
    assert completions("/his") == ["/history"]
    assert completions("/model x") == []
    assert completions("model") == []


def test_help_has_one_line_per_command_and_the_escape() -> None:
    lines = help_lines()
    assert [line.split()[0] for line in lines] == [f"/{c.name}" for c in COMMANDS] + ["//TEXT"]


def test_docs_list_every_command() -> None:
    text = DOCS.read_text("utf-8")
    for command in COMMANDS:
        usage = f"/{command.name}" + (f" {command.argument}" if command.argument else "")
        assert f"| `{usage}` |" in text, usage
