"""Asking the user before a tool writes to the workspace or runs a command.

`Approvals` is the chat's `Approver` for the loop (`Agent(approve=...)`), which asks it
before every write or command call: yes, no, or always for this session (per tool). A
"no" is a declined call the model reads as a tool error; Ctrl-C or Ctrl-D at the
question cancels the turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from refusals.chat.prompt import Approval
from refusals.loop.tools import Tool, parse_arguments
from refusals.model import ToolCall
from refusals.sanitize import sanitize

Ask = Callable[[str], Awaitable[Approval | None]]


class Approvals:
    """Which tools the user allowed for the rest of the session, and the way to ask."""

    def __init__(self, ask: Ask) -> None:
        self.ask = ask
        self.always: set[str] = set()

    async def __call__(self, call: ToolCall, tool: Tool) -> bool:
        """Whether the call may run (the loop only asks about well-formed calls)."""
        if tool.name in self.always:
            return True
        arguments = parse_arguments(call)
        items = arguments.items() if isinstance(arguments, dict) else ()
        shown = ", ".join(
            f"{_name(key)}={sanitize(repr(value), max_chars=80, single_line=True)}"
            for key, value in items
        )
        answer = await self.ask(f"allow {tool.name}({shown})?")
        if answer is None:
            # Ctrl-C or Ctrl-D at the question: the user wants out of this turn.
            raise asyncio.CancelledError
        if answer == "always":
            self.always.add(tool.name)
        return answer != "no"


def _name(key: object) -> str:
    """An argument name as typed by the model: plain when it is an identifier, quoted
    otherwise, so that a crafted name cannot draw a question of its own."""
    text = str(key)
    if text.isidentifier() and text.isascii() and len(text) <= 40:
        return text
    return sanitize(repr(text), max_chars=40, single_line=True)
