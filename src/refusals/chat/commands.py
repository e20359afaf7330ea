"""The chat's slash commands: their names, what they take, and how a line is read as one.

A line that starts with `/` is a command; `//text` sends `/text` to the model as it is.
The table here is the one source for `/help`, tab completion and `docs/chat.md`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    argument: str | None
    """What the command takes (shown in `/help`), or None when it takes nothing."""
    summary: str


COMMANDS: tuple[Command, ...] = (
    Command("help", None, "List these commands."),
    Command(
        "edit",
        None,
        "Put the refused prompt (else the last one) back in the input line to rephrase it.",
    ),
    Command("model", "NAME", "Switch to PROVIDER:MODEL for the next turn; the history stays."),
    Command(
        "retry",
        None,
        "Send the last prompt again (not after a refusal: it would be refused again).",
    ),
    Command("history", None, "Show the conversation, with what later turns no longer send."),
    Command("clear", None, "Start the conversation afresh (the model keeps nothing before)."),
    Command("save", "FILE", "Write the session as JSONL events in the `refusals exec` schema."),
    Command("quit", None, "Leave the chat (Ctrl-D does too)."),
)

BY_NAME = {command.name: command for command in COMMANDS}


@dataclass(frozen=True, slots=True)
class Parsed:
    """A line read as a command: its name (as typed, lowercased) and its argument."""

    name: str
    argument: str


def parse(line: str) -> Parsed | None:
    """The command a line gives, or None when the line is a prompt for the model."""
    stripped = line.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    name, _, argument = stripped[1:].partition(" ")
    return Parsed(name.lower(), argument.strip())


def prompt_text(line: str) -> str:
    """What a non-command line sends: `//text` is the escape for a prompt `/text`."""
    stripped = line.strip()
    return stripped[1:] if stripped.startswith("//") else stripped


def completions(text: str) -> list[str]:
    """The commands (`/name`) that complete what was typed so far, in table order."""
    if not text.startswith("/") or " " in text:
        return []
    typed = text[1:].lower()
    return [f"/{command.name}" for command in COMMANDS if command.name.startswith(typed)]


def help_lines() -> list[str]:
    """`/help`'s text: one line per command."""
    width = max(len(_usage(command)) for command in COMMANDS)
    lines = [f"{_usage(command):<{width}}  {command.summary}" for command in COMMANDS]
    lines.append(f"{'//TEXT':<{width}}  Send TEXT starting with '/' to the model.")
    return lines


def _usage(command: Command) -> str:
    return f"/{command.name}" + (f" {command.argument}" if command.argument else "")
