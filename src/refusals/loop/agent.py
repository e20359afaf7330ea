"""The turn loop: one implementation for `refusals exec`, subagents and the chat.

A turn sends the conversation, runs the tools the model calls, and goes on until the
model answers, the turn is refused or filtered, a limit is reached, or it fails. Each
step is classified right after its provider call (`step.run_step`), refusal and filter
first; a refused or filtered turn ends at once with `refusals.notice(response)`,
unchanged, and is withdrawn from the history so that no later request carries it.
Gates (auto-continue, recovery) only see steps that were neither.

The loop renders nothing: it emits `events` to a sink, and surfaces draw them.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from refusals.events import FallbackSeam
from refusals.loop.events import (
    Event,
    EventSink,
    FallbackOutcome,
    FallbackReported,
    IdSource,
    Item,
    ItemCompleted,
    ItemStarted,
    ItemType,
    ItemUpdated,
    Price,
    RefusalReported,
    Scope,
    ThreadCompleted,
    ThreadStarted,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
    add_usage,
    complete_tool_item,
    tool_item,
)
from refusals.loop.gates import (
    CONTINUE_PROMPT,
    EMPTY_RECOVERY_PROMPT,
    Gates,
)
from refusals.loop.history import Transcript, assistant_message
from refusals.loop.outcome import Outcome
from refusals.loop.step import Step, StepKind, run_step
from refusals.loop.subagents import (
    SPAWN_AGENT,
    SPAWN_AGENT_DESCRIPTION,
    WITHDRAWN_TASK,
    SubagentPolicy,
    SubagentResult,
    Subagents,
)
from refusals.loop.tools import Tool, ToolRegistry, ToolResult, parse_arguments
from refusals.model import FinishReason, LLMResponse, ToolCall, Usage, detail_type
from refusals.refusal import is_blocked_notice, refusal_explanation
from refusals.request import Message, Request
from refusals.transport.base import TIMEOUT_CODE, ModelClient

DEFAULT_MAX_TURNS = 20
CANCELLED_MESSAGE = "The run was cancelled."

Approver = Callable[[ToolCall, Tool], Awaitable[bool]]
"""Asked before a write or command tool runs: True lets the call run, False declines it."""

NEEDS_APPROVAL = frozenset({"write", "command"})
"""The tool permissions an `Approver` is consulted for."""


def declined_message(tool: str) -> str:
    """The tool result the model reads when the user declined its call."""
    return f"error: the user declined this {tool} call; it did not run"


@dataclass(slots=True)
class TurnResult:
    """How one user turn ended."""

    outcome: Outcome
    text: str = ""
    """The final answer (empty unless the turn succeeded)."""
    notice: str | None = None
    """The refusal or content-filter notice, exactly as `refusals.notice` built it."""
    error: str | None = None
    refusal: RefusalReported | None = None
    response: LLMResponse | None = None
    """The last provider response of the turn."""


def _noop(event: Event) -> None:
    return None


def provider_model(model: str) -> str:
    """The provider's own model name in a `PROVIDER:MODEL` string."""
    return model.partition(":")[2] or model


@dataclass(slots=True)
class _Turn:
    number: int
    prompt_id: str
    usage: Usage = field(default_factory=Usage)
    item_ids: list[str] = field(default_factory=list)
    answer: list[str] = field(default_factory=list)
    steps: int = 0


