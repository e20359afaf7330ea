"""OpenAI Chat Completions streams: refusals, filters, stops and errors, one chunk at a time.

Recorded streams are in tests/fixtures/openai-chat/ (see tests/fixtures/SOURCES.md); streams
and full responses written by hand are in tests/fixtures/openai-chat/written/ (see its
README.md). Every stream is checked for its verdict (the wire event that carries it, the
finish reason, raw value, category, explanation and notice), against the full response it
stands for, fed in pieces split anywhere, cut short, and mutated, by the checks in
_support.py (`Case`, `check_*`) that the Azure, Responses and compatible-vendor stream tests
run too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals import notice
from refusals.events import RefusalDelta, StreamError, TextDelta, Verdict
from refusals.model import FinishReason
from refusals.providers import normalize
from refusals.providers import openai_chat as chat_module
from refusals.providers import openai_responses as responses_module
from tests.providers._support import (
    CHAT_STREAMS,
    DECLINED,
    DONE,
    FILTERED,
    FIXTURES,
    INCOMPLETE,
    NEXT_STEP,
    Case,
    case_id,
    check_any_split,
    check_case,
    check_equivalent,
    check_fuzzed,
    check_truncations,
    decode,
    decode_with_events,
    first_event,
    sse_chunk,
    stream_files,
)


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> bytes:
    """One Chat Completions chunk as an SSE event (for streams built in a test)."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    body.update(extra)
    return sse_chunk(body)


# The streams ------------------------------------------------------------------------------

CASES = [
    Case(
        "openai-chat/stream-refusal.sse",
        provider="openai",
        verdict_index=1,
        finish=FinishReason.REFUSAL,
        raw="stop",
        notice=f"{DECLINED}: I'm sorry, I can't assist with that request. {NEXT_STEP}",
        content="I'm sorry, I can't assist with that request.",
        partner="openai-chat/written/stream-refusal.json",
    ),
    Case(
        "openai-chat/stream-refusal-logprobs.sse",
        provider="openai",
        verdict_index=1,
        finish=FinishReason.REFUSAL,
        raw="stop",
        notice=f"{DECLINED}: I'm very sorry, but I can't assist with that. {NEXT_STEP}",
        content="I'm very sorry, but I can't assist with that.",
        partner="openai-chat/refusal.json",
    ),
    Case(
        "openai-chat/stream-length.sse",
        provider="openai",
        verdict_index=2,
        finish=FinishReason.LENGTH,
        raw="length",
        content='{"',
        partner="openai-chat/length.json",
    ),
    Case(
        "openai-chat/stream-tool-calls.sse",
        provider="openai",
        verdict_index=15,
        finish=FinishReason.TOOL_CALLS,
        raw="tool_calls",
        partner="openai-chat/tool-calls.json",
    ),
    Case(
        "openai-chat/stream-stop.sse",
        provider="openai",
        verdict_index=31,
        finish=FinishReason.STOP,
        raw="stop",
        content="I'm unable to provide real-time weather updates. To get the current weather in "
        "San Francisco, I recommend checking a reliable weather website or a weather app.",
        partner="openai-chat/written/stream-stop.json",
    ),
    Case(
        "openai-chat/moderation-stream.sse",
        provider="openai",
        verdict_index=3,
        finish=FinishReason.STOP,
        raw="stop",
        content="Paris.",
        partner="openai-chat/written/moderation-stream.json",
    ),
    Case(
        "openai-chat/written/stream-refusal-after-content.sse",
        provider="openai",
        verdict_index=5,
        finish=FinishReason.REFUSAL,
        raw="stop",
        explanation="I can't continue with the rest of this request.",
        notice=f"{DECLINED}: I can't continue with the rest of this request. {NEXT_STEP}",
        cut_off=True,
        content="Sure, here is an outline.\n\nI can't continue with the rest of this request.",
        partner="openai-chat/written/refusal-after-content.json",
    ),
    Case(
        "openai-chat/written/stream-content-filter.sse",
        provider="openai",
        verdict_index=5,
        finish=FinishReason.CONTENT_FILTER,
        raw="content_filter",
        notice=f"{FILTERED}. {NEXT_STEP}",
        cut_off=True,
        content="Here is the first part of the story, before",
        partner="openai-chat/written/content-filter.json",
    ),
    Case(
        "openai-chat/written/stream-function-call-legacy.sse",
        provider="openai",
        verdict_index=5,
        finish=FinishReason.TOOL_CALLS,
        raw="function_call",
        partner="openai-chat/written/function-call-legacy.json",
    ),
    Case(
        "openai-chat/written/stream-unknown-finish-reason.sse",
        provider="openai",
        verdict_index=3,
        finish=FinishReason.ERROR,
        raw="a_finish_reason_from_the_future",
        cut_off=True,
        content="Partial answer",
        partner="openai-chat/written/unknown-finish-reason.json",
    ),
    Case(
        "openai-chat/written/stream-parallel-tool-calls.sse",
        provider="openai",
        verdict_index=9,
        finish=FinishReason.TOOL_CALLS,
        raw="tool_calls",
        partner="openai-chat/written/parallel-tool-calls.json",
    ),
    Case(
        "openai-chat/written/stream-error-invalid-prompt.sse",
        provider="openai",
        verdict_index=0,
        finish=FinishReason.CONTENT_FILTER,
        raw="invalid_prompt",
        category="invalid_prompt",
        explanation="Invalid prompt: your prompt was flagged as potentially violating our usage "
        "policy. Please try again with a different prompt: "
        "https://platform.openai.com/docs/guides/reasoning#advice-on-prompting",
        notice=f"{FILTERED} (category: invalid_prompt): Invalid prompt: your prompt was flagged "
        "as potentially violating our usage policy. Please try again with a different prompt: "
        f"https://platform.openai.com/docs/guides/reasoning#advice-on-prompting. {NEXT_STEP}",
        partner="openai-chat/written/error-invalid-prompt.json",
    ),
    Case(
        "openai-chat/written/stream-error-server-after-text.sse",
        provider="openai",
        verdict_index=3,
        finish=FinishReason.ERROR,
        raw=None,
        explanation="The server had an error while processing your request. Sorry about that!",
        cut_off=True,
        content="The answer starts",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_each_stream_gives_its_verdict_on_the_event_that_carries_it(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.partner], ids=case_id)
def test_each_stream_agrees_with_its_full_response(case: Case) -> None:
    check_equivalent(case)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_stream_split_anywhere_decodes_as_in_one_piece(case: Case) -> None:
    check_any_split(case)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_stream_cut_short_is_an_error_until_a_refusal_or_filter_was_seen(case: Case) -> None:
    check_truncations(case)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.data())
