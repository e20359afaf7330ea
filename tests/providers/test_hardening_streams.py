"""Streams on hostile input: odd Unicode never changes a verdict, and nothing after a
stream's terminal event changes the response."""

from __future__ import annotations

import json
from typing import Any

import pytest

from refusals import notice
from refusals.model import FinishReason, LLMResponse
from refusals.transport.streams import decode_stream

from ._support import DECLINED, NEXT_STEP


def sse(*events: tuple[str | None, Any]) -> bytes:
    out = b""
    for name, body in events:
        if name is not None:
            out += f"event: {name}\n".encode()
        data = body if isinstance(body, str) else json.dumps(body)
        out += f"data: {data}\n\n".encode()
    return out


ANTHROPIC_START = (
    "message_start",
    {
        "type": "message_start",
        "message": {"id": "msg_1", "model": "claude-x", "content": [], "usage": {}},
    },
)
ANTHROPIC_STOP = ("message_stop", {"type": "message_stop"})


def anthropic_delta(stop_reason: str, explanation: str | None = None) -> tuple[str, Any]:
    delta: dict[str, Any] = {"stop_reason": stop_reason}
    if explanation is not None:
        delta["stop_details"] = {"type": "refusal", "category": "cyber", "explanation": "EXPL"}
    body = json.dumps({"type": "message_delta", "delta": delta, "usage": {"output_tokens": 3}})
    # Written as text so that the escape reaches the wire as six characters.
    if explanation is not None:
        body = body.replace("EXPL", explanation)
    return ("message_delta", body)


@pytest.mark.parametrize(
    "escaped", ["\\ud83d", "\\udc00 tail", "a\\ud800\\ud800b", "\\u0000\\u2028\\u202e\\ufeff"]
)
def test_an_anthropic_stream_refusal_with_odd_unicode_stays_a_refusal_never_retryable(
    escaped: str,
) -> None:
    raw = sse(ANTHROPIC_START, anthropic_delta("refusal", f"Not this {escaped}."), ANTHROPIC_STOP)
    response, _ = decode_stream(raw)
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.error is None
    text = notice(response)
    assert text is not None and text.startswith(f"{DECLINED} (category: cyber): not this")
    text.encode("utf-8")  # printable: no lone surrogate survives


def test_an_anthropic_text_delta_with_a_lone_surrogate_is_kept_as_text() -> None:
    delta = (
        '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi \\ud83d"}}'
    )
    raw = sse(
        ANTHROPIC_START,
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        ("content_block_delta", delta),
        anthropic_delta("end_turn"),
        ANTHROPIC_STOP,
    )
    response, _ = decode_stream(raw)
    assert response.finish_reason is FinishReason.STOP
    assert response.content == "hi \ufffd"
    assert response.error is None


def test_an_anthropic_message_delta_after_message_stop_does_not_turn_a_stop_into_a_refusal() -> (
    None
):
    alone, _ = decode_stream(sse(ANTHROPIC_START, anthropic_delta("end_turn"), ANTHROPIC_STOP))
    raw = sse(
        ANTHROPIC_START,
        anthropic_delta("end_turn"),
        ANTHROPIC_STOP,
        anthropic_delta("refusal", "injected"),
        ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "x"}}),
    )
    response, _ = decode_stream(raw)
    assert response.finish_reason is FinishReason.STOP
    assert response == alone


def chat_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gpt-4o",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def test_chat_chunks_after_done_add_no_refusal_and_no_text() -> None:
    body = sse(
        (None, chat_chunk({"role": "assistant", "content": "Hello"})),
        (None, chat_chunk({}, "stop")),
        (None, "[DONE]"),
    )
    alone, _ = decode_stream(body)
    later = sse(
        (None, chat_chunk({"refusal": "I refuse."})),
        (None, chat_chunk({"content": " injected"}, "content_filter")),
    )
    response, _ = decode_stream(body + later)
    assert response.finish_reason is FinishReason.STOP
    assert response.content == "Hello"
    assert response == alone


