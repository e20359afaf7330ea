"""Anthropic Messages streams: the verdict on the event that carries it, fallback seams,
stream errors, incomplete streams, and agreement with the matching full responses.

Every real stream in `tests/fixtures/anthropic/` is decoded, and every written stream
under `written/` covers a signal no recording shows. A stream and its full response must
give the same finish reason, category, explanation, content and notice; notices are
asserted whole, since every surface shows them verbatim.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals import ErrorKind, Fallback, FinishReason, LLMResponse, StopDetails, normalize, notice
from refusals.events import (
    FallbackSeam,
    ReasoningDelta,
    StreamError,
    TextDelta,
    ToolCallDelta,
    UsageUpdate,
    Verdict,
)
from refusals.model import detail_type
from refusals.providers import anthropic
from refusals.transport.framing import SSEParser
from refusals.transport.streams import StreamDecoder, decode_stream
from tests.providers._support import (
    DECLINED,
    DETECTING,
    FILTERED,
    FIXTURES,
    INCOMPLETE,
    NEXT_STEP,
    WRONG_VALUES,
    decode_closing,
    event_json,
    facts,
    feed_events,
    json_paths,
    other_providers_events,
    replace_at,
)

ANTHROPIC = FIXTURES / "anthropic"
WRITTEN = ANTHROPIC / "written"
TERMINAL = (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER)
# Detection without a provider name asks every module in turn; until each has its stream
# decoder, the property tests name the provider.
AUTO: list[str | None] = (
    [None, "anthropic"] if all(hasattr(m, "detect_stream") for m in DETECTING) else ["anthropic"]
)


def read(name: str) -> bytes:
    return (ANTHROPIC / name).read_bytes()


def decode(raw: bytes, provider: str | None = "anthropic") -> tuple[LLMResponse, StreamDecoder]:
    response, decoder = decode_stream(raw, provider=provider)
    assert response.provider == "anthropic"
    assert response.api == "messages"
    return response, decoder


def wire_events(raw: bytes) -> list[tuple[str | None, Any]]:
    """The (event name, decoded payload) pairs of an SSE body or a JSON-lines recording."""
    if raw.lstrip()[:1] == b"{":
        return [(None, json.loads(line)) for line in raw.splitlines() if line.strip()]
    parser = SSEParser()
    return [(e.event, _json(e.data)) for e in [*parser.feed(raw), *parser.close()]]


def _json(data: str | bytes) -> Any:
    try:
        return json.loads(data)
    except json.JSONDecodeError:
        return None  # `[DONE]` and other non-JSON data of other providers' streams


def to_sse(events: Sequence[tuple[str | None, Any]]) -> bytes:
    """SSE text naming each event after its payload `type`, as the API sends it."""
    out = []
    for name, payload in events:
        kind = name or (payload.get("type") if isinstance(payload, dict) else None)
        head = f"event: {kind}\n" if isinstance(kind, str) else ""
        out.append(f"{head}data: {json.dumps(payload)}\n\n")
    return "".join(out).encode()


# --- every stream, its verdict and its full response ---------------------------------------


class Case(NamedTuple):
    stream: str
    full: str | None
    verdict_index: int
    finish: FinishReason
    raw: str | None
    category: str | None
    explanation: str | None
    notice: str | None
    cut_off: bool


CYBER_VERCEL = (
    "This request triggered restrictions on violative cyber content and was blocked under "
    "Anthropic's Usage Policy."
)
EXTRACTION = "MCP server output asked the model to reveal its hidden reasoning."

CASES = [
    Case(
        "stream-refusal-cyber.sse",
        "written/stream-refusal-cyber.json",
        3,
        FinishReason.REFUSAL,
        "refusal",
        "cyber",
        "This request was refused due to policy.",
        f"{DECLINED} (category: cyber): this request was refused due to policy. {NEXT_STEP}",
        False,
    ),
    Case(
        "vercel-refusal-cyber.chunks.txt",
        "vercel-refusal-cyber.json",
        2,
        FinishReason.REFUSAL,
        "refusal",
        "cyber",
        CYBER_VERCEL,
        f"{DECLINED} (category: cyber): this request triggered restrictions on violative "
        "cyber content and was blocked under Anthropic's Usage Policy. A fallback to "
        f"`claude-fable-5` was recommended but could not run. {NEXT_STEP}",
        False,
    ),
    Case(
        # Thinking, then one word of text, then a refusal with only fallback facts: the
        # cut-off text is the explanation, as in the full response.
        "fable-fallback-stream-a-refusal.sse",
        "written/fable-fallback-stream-a-refusal.json",
        12,
        FinishReason.REFUSAL,
        "refusal",
        None,
        None,
        f"{DECLINED}: hi. {NEXT_STEP}",
        True,
    ),
    Case(
        "fable-fallback-stream-a-toolrefusal.sse",
        "written/fable-fallback-stream-a-toolrefusal.json",
        16,
        FinishReason.REFUSAL,
        "refusal",
        None,
        None,
        f"{DECLINED}: here's a summary of this year's solar eclipses and how. {NEXT_STEP}",
        True,
    ),
    Case(
        "fable-fallback-stream-b-fallback.sse",
        "written/fable-fallback-stream-b-fallback.json",
        19,
        FinishReason.STOP,
        "end_turn",
        None,
        None,
        None,
        False,
    ),
    Case(
        "stream-fallback-block.sse",
        "written/stream-fallback-block.json",
        6,
        FinishReason.STOP,
        "end_turn",
        None,
        None,
        None,
        False,
    ),
    Case(
        "vercel-server-fallback.chunks.txt",
        "vercel-server-fallback.json",
        7,
        FinishReason.STOP,
        "end_turn",
        None,
        None,
        None,
        False,
    ),
    Case(
        "stream-fallback-credit-redeemed.sse",
        "written/stream-fallback-credit-redeemed.json",
        4,
        FinishReason.STOP,
        "end_turn",
        None,
        None,
        None,
        False,
    ),
    Case(
        "stream-end-turn-basic.sse",
        "written/stream-end-turn-basic.json",
        7,
        FinishReason.STOP,
        "end_turn",
        None,
        None,
        None,
        False,
    ),
    Case(
        "stream-end-turn-recorded.sse",
        "written/stream-end-turn-recorded.json",
        8,
        FinishReason.STOP,
        "end_turn",
        None,
        None,
        None,
        False,
    ),
    Case(
        "stream-tool-use.sse",
        "written/stream-tool-use.json",
        13,
        FinishReason.TOOL_CALLS,
        "tool_use",
        None,
        None,
        None,
        False,
    ),
    Case(
        "stream-max-tokens-partial-tool-json.sse",
        "written/stream-max-tokens-partial-tool-json.json",
        14,
        FinishReason.LENGTH,
        "max_tokens",
        None,
        None,
        None,
        False,
    ),
    Case(
        "pause-turn-web-search-stream.sse",
        "written/pause-turn-web-search-stream.json",
        166,
        FinishReason.PAUSE,
        "pause_turn",
        None,
        None,
        None,
        False,
    ),
    Case(
        "written/stream-refusal-new-category.sse",
        "written/refusal-new-category.json",
        12,
        FinishReason.REFUSAL,
        "refusal",
        "new_category_2027",
        "Requests of this kind are not supported.",
        f"{DECLINED} (category: new_category_2027): requests of this kind are not supported. "
        + NEXT_STEP,
        True,
    ),
    Case(
        "written/stream-refusal-fallback-iterations.sse",
        "written/refusal-fallback-iterations.json",
        2,
        FinishReason.REFUSAL,
        "refusal",
        "bio",
        "This request asked for synthesis steps for a dangerous pathogen.",
        f"{DECLINED} (category: bio): this request asked for synthesis steps for a dangerous "
        f"pathogen. The configured fallback model also declined. {NEXT_STEP}",
        False,
    ),
    Case(
        "written/stream-fallback-then-refusal.sse",
        "written/stream-fallback-then-refusal.json",
        6,
        FinishReason.REFUSAL,
        "refusal",
        "cyber",
        "This request asked for help attacking systems the user does not own.",
        f"{DECLINED} (category: cyber): this request asked for help attacking systems the "
        f"user does not own. The configured fallback model also declined. {NEXT_STEP}",
        True,
    ),
    Case(
        "written/stream-fallback-block-trigger.sse",
        "written/fallback-block-trigger.json",
        13,
        FinishReason.STOP,
        "end_turn",
        None,
        None,
        None,
        False,
    ),
    Case(
        "written/stream-tool-use-thinking.sse",
        "written/tool-use-thinking.json",
        16,
        FinishReason.TOOL_CALLS,
        "tool_use",
        None,
        None,
        None,
        False,
    ),
    Case(
        "written/stream-max-tokens.sse",
        "written/max-tokens.json",
        5,
        FinishReason.LENGTH,
        "max_tokens",
        None,
        None,
        None,
        False,
    ),
    Case(
        "written/stream-model-context-window-exceeded.sse",
        "written/model-context-window-exceeded.json",
        4,
        FinishReason.LENGTH,
        "model_context_window_exceeded",
        None,
        None,
        None,
        False,
    ),
    Case(
        "written/stream-unknown-stop-reason.sse",
        "written/unknown-stop-reason.json",
        4,
        FinishReason.ERROR,
        "paused_for_review_2027",
        None,
        None,
        None,
        True,
    ),
    Case(
        "written/stream-stop-sequence.sse",
        "stop-sequence.json",
        5,
        FinishReason.STOP,
        "stop_sequence",
        None,
        None,
        None,
        False,
    ),
    Case(
        "written/stream-compaction.sse",
        "written/compaction.json",
        3,
        FinishReason.PAUSE,
        "compaction",
        None,
        None,
        None,
        False,
    ),
    Case(
        "written/stream-refusal-no-stop-details.sse",
        "written/refusal-stop-details-absent.json",
        5,
        FinishReason.REFUSAL,
        "refusal",
        None,
        None,
        f"{DECLINED}: I can't help with that request. {NEXT_STEP}",
        True,
    ),
    Case(
        "written/stream-refusal-later-null-details.sse",
        "written/refusal-reasoning-extraction.json",
        1,
        FinishReason.REFUSAL,
        "refusal",
        "reasoning_extraction",
        EXTRACTION,
        f"{DECLINED} (category: reasoning_extraction): MCP server output asked the model to "
        f"reveal its hidden reasoning. {NEXT_STEP}",
        False,
    ),
    Case(
        "written/stream-refusal-details-first.sse",
        "written/refusal-reasoning-extraction.json",
        2,
        FinishReason.REFUSAL,
        "refusal",
        "reasoning_extraction",
        EXTRACTION,
        f"{DECLINED} (category: reasoning_extraction): MCP server output asked the model to "
        f"reveal its hidden reasoning. {NEXT_STEP}",
        False,
    ),
    Case(
        "written/stream-error-output-blocked.sse",
        "written/error-400-output-blocked.json",
        2,
        FinishReason.CONTENT_FILTER,
        "invalid_request_error",
        None,
        "Output blocked by content filtering policy",
        f"{FILTERED}: output blocked by content filtering policy. {NEXT_STEP}",
        False,
    ),
    Case(
        # The full counterpart is the error body: it has no partial text, the stream has.
        "written/stream-error-overloaded.sse",
        "written/error-529-overloaded.json",
        4,
        FinishReason.ERROR,
        "overloaded_error",
        None,
        "Overloaded",
        None,
        True,
    ),
    Case(
        "written/stream-citations-future-events.sse",
        "written/stream-citations-future-events.json",
        7,
        FinishReason.STOP,
        "end_turn",
        None,
        None,
        None,
        False,
    ),
    Case(
        "written/stream-truncated-after-text.sse",
        None,
        -1,
        FinishReason.ERROR,
        None,
        None,
        None,
        None,
        True,
    ),
]
STREAMS = [case.stream for case in CASES]
SIGNAL_STREAMS = [case.stream for case in CASES if case.finish in TERMINAL]


def test_every_stream_fixture_has_a_case() -> None:
    on_disk = {
        str(path.relative_to(ANTHROPIC))
        for pattern in ("*.sse", "*.chunks.txt", "written/*.sse")
        for path in ANTHROPIC.glob(pattern)
    }
    assert on_disk == set(STREAMS)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.stream)
def test_a_stream_reports_its_verdict_on_the_event_that_carries_it(case: Case) -> None:
    response, decoder = decode(read(case.stream))

    assert decoder.verdict_index == (case.verdict_index if case.verdict_index >= 0 else None)
    assert response.finish_reason is case.finish
    assert response.raw_finish_reason == case.raw
    stop = response.stop_details
    assert (stop.category if stop else None) == case.category
    assert (stop.explanation if stop else None) == case.explanation
    assert notice(response) == case.notice
    assert response.cut_off is case.cut_off


@pytest.mark.parametrize("case", [c for c in CASES if c.full], ids=lambda c: c.stream)
def test_a_stream_agrees_with_its_full_response(case: Case) -> None:
    assert case.full is not None
    streamed, _ = decode(read(case.stream))
    full = normalize(read(case.full), provider="anthropic")

    expected = facts(full)
    if case.stream == "written/stream-error-overloaded.sse":
        # An error body has no partial text; the stream keeps what arrived, cut off.
        expected["content"] = "Here is the first part of"
    assert facts(streamed) == expected
    assert streamed.raw_finish_reason == full.raw_finish_reason
    if streamed.error is None:
        assert streamed.reasoning == full.reasoning
        assert [(t.id, t.name) for t in streamed.tool_calls] == [
            (t.id, t.name) for t in full.tool_calls
        ]
        assert streamed.fallbacks == full.fallbacks
        assert streamed.usage is not None and full.usage is not None
        assert streamed.usage.iterations == full.usage.iterations
        assert streamed.model == full.model
        assert streamed.cut_off is full.cut_off
    else:
        assert streamed.error == full.error


def test_every_stream_is_recognised_as_anthropic_from_its_first_event() -> None:
    for name in STREAMS:
        response, decoder = decode(read(name), provider=None)
        assert decoder.provider == "anthropic", name
        assert response == decode(read(name))[0], name


# --- the Messages signals, one by one ------------------------------------------------------


def test_a_refusal_verdict_is_returned_by_the_feed_call_that_completes_its_event() -> None:
    raw = read("stream-refusal-cyber.sse")
    decoder = StreamDecoder()
    seen: list[tuple[int, Verdict]] = []
    for offset in range(len(raw)):
        for event in decoder.feed(raw[offset : offset + 1]):
            if isinstance(event, Verdict):
                seen.append((decoder.events_seen - 1, event))
    decoder.close()

    stop = StopDetails(category="cyber", explanation="This request was refused due to policy.")
    assert seen == [(3, Verdict(FinishReason.REFUSAL, "refusal", stop))]
    # The verdict is known before message_stop arrives.
    end_of_delta = raw.index(b"event: message_stop")
    partial = StreamDecoder()
    partial.feed(raw[:end_of_delta])
    assert partial.response.finish_reason is FinishReason.REFUSAL


def test_a_fallback_block_without_deltas_is_kept_in_place_as_a_seam() -> None:
    decoder = anthropic.StreamReader("anthropic")
    events = [
        decoder.feed(name, json.dumps(payload))
        for name, payload in wire_events(read("written/stream-fallback-block-trigger.sse"))
    ]
    decoder.close()

    seam = Fallback("claude-fable-5", "claude-opus-4-8", "refusal")
    assert events[5] == [FallbackSeam(seam)]  # content_block_start of the fallback block
    assert events[6] == []  # its content_block_stop: nothing more
    response = decoder.response
    assert response.fallbacks == [seam]
    assert response.served_by_fallback is True
    assert response.model == "claude-opus-4-8"  # the model that served what follows
    assert [detail_type(d) for d in response.decoded_details()] == [
        "thinking",
        "fallback",
        "redacted_thinking",
    ]
    assert response.content == "Here is a summary of the incident report."
    assert response.finish_reason is FinishReason.STOP


def test_the_recorded_fallback_stream_is_served_by_the_fallback_model() -> None:
    response, _ = decode(read("vercel-server-fallback.chunks.txt"))

    assert response.model == "claude-opus-4-8"
    assert response.fallback_model == "claude-opus-4-8"
    assert response.declined_models == ["claude-fable-5"]
    assert response.fallbacks == [Fallback("claude-fable-5", "claude-opus-4-8")]
    assert notice(response) is None


def test_a_fallback_model_that_also_refuses_says_so_and_keeps_the_seam() -> None:
    response, _ = decode(read("written/stream-fallback-then-refusal.sse"))

    assert response.fallbacks == [Fallback("claude-fable-5", "claude-opus-4-8", "refusal")]
    assert response.content == "To scan the network, first"
    assert response.cut_off is True
    assert "The configured fallback model also declined." in (notice(response) or "")


def test_a_later_message_delta_with_null_stop_details_keeps_the_earlier_ones() -> None:
    response, decoder = decode(read("written/stream-refusal-later-null-details.sse"))

    assert decoder.verdict_index == 1
    assert response.stop_details == StopDetails(
        category="reasoning_extraction", explanation=EXTRACTION
    )


def test_stop_details_ahead_of_the_stop_reason_ride_on_the_verdict() -> None:
    decoder = anthropic.StreamReader("anthropic")
    events = [
        decoder.feed(name, json.dumps(payload))
        for name, payload in wire_events(read("written/stream-refusal-details-first.sse"))
    ]

    stop = StopDetails(category="reasoning_extraction", explanation=EXTRACTION)
    assert not any(isinstance(e, Verdict) for e in events[1])
    assert [e for e in events[2] if isinstance(e, Verdict)] == [
        Verdict(FinishReason.REFUSAL, "refusal", stop)
    ]


def test_stop_details_after_the_verdict_are_merged_without_erasing_anything() -> None:
    events = wire_events(read("stream-refusal-cyber.sse"))
    later = {
        "type": "message_delta",
        "delta": {
            "stop_reason": None,
            "stop_details": {"type": "refusal", "category": "bio", "recommended_model": "m2"},
        },
        "usage": {"output_tokens": 3},
    }
    events.insert(4, ("message_delta", later))
    response, decoder = decode(to_sse(events))

    assert decoder.verdict_index == 3
    assert response.stop_details == StopDetails(
        category="cyber",
        explanation="This request was refused due to policy.",
        recommended_model="m2",
    )


def test_a_later_stop_reason_never_replaces_a_refusal() -> None:
    events = wire_events(read("stream-refusal-cyber.sse"))
    end_turn = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}}
    events.insert(4, ("message_delta", end_turn))
    response, decoder = decode(to_sse(events))

    assert response.finish_reason is FinishReason.REFUSAL
    assert response.raw_finish_reason == "refusal"
    assert decoder.verdict_index == 3


def test_partial_text_before_a_refusal_is_kept_and_marked_cut_off() -> None:
    response, _ = decode(read("written/stream-refusal-new-category.sse"))

    assert response.content == "Sure, the first step is to"
    assert response.cut_off is True
    assert response.reasoning == "The user is asking about the weights of another lab's model."
    assert response.stop_details == StopDetails(
        category="new_category_2027",
        explanation="Requests of this kind are not supported.",
        fallback_credit_token="tok_written_fixture_0001",
        fallback_has_prefill_claim=True,
    )


def test_thinking_signatures_and_redacted_thinking_become_details_in_block_order() -> None:
    response, _ = decode(read("written/stream-tool-use-thinking.sse"))
    full = normalize(read("written/tool-use-thinking.json"), provider="anthropic")

    assert list(response.reasoning_details or []) == list(full.reasoning_details or [])
    assert response.reasoning == "I should look up the weather first."


def test_two_thinking_blocks_are_joined_like_a_full_response() -> None:
    events = wire_events(read("written/stream-tool-use-thinking.sse"))
    second = [
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 9,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 9,
                "delta": {"type": "thinking_delta", "thinking": "Then answer."},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 9}),
    ]
    response, _ = decode(to_sse(events[:6] + second + events[6:]))

    assert response.reasoning == "I should look up the weather first.\n\nThen answer."


def test_client_tool_calls_stream_their_arguments_and_server_tools_add_none() -> None:
    tools, _ = decode(read("stream-tool-use.sse"))
    server, _ = decode(read("fable-fallback-stream-a-toolrefusal.sse"))
    paused, _ = decode(read("pause-turn-web-search-stream.sse"))

    assert [(t.id, t.name, t.arguments) for t in tools.tool_calls] == [
        ("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", '{"location": "Paris"}')
    ]
    assert server.tool_calls == []
    assert paused.tool_calls == []
    assert paused.content is not None
    assert paused.content.startswith("I'll run these searches one at a time as requested.")


def test_a_tool_call_cut_by_max_tokens_keeps_its_partial_arguments() -> None:
    response, _ = decode(read("stream-max-tokens-partial-tool-json.sse"))

    assert response.finish_reason is FinishReason.LENGTH
    (call,) = response.tool_calls
    assert call.name == "make_file"
    assert call.arguments.startswith('{"filename": "taxes.txt", "lines_of_text": [')
    assert call.arguments.endswith('\n"Filing taxes')


def test_a_tool_without_argument_deltas_gets_its_start_input() -> None:
    events = [
        ("message_start", {"type": "message_start", "message": {"id": "m", "model": "x"}}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "t1", "name": "now", "input": {}},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    response, _ = decode(to_sse(events))

    assert [(t.id, t.name, t.arguments) for t in response.tool_calls] == [("t1", "now", "{}")]


def test_usage_comes_from_message_start_and_message_delta_with_iterations() -> None:
    response, _ = decode(read("vercel-server-fallback.chunks.txt"))
    credit, _ = decode(read("stream-fallback-credit-redeemed.sse"))

    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (412, 264)
    assert [it["type"] for it in response.usage.iterations] == ["message", "fallback_message"]
    # A redeemed fallback credit is a usage note, not a fallback: an ordinary stop.
    assert credit.finish_reason is FinishReason.STOP
    assert credit.served_by_fallback is False
    assert credit.usage is not None
    assert credit.usage.output_tokens == 8


def test_an_overloaded_error_event_is_a_transient_error_that_keeps_the_partial_text() -> None:
    response, decoder = decode(read("written/stream-error-overloaded.sse"))

    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.code == "overloaded_error"
    assert response.error.retryable is True
    assert response.content == "Here is the first part of"
    assert response.cut_off is True
    assert decoder.verdict_index == 4


def test_a_policy_error_event_mid_stream_is_a_content_filter_stop() -> None:
    events = wire_events(read("written/stream-error-overloaded.sse"))
    events[-1] = ("error", json.loads(read("written/error-400-output-blocked.json")))
    response, decoder = decode(to_sse(events))

    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.error is not None
    assert response.error.kind is ErrorKind.POLICY
    assert response.content == "Here is the first part of"
    assert response.cut_off is True
    assert decoder.verdict_index == 4
    assert notice(response) == (
        f"{FILTERED}: output blocked by content filtering policy. {NEXT_STEP}"
    )


def test_an_error_event_after_a_refusal_keeps_the_refusal_and_its_notice() -> None:
    events = wire_events(read("stream-refusal-cyber.sse"))
    events[-1] = ("error", json.loads(read("written/error-529-overloaded.json")))
    response, decoder = decode(to_sse(events))
    reference, _ = decode(read("stream-refusal-cyber.sse"))

    assert response.finish_reason is FinishReason.REFUSAL
    assert decoder.verdict_index == 3
    assert notice(response) == notice(reference)
    assert response.error is not None
    assert response.error.code == "overloaded_error"


def test_message_stop_is_the_terminal_event() -> None:
    decoder = anthropic.StreamReader("anthropic")
    for name, payload in wire_events(read("stream-end-turn-basic.sse")):
        assert decoder.done is False
        decoder.feed(name, json.dumps(payload))
    assert decoder.done is True
    assert decoder.close() == []
    assert decoder.response.error is None


def test_the_json_lines_recordings_decode_like_the_same_events_as_sse() -> None:
    for name in ("vercel-refusal-cyber.chunks.txt", "vercel-server-fallback.chunks.txt"):
        raw = read(name)
        as_sse = to_sse(wire_events(raw))
        lines, lines_decoder = decode(raw)
        sse, sse_decoder = decode(as_sse)
        assert lines == sse
        assert lines_decoder.verdict_index == sse_decoder.verdict_index


def test_decoded_events_are_typed_stream_events() -> None:
    decoder = anthropic.StreamReader("anthropic")
    produced = []
    for name, payload in wire_events(read("written/stream-tool-use-thinking.sse")):
        produced += decoder.feed(name, json.dumps(payload))

    kinds = {type(event) for event in produced}
    assert kinds == {TextDelta, ReasoningDelta, ToolCallDelta, UsageUpdate, Verdict}
    assert ToolCallDelta(3, id="toolu_01WrittenWeather", name="get_weather") in produced


# --- incomplete streams ----------------------------------------------------------------------


def test_a_stream_that_stops_before_message_stop_is_an_error_that_says_so() -> None:
    response, decoder, closing = decode_closing(
        read("written/stream-truncated-after-text.sse"), "anthropic"
    )

    assert closing == [StreamError(INCOMPLETE)]
    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason is None
    assert decoder.verdict_index is None
    assert response.content == "The first three steps are"
    assert response.cut_off is True
    # Not the provider's error: the stream broke off, which is worth retrying.
    assert response.error is not None
    assert response.error.message == INCOMPLETE
    assert response.error.retryable
    assert notice(response) is None


@pytest.mark.parametrize("name", [c.stream for c in CASES if c.verdict_index >= 0])
def test_a_stream_cut_at_any_event_is_an_error_unless_a_refusal_was_already_seen(
    name: str,
) -> None:
    events = wire_events(read(name))
    complete, complete_decoder = decode(read(name))
    verdict_at = complete_decoder.verdict_index
    assert verdict_at is not None
    has_error_event = any(payload.get("type") == "error" for _, payload in events)
    for keep in range(1, len(events)):
        response, _, closing = decode_closing(to_sse(events[:keep]), "anthropic")
        if complete.finish_reason in TERMINAL and keep > verdict_at:
            assert response.finish_reason is complete.finish_reason, (name, keep)
            assert notice(response) == notice(complete)
        else:
            assert response.finish_reason is FinishReason.ERROR, (name, keep)
        if not has_error_event:
            assert closing == [StreamError(INCOMPLETE)], (name, keep)


# --- chunking, detection, malformed input ----------------------------------------------------


@pytest.mark.parametrize("name", STREAMS)
def test_a_stream_decodes_identically_when_split_at_any_byte(name: str) -> None:
    raw = read(name)
    whole, whole_decoder = decode(raw)
    step = 1 if len(raw) <= 2500 else max(1, len(raw) // 300)
    for cut in range(0, len(raw) + 1, step):
        response, decoder = decode_stream([raw[:cut], raw[cut:]], provider="anthropic")
        assert response == whole, cut
        assert decoder.verdict_index == whole_decoder.verdict_index
    small = [raw[i : i + 7] for i in range(0, len(raw), 7)]
    assert decode_stream(small, provider=None)[0] == whole


def test_detection_never_claims_another_provider_s_stream_events() -> None:
    events = other_providers_events("anthropic")
    assert {source.split("/")[0] for source, _, _ in events} >= {
        "bedrock",
        "gemini",
        "openai-chat",
        "openai-responses",
    }
    for source, event_name, payload in events:
        assert anthropic.detect_stream(event_name, payload) is None, source


@pytest.mark.parametrize(
    ("name", "payload"),
    [
        # OpenAI Responses stream error: same outer type, but a code and a sequence number.
        ("error", {"type": "error", "code": "server_error", "message": "x", "sequence_number": 3}),
        (None, {"type": "error", "code": "server_error", "message": "x", "sequence_number": 3}),
        ("response.created", {"type": "response.created", "response": {}}),
        ("message_start", {"type": "response.created"}),
        ("ping", None),
        ("error", {"error": {"message": "no type"}}),
        (None, {"type": "message_start"}),
        (None, {"type": "message-start"}),  # Cohere spells its events with hyphens
        (None, {"choices": [{"delta": {"content": "hi"}}]}),
        (None, [1, 2]),
        (None, None),
        ("messageStart", {"role": "assistant"}),
    ],
)
def test_detection_is_specific(name: str | None, payload: Any) -> None:
    assert anthropic.detect_stream(name, payload) is None


def test_detection_claims_every_messages_event_type() -> None:
    for kind in anthropic.STREAM_EVENTS:
        payload: dict[str, Any] = {"type": kind}
        if kind == "message_start":
            payload["message"] = {}
        if kind == "error":
            payload["error"] = {"type": "overloaded_error", "message": "Overloaded"}
        assert anthropic.detect_stream(kind, payload) == "anthropic"
        assert anthropic.detect_stream(None, payload) == "anthropic"


@pytest.mark.parametrize(
    "data",
    [b"[1, 2]", b'"text"', b"null", b"17", b"{not json"],
)
def test_an_event_that_is_not_a_json_object_is_a_stream_error(data: bytes) -> None:
    raw = read("stream-end-turn-basic.sse")
    at = raw.index(b"event: content_block_stop")
    broken = raw[:at] + b"event: content_block_delta\ndata: " + data + b"\n\n" + raw[at:]
    response, _ = decode(broken)

    assert response.finish_reason is FinishReason.ERROR
    assert response.content == "Hello there!"
    assert response.cut_off is True


def test_a_non_json_event_ahead_of_a_refusal_keeps_the_refusal() -> None:
    raw = read("stream-refusal-cyber.sse")
    at = raw.index(b"event: message_delta")
    response, _ = decode(raw[:at] + b"data: {oops\n\n" + raw[at:])

    assert response.finish_reason is FinishReason.REFUSAL
    assert response.stop_details is not None
    assert response.stop_details.category == "cyber"


STOP_VALUES = {raw for raw, finish in anthropic.STOP_REASONS.items() if finish is FinishReason.STOP}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([n for n in STREAMS if not n.startswith("pause-turn")]),
    st.data(),
)
def test_malformed_field_values_never_raise_and_never_hide_a_refusal(
    name: str, data: st.DataObject
) -> None:
    events = wire_events(read(name))
    index = data.draw(st.integers(0, len(events) - 1))
    event_name, payload = events[index]
    path = data.draw(st.sampled_from(json_paths(payload)))
    new = data.draw(WRONG_VALUES.filter(lambda v: not (isinstance(v, str) and v in STOP_VALUES)))
    events[index] = (event_name, replace_at(payload, path, new))
    complete, _ = decode(read(name))

    response, _ = decode(to_sse(events))

    if complete.finish_reason in TERMINAL:
        assert response.finish_reason is not FinishReason.STOP


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(STREAMS), st.data())
def test_random_truncation_never_raises_and_is_never_a_stop(name: str, data: st.DataObject) -> None:
    raw = read(name)
    cut = data.draw(st.integers(0, len(raw.rstrip()) - 1))
    provider = data.draw(st.sampled_from(AUTO))

    response, _ = decode_stream(raw[:cut], provider=provider)

    assert response.finish_reason is not FinishReason.STOP


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(SIGNAL_STREAMS),
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=6),
    st.sampled_from(AUTO),
)
def test_random_byte_mutations_never_raise_and_never_turn_a_refusal_into_a_stop(
    name: str, edits: list[tuple[int, int]], provider: str | None
) -> None:
    raw = bytearray(read(name))
    for position, byte in edits:
        raw[position % len(raw)] = byte

    response, _ = decode_stream(bytes(raw), provider=provider)

    assert response.finish_reason is not FinishReason.STOP


@given(st.binary(max_size=400))
def test_arbitrary_bytes_named_as_anthropic_never_raise(raw: bytes) -> None:
    response, _ = decode_stream(raw, provider="anthropic")
    assert response.finish_reason is not FinishReason.STOP


KEYS = st.sampled_from(
    [
        "type",
        "index",
        "message",
        "content_block",
        "delta",
        "usage",
        "stop_reason",
        "stop_details",
        "text",
        "thinking",
        "signature",
        "partial_json",
        "input",
        "id",
        "name",
        "model",
        "from",
        "to",
        "trigger",
        "error",
        "iterations",
    ]
)
JSON = event_json(
    KEYS,
    st.sampled_from(sorted(anthropic.STREAM_EVENTS))
    | st.sampled_from(["text_delta", "thinking_delta", "tool_use", "fallback", "refusal", "x"]),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.none() | st.sampled_from(sorted(anthropic.STREAM_EVENTS)), JSON),
        max_size=12,
    )
)
def test_arbitrary_json_events_never_raise(events: list[tuple[str | None, Any]]) -> None:
    response = feed_events(anthropic.StreamReader("anthropic"), events)
    assert response.provider == "anthropic"
    notice(response)


def test_a_stream_that_breaks_after_its_stop_reason_is_an_error_but_not_cut_off() -> None:
    raw = read("stream-end-turn-basic.sse")
    whole = raw[: raw.index(b"event: message_stop")]
    response, _ = decode(whole)
    # Incomplete (message_stop never came), but message_delta said the answer ended.
    assert response.finish_reason is FinishReason.ERROR
    assert response.content == "Hello there!"
    assert response.cut_off is False
    # Broken before the stop reason, the same text is a cut-off fragment.
    early, _ = decode(raw[: raw.index(b"event: message_delta")])
    assert early.cut_off is True