def test_cut_mutated_or_reshuffled_streams_never_raise_nor_turn_a_block_into_a_stop(
    data: st.DataObject,
) -> None:
    check_fuzzed(data, CASES)


# Refusals -------------------------------------------------------------------------------


def test_the_empty_refusal_of_the_role_chunk_is_no_verdict() -> None:
    response, decoder, events = decode_with_events(
        (FIXTURES / "openai-chat/stream-refusal.sse").read_bytes()
    )
    verdicts = [e for e in events if isinstance(e, Verdict)]
    # The first verdict is the refusal (chunk 1); the "stop" of chunk 11 keeps it a refusal.
    assert verdicts[0] == Verdict(FinishReason.REFUSAL)
    assert decoder.verdict_index == 1
    assert next(e.text for e in events if isinstance(e, RefusalDelta)) == "I'm"
    assert response.finish_reason is FinishReason.REFUSAL


def test_a_refusal_is_not_undone_by_the_stop_that_follows_it() -> None:
    data = chunk({"refusal": "No."}) + chunk({}, "stop") + DONE
    response, decoder = decode(data)
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.raw_finish_reason == "stop"
    assert decoder.verdict_index == 0


def test_refusal_logprobs_are_not_read_as_refusal_text() -> None:
    plain, _ = decode((FIXTURES / "openai-chat/stream-refusal-logprobs.sse").read_bytes())
    # Each chunk also carries logprobs.refusal tokens; the content is the refusal once.
    assert plain.content == "I'm very sorry, but I can't assist with that."
    assert plain.reasoning is None


def test_blank_refusal_pieces_wait_for_the_first_words() -> None:
    data = chunk({"refusal": " "}) + chunk({"refusal": "\n"}) + chunk({"refusal": "I can't."})
    data += chunk({}, "stop") + DONE
    response, decoder = decode(data)
    assert decoder.verdict_index == 2
    assert response.content == " \nI can't."
    assert notice(response) == f"{DECLINED}: I can't. {NEXT_STEP}"


def test_a_refusal_of_blanks_only_is_no_refusal_as_in_a_full_response() -> None:
    data = chunk({"content": "Hi", "refusal": "  "}) + chunk({}, "stop") + DONE
    response, _ = decode(data)
    assert response.finish_reason is FinishReason.STOP
    assert response.content == "Hi"


