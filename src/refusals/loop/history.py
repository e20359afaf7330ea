"""The conversation a loop keeps, and what of it a later request may carry.

A refused or filtered exchange is terminal: sending it again is refused again, and one
refused prompt left in the history poisons every later request of the session. So when
a turn ends in a refusal or a filter, everything that turn added (the refused user
message, tool calls and results, and any partial answer) stays in the transcript marked
`withdrawn` and is left out of every later request. A partial answer is kept only as a
marked, cut-off fragment.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson

from refusals.model import LLMResponse, decode_detail, detail_type
from refusals.request import JsonObject, Message


@dataclass(slots=True)
class Entry:
    """One message of the transcript, the item that showed it, and whether it may be sent."""

    message: Message
    turn: int
    item_id: str | None = None
    withdrawn: bool = False
    """Never sent again: part of a refused, filtered, failed or cancelled turn."""
    refused: bool = False
    """Part of a refused or content-filtered exchange (withdrawn too)."""
    cut_off: bool = False
    """Partial output a refusal, filter or error interrupted: not a finished answer."""


@dataclass(slots=True)
class Transcript:
    """Every message of a conversation, in order, with what was withdrawn."""

    entries: list[Entry] = field(default_factory=list)

    def add(self, message: Message, *, turn: int, item_id: str | None = None) -> Entry:
        entry = Entry(message, turn, item_id)
        self.entries.append(entry)
        return entry

    def add_fragment(self, text: str, *, turn: int, item_id: str | None) -> Entry:
        """Keep partial output a refusal or filter cut off, marked, out of every request."""
        entry = Entry(
            Message("assistant", text), turn, item_id, withdrawn=True, refused=True, cut_off=True
        )
        self.entries.append(entry)
        return entry

    def withdraw_turn(self, turn: int, *, refused: bool = False) -> list[Entry]:
        """Mark everything turn `turn` added as withdrawn (and `refused`); the entries."""
        withdrawn = [entry for entry in self.entries if entry.turn == turn]
        for entry in withdrawn:
            entry.withdrawn = True
            entry.refused = entry.refused or refused
        return withdrawn

    def messages(self) -> list[Message]:
        """What the next request may carry: every message not withdrawn."""
        return [entry.message for entry in self.entries if not entry.withdrawn]

    @property
    def withdrawn(self) -> list[Entry]:
        return [entry for entry in self.entries if entry.withdrawn]


def assistant_message(response: LLMResponse, *, server_fallback: bool = False) -> Message:
    """The assistant turn to send back after `response` (answer text, tool calls).

    With Anthropic's server-side fallback (`server_fallback`), the response's `fallback`
    blocks go back in place, before the fallback model's text and tool calls, as the
    API expects to see where the fallback model took over.
    """
    message = Message("assistant", response.content or "", tool_calls=list(response.tool_calls))
    if not server_fallback or response.provider != "anthropic":
        return message
    blocks: list[JsonObject] = []
    for detail in response.reasoning_details or ():
        value = decode_detail(detail)
        if detail_type(value) == "fallback" and isinstance(value, dict):
            blocks.append(dict(value))
    if not blocks:
        return message
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call.arguments)}
        )
    message.blocks = blocks
    return message


def _input(arguments: str) -> JsonObject:
    try:
        value = orjson.loads(arguments or "{}")
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
