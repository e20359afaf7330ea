"""The scenario catalogue: what the mock answers, as plans that no wire format owns.

A scenario turns the provider-neutral view of a request (`Conversation`) into a `Plan`:
the text to say, a tool call to make, the refusal or filter facts to report, a fault to
raise, how to break a stream. Each wire writer (`refusals.mock.wire`) renders a plan in
its own provider's shape, so a scenario is written once here and served everywhere.

The names are a contract: tests, users' scenario files and the `mock-NAME` model names
use them (`refusals mock-server --list` prints `SCENARIOS`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

MAGIC_REFUSAL_STRING = (
    "ANTHROPIC_MAGIC_STRING_TRIGGER_REFUSAL_"
    "1FAEFB6177B4672DEE07F9D3AFC62588CCD2631EDCF22E8CCC1FB35B501C9C86"
)
"""Anthropic's documented test string: a user message holding it is refused, on every wire."""

SCENARIOS: dict[str, str] = {
    "answer": "Answer 'Mock answer: ' and the first 80 characters of the last user message.",
    "tool-then-answer": "Call the first tool offered; after its result, answer with that result.",
    "subagent": "Call spawn_agent with a task; after its result, answer with its report.",
    "subagent-refusal": "Like subagent, but the task holds the refusal test string.",
    "refusal": "Refuse before any output (Anthropic stop_details with category and explanation).",
    "refusal-mid-stream": "Send partial text, then refuse: the text is cut off.",
    "refusal-recommended": "Refuse with recommended_model, a fallback credit token, prefill claim.",
    "fallback-served": "With server-side fallbacks requested: a fallback block, then its answer.",
    "fallback-declined": "With server-side fallbacks requested: the fallback model declines too.",
    "filter-output": "The provider's output filter stops the answer after partial text.",
    "filter-prompt": "The provider's input filter blocks the prompt (each provider its own way).",
    "length": "Stop at the token limit (max_tokens, length, MAX_TOKENS...).",
    "pause-turn": "Anthropic pause_turn: a long-running turn paused for the client to continue.",
    "rate-limited": "429 with retry-after the first N times per model (mock-rate-limited-3: N=3).",
    "overloaded": "Overloaded: Anthropic 529 overloaded_error, others 503.",
    "server-error": "HTTP 500 in the provider's error shape.",
    "reset-mid-stream": "Close the connection after some stream events.",
    "truncated-stream": "End the stream cleanly but before its terminal event.",
    "slow": "Slow first byte (1 s) and slow events (0.2 s each), about two seconds in all.",
}
"""Every scenario name, with the one line `refusals mock-server --list` prints."""

DEFAULT_RATE_LIMIT_TIMES = 2
"""How many times `rate-limited` answers 429 for a model before it answers normally."""

FALLBACK_MODEL = "mock-fallback"
"""The model a refusal recommends, and the fallback that `fallbacks: "default"` runs."""

REFUSAL_CATEGORY = "cyber"
REFUSAL_EXPLANATION = (
    "This request triggered the mock provider's refusal scenario and was declined."
)
REFUSAL_MESSAGE = "I'm sorry, but I can't help with that request."
"""What a provider without structured refusal facts says (OpenAI `message.refusal`)."""
PARTIAL_TEXT = "Here is the first part of the answer, "
FILTER_CATEGORY = "violence"
FILTER_EXPLANATION = "The mock provider's content filter blocked this content."
SUBAGENT_TASK = "List the files in the workspace and report what you find."
SLOW_FIRST_BYTE_SECONDS = 1.0
SLOW_EVENT_SECONDS = 0.2

_NUMBERED = re.compile(r"^(rate-limited)-([0-9]{1,3})$")

Finish = Literal["stop", "tool_calls", "length", "pause", "refusal", "filter"]
StreamBreak = Literal["reset", "truncated"]
FaultKind = Literal["rate_limited", "overloaded", "server_error"]


