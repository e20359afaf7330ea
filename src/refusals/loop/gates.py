"""Gates: the only places the loop asks the model again without a new user message.

Auto-continue (an answer cut off at the length limit, or an Anthropic `pause_turn`) and
one recovery turn (an empty answer, a malformed tool call) are each bounded per turn.
No gate ever acts on a refused or filtered step, nor on any text that is a refusal or
content-filter notice (`refusals.is_blocked_notice`): a refusal is terminal, and peers
that "recover" from it resend the refused conversation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from refusals.loop.step import Step, StepKind
from refusals.refusal import is_blocked_notice

CONTINUE_PROMPT = "Continue exactly where you stopped, without repeating anything."
EMPTY_RECOVERY_PROMPT = (
    "Your last reply was empty. Answer the task, or call one of the tools offered."
)


class GateAction(Enum):
    CONTINUE = "continue"
    """Ask the model to go on from a cut-off or paused answer."""
    RECOVER = "recover"
    """Ask once more after an empty answer or a malformed tool call."""


@dataclass(slots=True)
class GateFiring:
    """A gate that acted: which, on what kind of step, in which turn."""

    action: GateAction
    kind: StepKind
    turn: int


@dataclass(slots=True)
class Gates:
    """Bounded auto-continue and recovery, counted per turn; `fired` logs every firing."""

    max_continuations: int = 3
    max_recoveries: int = 1
    fired: list[GateFiring] = field(default_factory=list)
    _continuations: int = 0
    _recoveries: int = 0

    def begin_turn(self) -> None:
        self._continuations = 0
        self._recoveries = 0

    def decide(
        self, step: Step, *, turn: int, malformed_tool_call: bool = False
    ) -> GateAction | None:
        """The gate that acts on `step`, or None (the loop then ends or goes on as usual)."""
        if step.kind.is_terminal or step.notice is not None:
            return None
        if is_blocked_notice(step.response.content or ""):
            return None
        action: GateAction | None = None
        continuable = step.kind in (StepKind.TRUNCATED, StepKind.PAUSED)
        recoverable = step.kind is StepKind.EMPTY or (
            step.kind is StepKind.TOOL_CALLS and malformed_tool_call
        )
        if continuable and self._continuations < self.max_continuations:
            self._continuations += 1
            action = GateAction.CONTINUE
        elif recoverable and self._recoveries < self.max_recoveries:
            self._recoveries += 1
            action = GateAction.RECOVER
        if action is not None:
            self.fired.append(GateFiring(action, step.kind, turn))
        return action