class Agent:
    """A conversation with one model client, its tools, and the loop that drives it.

    `run(prompt)` runs a whole headless session of one turn (thread events included);
    `start()`, `run_turn(prompt)` and `finish(outcome)` let a chat run many turns, with
    `switch_client` to change models between turns and `summary()` for the session's
    `thread.completed` so far. `approve`, when given, is asked before every write or
    command tool call (subagents' included); a declined call is a tool error the model
    reads, not an exception.
    """

    def __init__(
        self,
        client: ModelClient,
        *,
        tools: ToolRegistry | None = None,
        system: str | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        stream: bool = True,
        max_tokens: int | None = None,
        server_fallbacks: list[str] | None = None,
        subagents: SubagentPolicy | Subagents | None = None,
        emit: EventSink | None = None,
        ids: IdSource | None = None,
        scope: Scope = "session",
        depth: int = 0,
        thread_id: str | None = None,
        in_flight: list[int] | None = None,
        approve: Approver | None = None,
        output_schema: dict[str, Any] | None = None,
        prices: Mapping[str, Price] | None = None,
    ) -> None:
        self.client = client
        self.output_schema = output_schema
        self.prices = dict(prices or {})
        """`PROVIDER:MODEL` -> price, for `total_cost_usd`."""
        """The JSON Schema the final answer follows (structured output); subagents
        answer in prose."""
        self.approve = approve
        self.system = system
        self.max_turns = max_turns
        self.stream = stream
        self.max_tokens = max_tokens
        self.server_fallbacks = list(server_fallbacks or ())
        self.emit: EventSink = emit or _noop
        self.ids = ids or IdSource()
        self.scope: Scope = scope
        self.depth = depth
        self.thread_id = thread_id or f"thread_{uuid.uuid4().hex[:16]}"
        self.transcript = Transcript()
        self.gates = Gates()
        self.usage = Usage()
        self.num_turns = 0
        """Model calls this agent made (its subagents' calls not included)."""
        self.last_response: LLMResponse | None = None
        self.last_outcome: Outcome | None = None
        """How the last turn ended (None before the first)."""
        self.last_text: str | None = None
        """The last turn's answer, when it succeeded."""
        self.model_usage: dict[str, Usage] = {}
        """Tokens per `PROVIDER:MODEL` that served a call, subagents' included."""
        self.api_seconds = 0.0
        self._started_at = time.monotonic()
        self._turns = 0
        self._earlier_requests = 0
        """Requests made by clients `switch_client` replaced."""
        self._call_ids = 0
        # Calls started and not yet returned, shared with subagents: a call cancelled in
        # flight has sent its request but the client records no attempt for it.
        # (Each entry: the client's attempt count when that call started.)
        self._in_flight = in_flight if in_flight is not None else []
        self._streamed: Item | None = None
        self._seam_retracted: list[str] = []
        """Items the last call's fallback seams withdrew (the declined partial output)."""
        """The agent_message item the current step streamed, if any."""
        if isinstance(subagents, SubagentPolicy):
            subagents = Subagents(subagents)
        self.subagents = subagents
        self.tools = ToolRegistry(tools or ())
        if subagents is not None and depth < subagents.policy.max_depth:
            self.tools = self.tools.without(SPAWN_AGENT)
            self.tools.add(Tool(SPAWN_AGENT, _unreachable, SPAWN_AGENT_DESCRIPTION, _SPAWN_SCHEMA))

    # Session events.

    def start(self) -> None:
        self._started_at = time.monotonic()
        self.emit(ThreadStarted(self.thread_id, self.client.model))

    def summary(self, outcome: Outcome | None = None) -> ThreadCompleted:
        """The session's `thread.completed` as of now, built and not emitted.

        `outcome` defaults to the last turn's (success before any turn); `requests`
        counts every client this agent used.
        """
        last = self.last_response
        outcome = outcome or self.last_outcome or Outcome.SUCCESS
        return ThreadCompleted(
            outcome,
            last.finish_reason.value if last is not None else None,
            self.usage,
            self.num_turns,
            self._requests(),
            result=self.last_text if outcome is Outcome.SUCCESS else None,
            served_by=self._served_by(last) if last is not None else None,
            served_by_fallback=last is not None and last.served_by_fallback,
            duration_ms=round((time.monotonic() - self._started_at) * 1000),
            duration_api_ms=round(self.api_seconds * 1000),
            model_usage={name: _copy_usage(u) for name, u in self.model_usage.items()},
            total_cost_usd=self._cost(),
            model_cost_usd={
                name: round(self.prices[name].cost(usage), 6)
                for name, usage in self.model_usage.items()
                if name in self.prices
            },
        )

    def _cost(self) -> float | None:
        """The run's cost, or None unless the price table names every model that spent."""
        if not self.prices:
            return None
        total = 0.0
        for name, usage in self.model_usage.items():
            price = self.prices.get(name)
            if price is None:
                return None  # a partial sum would read as the whole cost
            total += price.cost(usage)
        return round(total, 6)

    def _served_by(self, response: LLMResponse) -> str:
        """The `PROVIDER:MODEL` that gave `response`: a fallback that answered, or the
        model the client is on."""
        current = getattr(self.client, "current_model", self.client.model)
        name = response.fallback_model if response.served_by_fallback else None
        if not name:
            return str(current)
        # A server-side fallback names the provider's own model: same provider.
        return name if ":" in name else f"{str(current).partition(':')[0]}:{name}"

    def finish(self, outcome: Outcome | None = None) -> ThreadCompleted:
        """Emit the session's `thread.completed` (see `summary`) and return it."""
        event = self.summary(outcome)
        self.emit(event)
        return event

    def switch_client(self, client: ModelClient) -> ModelClient:
        """Talk to `client` from the next call on; the history goes with it.

        Returns the client replaced (closing it is the caller's business). Its requests
        stay counted in `summary()`.
        """
        old = self.client
        self._earlier_requests += len(old.attempts)
        self.client = client
        return old

    def _requests(self) -> int:
        """Provider requests made so far, a call cancelled before its attempt included."""
        made = len(self.client.attempts)
        in_flight = sum(1 for started in self._in_flight if made <= started)
        return self._earlier_requests + made + in_flight

    async def run(self, prompt: str) -> TurnResult:
        """One headless session: thread started, one turn, thread completed.

        A cancellation (Ctrl-C) ends it as `cancelled`, with its events, and is not
        raised further.
        """
        self.start()
        try:
            result = await self.run_turn(prompt)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            result = TurnResult(Outcome.CANCELLED, error=CANCELLED_MESSAGE)
        self.finish(result.outcome)
        return result

    # The turn loop.

    async def run_turn(self, prompt: str, *, prompt_item_id: str | None = None) -> TurnResult:
        """Run one user turn to its end; a refusal ends it with its notice, never raised.

        A cancellation withdraws the turn from the history, emits `turn.failed` with
        outcome cancelled, and is raised (a chat catches it and takes the next prompt).
        """
        self._turns += 1
        turn = _Turn(self._turns, prompt_item_id or self.ids())
        self.last_text = None
        if self.depth == 0:
            before = getattr(self.client, "current_model", None)
            self.client.begin_turn()
            after = getattr(self.client, "current_model", None)
            if before != after:
                # A turn-scoped chain that a fallback answered goes back to its primary.
                self.emit(
                    FallbackReported(
                        "returned",
                        "revert",
                        "client",
                        original_model=after,
                        fallback_model=before,
                        trigger=None,
                        category=None,
                        fallback_scope=getattr(self.client, "scope", None),
                        scope=self.scope,
                    )
                )
        self.gates.begin_turn()
        self.transcript.add(Message("user", prompt), turn=turn.number, item_id=turn.prompt_id)
        self.emit(TurnStarted(f"turn_{turn.number}", turn.prompt_id))
        try:
            result = await self._loop(turn)
        except asyncio.CancelledError:
            self.transcript.withdraw_turn(turn.number)
            self.last_outcome = Outcome.CANCELLED
            self.emit(TurnFailed(CANCELLED_MESSAGE, Outcome.CANCELLED))
            raise
        except Exception as exc:  # a failure of our own or a user's code ends the turn
            result = self._fail(turn, Outcome.ERROR, f"{type(exc).__name__}: {exc}")
        self.last_outcome = result.outcome
        return result

    async def _loop(self, turn: _Turn) -> TurnResult:
        while True:
            if turn.steps >= self.max_turns:
                return self._fail(
                    turn,
                    Outcome.TURN_LIMIT,
                    f"the task used all {self.max_turns} model calls --max-turns allows",
                )
            turn.steps += 1
            self.num_turns += 1
            step = await self._call(turn)
            self.last_response = step.response
            add_usage(turn.usage, step.response.usage)
            add_usage(self.usage, step.response.usage)
            served = self._served_by(step.response)
            add_usage(self.model_usage.setdefault(served, Usage()), step.response.usage)
            for model, spent in self._report_fallbacks(step, turn.prompt_id):
                # A declined hop's tokens: spent, though the response is the last hop's.
                add_usage(turn.usage, spent)
                add_usage(self.usage, spent)
                add_usage(self.model_usage.setdefault(model, Usage()), spent)
            # Detect once, first: a refused or filtered step ends the turn here.
            if step.kind.is_terminal:
                return self._refused(turn, step)
            if step.kind is StepKind.FAILED:
                error = step.response.error
                message = (error.message if error is not None else None) or (
                    "the provider call failed"
                )
                timed_out = error is not None and error.code == TIMEOUT_CODE
                return self._fail(turn, Outcome.TIMED_OUT if timed_out else Outcome.ERROR, message)
            result = await self._advance(turn, step)
            if result is not None:
                return result

    async def _call(self, turn: _Turn) -> Step:
        request = Request(
            model=provider_model(self.client.model),
            messages=self.transcript.messages(),
            system=self.system,
            tools=self.tools.specs(),
            max_tokens=self.max_tokens,
            stream=self.stream,
            fallbacks=list(self.server_fallbacks),
            output_schema=self.output_schema,
        )
        streamed: list[Item] = []

        def on_text(text: str) -> None:
            if not streamed:
                streamed.append(self._item(turn, "agent_message", {"text": ""}))
                self.emit(ItemStarted(_snapshot(streamed[0])))
            item = streamed[0]
            item.data["text"] += text
            self.emit(ItemUpdated(Item(item.id, item.type), text))

        def on_seam(seam: FallbackSeam) -> None:
            # The model that declined was cut off: what it showed is not the answer
            # (a prefill the next model continues comes back in the final content).
            if streamed:
                item = streamed.pop()
                item.data.update(cut_off=True, retracted=True)
                self._seam_retracted.append(item.id)
                self.emit(ItemCompleted(item))

        self._seam_retracted = []
        started = len(self.client.attempts)
        self._in_flight.append(started)
        began = time.monotonic()
        try:
            step = await run_step(
                self.client, request, stream=self.stream, on_text=on_text, on_seam=on_seam
            )
        except asyncio.CancelledError:
            raise  # still in flight: counted as a request the run made
        except BaseException:
            self._in_flight.remove(started)
            raise
        finally:
            self.api_seconds += time.monotonic() - began
        self._in_flight.remove(started)
        self._streamed = streamed[0] if streamed else None
        return step

    def _item(self, turn: _Turn, kind: ItemType, data: dict[str, object]) -> Item:
        item = Item(self.ids(), kind, data)
        turn.item_ids.append(item.id)
        return item

    def _show_text(self, turn: _Turn, response: LLMResponse, **flags: object) -> str | None:
        """Complete the step's agent_message item (streamed or not); its id."""
        item = self._streamed
        text = response.content or ""
        if item is None:
            if not text:
                return None
            item = self._item(turn, "agent_message", {"text": text})
        elif flags.get("cut_off") or not text:
            pass  # cut off: only what was shown counts
        else:
            item.data["text"] = text
        item.data.update(flags)
        self.emit(ItemCompleted(item))
        return item.id

    def _show_reasoning(self, turn: _Turn, response: LLMResponse) -> None:
        if response.reasoning:
            self.emit(ItemCompleted(self._item(turn, "reasoning", {"text": response.reasoning})))

    async def _advance(self, turn: _Turn, step: Step) -> TurnResult | None:
        """Act on a step that was neither refused, filtered nor failed; None to go on."""
        response = step.response
        kind = step.kind
        self._show_reasoning(turn, response)
        if kind is StepKind.TEXT:
            item_id = self._show_text(turn, response)
            self.transcript.add(
                assistant_message(response, server_fallback=self._sf),
                turn=turn.number,
                item_id=item_id,
            )
            text = "".join([*turn.answer, response.content or ""])
            if self.output_schema is not None and not _is_json(text):
                # Structured output that is not JSON: reported, not retried (a refusal
                # in structured output is a refusal, read before we get here).
                return self._fail(
                    turn, Outcome.ERROR, "the answer is not the JSON --output-schema asks for"
                )
            self.emit(TurnCompleted(turn.usage))
            self.last_text = text
            return TurnResult(Outcome.SUCCESS, text=text, response=response)
        if kind in (StepKind.TRUNCATED, StepKind.PAUSED):
            item_id = self._show_text(turn, response)
            if self.gates.decide(step, turn=turn.number) is None:
                what = "cut off at the output limit" if kind is StepKind.TRUNCATED else "paused"
                if is_blocked_notice(response.content or ""):
                    # Not continued, however many continuations are left: text that reads
                    # as a refusal notice is never built on.
                    why = f"the answer was {what}, and its text reads as a refusal notice"
                else:
                    allowed = self.gates.max_continuations
                    why = (
                        f"the answer was {what} {allowed + 1} times in a row "
                        f"({allowed} continuations allowed)"
                    )
                return self._fail(turn, Outcome.ERROR, why)
            if response.tool_calls:
                # A call cut off mid-arguments cannot be answered; only the text goes back.
                response.tool_calls = []
            if response.content or kind is StepKind.PAUSED:
                self.transcript.add(
                    assistant_message(response, server_fallback=self._sf),
                    turn=turn.number,
                    item_id=item_id,
                )
                turn.answer.append(response.content or "")
            if kind is StepKind.TRUNCATED:
                self.transcript.add(Message("user", CONTINUE_PROMPT), turn=turn.number)
            return None
        if kind is StepKind.EMPTY:
            if self.gates.decide(step, turn=turn.number) is None:
                return self._fail(turn, Outcome.ERROR, "the model returned an empty answer")
            self.transcript.add(Message("user", EMPTY_RECOVERY_PROMPT), turn=turn.number)
            return None
        # Tool calls.
        item_id = self._show_text(turn, response)
        self._name_calls(response.tool_calls)
        malformed = any(self.tools.check(call) is not None for call in response.tool_calls)
        if (
            malformed
            and self.gates.decide(step, turn=turn.number, malformed_tool_call=True) is None
        ):
            return self._fail(turn, Outcome.ERROR, "the model kept making malformed tool calls")
        turn.answer.clear()
        self.transcript.add(
            assistant_message(response, server_fallback=self._sf), turn=turn.number, item_id=item_id
        )
        results = await self._run_tools(turn, response.tool_calls)
        for call, result in zip(response.tool_calls, results, strict=True):
            self.transcript.add(
                Message(
                    "tool",
                    result.output,
                    tool_call_id=call.id,
                    name=call.name,
                    is_error=result.is_error,
                ),
                turn=turn.number,
            )
        return None

    @property
    def _sf(self) -> bool:
        return bool(self.server_fallbacks)

    def _name_calls(self, calls: list[ToolCall]) -> None:
        # Some providers (Gemini) give calls no id; results must still pair with calls.
        for call in calls:
            if not call.id:
                self._call_ids += 1
                call.id = f"call_{self._call_ids}"

    async def _run_tools(self, turn: _Turn, calls: list[ToolCall]) -> list[ToolResult]:
        """Run a step's calls: subagents concurrently, other tools one after another."""
        results: list[ToolResult | None] = [None] * len(calls)
        children: list[tuple[int, asyncio.Task[ToolResult]]] = []
        for index, call in enumerate(calls):
            if (
                call.name == SPAWN_AGENT
                and self.subagents is not None
                and SPAWN_AGENT in self.tools
            ):
                children.append((index, asyncio.ensure_future(self._spawn(turn, call))))
                continue
            arguments = parse_arguments(call)
            shown = arguments if isinstance(arguments, dict) else call.arguments
            kind, data = tool_item(call.id, call.name, shown)
            item = self._item(turn, kind, data)
            if kind != "file_change":  # as in Codex: a file change is sent once, done
                self.emit(ItemStarted(_snapshot(item)))
            result = await self._approved_call(call)
            results[index] = result
            complete_tool_item(
                item,
                result.output,
                is_error=result.is_error,
                declined=result.is_error and result.output == declined_message(call.name),
                data=result.data,
            )
            self.emit(ItemCompleted(item))
        try:
            for index, child in children:
                results[index] = await child
        finally:
            for _, child in children:
                child.cancel()
        return [
            r if r is not None else ToolResult("error: no result", is_error=True) for r in results
        ]

    async def _approved_call(self, call: ToolCall) -> ToolResult:
        """Run one call, asking `approve` first for a well-formed write or command call."""
        tool = self.tools.get(call.name)
        if (
            self.approve is None
            or tool is None
            or tool.permission not in NEEDS_APPROVAL
            or self.tools.check(call) is not None  # malformed: refused without asking
        ):
            return await self.tools.call(call)
        try:
            allowed = await self.approve(call, tool)
        except Exception as exc:  # a user's hook failing declines the call, never the turn
            return ToolResult(
                f"error: approval of this {tool.name} call failed ({type(exc).__name__}: "
                f"{exc}); it did not run",
                is_error=True,
            )
        if not allowed:
            return ToolResult(declined_message(tool.name), is_error=True)
        return await self.tools.call(call)

    async def _spawn(self, turn: _Turn, call: ToolCall) -> ToolResult:
        assert self.subagents is not None
        problem = self.tools.check(call)
        arguments = parse_arguments(call)
        if problem is not None or isinstance(arguments, str):
            return ToolResult(f"error: {problem or arguments}", is_error=True)
        task = str(arguments["task"])
        names = arguments.get("tools")
        tools = [str(n) for n in names] if isinstance(names, list) else None
        item = self._item(turn, "subagent", {"call_id": call.id, "task": task, "tools": tools})
        item.data["status"] = "running"
        self.emit(ItemStarted(_snapshot(item)))
        result = await self.subagents.run(
            task, tools, item.id, lambda t, n, i: self._run_child(turn, t, n, i)
        )
        item.data.update(result.to_json())
        self.emit(ItemCompleted(item))
        if result.notice is not None:
            # The call stays in the history (its result pairs with it), but no later
            # request may carry the refused task's text: that would poison the session.
            call.arguments = orjson.dumps({"task": WITHDRAWN_TASK}).decode()
        return ToolResult(
            result.for_model(), is_error=result.status != "completed", data=result.to_json()
        )

    async def _run_child(
        self, turn: _Turn, task: str, tools: list[str] | None, item_id: str
    ) -> SubagentResult:
        assert self.subagents is not None
        offered = self.tools.without(SPAWN_AGENT)
        if tools is not None:
            offered = offered.subset(tools)
        child = Agent(
            self.client,
            tools=offered,
            system=SUBAGENT_SYSTEM,
            max_turns=self.subagents.policy.max_turns,
            stream=self.stream,
            max_tokens=self.max_tokens,
            subagents=self.subagents,
            emit=self._child_sink,
            ids=self.ids,
            scope="subagent",
            depth=self.depth + 1,
            thread_id=self.thread_id,
            in_flight=self._in_flight,
            approve=self.approve,
        )
        result = await child.run_turn(task, prompt_item_id=item_id)
        add_usage(self.usage, child.usage)
        add_usage(turn.usage, child.usage)
        for name, usage in child.model_usage.items():
            add_usage(self.model_usage.setdefault(name, Usage()), usage)
        category = result.refusal.category if result.refusal is not None else None
        return SubagentResult.from_outcome(
            result.outcome,
            task,
            text=result.text,
            notice=result.notice,
            category=category,
            error=result.error,
        )

    def _child_sink(self, event: Event) -> None:
        # A child's own turn and item events stay inside it (parsers would take its
        # answer for the session's); its refusal and fallbacks are reported, scoped to
        # the subagent.
        if isinstance(event, RefusalReported | FallbackReported):
            self.emit(event)

    def _report_fallbacks(self, step: Step, prompt_id: str) -> list[tuple[str, Usage]]:
        """A `fallback` event for each hop the response records, and one saying there
        was none to go to when a refused or filtered step had no hop at all; the tokens
        each declined client-side hop spent, by model."""
        response = step.response
        hops = [hop for hop in map(_hop, response.decoded_details()) if hop is not None]
        blocked = step.kind.is_terminal
        chain_scope = getattr(self.client, "scope", None)
        spent: list[tuple[str, Usage]] = []
        for index, hop in enumerate(hops):
            if hop["usage"] is not None and hop["from"]:
                spent.append((hop["from"], hop["usage"]))
            later = hops[index + 1 :]
            outcome: FallbackOutcome
            if hop["failed"]:
                outcome = "failed"
            elif any(h["from"] == hop["to"] for h in later) or (
                blocked and not any(not h["failed"] for h in later)
            ):
                outcome = "declined"
            else:
                outcome = "answered"
            client_side = hop["source"] == "client"
            self.emit(
                FallbackReported(
                    outcome,
                    "retry",
                    "client" if client_side else "server",
                    original_model=hop["from"],
                    fallback_model=hop["to"],
                    trigger=hop["trigger"],
                    category=hop["category"],
                    fallback_scope=chain_scope if client_side else None,
                    scope=self.scope,
                    error=hop["error"],
                    request_id=hop["request_id"],
                    explanation=hop["explanation"],
                    refused_item_id=prompt_id,
                    # The partial output withdrawn at the seams goes with the first hop.
                    retracted_item_ids=self._seam_retracted if index == 0 else [],
                )
            )
        if blocked and not hops and not response.served_by_fallback:
            stop = response.stop_details
            self.emit(
                FallbackReported(
                    "no_fallback",
                    None,  # nothing was retried (Claude Code's no_fallback has no direction)
                    None,
                    original_model=self._served_by(response),
                    fallback_model=None,
                    trigger="refusal"
                    if response.finish_reason is FinishReason.REFUSAL
                    else "content_filter",
                    category=(stop.category or (stop.categories or [None])[0])
                    if stop is not None
                    else None,
                    fallback_scope=chain_scope,
                    scope=self.scope,
                    request_id=response.request_id,
                    explanation=refusal_explanation(response)
                    if response.finish_reason is FinishReason.REFUSAL
                    else (stop.explanation if stop is not None else None),
                    refused_item_id=prompt_id,
                )
            )
        return spent

    # Endings.

    def _refused(self, turn: _Turn, step: Step) -> TurnResult:
        response = step.response
        assert step.notice is not None
        refused = step.kind is StepKind.REFUSED
        # Partial output the user saw (or that came with the response) stays as a
        # marked, cut-off fragment; the refusal text of a refusal is not output.
        fragment_id: str | None = None
        # Streamed, only what was shown counts (the stream was read on a little after
        # the verdict, for details).
        shown = self._streamed is not None
        if shown or (not self.stream and response.cut_off and response.content):
            fragment_id = self._show_text(turn, response, cut_off=True, retracted=True)
        self.transcript.withdraw_turn(turn.number, refused=True)
        if fragment_id is not None:
            text = self._streamed.data["text"] if self._streamed is not None else response.content
            self.transcript.add_fragment(str(text or ""), turn=turn.number, item_id=fragment_id)
        stop = response.stop_details
        categories = list(stop.categories) if stop is not None else []
        category = stop.category if stop is not None else None
        if category is None and categories:
            category = ", ".join(categories)
        declined = response.declined_models
        event = RefusalReported(
            kind="refusal" if refused else "content_filter",
            provider=response.provider,
            original_model=declined[0] if declined else (response.model or self.client.model),
            fallback_model=response.fallback_model,
            request_id=response.request_id,
            raw_stop_reason=response.raw_finish_reason,
            category=category,
            # For a refusal, what the notice quotes (OpenAI gives only the refusal text).
            explanation=refusal_explanation(response)
            if refused
            else (stop.explanation if stop is not None else None),
            recommended_model=stop.recommended_model if stop is not None else None,
            served_by_fallback=response.served_by_fallback,
            scope=self.scope,
            refused_item_id=turn.prompt_id,
            retracted_item_ids=list(turn.item_ids),
            notice=step.notice,
            categories=categories,
        )
        self.emit(event)
        outcome = Outcome.REFUSED if refused else Outcome.CONTENT_FILTERED
        self.emit(TurnFailed(step.notice, outcome))
        return TurnResult(outcome, notice=step.notice, refusal=event, response=response)

    def _fail(self, turn: _Turn, outcome: Outcome, message: str) -> TurnResult:
        # An unfinished turn may end mid tool call; sent again it would be malformed.
        self.transcript.withdraw_turn(turn.number)
        self.emit(TurnFailed(message, outcome))
        return TurnResult(outcome, error=message, response=self.last_response)


