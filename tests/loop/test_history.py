"""What the transcript sends again, and the assistant turn built from a response."""

from __future__ import annotations

from refusals.loop.history import Transcript, assistant_message
from refusals.model import Fallback, LLMResponse, ToolCall
from refusals.request import Message

FALLBACK = Fallback("claude-a", "claude-b", "refusal").to_detail()


def test_withdrawn_entries_are_kept_but_never_sent() -> None:
    transcript = Transcript()
    transcript.add(Message("user", "first"), turn=1)
    transcript.add(Message("assistant", "answer"), turn=1)
    transcript.add(Message("user", "refused"), turn=2, item_id="item_3")
    transcript.add_fragment("partial", turn=2, item_id="item_4")
    withdrawn = transcript.withdraw_turn(2, refused=True)
    assert [e.item_id for e in withdrawn] == ["item_3", "item_4"]
    assert [m.content for m in transcript.messages()] == ["first", "answer"]
    assert [(e.message.content, e.refused, e.cut_off) for e in transcript.withdrawn] == [
        ("refused", True, False),
        ("partial", True, True),
    ]


def test_an_answer_served_by_a_server_side_fallback_goes_back_with_its_fallback_block() -> None:
    response = LLMResponse(
        content="From B.",
        tool_calls=[ToolCall("call_1", "read_file", '{"path": "a"}')],
        reasoning_details=[FALLBACK],
        provider="anthropic",
    )
    message = assistant_message(response, server_fallback=True)
    assert message.blocks == [
        {
            "type": "fallback",
            "from": {"model": "claude-a"},
            "to": {"model": "claude-b"},
            "trigger": {"type": "refusal"},
        },
        {"type": "text", "text": "From B."},
        {"type": "tool_use", "id": "call_1", "name": "read_file", "input": {"path": "a"}},
    ]


def test_client_side_hops_and_other_providers_send_no_provider_blocks() -> None:
    anthropic = LLMResponse(content="x", reasoning_details=[FALLBACK], provider="anthropic")
    openai = LLMResponse(content="x", reasoning_details=[FALLBACK], provider="openai")
    assert assistant_message(anthropic).blocks is None
    assert assistant_message(openai, server_fallback=True).blocks is None
    plain = assistant_message(LLMResponse(content="x", provider="anthropic"), server_fallback=True)
    assert (plain.content, plain.blocks) == ("x", None)
