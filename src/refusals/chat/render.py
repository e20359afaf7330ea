"""Drawing the loop's events at a terminal, with rich, never trusting provider text.

Every piece of provider text (answers, tool arguments and results, model names, the
notice's explanation) goes through `refusals.sanitize.sanitize` and is printed as a
`rich.text.Text`, so escape sequences are neutralised and rich markup in it is shown as
typed, never interpreted. The console itself runs with markup, emoji and highlighting
off, so not even our own strings are read as markup.

Streamed text is shown plain as it arrives, in a live view of its last lines that never
grows past the screen (so it can always be erased whole); when the message ends, the
view gives way to the message rendered as markdown (code blocks, lists), links shown
as text (no OSC 8 hyperlinks whose target could differ from it). Whatever ends the
turn, what arrived stays on screen: a refusal, a filter or Ctrl-C renders the partial
text and marks it. With `live=False` (`--plain`) the text is printed as it comes and
left as it is, for terminals or screen readers that do not take redrawing well.
"""

from __future__ import annotations

import asyncio
import time
from typing import IO, Any

import orjson
from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment
from rich.text import Text

from refusals.loop.events import (
    Event,
    Item,
    ItemCompleted,
    ItemStarted,
    ItemUpdated,
    RefusalReported,
    ThreadCompleted,
    ThreadStarted,
    TurnFailed,
)
from refusals.loop.outcome import Outcome
from refusals.sanitize import sanitize

CUT_OFF_MARKER = (
    "[cut off: output stopped here; this partial text is not an answer and is not sent again]"
)
"""Shown right after partial output a refusal or filter stopped."""
CANCELLED_MARKER = "[cancelled: output stopped here; the turn is not kept in the conversation]"

LIVE_REFRESH_SECONDS = 0.05
"""At most this often the live view is redrawn (every delta would be wasted work)."""
TOOL_OUTPUT_LINES = 6
"""Lines of a tool's result shown (the model sees all of it)."""
TOOL_ARGUMENT_CHARS = 300

NOTICE_STYLES = {Outcome.REFUSED: "bold red", Outcome.CONTENT_FILTERED: "bold magenta"}
HINT_STYLE = "dim"
TOOL_STYLE = "cyan"
INFO_STYLE = "blue"
WARNING_STYLE = "yellow"
ERROR_STYLE = "red"


def make_console(file: IO[str] | None = None) -> Console:
    """A console that never reads markup, emoji codes or "highlights" what it prints."""
    return Console(file=file, markup=False, emoji=False, highlight=False)