SUBAGENT_SYSTEM = (
    "You are a subagent. Carry out the task you are given with the tools offered, then "
    "reply with a short report of what you found or did; that reply is your result."
)

_SPAWN_SCHEMA = {
    "type": "object",
    "properties": {
        "task": {"type": "string", "description": "what the subagent must do, self-contained"},
        "tools": {
            "type": "array",
            "items": {"type": "string"},
            "description": "names of the tools it may use (default: all but spawn_agent)",
        },
    },
    "required": ["task"],
}


def _hop(value: Any) -> dict[str, Any] | None:
    """A decoded `fallback` or `fallback_failed` reasoning detail as a hop, else None."""
    kind = detail_type(value)
    if kind not in ("fallback", "fallback_failed"):
        return None

    def model(side: str) -> str | None:
        part = value.get(side)
        name = part.get("model") if isinstance(part, dict) else None
        return name if isinstance(name, str) else None

    trigger = value.get("trigger")
    trigger = trigger if isinstance(trigger, dict) else {}
    kind_of = trigger.get("type")
    category = trigger.get("category")
    error = value.get("error")
    explanation = trigger.get("explanation")
    request_id = value.get("request_id")
    counts = value.get("usage")
    usage: Usage | None = None
    if isinstance(counts, dict):
        usage = Usage()
        for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens"):
            count = counts.get(name)
            if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
                setattr(usage, name, count)
    return {
        "usage": usage,
        "from": model("from"),
        "to": model("to"),
        "failed": kind == "fallback_failed",
        "source": "client" if value.get("source") == "client" else "server",
        "trigger": kind_of if kind_of in ("refusal", "content_filter") else None,
        "category": category if isinstance(category, str) else None,
        "error": error if isinstance(error, str) else None,
        "explanation": explanation if isinstance(explanation, str) else None,
        "request_id": request_id if isinstance(request_id, str) else None,
    }


def _is_json(text: str) -> bool:
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


def _copy_usage(usage: Usage) -> Usage:
    copy = Usage()
    add_usage(copy, usage)
    return copy


def _snapshot(item: Item) -> Item:
    """A copy of `item` as it is now: an event's item never changes after it was sent."""
    return Item(item.id, item.type, dict(item.data))


def _unreachable(**_: object) -> str:
    # spawn_agent calls are run by the loop itself, which owns the child's context.
    raise RuntimeError("spawn_agent is run by the agent loop")