def test_refusal_text_after_an_answer_is_a_cut_off_answer_with_the_refusal_explained() -> None:
    path = FIXTURES / "openai-chat/written/stream-refusal-after-content.sse"
    response, decoder, events = decode_with_events(path.read_bytes())
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert texts[-5:] == ["\n\nI", " can't", " continue", " with the rest", " of this request."]
    assert response.cut_off is True
    assert decoder.verdict_index == 5


def test_a_refusal_cut_off_before_its_finish_keeps_what_it_said() -> None:
    path = FIXTURES / "openai-chat/written/stream-refusal-after-content.sse"
    data = path.read_bytes()
    cut = data[: data.index(b"rest")]
    response, _ = decode(cut)
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.stop_details is not None
    # The chunk cut in the middle is not JSON: the refusal is what came before it.
    assert response.stop_details.explanation == "I can't continue"


# Completion and truncation ---------------------------------------------------------------


def test_a_stream_without_done_is_complete_once_its_finish_arrived() -> None:
    # Recordings of one chunk per line drop `[DONE]`; the finish chunk ends the answer.
    data = (FIXTURES / "openai-chat/stream-length.sse").read_bytes()
    cut = data[: data.index(b"data: [DONE]")]
    response, _, events = decode_with_events(cut)
    assert response.finish_reason is FinishReason.LENGTH
    assert not [e for e in events if isinstance(e, StreamError)]


def test_a_stream_cut_before_its_finish_is_an_error_that_says_so() -> None:
    data = (FIXTURES / "openai-chat/stream-stop.sse").read_bytes()
    cut = data[: data.index(b'"finish_reason":"stop"')]
    cut = cut[: cut.rindex(b"\n\n") + 2]
    response, decoder, events = decode_with_events(cut)
    assert response.finish_reason is FinishReason.ERROR
    assert response.cut_off is True
    assert decoder.verdict_index is None
    assert [e.message for e in events if isinstance(e, StreamError)] == [INCOMPLETE]


# Tool calls ------------------------------------------------------------------------------


def test_tool_call_pieces_without_an_index_are_matched_by_their_id() -> None:
    first = {"id": "call_a", "type": "function", "function": {"name": "look", "arguments": "{"}}
    second = {"id": "call_b", "type": "function", "function": {"name": "find", "arguments": "{"}}
    data = chunk({"tool_calls": [first, second]})
    data += chunk({"tool_calls": [{"id": "call_a", "function": {"arguments": '"a":1}'}}]})
    data += chunk({"tool_calls": [{"id": "call_b", "function": {"arguments": '"b":2}'}}]})
    data += chunk({}, "tool_calls") + DONE
    response, _ = decode(data)
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_a", "look", '{"a":1}'),
        ("call_b", "find", '{"b":2}'),
    ]
    assert response.finish_reason is FinishReason.TOOL_CALLS


def test_a_tool_name_split_in_pieces_is_joined_and_one_repeated_whole_is_kept_once() -> None:
    split = {"index": 0, "id": "call_a", "function": {"name": "look", "arguments": ""}}
    rest = {"index": 0, "function": {"name": "up", "arguments": "{}"}}
    repeated = {"index": 1, "id": "call_b", "function": {"name": "find", "arguments": "{"}}
    again = {"index": 1, "id": "call_b", "function": {"name": "find", "arguments": "}"}}
    data = chunk({"tool_calls": [split, repeated]}) + chunk({"tool_calls": [rest, again]})
    data += chunk({}, "tool_calls") + DONE
    response, _ = decode(data)
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("lookup", "{}"),
        ("find", "{}"),
    ]


# Other chunks ----------------------------------------------------------------------------


def test_only_the_first_choice_is_the_response() -> None:
    other = {"index": 1, "delta": {"refusal": "Not me."}, "finish_reason": None}
    data = chunk({"content": "Yes."})
    data += chunk(choices=[other, {"index": 0, "delta": {"content": " Sure."}}])
    data += chunk({}, "stop") + DONE
    response, _ = decode(data)
    assert response.finish_reason is FinishReason.STOP
    assert response.content == "Yes. Sure."


def test_a_flagged_moderation_result_is_recorded_but_blocks_nothing() -> None:
    data = (FIXTURES / "openai-chat/moderation-stream.sse").read_bytes()
    flagged = data.replace(b'"flagged":false', b'"flagged":true', 1)
    flagged = flagged.replace(b'"violence":false', b'"violence":true', 1)
    response, _ = decode(flagged)
    assert response.finish_reason is FinishReason.STOP
    moderation = [d for d in response.decoded_details() if d.get("type") == "moderation"]
    assert moderation == [
        {
            "type": "moderation",
            "source": "input",
            "flagged": True,
            "categories": ["violence"],
            "model": "omni-moderation-latest",
        }
    ]