class _Tail:
    """The last lines of a text that fit the screen (less one line for the cursor)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        room = max((options.height or console.height) - 1, 1)
        # Only the end can be shown: wrap no more of it than the screen could hold.
        text = Text(self.text[-room * max(options.max_width, 1) :])
        lines = console.render_lines(text, options.update(height=None), pad=False)
        for line in lines[-room:]:
            yield from line
            yield Segment.line()


class Renderer:
    """The chat's event sink: draws each event as it comes."""

    def __init__(self, console: Console, *, stream: bool = True, live: bool = True) -> None:
        self.console = console
        self.stream = stream
        self.live = live and console.is_terminal
        self._shown: dict[str, str] = {}
        self._raw: dict[str, str] = {}
        """Each streamed item's text as it arrived, before sanitising."""
        """Per streamed item, the sanitised text already shown."""
        self._mid_line = False
        self._view: Live | None = None
        self._view_item: str | None = None
        self._drawn_at = 0.0
        self._redraw: asyncio.TimerHandle | None = None

    # Lines of our own.

    def line(self, text: str, style: str | None = None) -> None:
        self.end_line()
        self.console.print(Text(text, style=style or ""), soft_wrap=True)

    def info(self, text: str) -> None:
        self.line(text, INFO_STYLE)

    def warning(self, text: str) -> None:
        self.line(text, WARNING_STYLE)

    def error(self, text: str) -> None:
        self.line(text, ERROR_STYLE)

    def hint(self, text: str) -> None:
        self.line(text, HINT_STYLE)

    def end_line(self) -> None:
        """Finish what streamed text left open: the live view, or a line."""
        if self._view is not None:
            self._close_view()
        if self._mid_line:
            self.console.print()
            self._mid_line = False

    def cancelled(self) -> None:
        """Mark where a cancelled turn's output stopped, if any was streaming."""
        if self._view is not None or self._mid_line:
            self.end_line()
            self.line(CANCELLED_MARKER, WARNING_STYLE)

    def _close_view(self) -> None:
        """Replace the live view by the message so far, rendered as markdown."""
        assert self._view is not None
        if self._redraw is not None:
            self._redraw.cancel()
            self._redraw = None
        self._view.stop()  # transient: the view is erased
        self._view = None
        text = self._shown.get(self._view_item or "", "")
        self._view_item = None
        if text.strip():
            self.console.print(Markdown(text, hyperlinks=False, justify="default"))

    # Events.

    def __call__(self, event: Event) -> None:
        if isinstance(event, ThreadStarted):
            model = sanitize(event.model, single_line=True)
            self.info(f"refusals chat: model {model}; /help lists commands, Ctrl-D leaves.")
        elif isinstance(event, ItemStarted):
            self._started(event.item)
        elif isinstance(event, ItemUpdated) and event.item.type == "agent_message":
            raw = self._raw.get(event.item.id, "") + event.delta
            self._raw[event.item.id] = raw
            self._stream_text(event.item.id, raw)
        elif isinstance(event, ItemCompleted):
            self._completed(event.item)
        elif isinstance(event, RefusalReported) and event.scope == "subagent":
            self.line("subagent stopped:", WARNING_STYLE)
            self._notice(event.notice, event.kind == "refusal")
        elif isinstance(event, TurnFailed):
            self._failed(event)
        elif isinstance(event, ThreadCompleted):
            calls = _count(event.num_turns, "model call")
            self.hint(
                f"refusals chat: session ended; {calls}, {_count(event.requests, 'request')}."
            )

    def _started(self, item: Item) -> None:
        call = tool_call_line(item)
        if call is not None:
            self.line(call, TOOL_STYLE)
        elif item.type == "subagent":
            task = sanitize(str(item.data.get("task", "")), max_chars=200, single_line=True)
            self.line(f"subagent: {task}", TOOL_STYLE)

    def _stream_text(self, item_id: str, raw: str) -> None:
        # Sanitise the whole text so far, not the delta: an escape sequence split across
        # two deltas is then still recognised and removed whole.
        safe = sanitize(raw)
        shown = self._shown.get(item_id, "")
        if len(safe) <= len(shown):
            return
        self._shown[item_id] = safe
        if not self.live:
            self.console.print(Text(safe[len(shown) :]), end="", soft_wrap=True)
            self._mid_line = not safe.endswith("\n")
            return
        if self._view is None or self._view_item != item_id:
            self.end_line()
            self._view = Live(
                _Tail(safe),
                console=self.console,
                auto_refresh=False,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
                vertical_overflow="crop",
            )
            self._view_item = item_id
            self._view.start(refresh=True)
            self._drawn_at = time.monotonic()
            return
        self._view.update(_Tail(safe))
        wait = self._drawn_at + LIVE_REFRESH_SECONDS - time.monotonic()
        if wait <= 0:
            self._draw()
        elif self._redraw is None:
            # Text that arrives in a burst is drawn once; a redraw is due soon after, so
            # the end of the burst does not wait for the next delta.
            try:
                self._redraw = asyncio.get_running_loop().call_later(wait, self._draw)
            except RuntimeError:  # no event loop (a renderer driven directly)
                self._draw()

    def _draw(self) -> None:
        self._redraw = None
        if self._view is not None:
            self._view.refresh()
            self._drawn_at = time.monotonic()

    def _completed(self, item: Item) -> None:
        data = item.data
        if item.type == "agent_message":
            self._message(item)
        elif item.type == "reasoning":
            text = sanitize(str(data.get("text", "")), max_chars=400)
            self.line(f"thinking: {text}", HINT_STYLE)
        elif item.type in ("command_execution", "file_change", "mcp_tool_call"):
            if item.type == "file_change":
                # A file change comes once, done (as in Codex): its call line comes here.
                self.line(tool_call_line(item) or "", TOOL_STYLE)
            output, failed = tool_output_text(item)
            self._tool_output(output, failed)
        elif item.type == "subagent":
            status = sanitize(str(data.get("status", "")), single_line=True)
            self.line(f"subagent: {status}", TOOL_STYLE)

    def _message(self, item: Item) -> None:
        text = str(item.data.get("text") or "")
        if item.id in self._shown or self.stream:
            # Streamed: the rest of the text (normally nothing), then the view closes.
            self._stream_text(item.id, text)
            self.end_line()
            # Shown: the transcript keeps the text; the renderer keeps no copy of it.
            self._shown.pop(item.id, None)
            self._raw.pop(item.id, None)
        elif text:
            self.console.print(Markdown(sanitize(text), hyperlinks=False, justify="default"))
        if item.data.get("cut_off"):
            self.line(CUT_OFF_MARKER, WARNING_STYLE)

    def _tool_output(self, output: str, is_error: bool) -> None:
        lines = sanitize(output).splitlines() or ["(no output)"]
        style = ERROR_STYLE if is_error else HINT_STYLE
        for text in lines[:TOOL_OUTPUT_LINES]:
            self.line("  " + sanitize(text, max_chars=200), style)
        if len(lines) > TOOL_OUTPUT_LINES:
            self.line(f"  ({len(lines) - TOOL_OUTPUT_LINES} more lines)", HINT_STYLE)

    def _failed(self, event: TurnFailed) -> None:
        if event.outcome in NOTICE_STYLES:
            self._notice(event.message, event.outcome is Outcome.REFUSED)
            self.hint("/edit rephrases the refused prompt; /model NAME switches models.")
        elif event.outcome is Outcome.CANCELLED:
            self.cancelled()
        else:
            self.error(f"error ({event.outcome.code}): {sanitize(event.message)}")
            self.hint("/retry sends the prompt again.")

    def _notice(self, notice: str, refused: bool) -> None:
        # The notice verbatim (sanitize changes nothing unless provider text in it
        # carries control characters), in a style of its own; never wrapped by us, so
        # the text on screen is the very string `refusals exec` prints.
        style = NOTICE_STYLES[Outcome.REFUSED if refused else Outcome.CONTENT_FILTERED]
        self.line(sanitize(notice), style)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def tool_call_line(item: Item) -> str | None:
    """`tool NAME ARGUMENTS` for a tool item as it starts, or None for other items."""
    data = item.data
    arguments: Any
    if item.type == "command_execution":
        name, arguments = "run_command", {"command": data.get("command", "")}
    elif item.type == "file_change":
        changes = data.get("changes") or [{}]
        name = str(data.get("tool", "write_file"))
        arguments = {"path": changes[0].get("path", "")}
    elif item.type == "mcp_tool_call":
        name, arguments = str(data.get("tool", "")), data.get("arguments")
    else:
        return None
    text = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
    shown = sanitize(text, max_chars=TOOL_ARGUMENT_CHARS, single_line=True)
    return f"tool {sanitize(name, single_line=True)} {shown}"


def tool_output_text(item: Item) -> tuple[str, bool]:
    """What a finished tool item gave back, and whether it failed."""
    data = item.data
    failed = data.get("status") in ("failed", "declined")
    if item.type == "command_execution":
        output = str(data.get("aggregated_output", ""))
        code = data.get("exit_code")
        return (f"exit status {code}\n{output}" if code is not None else output), (
            code is None and failed
        )
    if item.type == "file_change":
        return str(data.get("output", "")), failed
    error = data.get("error")
    if isinstance(error, dict):
        return str(error.get("message", "")), True
    result = data.get("result")
    parts = result.get("content") if isinstance(result, dict) else None
    text = "".join(str(p.get("text", "")) for p in parts or () if isinstance(p, dict))
    return text, False
