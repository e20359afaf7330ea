"""The turn loop on a scripted client: refusals end the turn, are never resent, and
every surface gets the same notice; tools, subagents, gates and limits as documented."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import orjson
import pytest

from refusals import notice
from refusals.events import (
    RefusalDelta,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Verdict,
)
from refusals.loop.agent import Agent, declined_message
from refusals.loop.events import (
    Event,
    FallbackReported,
    ItemCompleted,
    ItemUpdated,
    RefusalReported,
    ThreadCompleted,
    TurnFailed,
)
from refusals.loop.gates import CONTINUE_PROMPT
from refusals.loop.outcome import Outcome
from refusals.loop.subagents import SubagentPolicy
from refusals.loop.tools import Tool, ToolRegistry
from refusals.model import FinishReason, LLMResponse, StopDetails, ToolCall
from tests.loop._scripted import ScriptedClient, refusal, sent_texts, text, tool_call

T = TypeVar("T")
REFUSED_PROMPT = "write the exploit"


def run(coro: Coroutine[Any, Any, T]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coro, 10)

    return asyncio.run(bounded())


def agent_for(client: ScriptedClient, **options: Any) -> tuple[Agent, list[Event]]:
    events: list[Event] = []
    return Agent(client, emit=events.append, **options), events


def types(events: list[Event]) -> list[str]:
    return [event.type for event in events]


def test_a_refused_turn_ends_after_one_call_with_the_notice_on_every_event() -> None:
    client = ScriptedClient([refusal()])
    agent, events = agent_for(client)
    result = run(agent.run(REFUSED_PROMPT))
    expected = notice(client.streams[0].response)
    assert expected is not None
    assert result.outcome is Outcome.REFUSED
    assert result.notice == expected
    assert len(client.requests) == 1
    assert types(events) == [
        "thread.started",
        "turn.started",
        "fallback",
        "refusal",
        "turn.failed",
        "thread.completed",
    ]
    no_fallback = events[2]
    refused = events[3]
    failed = events[4]
    completed = events[5]
    assert isinstance(no_fallback, FallbackReported)
    assert no_fallback.outcome == "no_fallback" and no_fallback.trigger == "refusal"
    assert no_fallback.category == "cyber" and no_fallback.fallback_model is None
    assert isinstance(refused, RefusalReported) and refused.notice == expected
    assert refused.category == "cyber" and refused.scope == "session"
    assert isinstance(failed, TurnFailed) and failed.to_json()["error"] == {"message": expected}
    assert isinstance(completed, ThreadCompleted)
    assert completed.to_json()["outcome_code"] == "refused"
    assert completed.to_json()["subtype"] != "success"
    assert completed.to_json()["requests"] == 1


def test_a_refused_prompt_is_never_sent_again_in_a_later_turn() -> None:
    client = ScriptedClient([refusal(), text("Paris.")])
    agent, _ = agent_for(client)
    agent.start()
    first = run(agent.run_turn(REFUSED_PROMPT))
    second = run(agent.run_turn("What is the capital of France?"))
    assert first.outcome is Outcome.REFUSED
    assert second.outcome is Outcome.SUCCESS and second.text == "Paris."
    later = sent_texts(client.requests[1])
    assert REFUSED_PROMPT not in later
    assert later == ["What is the capital of France?"]
    withdrawn = [entry.message.content for entry in agent.transcript.withdrawn]
    assert withdrawn == [REFUSED_PROMPT]


def test_partial_output_before_a_refusal_is_kept_as_a_marked_fragment_and_retracted() -> None:
    script = [TextDelta("Step one: "), *refusal()]
    client = ScriptedClient([script, text("ok")])
    agent, events = agent_for(client)
    agent.start()
    result = run(agent.run_turn(REFUSED_PROMPT))
    assert result.outcome is Outcome.REFUSED
    fragment = next(e for e in events if isinstance(e, ItemCompleted))
    assert fragment.item.data == {"text": "Step one: ", "cut_off": True, "retracted": True}
    reported = next(e for e in events if isinstance(e, RefusalReported))
    assert reported.retracted_item_ids == [fragment.item.id]
    assert reported.refused_item_id != fragment.item.id
    entries = agent.transcript.entries
    assert [(e.message.role, e.withdrawn, e.refused, e.cut_off) for e in entries] == [
        ("user", True, True, False),
        ("assistant", True, True, True),
    ]
    run(agent.run_turn("next"))
    assert sent_texts(client.requests[1]) == ["next"]


def test_streaming_stops_at_the_refusal_verdict_and_shows_nothing_after_it() -> None:
    script = [TextDelta("Sure: "), *refusal(), TextDelta("never "), TextDelta("shown")]
    client = ScriptedClient([script])
    agent, events = agent_for(client)
    run(agent.run(REFUSED_PROMPT))
    stream = client.streams[0]
    assert stream.closed
    assert stream.read == 4  # read on for details, bounded; nothing after the verdict shown
    deltas = [e.delta for e in events if isinstance(e, ItemUpdated)]
    whole = [e.item.data["text"] for e in events if isinstance(e, ItemCompleted)]
    assert deltas == ["Sure: "]
    assert whole == ["Sure: "]


def test_refusal_text_streamed_after_the_verdict_completes_the_notice() -> None:
    script: list[StreamEvent] = [
        RefusalDelta("I can't help "),
        Verdict(FinishReason.REFUSAL, "refusal"),
        RefusalDelta("with that."),
    ]
    client = ScriptedClient([script])
    agent, events = agent_for(client)
    result = run(agent.run(REFUSED_PROMPT))
    assert not [e for e in events if isinstance(e, ItemUpdated | ItemCompleted)]
    assert result.notice == (
        "The model declined this request: I can't help with that. "
        "The request was not retried; rephrase it or switch models."
    )


def test_a_content_filter_stop_gives_its_own_outcome_and_notice() -> None:
    script = [Verdict(FinishReason.CONTENT_FILTER, "content_filter")]
    agent, events = agent_for(ScriptedClient([script]))
    result = run(agent.run("hello"))
    assert result.outcome is Outcome.CONTENT_FILTERED
    assert result.outcome.exit_code == 4
    reported = next(e for e in events if isinstance(e, RefusalReported))
    assert reported.kind == "content_filter"
    assert reported.notice == result.notice
    assert result.notice is not None and result.notice.startswith(
        "The provider's content filter blocked this request"
    )


def test_a_tool_call_runs_and_its_result_goes_into_the_next_request() -> None:
    tools = ToolRegistry()

    @tools.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    client = ScriptedClient([tool_call("add", '{"a": 2, "b": 3}', "call_1"), text("5")])
    agent, events = agent_for(client, tools=tools)
    result = run(agent.run("add 2 and 3"))
    assert result.outcome is Outcome.SUCCESS and result.text == "5"
    assert [spec.name for spec in client.requests[0].tools] == ["add"]
    last = client.requests[1].messages[-1]
    assert (last.role, last.content, last.tool_call_id, last.is_error) == (
        "tool",
        "5",
        "call_1",
        False,
    )
    kinds = [e.item.type for e in events if isinstance(e, ItemCompleted)]
    assert kinds == ["mcp_tool_call", "agent_message"]


def test_a_malformed_tool_call_gets_one_recovery_turn_then_the_turn_fails() -> None:
    tools = ToolRegistry()

    @tools.tool
    def echo(value: str) -> str:
        return value

    bad = tool_call("echo", '{"value": ', "c1")
    client = ScriptedClient([bad, bad])
    agent, _ = agent_for(client, tools=tools)
    result = run(agent.run("echo"))
    assert result.outcome is Outcome.ERROR
    assert len(client.requests) == 2
    assert [f.action.value for f in agent.gates.fired] == ["recover"]
    recovery = client.requests[1].messages[-1]
    assert recovery.is_error and "not valid JSON" in recovery.content


def test_an_answer_cut_off_at_the_length_limit_is_continued_and_joined() -> None:
    cut: list[StreamEvent] = [
        TextDelta("The first half, "),
        Verdict(FinishReason.LENGTH, "max_tokens"),
    ]
    client = ScriptedClient([cut, text("the second half.")])
    agent, _ = agent_for(client)
    result = run(agent.run("long answer"))
    assert result.outcome is Outcome.SUCCESS
    assert result.text == "The first half, the second half."
    assert client.requests[1].messages[-1].content == CONTINUE_PROMPT
    assert [f.action.value for f in agent.gates.fired] == ["continue"]


def test_an_answer_cut_off_every_time_fails_after_the_allowed_continuations_and_says_so() -> None:
    cut: list[StreamEvent] = [TextDelta("more "), Verdict(FinishReason.LENGTH, "max_tokens")]
    client = ScriptedClient([cut] * 4)
    agent, _ = agent_for(client)
    result = run(agent.run("long answer"))
    assert result.outcome is Outcome.ERROR
    assert len(client.requests) == 4
    assert result.error == (
        "the answer was cut off at the output limit 4 times in a row (3 continuations allowed)"
    )


def test_a_cut_off_answer_that_reads_as_a_refusal_notice_is_not_continued_and_says_why() -> None:
    text_of_a_notice = notice(
        LLMResponse(
            finish_reason=FinishReason.REFUSAL,
            reasoning_details=[StopDetails(category="cyber").to_detail()],
        )
    )
    assert text_of_a_notice is not None
    cut: list[StreamEvent] = [TextDelta(text_of_a_notice), Verdict(FinishReason.LENGTH, "length")]
    client = ScriptedClient([cut, text("never asked")])
    agent, _ = agent_for(client)
    result = run(agent.run("long answer"))
    assert result.outcome is Outcome.ERROR
    assert len(client.requests) == 1
    assert result.error == (
        "the answer was cut off at the output limit, and its text reads as a refusal notice"
    )


def test_no_gate_fires_on_a_refusal_that_follows_a_cut_off_answer() -> None:
    cut: list[StreamEvent] = [TextDelta("partial"), Verdict(FinishReason.LENGTH, "max_tokens")]
    client = ScriptedClient([cut, refusal(), text("never asked")])
    agent, _ = agent_for(client)
    result = run(agent.run("long answer"))
    assert result.outcome is Outcome.REFUSED
    assert len(client.requests) == 2
    assert [f.kind.value for f in agent.gates.fired] == ["truncated"]


def test_the_turn_limit_ends_a_task_that_keeps_calling_tools() -> None:
    tools = ToolRegistry()

    @tools.tool
    def ping() -> str:
        return "pong"

    client = ScriptedClient([tool_call("ping", "{}")] * 3)
    agent, events = agent_for(client, tools=tools, max_turns=3)
    result = run(agent.run("loop forever"))
    assert result.outcome is Outcome.TURN_LIMIT
    assert len(client.requests) == 3
    completed = events[-1]
    assert isinstance(completed, ThreadCompleted) and completed.to_json()["num_turns"] == 3


def test_a_provider_error_fails_the_turn_with_its_message() -> None:
    client = ScriptedClient([[TextDelta("half"), StreamError("the connection was reset")]])
    agent, events = agent_for(client)
    result = run(agent.run("hello"))
    assert result.outcome is Outcome.ERROR
    assert result.error == "the connection was reset"
    failed = next(e for e in events if isinstance(e, TurnFailed))
    assert failed.message == "the connection was reset"


def test_not_streaming_gives_the_same_notice_as_streaming() -> None:
    streamed = run(agent_for(ScriptedClient([refusal()]))[0].run("x"))
    whole = run(agent_for(ScriptedClient([refusal()]), stream=False)[0].run("x"))
    assert streamed.notice == whole.notice is not None


def spawn(task: str, call_id: str = "call_s") -> list[StreamEvent]:
    return tool_call("spawn_agent", orjson.dumps({"task": task}).decode(), call_id)


def test_a_refused_subagent_reports_the_notice_verbatim_to_its_parent() -> None:
    client = ScriptedClient([spawn("do the bad thing"), refusal(), text("I could not do it.")])
    agent, events = agent_for(client, subagents=SubagentPolicy())
    result = run(agent.run("delegate"))
    child_notice = notice(client.streams[1].response)
    assert result.outcome is Outcome.SUCCESS
    subagent = next(
        e.item for e in events if isinstance(e, ItemCompleted) and e.item.type == "subagent"
    )
    assert subagent.data["status"] == "refused"
    assert subagent.data["notice"] == child_notice
    assert subagent.data["category"] == "cyber"
    assert subagent.data["retry"] is False
    reported = [e for e in events if isinstance(e, RefusalReported)]
    assert [(r.scope, r.refused_item_id, r.notice) for r in reported] == [
        ("subagent", subagent.id, child_notice)
    ]
    tool_result = client.requests[2].messages[-1]
    assert tool_result.role == "tool" and tool_result.is_error
    assert child_notice is not None and child_notice in tool_result.content
    assert "Do not retry this task as it is" in tool_result.content
    # The child's own events stay inside it: the session has one turn.
    assert types(events).count("turn.started") == 1
    assert types(events).count("turn.failed") == 0


def test_a_refused_subagent_task_asked_for_again_is_not_sent_again() -> None:
    client = ScriptedClient(
        [spawn("bad task", "c1"), refusal(), spawn("bad task", "c2"), text("gave up")]
    )
    agent, _ = agent_for(client, subagents=SubagentPolicy())
    result = run(agent.run("delegate twice"))
    assert result.outcome is Outcome.SUCCESS
    assert len(client.requests) == 4  # parent, child, parent, parent: no second child call
    again = client.requests[3].messages[-1]
    assert '"repeated"' in again.content and '"status":"refused"' in again.content


def test_a_completed_subagent_gives_its_final_text_and_has_its_own_history() -> None:
    client = ScriptedClient([spawn("count files"), text("There are 3 files."), text("Done: 3.")])
    agent, _ = agent_for(client, subagents=SubagentPolicy())
    result = run(agent.run("delegate"))
    assert result.text == "Done: 3."
    child_request = client.requests[1]
    assert [m.content for m in child_request.messages] == ["count files"]
    assert "spawn_agent" not in [spec.name for spec in child_request.tools]
    assert (
        '"status":"completed","text":"There are 3 files."'
        in client.requests[2].messages[-1].content
    )


def test_subagents_are_not_offered_beyond_the_depth_limit() -> None:
    client = ScriptedClient([text("hi")])
    agent, _ = agent_for(client, subagents=SubagentPolicy(max_depth=0))
    run(agent.run("x"))
    assert client.requests[0].tools == []


def test_cancelling_a_run_ends_it_as_cancelled_with_its_events() -> None:
    class Hanging(ScriptedClient):
        async def complete(self, request: Any) -> Any:
            self.requests.append(request)
            await asyncio.sleep(60)

    client = Hanging([])
    agent, events = agent_for(client, stream=False)

    async def scenario() -> Outcome:
        task = asyncio.ensure_future(agent.run("wait"))
        while not client.requests:
            await asyncio.sleep(0.01)
        task.cancel()
        return (await task).outcome

    assert run(scenario()) is Outcome.CANCELLED
    assert types(events)[-2:] == ["turn.failed", "thread.completed"]
    completed = events[-1]
    assert isinstance(completed, ThreadCompleted)
    assert completed.to_json()["outcome_code"] == "cancelled"
    assert completed.to_json()["exit_code"] == 130


@pytest.mark.parametrize(
    ("outcome", "code"),
    [
        (Outcome.SUCCESS, 0),
        (Outcome.ERROR, 1),
        (Outcome.TURN_LIMIT, 1),
        (Outcome.REFUSED, 3),
        (Outcome.CONTENT_FILTERED, 4),
        (Outcome.CANCELLED, 130),
    ],
)
def test_each_outcome_has_its_documented_exit_code(outcome: Outcome, code: int) -> None:
    assert outcome.exit_code == code
    assert outcome.is_error is (outcome is not Outcome.SUCCESS)


def test_subagents_run_at_most_max_concurrent_at_once_and_nest_to_max_depth() -> None:
    running = [0]
    peak = [0]

    class Slow(ScriptedClient):
        def stream(self, request: Any) -> Any:
            inner = super().stream(request)
            events = inner._events

            async def tracked() -> Any:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
                await asyncio.sleep(0.05)
                async for event in events():
                    yield event
                running[0] -= 1

            inner._events = tracked  # type: ignore[method-assign]
            return inner

    two: list[StreamEvent] = [
        ToolCallDelta(0, "c1", "spawn_agent", orjson.dumps({"task": "task one"}).decode()),
        ToolCallDelta(1, "c2", "spawn_agent", orjson.dumps({"task": "task two"}).decode()),
        Verdict(FinishReason.TOOL_CALLS, "tool_use"),
    ]
    client = Slow([two, text("one done"), text("two done"), text("both done")])
    agent, _ = agent_for(client, subagents=SubagentPolicy(max_concurrent=1, max_depth=2))
    result = run(agent.run("delegate two"))
    assert result.text == "both done"
    assert peak[0] == 1
    # Depth 2: the children are offered spawn_agent themselves.
    assert "spawn_agent" in [spec.name for spec in client.requests[1].tools]


# --- The chat's API: approval, switching clients, the summary -----------------------------


def _writes() -> tuple[ToolRegistry, list[str]]:
    tools = ToolRegistry()
    written: list[str] = []

    @tools.tool(permission="write")
    def save(text: str) -> str:
        """Save a text."""
        written.append(text)
        return "saved"

    @tools.tool
    def peek() -> str:
        """Read something."""
        return "seen"

    return tools, written


def test_a_write_tool_runs_only_when_the_approval_hook_allows_it() -> None:
    tools, written = _writes()
    asked: list[tuple[str, str, str]] = []

    async def approve(call: ToolCall, tool: Tool) -> bool:
        asked.append((call.id, call.name, tool.permission))
        return True

    client = ScriptedClient([tool_call("save", '{"text": "hi"}', "call_1"), text("done")])
    agent, _ = agent_for(client, tools=tools, approve=approve)
    result = run(agent.run("save hi"))
    assert result.outcome is Outcome.SUCCESS
    assert asked == [("call_1", "save", "write")]
    assert written == ["hi"]


def test_a_declined_call_does_not_run_and_the_model_reads_that_the_user_declined() -> None:
    tools, written = _writes()

    async def deny(call: ToolCall, tool: Tool) -> bool:
        return False

    client = ScriptedClient([tool_call("save", '{"text": "hi"}', "call_1"), text("ok")])
    agent, events = agent_for(client, tools=tools, approve=deny)
    result = run(agent.run("save hi"))
    assert result.outcome is Outcome.SUCCESS
    assert written == []
    last = client.requests[1].messages[-1]
    assert (last.role, last.tool_call_id, last.is_error) == ("tool", "call_1", True)
    assert last.content == declined_message("save")
    assert "the user declined" in last.content
    outputs = [e.item for e in events if isinstance(e, ItemCompleted)]
    assert [i.type for i in outputs] == ["mcp_tool_call", "agent_message"]
    assert outputs[0].data["status"] == "failed" and outputs[0].data["declined"] is True
    assert outputs[0].data["error"] == {"message": declined_message("save")}


def test_read_tools_and_malformed_calls_are_never_put_to_the_approval_hook() -> None:
    tools, written = _writes()
    asked: list[str] = []

    async def approve(call: ToolCall, tool: Tool) -> bool:
        asked.append(call.name)
        return True

    client = ScriptedClient(
        [tool_call("peek", "{}", "c1"), tool_call("save", "{}", "c2"), text("ok")]
    )
    agent, _ = agent_for(client, tools=tools, approve=approve)
    assert run(agent.run("go")).outcome is Outcome.SUCCESS
    assert asked == []
    assert written == []


def test_an_approval_hook_that_fails_declines_the_call_without_ending_the_turn() -> None:
    tools, written = _writes()

    async def broken(call: ToolCall, tool: Tool) -> bool:
        raise RuntimeError("no terminal")

    client = ScriptedClient([tool_call("save", '{"text": "hi"}', "call_1"), text("ok")])
    agent, _ = agent_for(client, tools=tools, approve=broken)
    assert run(agent.run("save hi")).outcome is Outcome.SUCCESS
    assert written == []
    last = client.requests[1].messages[-1]
    assert last.is_error and "RuntimeError: no terminal" in last.content


def test_a_subagent_asks_the_same_approval_hook_before_it_writes() -> None:
    tools, written = _writes()
    asked: list[str] = []

    async def approve(call: ToolCall, tool: Tool) -> bool:
        asked.append(call.name)
        return False

    client = ScriptedClient(
        [spawn("save it"), tool_call("save", '{"text": "x"}', "c1"), text("no"), text("ok")]
    )
    agent, _ = agent_for(client, tools=tools, subagents=SubagentPolicy(), approve=approve)
    assert run(agent.run("delegate")).outcome is Outcome.SUCCESS
    assert asked == ["save"]
    assert written == []


def test_switching_clients_keeps_the_history_and_counts_every_clients_requests() -> None:
    first = ScriptedClient([text("one")], model="scripted:model-a")
    second = ScriptedClient([text("two")], model="scripted:model-b")
    agent, events = agent_for(first)
    agent.start()
    run(agent.run_turn("first question"))
    old = agent.switch_client(second)
    run(agent.run_turn("second question"))
    assert old is first and agent.client is second
    assert sent_texts(second.requests[0])[:2] == ["first question", "one"]
    assert second.requests[0].model == "model-b"
    completed = agent.finish()
    assert completed.requests == len(first.attempts) + len(second.attempts) == 2
    assert completed.num_turns == 2
    assert events[-1] is completed


def test_the_summary_is_built_from_the_last_turn_without_being_emitted() -> None:
    client = ScriptedClient([text("fine"), refusal()])
    agent, events = agent_for(client)
    assert agent.summary().outcome is Outcome.SUCCESS
    run(agent.run_turn("hello"))
    run(agent.run_turn(REFUSED_PROMPT))
    before = len(events)
    summary = agent.summary()
    assert len(events) == before
    assert not any(isinstance(e, ThreadCompleted) for e in events)
    assert summary.outcome is Outcome.REFUSED
    assert summary.stop_reason == "refusal"
    assert (summary.num_turns, summary.requests) == (2, 2)
    assert agent.summary(Outcome.CANCELLED).outcome is Outcome.CANCELLED
