"""Asking the user before a tool writes to the workspace or runs a command.

The loop runs the tools it is handed, so approval is put around them: each write or
command tool of the registry becomes one that asks first (yes, no, or always for this
session, per tool). A "no" is a tool error the model reads; Ctrl-C at the question
cancels the turn.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from refusals.chat.prompt import Approval
from refusals.loop.tools import Tool, ToolError, ToolRegistry
from refusals.sanitize import sanitize

NEEDS_APPROVAL = frozenset({"write", "command"})

Ask = Callable[[str], Awaitable[Approval | None]]


class Approvals:
    """Which tools the user allowed for the rest of the session, and the way to ask."""

    def __init__(self, ask: Ask) -> None:
        self.ask = ask
        self.always: set[str] = set()

    async def check(self, tool: Tool, arguments: dict[str, Any]) -> None:
        """Return if the call may run; raise ToolError if the user said no."""
        if tool.name in self.always:
            return
        shown = ", ".join(
            f"{key}={sanitize(repr(value), max_chars=80, single_line=True)}"
            for key, value in arguments.items()
        )
        answer = await self.ask(f"allow {tool.name}({shown})?")
        if answer is None:
            # Ctrl-C or Ctrl-D at the question: the user wants out of this turn.
            raise asyncio.CancelledError
        if answer == "always":
            self.always.add(tool.name)
        elif answer == "no":
            raise ToolError(f"the user did not allow this {tool.name} call")

    def wrap(self, registry: ToolRegistry) -> ToolRegistry:
        """The registry with every write and command tool asking first."""
        return ToolRegistry(self._wrapped(tool) for tool in registry)

    def _wrapped(self, tool: Tool) -> Tool:
        if tool.permission not in NEEDS_APPROVAL:
            return tool
        function = tool.function

        async def asking(**arguments: Any) -> Any:
            await self.check(tool, arguments)
            value = function(**arguments)
            return await value if inspect.isawaitable(value) else value

        return Tool(tool.name, asking, tool.description, tool.parameters, tool.permission)
