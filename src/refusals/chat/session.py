"""One chat session: the agent loop, the turn in flight, and the slash commands.

The chat runs on the loop `refusals exec` runs on, so a refusal ends a turn the same
way: the loop withdraws the refused exchange from every later request and reports the
notice `refusals.notice` built, which the renderer prints unchanged. Nothing here
continues a refused turn on its own: the user decides, with `/edit` (rephrase) or
`/model NAME` (another model), each one command away.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import orjson

from refusals.chat import commands
from refusals.chat.prompt import Prompter
from refusals.chat.render import Renderer
from refusals.loop.agent import Agent, TurnResult
from refusals.loop.events import Event, JsonObject, ThreadCompleted
from refusals.loop.history import Entry, Transcript
from refusals.loop.outcome import Outcome
from refusals.loop.workspace import write_atomically
from refusals.model import LLMResponse
from refusals.sanitize import sanitize
from refusals.transport.base import ModelClient

ClientFactory = Callable[[str], ModelClient]
"""Makes the client for a `PROVIDER:MODEL` string; raises `ValueError` (one line) if it
cannot."""

BLOCKED = frozenset({Outcome.REFUSED, Outcome.CONTENT_FILTERED})

RETRY_REFUSED = (
    "/retry: the last turn was {what}; sending the same prompt again would be {what} "
    "again, so it is not resent. /edit rephrases it; /model NAME switches models."
)

_WHAT = {Outcome.REFUSED: "refused", Outcome.CONTENT_FILTERED: "blocked by a content filter"}
_TURN_LABELS = {
    Outcome.REFUSED: "refused, not sent again",
    Outcome.CONTENT_FILTERED: "filtered, not sent again",
    Outcome.CANCELLED: "cancelled, not sent again",
    Outcome.ERROR: "failed, not sent again",
    Outcome.TURN_LIMIT: "stopped at the turn limit, not sent again",
}
_ROLES = {"user": "you", "assistant": "model", "tool": "tool", "system": "system"}


class ChatSession:
    """The state of one chat, and what each line the user types does to it."""

    def __init__(
        self,
        model: str,
        client: ModelClient,
        make_client: ClientFactory,
        *,
        renderer: Renderer,
        prompter: Prompter,
        agent: Callable[[ModelClient], Agent],
        fallback_scope: Literal["turn", "session"] = "turn",
    ) -> None:
        self.model = model
        self.make_client = make_client
        self.renderer = renderer
        self.prompter = prompter
        self.fallback_scope = fallback_scope
        self.events: list[JsonObject] = []
        """Every event of the session, as `refusals exec --json` writes it."""
        self.agent = agent(client)
        self.agent.emit = self._emit
        self.last_prompt: str | None = None
        self.last_outcome: Outcome | None = None
        self.refused_prompt: str | None = None
        """The prompt of the last refused or filtered turn, for `/edit`."""
        self.turn_outcomes: dict[int, Outcome] = {}
        self._next_default = ""

    def _emit(self, event: Event) -> None:
        # Serialised now: the loop keeps updating a streamed item in place.
        self.events.append(event.to_json())
        self.renderer(event)

    # The session.

    async def run(self) -> None:
        """Read and act on lines until /quit or Ctrl-D."""
        self.agent.start()
        try:
            while True:
                default, self._next_default = self._next_default, ""
                line = await self.prompter.read(default)
                if line is None:
                    break
                if not await self.handle(line):
                    break
        finally:
            self._emit(self.completion())
            close = getattr(self.agent.client, "aclose", None)
            if close is not None:
                await close()

    async def handle(self, line: str) -> bool:
        """Act on one line; False when the session should end."""
        parsed = commands.parse(line)
        if parsed is None:
            text = commands.prompt_text(line)
            if text:
                await self.send(text)
            return True
        return await self.command(parsed)

    async def send(self, prompt: str) -> TurnResult | None:
        """Run one turn; Ctrl-C cancels it (None) and the session goes on."""
        self.last_prompt = prompt
        before = len(self.agent.transcript.entries)
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(self.agent.run_turn(prompt))
        loop.add_signal_handler(signal.SIGINT, task.cancel)
        try:
            await asyncio.wait({task})
        finally:
            loop.remove_signal_handler(signal.SIGINT)
        added = self.agent.transcript.entries[before:]
        turn = added[0].turn if added else None
        if task.cancelled():
            self._ended(turn, Outcome.CANCELLED)
            self.renderer.warning(
                "Turn cancelled (Ctrl-C); it is not kept in the conversation. "
                "/retry sends it again."
            )
            return None
        result = task.result()
        self._ended(turn, result.outcome)
        if result.outcome in BLOCKED:
            self.refused_prompt = prompt
        elif result.outcome is Outcome.SUCCESS and result.response is not None:
            self._fallback_line(result.response)
        return result

    def _ended(self, turn: int | None, outcome: Outcome) -> None:
        self.last_outcome = outcome
        if turn is not None:
            self.turn_outcomes[turn] = outcome
        self.renderer.end_line()

    def _fallback_line(self, response: LLMResponse) -> None:
        if not response.served_by_fallback:
            return
        answered = sanitize(response.fallback_model or response.model or "?", single_line=True)
        declined = ", ".join(sanitize(m, single_line=True) for m in response.declined_models)
        after = f" after {declined} declined" if declined else ""
        if self.fallback_scope == "session":
            lasts = f"the rest of the session (/model {self.model} goes back)"
        else:
            lasts = f"this turn only (the next turn goes to {self.model})"
        self.renderer.info(
            f"Answered by the fallback model {answered}{after}; the switch lasts for {lasts}."
        )

    def completion(self) -> ThreadCompleted:
        """The session's `thread.completed` as of now (the last turn's outcome; every
        model `/model` used counts in its requests)."""
        return self.agent.summary(self.last_outcome or Outcome.SUCCESS)

    # Commands.

    async def command(self, parsed: commands.Parsed) -> bool:
        name, argument = parsed.name, parsed.argument
        if name not in commands.BY_NAME:
            self.renderer.error(
                f"unknown command /{sanitize(name, max_chars=40, single_line=True)}; "
                "/help lists the commands (//TEXT sends a prompt starting with '/')"
            )
        elif name == "quit":
            return False
        elif name == "help":
            for text in commands.help_lines():
                self.renderer.line(text)
        elif name == "model":
            await self.switch_model(argument)
        elif name == "edit":
            self.edit()
        elif name == "retry":
            await self.retry()
        elif name == "history":
            self.history()
        elif name == "clear":
            self.clear()
        elif name == "save":
            self.save(argument)
        return True

    async def switch_model(self, name: str) -> None:
        if not name:
            self.renderer.info(f"model {self.model}; /model PROVIDER:MODEL switches")
            return
        try:
            client = self.make_client(name)
        except ValueError as exc:
            self.renderer.error(f"/model: {sanitize(str(exc), single_line=True)}")
            return
        old = self.agent.switch_client(client)
        close = getattr(old, "aclose", None)
        if close is not None:
            await close()
        self.model = name
        self.renderer.info(
            f"model {sanitize(name, single_line=True)} from the next turn on; the "
            "conversation goes with it (refused exchanges excluded)."
        )

    def edit(self) -> None:
        prompt = self.refused_prompt or self.last_prompt
        if prompt is None:
            self.renderer.warning("/edit: there is no prompt to edit yet")
            return
        self._next_default = prompt

    async def retry(self) -> None:
        if self.last_prompt is None:
            self.renderer.warning("/retry: there is no prompt to send again yet")
            return
        if self.last_outcome in BLOCKED:
            self.renderer.warning(RETRY_REFUSED.format(what=_WHAT[self.last_outcome]))
            return
        if self.last_outcome is Outcome.SUCCESS:
            # A new answer replaces the last one: the model must not see it twice.
            entries = self.agent.transcript.entries
            if entries:
                self.agent.transcript.withdraw_turn(entries[-1].turn)
        await self.send(self.last_prompt)

    def history(self) -> None:
        entries = self.agent.transcript.entries
        if not entries:
            self.renderer.info("the conversation is empty")
            return
        for entry in entries:
            self.renderer.line(self._history_line(entry), "dim" if entry.withdrawn else None)

    def _history_line(self, entry: Entry) -> str:
        message = entry.message
        role = _ROLES.get(message.role, message.role)
        text = message.content or ""
        if message.tool_calls:
            calls = ", ".join(call.name for call in message.tool_calls)
            text = f"{text} [calls {calls}]".strip()
        shown = sanitize(text, max_chars=160, single_line=True)
        marks = []
        if entry.cut_off:
            marks.append("cut off")
        if entry.withdrawn:
            outcome = self.turn_outcomes.get(entry.turn)
            marks.append(_TURN_LABELS.get(outcome, "not sent again") if outcome else "withdrawn")
        suffix = f"  ({'; '.join(marks)})" if marks else ""
        return f"{role}: {shown}{suffix}"

    def clear(self) -> None:
        self.agent.transcript = Transcript()
        self.refused_prompt = None
        self.last_prompt = None
        self.last_outcome = None
        self.renderer.info("conversation cleared: the next turn starts afresh")

    def save(self, argument: str) -> None:
        if not argument:
            self.renderer.error("/save: give a file name, e.g. /save session.jsonl")
            return
        path = Path(argument).expanduser()
        events = [*self.events, self.completion().to_json()]
        data = b"".join(orjson.dumps(event) + b"\n" for event in events)
        try:
            write_atomically(path, data)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            self.renderer.error(f"/save: cannot write {sanitize(argument)}: {reason}")
            return
        self.renderer.info(f"saved {len(events)} events to {sanitize(str(path))}")