def test_a_moderation_result_that_says_it_blocked_makes_a_content_filter_on_its_chunk() -> None:
    data = (FIXTURES / "openai-chat/moderation-stream.sse").read_bytes()
    blocked = data.replace(b'"flagged":false', b'"flagged":true,"blocked":true', 1)
    blocked = blocked.replace(b'"violence":false', b'"violence":true', 1)
    response, decoder = decode(blocked)
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert decoder.verdict_index == 5
    assert response.raw_finish_reason == "stop"
    assert notice(response) == f"{FILTERED} (category: violence). {NEXT_STEP}"
    body = orjson.loads((FIXTURES / "openai-chat/written/moderation-stream.json").read_bytes())
    body["moderation"]["input"]["results"][0].update(blocked=True, flagged=True)
    body["moderation"]["input"]["results"][0]["categories"]["violence"] = True
    full = normalize(body)
    assert (full.finish_reason, notice(full)) == (response.finish_reason, notice(response))


def test_the_usage_chunk_gives_the_token_counts() -> None:
    response, _ = decode((FIXTURES / "openai-chat/stream-tool-calls.sse").read_bytes())
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (76, 24)
    assert response.model == "gpt-4o-2024-08-06"
    assert response.request_id == "chatcmpl-ABfw8AOXnoa2kzy11vVTSjuQhHCQr"


def test_a_chunk_that_is_not_an_object_is_an_error_not_an_exception() -> None:
    data = chunk({"content": "Hi"}) + b"data: [1, 2]\n\n" + chunk({}, "stop") + DONE
    response, _ = decode(data)
    assert response.finish_reason is FinishReason.ERROR
    assert response.content == "Hi"


def test_an_error_event_named_error_ends_the_answer_as_an_error() -> None:
    # LM Studio: `event: error` with a message, and nothing after it.
    error = {"error": {"message": "The model crashed."}, "message": "The model crashed."}
    data = chunk({"content": "Hi"}) + b"event: error\ndata: " + orjson.dumps(error) + b"\n\n"
    response, _, events = decode_with_events(data)
    assert response.finish_reason is FinishReason.ERROR
    assert [e.message for e in events if isinstance(e, StreamError)] == ["The model crashed."]


# Detection -------------------------------------------------------------------------------

OTHER_STREAMS = [
    path
    for path in stream_files(
        "anthropic", "bedrock", "gemini", "other", "openai-responses", "ollama", "azure"
    )
    if path not in CHAT_STREAMS
]


@pytest.mark.parametrize("path", CHAT_STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_first_chunk_of_every_chat_stream_is_recognised(path: Path) -> None:
    name, payload = first_event(path)
    assert chat_module.detect_stream(name, payload) is not None
    assert responses_module.detect_stream(name, payload) is None


@pytest.mark.parametrize("path", OTHER_STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_first_event_of_other_formats_is_never_claimed(path: Path) -> None:
    name, payload = first_event(path)
    assert chat_module.detect_stream(name, payload) is None


@pytest.mark.parametrize(
    ("name", "payload"),
    [
        ("message_start", {"type": "message_start", "message": {}}),
        (None, {"type": "error", "error": {"type": "overloaded_error", "message": "x"}}),
        (None, {"error": "model 'llama3' not found"}),
        (None, {"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}),
        (None, {"model": "llama3", "message": {"content": "Hi"}, "done": False}),
        (None, {"candidates": []}),
        ("response.created", {"type": "response.created", "response": {}}),
        (None, None),
        (None, [1, 2]),
        ("content_block_delta", {"choices": []}),
    ],
)
def test_events_of_other_formats_are_never_claimed(name: str | None, payload: Any) -> None:
    assert chat_module.detect_stream(name, payload) is None


def test_the_vendor_is_read_from_the_first_chunk() -> None:
    base = {"object": "chat.completion.chunk", "choices": []}
    assert chat_module.detect_stream(None, {**base, "model": "gpt-4o"}) == "openai"
    assert chat_module.detect_stream("message", {**base, "model": "deepseek-chat"}) == "deepseek"
    assert chat_module.detect_stream(None, {**base, "provider": "OpenAI"}) == "openrouter"
    assert chat_module.detect_stream(None, {"choices": [], "prompt_annotations": []}) == "azure"
    assert chat_module.detect_stream("error", {"error": {"message": "x"}}) == "openai"