def gemini_chunk(text: str, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {
        "index": 0,
        "content": {"role": "model", "parts": [{"text": text}]},
    }
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": "gemini-x", **extra}


def test_a_gemini_chunk_after_the_final_one_adds_no_text() -> None:
    body = sse((None, gemini_chunk("Hi")), (None, gemini_chunk(" there", "STOP")))
    alone, _ = decode_stream(body)
    response, _ = decode_stream(
        body + sse((None, gemini_chunk(" more")), (None, gemini_chunk(" and more", "LENGTH")))
    )
    assert response.finish_reason is FinishReason.STOP
    assert response.content == "Hi there"
    assert response == alone


def test_a_gemini_block_after_a_stop_is_the_verdict_but_adds_no_text() -> None:
    # Vertex may put STOP on every chunk and the block on the last (the Firebase SDKs'
    # streaming-failure-recitation test data): a block is never lost to an earlier STOP.
    body = sse((None, gemini_chunk("Hi")), (None, gemini_chunk(" there", "STOP")))
    response, decoder = decode_stream(body + sse((None, gemini_chunk(" injected", "SAFETY"))))
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "SAFETY"
    assert response.content == "Hi there"
    assert decoder.verdict_index == 2


def test_gemini_usage_after_the_final_chunk_is_still_counted() -> None:
    usage = {"promptTokenCount": 4, "candidatesTokenCount": 2}
    response, _ = decode_stream(
        sse((None, gemini_chunk("Hi", "STOP")), (None, {"usageMetadata": usage}))
    )
    assert response.finish_reason is FinishReason.STOP
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (4, 2)


def test_a_refusal_notice_ignores_text_sent_after_the_end() -> None:
    refused = sse(ANTHROPIC_START, anthropic_delta("refusal"), ANTHROPIC_STOP)
    later = sse(
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Ignore the above"},
            },
        ),
    )
    response, _ = decode_stream(refused + later)
    assert notice(response) == f"{DECLINED}. {NEXT_STEP}"
    assert response.content is None


def test_json_that_is_not_utf8_in_a_stream_event_is_read_with_replacement() -> None:
    raw = sse(ANTHROPIC_START).replace(b'"claude-x"', b'"claude-\xff"')
    raw += sse(anthropic_delta("refusal"), ANTHROPIC_STOP)
    response, _ = decode_stream(raw)
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.model == "claude-\ufffd"


def test_an_integer_beyond_64_bits_in_a_stream_event_does_not_break_the_stream() -> None:
    start = {
        "type": "message_start",
        "message": {"id": "m", "model": "c", "content": [], "usage": {"input_tokens": 2**80}},
    }
    response, _ = decode_stream(
        sse(("message_start", start), anthropic_delta("refusal"), ANTHROPIC_STOP)
    )
    assert isinstance(response, LLMResponse)
    assert response.finish_reason is FinishReason.REFUSAL


def responses_events(*middle: dict[str, Any]) -> bytes:
    response = {
        "id": "resp_1",
        "object": "response",
        "model": "gpt-4o",
        "status": "in_progress",
        "output": [],
    }
    events = [{"type": "response.created", "response": response}, *middle]
    events.append({"type": "response.completed", "response": {**response, "status": "completed"}})
    return sse(*((event["type"], event) for event in events))


REFUSAL_SAID = "I can't help with that."


@pytest.mark.parametrize(
    "whole",
    [
        {
            "type": "response.refusal.done",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "refusal": REFUSAL_SAID,
        },
        {
            "type": "response.content_part.done",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "refusal", "refusal": REFUSAL_SAID},
        },
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "refusal", "refusal": REFUSAL_SAID}],
            },
        },
    ],
)
def test_a_responses_refusal_given_only_whole_before_an_empty_completed_is_a_refusal(
    whole: dict[str, Any],
) -> None:
    response, _ = decode_stream(responses_events(whole))
    assert response.finish_reason is FinishReason.REFUSAL
    assert notice(response) == f"{DECLINED}: {REFUSAL_SAID} {NEXT_STEP}"


def test_a_responses_refusal_streamed_as_deltas_is_not_doubled_by_its_done_event() -> None:
    delta = {
        "type": "response.refusal.delta",
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": 0,
        "delta": REFUSAL_SAID,
    }
    done = {**delta, "type": "response.refusal.done", "refusal": REFUSAL_SAID}
    del done["delta"]
    response, _ = decode_stream(responses_events(delta, done))
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.content == REFUSAL_SAID
