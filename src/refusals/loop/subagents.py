"""Subagents: a `spawn_agent` tool that runs a child loop and reports how it ended.

The child has its own history, the task as its only prompt and a subset of the parent's
tools, within limits on depth and concurrency. The parent receives, in the same step,
a structured result: `status` (completed, refused, content_filtered, failed), the
child's final text and, on a refusal or filter, the notice verbatim with its kind and
category and the instruction that the task must not be retried as it is. Peers have
told a parent "an error occurred, please try again" about a refused child; this says
what happened. A task once refused is never sent again: asking for it returns the
same result without a model call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

import orjson

from refusals.loop.outcome import Outcome
from refusals.request import JsonObject

SPAWN_AGENT = "spawn_agent"

SubagentStatus = Literal["completed", "refused", "content_filtered", "failed"]

DO_NOT_RETRY = (
    "Do not retry this task as it is: it was not retried and asking again is refused "
    "again. Rephrase the task, do it another way, or tell the user."
)
WITHDRAWN_TASK = "[withdrawn: this task was refused; its text is not sent again]"
"""What a refused `spawn_agent` call's task reads as in every later request."""
REPEATED_TASK = "This exact task was refused before in this session; it was not sent again."

SPAWN_AGENT_DESCRIPTION = (
    "Start a subagent with its own conversation to carry out a self-contained task; it "
    "reports back its final answer, or why it could not finish."
)


@dataclass(slots=True)
class SubagentPolicy:
    """Limits on subagents: how deep they nest, how many run at once, their model calls."""

    max_depth: int = 1
    """1: the session's agent may start subagents, which may not start their own."""
    max_concurrent: int = 2
    max_turns: int = 10
    """Model calls a subagent may make for its task."""


@dataclass(slots=True)
class SubagentResult:
    """How a subagent ended, as the parent model and the surfaces see it."""

    status: SubagentStatus
    task: str
    text: str = ""
    notice: str | None = None
    kind: Literal["refusal", "content_filter"] | None = None
    category: str | None = None
    error: str | None = None
    repeated: bool = False

    @classmethod
    def from_outcome(
        cls,
        outcome: Outcome,
        task: str,
        *,
        text: str = "",
        notice: str | None = None,
        category: str | None = None,
        error: str | None = None,
    ) -> SubagentResult:
        if outcome is Outcome.SUCCESS:
            return cls("completed", task, text)
        if outcome is Outcome.REFUSED:
            return cls("refused", task, text, notice, "refusal", category)
        if outcome is Outcome.CONTENT_FILTERED:
            return cls("content_filtered", task, text, notice, "content_filter", category)
        return cls("failed", task, text, error=error or outcome.description)

    def to_json(self) -> JsonObject:
        """The result object: the parent model reads it, surfaces show it."""
        result: JsonObject = {"status": self.status, "text": self.text}
        if self.notice is not None:
            result["kind"] = self.kind
            result["category"] = self.category
            result["notice"] = self.notice
            result["retry"] = False
            result["instruction"] = DO_NOT_RETRY
            if self.repeated:
                result["repeated"] = REPEATED_TASK
        if self.error is not None:
            result["error"] = self.error
        return result

    def for_model(self) -> str:
        """The tool result text the parent model receives."""
        return orjson.dumps(self.to_json()).decode()


RunChild = Callable[[str, list[str] | None, str], Awaitable[SubagentResult]]
"""Runs one child: (task, tool names or None for all, the subagent item id)."""


@dataclass(slots=True)
class Subagents:
    """The subagents of one session: concurrency, and the tasks refused so far.

    One instance is shared by a session's agent and every subagent below it, so the
    concurrency limit and the memory of refused tasks hold for the whole session.
    """

    policy: SubagentPolicy = field(default_factory=SubagentPolicy)
    refused: dict[str, SubagentResult] = field(default_factory=dict)
    started: int = 0
    _slots: asyncio.Semaphore | None = None
    _running: dict[str, asyncio.Future[SubagentResult]] = field(default_factory=dict)

    def _semaphore(self) -> asyncio.Semaphore:
        if self._slots is None:
            self._slots = asyncio.Semaphore(max(self.policy.max_concurrent, 1))
        return self._slots

    async def run(
        self, task: str, tools: list[str] | None, item_id: str, run_child: RunChild
    ) -> SubagentResult:
        """Run `task` in a child (at most `max_concurrent` at once), unless it was refused.

        The task is claimed before a slot is waited for: identical tasks asked for at once
        share one child and its result, so a refused task reaches the model once.
        """
        key = task.strip()
        known = self.refused.get(key)
        if known is not None:
            return _repeated(known, task)
        running = self._running.get(key)
        if running is not None:
            shared = await asyncio.shield(running)
            return _repeated(shared, task) if shared.notice is not None else shared
        claim: asyncio.Future[SubagentResult] = asyncio.get_running_loop().create_future()
        self._running[key] = claim
        try:
            async with self._semaphore():
                self.started += 1
                result = await run_child(task, tools, item_id)
        except BaseException as exc:
            claim.set_exception(exc)
            # Read here, so an unawaited claim does not warn; the sharers get it too.
            claim.exception()
            raise
        finally:
            del self._running[key]
        if result.notice is not None:
            self.refused[key] = result
        claim.set_result(result)
        return result


def _repeated(known: SubagentResult, task: str) -> SubagentResult:
    """A refused task's result again, marked as not sent again."""
    return SubagentResult(
        known.status, task, "", known.notice, known.kind, known.category, repeated=True
    )
