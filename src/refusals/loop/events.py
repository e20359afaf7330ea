"""What the loop reports as it runs: typed events that every surface renders.

The loop emits these and renders nothing: `refusals exec --json` writes each one's
`to_json()` as a JSONL line (the envelope Codex and vtcode parsers read:
`thread.started`, `turn.started`, `item.*`, `turn.completed`, `turn.failed`,
`thread.completed`, plus one typed `refusal` event), and an interactive surface draws
them. `docs/exec-events.md` documents every field; its JSON Schema is
`docs/exec-events.schema.json`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from refusals.loop.outcome import Outcome
from refusals.model import Usage

JsonObject = dict[str, Any]

ItemType = Literal[
    "agent_message", "reasoning", "command_execution", "file_change", "mcp_tool_call", "subagent"
]
ToolStatus = Literal["in_progress", "completed", "failed"]

TOOL_SERVER = "refusals"
"""The `server` of an `mcp_tool_call` item for the workspace's own tools."""
_FILE_TOOLS = frozenset({"write_file", "edit_file"})
Scope = Literal["session", "subagent"]


def usage_json(usage: Usage) -> JsonObject:
    """Token counts under Codex's names (`cache_write_input_tokens` among them), with
    the cache writes under Claude Code's name too."""
    return {
        "input_tokens": usage.input_tokens,
        "cached_input_tokens": usage.cache_read_tokens,
        "output_tokens": usage.output_tokens,
        "cache_write_input_tokens": usage.cache_creation_tokens,
        "cache_creation_input_tokens": usage.cache_creation_tokens,
        # Providers count reasoning inside output tokens, and not all of them apart.
        "reasoning_output_tokens": 0,
    }


@dataclass(frozen=True, slots=True)
class Price:
    """What a model's tokens cost, in US dollars per million."""

    input: float
    output: float
    cache_read: float | None = None
    """Cached input tokens read (default: the input price)."""
    cache_write: float | None = None
    """Input tokens written to the cache (default: the input price)."""

    def cost(self, usage: Usage) -> float:
        """The dollars `usage` cost. Cached reads and cache writes are priced on their own
        (providers count them beside `input_tokens`, except OpenAI-style counts that
        include cached tokens in the input: priced as input there)."""
        read = self.cache_read if self.cache_read is not None else self.input
        write = self.cache_write if self.cache_write is not None else self.input
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * read
            + usage.cache_creation_tokens * write
        ) / 1_000_000


def add_usage(total: Usage, more: Usage | None) -> None:
    """Add `more`'s token counts into `total`."""
    if more is None:
        return
    total.input_tokens += more.input_tokens
    total.output_tokens += more.output_tokens
    total.cache_read_tokens += more.cache_read_tokens
    total.cache_creation_tokens += more.cache_creation_tokens


@dataclass(slots=True)
class Item:
    """One thing a turn produced: `id` is unique in the thread, `data` its typed fields.

    - `agent_message`: `text`; a fragment a refusal or filter cut off also has
      `cut_off: true` and `retracted: true` (it is not an answer and is never resent).
    - `reasoning`: `text`.
    - A tool call, as Codex types it (see `tool_item`): `command_execution`
      (`run_command`), `file_change` (`write_file`, `edit_file`) or `mcp_tool_call`
      (every other tool), each with `call_id` and `status`.
    - `subagent`: `call_id`, `task`, `tools`, then `status`, `text`, and on a refusal
      or filter `kind`, `category`, `notice`.
    """

    id: str
    type: ItemType
    data: JsonObject = field(default_factory=dict)

    def to_json(self) -> JsonObject:
        return {"id": self.id, "type": self.type, **self.data}


def tool_item(call_id: str, name: str, arguments: object) -> tuple[ItemType, JsonObject]:
    """The item type and in-progress fields of a tool call, in Codex's item types.

    `arguments` are the call's parsed arguments (a dict), or the text the model wrote
    when it is no JSON object.
    """
    args = arguments if isinstance(arguments, dict) else {}
    if name == "run_command":
        # `exit_code` comes when the command exits (absent while it runs, as in Codex).
        return "command_execution", {
            "call_id": call_id,
            "command": str(args.get("command", "")),
            "aggregated_output": "",
            "status": "in_progress",
        }
    if name in _FILE_TOOLS:
        kind = "update" if name == "edit_file" else "add"
        return "file_change", {
            "call_id": call_id,
            "tool": name,
            "changes": [{"path": str(args.get("path", "")), "kind": kind}],
            "status": "in_progress",
        }
    return "mcp_tool_call", {
        "call_id": call_id,
        "server": TOOL_SERVER,
        "tool": name,
        "arguments": arguments,
        "status": "in_progress",
    }