@dataclass(slots=True)
class Tool:
    """A tool the request offers: its name and its arguments' JSON schema."""

    name: str
    schema: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Conversation:
    """What a scenario needs from a request, whatever wire format it came in."""

    wire: str
    model: str
    stream: bool = False
    user_texts: list[str] = field(default_factory=list)
    """The text of every user message, in order (never tool results or assistant turns)."""
    last_is_tool_result: bool = False
    tool_result: str = ""
    """The text of the last tool result, when the last message is one."""
    tools: list[Tool] = field(default_factory=list)
    fallbacks: list[str] = field(default_factory=list)
    """Models of a server-side `fallbacks` chain the request asked for (Anthropic)."""
    options: dict[str, str] = field(default_factory=dict)
    """Wire-specific switches from the request (Azure's asynchronous filter mode)."""
    output_schema: dict[str, Any] | None = None
    """The JSON schema a structured-output request asks the answer to follow."""

    @property
    def last_user_text(self) -> str:
        return self.user_texts[-1] if self.user_texts else ""

    def has_magic_refusal(self) -> bool:
        return any(MAGIC_REFUSAL_STRING in text for text in self.user_texts)


@dataclass(slots=True)
class ToolCallPlan:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(slots=True)
class RefusalFacts:
    category: str | None = REFUSAL_CATEGORY
    explanation: str | None = REFUSAL_EXPLANATION
    recommended_model: str | None = None
    fallback_credit_token: str | None = None
    fallback_has_prefill_claim: bool | None = None
    message: str = REFUSAL_MESSAGE


@dataclass(slots=True)
class FallbackFacts:
    """A server-side fallback: `from_model` declined and `to_model` ran instead."""

    from_model: str
    to_model: str
    declined: bool = False
    """The fallback model declined too."""


@dataclass(slots=True)
class FilterFacts:
    where: Literal["prompt", "output"]
    category: str = FILTER_CATEGORY
    explanation: str = FILTER_EXPLANATION


@dataclass(slots=True)
class Fault:
    kind: FaultKind
    retry_after_ms: int | None = None


@dataclass(slots=True)
class LiteralAnswer:
    """A literal answer from a scenario file: a body, or events in the wire's framing."""

    status: int = 200
    body: Any = None
    events: list[Any] | None = None


@dataclass(slots=True)
class Plan:
    """What to answer, provider-neutral; a wire writer renders it."""

    scenario: str
    model: str
    text: str = ""
    tool_call: ToolCallPlan | None = None
    finish: Finish = "stop"
    refusal: RefusalFacts | None = None
    fallback: FallbackFacts | None = None
    filter: FilterFacts | None = None
    fault: Fault | None = None
    stream_break: StreamBreak | None = None
    first_byte_delay: float = 0.0
    event_delay: float = 0.0
    literal: LiteralAnswer | None = None
    serial: int = 0
    """The request's number since the app started: ids derive from it."""


@dataclass(frozen=True, slots=True)
class Choice:
    """A scenario chosen for a request: its name and its number parameter, if any."""

    name: str
    times: int | None = None


def parse_name(text: str) -> Choice | None:
    """The scenario a name means (`refusal`, `rate-limited-3`); None when it is unknown."""
    text = text.strip().lower()
    if text in SCENARIOS:
        return Choice(text)
    match = _NUMBERED.match(text)
    if match:
        return Choice(match.group(1), int(match.group(2)))
    return None


