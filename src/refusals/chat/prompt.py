"""The input line: prompt_toolkit with history, tab completion of slash commands, and
`default=` to reopen a prompt for rephrasing (`/edit`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.shortcuts import CompleteStyle
from prompt_toolkit.validation import ValidationError, Validator

from refusals.chat.commands import completions

PROMPT = "you> "

Approval = Literal["yes", "no", "always"]

_ANSWERS: dict[str, Approval] = {
    "y": "yes",
    "yes": "yes",
    "n": "no",
    "no": "no",
    "": "no",
    "a": "always",
    "always": "always",
}


class SlashCompleter(Completer):
    """Completes `/name` at the start of the line."""

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        typed = document.text_before_cursor
        for name in completions(typed):
            yield Completion(name, start_position=-len(typed))


class _ApprovalValidator(Validator):
    def validate(self, document: Document) -> None:
        if document.text.strip().lower() not in _ANSWERS:
            raise ValidationError(message="answer y (yes), n (no) or a (always this session)")


class Prompter:
    """Reads prompts and approvals from the terminal, inside the running event loop."""

    def __init__(self) -> None:
        self._prompts: PromptSession[str] = PromptSession(
            history=InMemoryHistory(),
            completer=SlashCompleter(),
            complete_style=CompleteStyle.READLINE_LIKE,
            complete_while_typing=False,
            reserve_space_for_menu=0,
        )
        self._approvals: PromptSession[str] = PromptSession()

    async def read(self, default: str = "") -> str | None:
        """The next line typed; "" after Ctrl-C (the line is dropped), None at Ctrl-D."""
        try:
            return await self._prompts.prompt_async(PROMPT, default=default)
        except KeyboardInterrupt:
            return ""
        except EOFError:
            return None

    async def approve(self, question: str) -> Approval | None:
        """The user's answer to a yes / no / always question; None after Ctrl-C or Ctrl-D."""
        try:
            answer = await self._approvals.prompt_async(
                f"{question} [y]es / [n]o / [a]lways this session: ",
                validator=_ApprovalValidator(),
                validate_while_typing=False,
                # The turn's own Ctrl-C handler stays in place (prompt_toolkit would
                # remove it on the way out); in the raw-mode prompt Ctrl-C is a key.
                handle_sigint=False,
            )
        except (KeyboardInterrupt, EOFError):
            return None
        return _ANSWERS[answer.strip().lower()]