def complete_tool_item(
    item: Item, output: str, *, is_error: bool, declined: bool, data: JsonObject | None
) -> None:
    """Fill in a tool item (from `tool_item`) with the call's result."""
    fields = item.data
    # Codex has no "declined" status: a call the user declined failed, and says why.
    status: ToolStatus = "failed" if is_error else "completed"
    if declined:
        fields["declined"] = True
    extra = data or {}
    if item.type == "command_execution":
        exit_code = extra.get("exit_code")
        if isinstance(exit_code, int) and not is_error:
            fields["exit_code"] = exit_code
            fields["aggregated_output"] = str(extra.get("output", output))
            status = "completed" if exit_code == 0 else "failed"
        else:
            fields["aggregated_output"] = output
    elif item.type == "file_change":
        kind = extra.get("kind")
        if kind in ("add", "update") and fields.get("changes"):
            fields["changes"][0]["kind"] = kind
        fields["output"] = output  # the tool's own words ("wrote 6 characters to a.txt")
    elif is_error:
        fields["error"] = {"message": output}
    else:
        fields["result"] = {
            "content": [{"type": "text", "text": output}],
            "structured_content": None,
        }
    fields["status"] = status


class Event:
    """Base of every loop event; `type` is its JSONL `type`."""

    type: ClassVar[str]

    def to_json(self) -> JsonObject:
        raise NotImplementedError


EventSink = Callable[[Event], None]
"""Where a loop sends its events (a surface's renderer; the JSONL writer in `exec`)."""


@dataclass(slots=True)
class ThreadStarted(Event):
    type: ClassVar[str] = "thread.started"
    thread_id: str
    model: str

    def to_json(self) -> JsonObject:
        return {"type": self.type, "thread_id": self.thread_id, "model": self.model}


@dataclass(slots=True)
class TurnStarted(Event):
    """A user turn begins; `prompt_item_id` names its prompt (what a refusal points at)."""

    type: ClassVar[str] = "turn.started"
    turn_id: str
    prompt_item_id: str

    def to_json(self) -> JsonObject:
        return {"type": self.type, "turn_id": self.turn_id, "prompt_item_id": self.prompt_item_id}


@dataclass(slots=True)
class ItemStarted(Event):
    type: ClassVar[str] = "item.started"
    item: Item

    def to_json(self) -> JsonObject:
        return {"type": self.type, "item": self.item.to_json()}


@dataclass(slots=True)
class ItemUpdated(Event):
    """Streamed text added to an item: `delta` only (the whole text comes once, with
    `item.completed`), so a long answer costs its length, not its length squared."""

    type: ClassVar[str] = "item.updated"
    item: Item
    """The item's id and type (its data is not repeated)."""
    delta: str = ""

    def to_json(self) -> JsonObject:
        return {
            "type": self.type,
            "item": {"id": self.item.id, "type": self.item.type, "delta": self.delta},
        }


@dataclass(slots=True)
class ItemCompleted(Event):
    type: ClassVar[str] = "item.completed"
    item: Item

    def to_json(self) -> JsonObject:
        return {"type": self.type, "item": self.item.to_json()}


@dataclass(slots=True)
class TurnCompleted(Event):
    type: ClassVar[str] = "turn.completed"
    usage: Usage

    def to_json(self) -> JsonObject:
        return {"type": self.type, "usage": usage_json(self.usage)}


@dataclass(slots=True)
class RefusalReported(Event):
    """A refusal or content-filter stop, with every fact the response gave.

    It comes before the `turn.failed` of its turn (scope `session`), or, for a refused
    subagent, before the parent's `subagent` item completes (scope `subagent`); its
    `notice` is the string `refusals.notice` built, unchanged.
    """

    type: ClassVar[str] = "refusal"
    kind: Literal["refusal", "content_filter"]
    provider: str | None
    original_model: str | None
    fallback_model: str | None
    request_id: str | None
    raw_stop_reason: str | None
    category: str | None
    explanation: str | None
    recommended_model: str | None
    served_by_fallback: bool
    scope: Scope
    refused_item_id: str
    retracted_item_ids: list[str]
    notice: str
    categories: list[str] = field(default_factory=list)

    def to_json(self) -> JsonObject:
        return {
            "type": self.type,
            "kind": self.kind,
            "provider": self.provider,
            "original_model": self.original_model,
            "fallback_model": self.fallback_model,
            "request_id": self.request_id,
            "raw_stop_reason": self.raw_stop_reason,
            "category": self.category,
            "categories": list(self.categories),
            "explanation": self.explanation,
            "recommended_model": self.recommended_model,
            "served_by_fallback": self.served_by_fallback,
            "scope": self.scope,
            "refused_item_id": self.refused_item_id,
            "retracted_item_ids": list(self.retracted_item_ids),
            "notice": self.notice,
        }


FallbackOutcome = Literal["answered", "declined", "failed", "no_fallback", "returned"]