def placeholder_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments that fill each required property of `schema` with a typed placeholder."""
    properties = schema.get("properties")
    required = schema.get("required")
    if not isinstance(properties, dict) or not isinstance(required, list):
        return {}
    arguments: dict[str, Any] = {}
    for name in required:
        if isinstance(name, str):
            prop = properties.get(name)
            arguments[name] = _placeholder(prop if isinstance(prop, dict) else {})
    return arguments


def _placeholder(prop: dict[str, Any]) -> Any:
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return {"integer": 1, "number": 1, "boolean": False, "array": [], "object": {}}.get(
        kind if isinstance(kind, str) else "string", "."
    )


def answer_text(conversation: Conversation) -> str:
    """The `answer` text; for a structured-output request, JSON that fits its schema."""
    if conversation.output_schema is not None:
        return json.dumps(placeholder_arguments(conversation.output_schema))
    return "Mock answer: " + conversation.last_user_text[:80]


def plan(choice: Choice, conversation: Conversation, serial: int, limited: bool) -> Plan:
    """The plan for `choice` on `conversation`; `limited` says a rate limit applies now."""
    name = choice.name
    model = conversation.model
    base = Plan(scenario=name, model=model, text=answer_text(conversation), serial=serial)
    if name == "rate-limited" and limited:
        base.fault = Fault("rate_limited", retry_after_ms=100)
        return base
    if name in ("answer", "rate-limited"):
        return base  # a rate limit that is used up answers normally
    if name == "overloaded":
        base.fault = Fault("overloaded")
        return base
    if name == "server-error":
        base.fault = Fault("server_error")
        return base
    if name == "tool-then-answer":
        return _tool_then_answer(base, conversation)
    if name in ("subagent", "subagent-refusal"):
        return _subagent(base, conversation, refused_child=name == "subagent-refusal")
    if name in ("refusal", "refusal-mid-stream", "refusal-recommended"):
        return _refusal(base, name, model)
    if name in ("fallback-served", "fallback-declined"):
        return _fallback(base, name, conversation)
    if name in ("filter-output", "filter-prompt"):
        where: Literal["prompt", "output"] = "output" if name == "filter-output" else "prompt"
        base.finish = "filter"
        base.filter = FilterFacts(where)
        base.text = PARTIAL_TEXT if where == "output" else ""
        return base
    if name == "length":
        base.finish = "length"
        base.text = base.text[: max(len(base.text) // 2, 1)]
        return base
    if name == "pause-turn":
        base.finish = "pause"
        base.text = "Mock answer: still working on it, "
        return base
    if name in ("reset-mid-stream", "truncated-stream"):
        base.stream_break = "reset" if name == "reset-mid-stream" else "truncated"
        return base
    if name == "slow":
        base.first_byte_delay = SLOW_FIRST_BYTE_SECONDS
        base.event_delay = SLOW_EVENT_SECONDS
        return base
    raise ValueError(f"unknown scenario {name!r}")


def _tool_then_answer(base: Plan, conversation: Conversation) -> Plan:
    if conversation.last_is_tool_result:
        base.text = "The tool returned: " + conversation.tool_result[:200]
        return base
    if not conversation.tools:
        return base
    tool = conversation.tools[0]
    base.text = ""
    base.finish = "tool_calls"
    base.tool_call = ToolCallPlan(
        _call_id(base.serial), tool.name, placeholder_arguments(tool.schema)
    )
    return base


def _subagent(base: Plan, conversation: Conversation, refused_child: bool) -> Plan:
    if conversation.last_user_text.startswith(SUBAGENT_TASK):
        # This is the child, asked the task: it answers, so spawning never recurses.
        return base
    if not any(tool.name == "spawn_agent" for tool in conversation.tools):
        return _tool_then_answer(base, conversation)
    if conversation.last_is_tool_result:
        base.text = "Subagent result: " + conversation.tool_result[:300]
        return base
    task = SUBAGENT_TASK + (" " + MAGIC_REFUSAL_STRING if refused_child else "")
    base.text = ""
    base.finish = "tool_calls"
    base.tool_call = ToolCallPlan(_call_id(base.serial), "spawn_agent", {"task": task})
    return base


def _refusal(base: Plan, name: str, model: str) -> Plan:
    base.finish = "refusal"
    base.text = PARTIAL_TEXT if name == "refusal-mid-stream" else ""
    facts = RefusalFacts()
    if name == "refusal-mid-stream":
        facts.fallback_has_prefill_claim = True
    if name == "refusal-recommended":
        facts.recommended_model = recommended_for(model)
        facts.fallback_credit_token = f"tok_mock_{base.serial:06d}"
        facts.fallback_has_prefill_claim = False
    base.refusal = facts
    return base


def _fallback(base: Plan, name: str, conversation: Conversation) -> Plan:
    if not conversation.fallbacks:
        # No server-side fallback was asked for: the refusal says which model to try.
        base.finish = "refusal"
        base.text = ""
        base.refusal = RefusalFacts(recommended_model=recommended_for(conversation.model))
        return base
    to_model = conversation.fallbacks[0]
    declined = name == "fallback-declined"
    base.fallback = FallbackFacts(conversation.model, to_model, declined=declined)
    if declined:
        base.finish = "refusal"
        base.text = ""
        base.refusal = RefusalFacts()
    return base


def recommended_for(model: str) -> str:
    """A model to recommend after `model` declined: never `model` itself."""
    return FALLBACK_MODEL if model != FALLBACK_MODEL else "mock-answer"


def _call_id(serial: int) -> str:
    return f"call_mock_{serial:06d}"
