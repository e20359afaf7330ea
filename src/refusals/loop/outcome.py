"""How a run ends, and the exit code each ending gives: the one table of exit codes.

Scripts read the exit code before anything else, so a refusal and a content-filter stop
have codes of their own and are never reported as a success (peers exit 0 after a
refused turn, and scripts then take the notice for an answer).
"""

from __future__ import annotations

from enum import Enum

EXIT_SUCCESS = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
"""Bad command-line input: not an outcome of a run, since no run started."""
EXIT_REFUSED = 3
EXIT_CONTENT_FILTERED = 4
EXIT_TIMED_OUT = 124
"""As `timeout(1)` reports a command that ran over its limit."""
EXIT_CANCELLED = 130
"""128 + SIGINT, as shells report a run ended by Ctrl-C."""


class Outcome(Enum):
    """How a run (or a subagent) ended: a code, what it means, and its exit code."""

    SUCCESS = ("success", "the task finished with an answer", EXIT_SUCCESS)
    REFUSED = ("refused", "the model declined the request", EXIT_REFUSED)
    CONTENT_FILTERED = (
        "content_filtered",
        "a provider's content filter blocked the request or the answer",
        EXIT_CONTENT_FILTERED,
    )
    TURN_LIMIT = (
        "turn_limit",
        "the task used every model call --max-turns allows without finishing",
        EXIT_ERROR,
    )
    ERROR = ("error", "the provider call or the run failed", EXIT_ERROR)
    TIMED_OUT = (
        "timed_out",
        "a provider call took longer than --timeout allows",
        EXIT_TIMED_OUT,
    )
    CANCELLED = ("cancelled", "the run was interrupted", EXIT_CANCELLED)

    def __init__(self, code: str, description: str, exit_code: int) -> None:
        self.code = code
        self.description = description
        self.exit_code = exit_code

    @property
    def is_error(self) -> bool:
        return self is not Outcome.SUCCESS

    @property
    def subtype(self) -> str:
        """The `subtype` of `thread.completed`, in the style Claude Code's result uses.

        Only a finished answer is `success`: a refusal never is, unlike Claude Code.
        """
        return _SUBTYPES[self]


_SUBTYPES = {
    Outcome.SUCCESS: "success",
    Outcome.REFUSED: "error_refusal",
    Outcome.CONTENT_FILTERED: "error_content_filter",
    Outcome.TURN_LIMIT: "error_max_turns",
    Outcome.ERROR: "error_during_execution",
    Outcome.TIMED_OUT: "error_timeout",
    Outcome.CANCELLED: "error_cancelled",
}