@dataclass(slots=True)
class FallbackReported(Event):
    """One fallback hop, or a decline with no fallback to go to: a superset of Claude
    Code's `model_refusal_fallback` and `model_refusal_no_fallback` messages.

    `outcome`: the fallback `answered`, also `declined`, could not be asked (`failed`,
    with `error`), there was `no_fallback` (none configured, none left, or the policy
    said stop), or a turn-scoped chain `returned` to its primary at a new turn
    (`direction` `revert`; a hop is `retry`, as Claude Code names them). `source` says
    where the hop ran: the `client` chain or the provider's `server` (Anthropic).
    """

    type: ClassVar[str] = "fallback"
    outcome: FallbackOutcome
    direction: Literal["retry", "revert"] | None
    """None for `no_fallback`: nothing went anywhere."""
    source: Literal["client", "server"] | None
    original_model: str | None
    fallback_model: str | None
    trigger: Literal["refusal", "content_filter"] | None
    category: str | None
    fallback_scope: Literal["turn", "session"] | None
    scope: Scope
    error: str | None = None
    request_id: str | None = None
    """The declined response's request id."""
    explanation: str | None = None
    """The provider's explanation of the decline (display only)."""
    refused_item_id: str | None = None
    retracted_item_ids: list[str] = field(default_factory=list)
    """Items this hop withdrew: the declined model's partial output."""

    @property
    def content(self) -> str:
        """The event in one sentence, as human mode prints it (provider text unsanitised)."""
        where = " (subagent)" if self.scope == "subagent" else ""
        original, fallback = self.original_model or "?", self.fallback_model or "?"
        if self.outcome == "returned":
            return f"fallback{where}: back to {original} for this turn (from {fallback})"
        why = "declined" if self.trigger == "refusal" else "was filtered"
        if self.category:
            why += f" (category: {self.category})"
        if self.outcome == "no_fallback":
            return f"fallback{where}: {original} {why}; no fallback model to ask"
        how = {
            "answered": f"{fallback} answered",
            "declined": f"{fallback} declined too",
            "failed": f"{fallback} could not be asked ({self.error or 'the request failed'})",
        }[self.outcome]
        side = " (provider-side fallback)" if self.source == "server" else ""
        return f"fallback{where}: {original} {why}; {how}{side}"

    def to_json(self) -> JsonObject:
        return {
            "type": self.type,
            "outcome": self.outcome,
            "direction": self.direction,
            "source": self.source,
            "original_model": self.original_model,
            "fallback_model": self.fallback_model,
            "trigger": self.trigger,
            "category": self.category,
            "explanation": self.explanation,
            "request_id": self.request_id,
            "fallback_scope": self.fallback_scope,
            "scope": self.scope,
            "refused_item_id": self.refused_item_id,
            "retracted_item_ids": list(self.retracted_item_ids),
            "error": self.error,
            "content": self.content,
        }


@dataclass(slots=True)
class TurnFailed(Event):
    """The turn ended without an answer; on a refusal or filter `message` is the notice."""

    type: ClassVar[str] = "turn.failed"
    message: str
    outcome: Outcome

    def to_json(self) -> JsonObject:
        return {
            "type": self.type,
            "error": {"message": self.message},
            "outcome_code": self.outcome.code,
        }


@dataclass(slots=True)
class ThreadCompleted(Event):
    """The run ended; the last event of every run, cancelled runs included."""

    type: ClassVar[str] = "thread.completed"
    outcome: Outcome
    stop_reason: str | None
    usage: Usage
    num_turns: int
    requests: int
    result: str | None = None
    """The final answer on success (what stdout gets in human mode), else None."""
    served_by: str | None = None
    """The `PROVIDER:MODEL` that gave the last response (a fallback, if one answered)."""
    served_by_fallback: bool = False
    duration_ms: int = 0
    duration_api_ms: int = 0
    """Of `duration_ms`, the time spent in model calls."""
    model_usage: dict[str, Usage] = field(default_factory=dict)
    """Tokens per model that served a call (subagents included)."""
    total_cost_usd: float | None = None
    """What the run's tokens cost, when a price table names every model that spent any."""
    model_cost_usd: dict[str, float] = field(default_factory=dict)
    """What each priced model's tokens cost (Claude Code's `modelUsage[].costUSD`)."""

    def to_json(self) -> JsonObject:
        return {
            "type": self.type,
            "subtype": self.outcome.subtype,
            "is_error": self.outcome.is_error,
            "outcome_code": self.outcome.code,
            "exit_code": self.outcome.exit_code,
            "description": self.outcome.description,
            "result": self.result,
            "stop_reason": self.stop_reason,
            "served_by": self.served_by,
            "served_by_fallback": self.served_by_fallback,
            "usage": usage_json(self.usage),
            "model_usage": {
                name: {**usage_json(u), "cost_usd": self.model_cost_usd.get(name)}
                for name, u in self.model_usage.items()
            },
            "num_turns": self.num_turns,
            "requests": self.requests,
            "duration_ms": self.duration_ms,
            "duration_api_ms": self.duration_api_ms,
            "total_cost_usd": self.total_cost_usd,
        }


class IdSource:
    """Item ids unique in one thread (`item_0`, `item_1`, …), shared with its subagents."""

    def __init__(self, prefix: str = "item") -> None:
        self._prefix = prefix
        self._next = 0

    def __call__(self) -> str:
        value = f"{self._prefix}_{self._next}"
        self._next += 1
        return value
