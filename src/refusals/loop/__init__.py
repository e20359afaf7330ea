"""The agent runtime: one turn loop shared by `refusals exec`, subagents and the chat.

```python
import asyncio
from refusals.loop import Agent, ToolRegistry
from refusals.transport.clients import client_for

tools = ToolRegistry()

@tools.tool
def add(a: int, b: int) -> int:
    "Add two integers."
    return a + b

agent = Agent(client_for("mock:tool-then-answer"), tools=tools)  # emit=… for events
result = asyncio.run(agent.run("What is 2 + 3?"))
print(result.outcome.code, result.notice or result.text)   # success The tool returned: 2
```

A refused or filtered turn ends with `result.notice`, the string `refusals.notice`
built, unchanged; it is withdrawn from the history and never sent again.
"""

from refusals.loop.agent import Agent, Approver, TurnResult
from refusals.loop.events import (
    Event,
    EventSink,
    IdSource,
    Item,
    ItemCompleted,
    ItemStarted,
    ItemUpdated,
    RefusalReported,
    ThreadCompleted,
    ThreadStarted,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
)
from refusals.loop.gates import GateAction, GateFiring, Gates
from refusals.loop.history import Entry, Transcript
from refusals.loop.outcome import (
    EXIT_CANCELLED,
    EXIT_CONTENT_FILTERED,
    EXIT_ERROR,
    EXIT_REFUSED,
    EXIT_SUCCESS,
    EXIT_USAGE,
    Outcome,
)
from refusals.loop.step import Step, StepKind, classify, run_step
from refusals.loop.subagents import SubagentPolicy, SubagentResult
from refusals.loop.tools import Tool, ToolError, ToolRegistry, ToolResult
from refusals.loop.workspace import Workspace

__all__ = [
    "EXIT_CANCELLED",
    "EXIT_CONTENT_FILTERED",
    "EXIT_ERROR",
    "EXIT_REFUSED",
    "EXIT_SUCCESS",
    "EXIT_USAGE",
    "Agent",
    "Approver",
    "Entry",
    "Event",
    "EventSink",
    "GateAction",
    "GateFiring",
    "Gates",
    "IdSource",
    "Item",
    "ItemCompleted",
    "ItemStarted",
    "ItemUpdated",
    "Outcome",
    "RefusalReported",
    "Step",
    "StepKind",
    "SubagentPolicy",
    "SubagentResult",
    "ThreadCompleted",
    "ThreadStarted",
    "Tool",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "Transcript",
    "TurnCompleted",
    "TurnFailed",
    "TurnResult",
    "TurnStarted",
    "Workspace",
    "classify",
    "run_step",
]
