"""The renderer on its own, on a console writing to memory: what it prints for events."""

from __future__ import annotations

import io

from rich.console import Console

from refusals.chat.render import CUT_OFF_MARKER, Renderer
from refusals.loop.events import Item, ItemCompleted, ItemStarted, ItemUpdated, TurnFailed
from refusals.loop.outcome import Outcome

NOTICE = (
    "The model declined this request (category: cyber): a long explanation that is much "
    "wider than the forty columns of this console. The request was not retried; rephrase "
    "it or switch models."
)


def _renderer(width: int = 40) -> tuple[Renderer, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, width=width, markup=False, emoji=False, highlight=False)
    return Renderer(console), out


def _stream(renderer: Renderer, pieces: list[str], **flags: object) -> None:
    item = Item("item_1", "agent_message", {"text": ""})
    renderer(ItemStarted(item))
    text = ""
    for piece in pieces:
        text += piece
        renderer(ItemUpdated(Item("item_1", "agent_message"), piece))
    renderer(ItemCompleted(Item("item_1", "agent_message", {"text": text, **flags})))


def test_an_escape_sequence_split_across_deltas_is_removed_whole() -> None:
    renderer, out = _renderer()
    _stream(renderer, ["before \x1b", "]52;c;ZXZp", "bA==\x07 after", " \x1b[", "2J end"])
    assert out.getvalue() == "before  after  end\n"


def test_rich_markup_in_provider_text_is_printed_as_typed() -> None:
    renderer, out = _renderer()
    _stream(renderer, ["[bold]x[/bold] ", ":smile:"])
    assert out.getvalue() == "[bold]x[/bold] :smile:\n"


def test_cut_off_partial_text_is_followed_by_the_marker() -> None:
    renderer, out = _renderer(width=200)
    _stream(renderer, ["Here is ", "part"], cut_off=True, retracted=True)
    assert out.getvalue() == f"Here is part\n{CUT_OFF_MARKER}\n"


def test_the_notice_is_printed_whole_on_one_line_however_narrow_the_console() -> None:
    renderer, out = _renderer(width=40)
    renderer(TurnFailed(NOTICE, Outcome.REFUSED))
    assert out.getvalue().splitlines()[0] == NOTICE


def test_a_write_that_replaced_a_file_is_still_shown_as_write_file() -> None:
    from refusals.chat.render import tool_call_line  # noqa: PLC0415
    from refusals.loop.events import Item, complete_tool_item, tool_item  # noqa: PLC0415

    kind, data = tool_item("call_1", "write_file", {"path": "old.txt", "content": "x"})
    item = Item("item_1", kind, data)
    complete_tool_item(
        item,
        "wrote 1 characters to old.txt",
        is_error=False,
        declined=False,
        data={"path": "old.txt", "kind": "update"},
    )
    assert item.data["changes"] == [{"path": "old.txt", "kind": "update"}]
    assert tool_call_line(item) == 'tool write_file {"path":"old.txt"}'
