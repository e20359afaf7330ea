"""Bedrock InvokeModel and InvokeModelWithResponseStream: native model bodies, Claude's
events inside `chunk` frames, the `amazon-bedrock-guardrailAction` marker, and guardrails
that masked output rather than blocking it."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from refusals import notice
from refusals.model import FinishReason, LLMResponse
from refusals.providers import bedrock, normalize
from refusals.refusal import is_blocked_notice, is_content_filter_notice
from refusals.transport.framing import encode_event_stream
from refusals.transport.streams import decode_stream

from ._support import DECLINED, FILTERED, NEXT_STEP

WRITTEN = Path(__file__).resolve().parents[1] / "fixtures" / "bedrock" / "written"
ALTERED = "The provider's content filter altered this response"


def body(name: str) -> bytes:
    return (WRITTEN / name).read_bytes()


def chunk_events(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body(name).splitlines() if line.strip()]


def as_event_stream(events: list[dict[str, Any]]) -> bytes:
    """Each model event in a `chunk` frame, as Bedrock frames InvokeModelWithResponseStream."""
    headers = {
        ":event-type": "chunk",
        ":message-type": "event",
        ":content-type": "application/json",
    }
    return b"".join(
        encode_event_stream(
            headers,
            json.dumps({"bytes": base64.b64encode(json.dumps(e).encode()).decode()}).encode(),
        )
        for e in events
    )


def as_json_lines(events: list[dict[str, Any]]) -> bytes:
    """The same stream as one decoded event per line (`{"chunk": {"bytes": ...}}`)."""
    return b"".join(
        json.dumps({"chunk": {"bytes": base64.b64encode(json.dumps(e).encode()).decode()}}).encode()
        + b"\n"
        for e in events
    )


def both_framings(name: str) -> LLMResponse:
    events = chunk_events(name)
    binary, _ = decode_stream(as_event_stream(events))
    lines, _ = decode_stream(as_json_lines(events))
    assert binary == lines
    return binary


# --- full bodies ------------------------------------------------------------------------


def test_a_claude_invoke_body_with_the_intervened_marker_is_a_content_filter_stop() -> None:
    response = normalize(body("invoke-claude-guardrail-intervened.json"))
    assert response.provider == "bedrock"
    assert response.api == "invoke"
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "INTERVENED"
    assert notice(response) == f"{FILTERED} (categories: Weapons, violence). {NEXT_STEP}"


def test_the_intervened_marker_is_read_when_the_provider_is_named_too() -> None:
    named = normalize(body("invoke-claude-guardrail-intervened.json"), provider="bedrock")
    assert named == normalize(body("invoke-claude-guardrail-intervened.json"))


def test_a_claude_invoke_body_with_guardrail_action_none_is_an_ordinary_stop() -> None:
    response = normalize(body("invoke-claude-guardrail-none.json"))
    assert response.provider == "bedrock"
    assert response.finish_reason is FinishReason.STOP
    assert response.content == "Paris is the capital of France."
    assert notice(response) is None


def test_a_guardrail_that_only_anonymized_output_is_an_altered_filter_stop() -> None:
    response = normalize(body("invoke-claude-guardrail-anonymized.json"))
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.stop_details is not None
    assert response.stop_details.altered == "anonymized"
    assert response.cut_off is False
    assert response.content == "You can reach the account owner at {EMAIL} or {PHONE}."
    text = notice(response)
    assert text == f"{ALTERED} (anonymized; categories: email, phone). {NEXT_STEP}"
    assert is_content_filter_notice(text) and is_blocked_notice(text)


def test_a_converse_guardrail_stop_that_only_anonymized_says_the_output_was_altered() -> None:
    response = normalize(body("converse-guardrail-anonymized.json"))
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.cut_off is False
    assert notice(response) == f"{ALTERED} (anonymized; category: email). {NEXT_STEP}"


def test_a_converse_end_turn_whose_output_was_anonymized_is_an_altered_filter_stop() -> None:
    raw = json.loads(body("converse-guardrail-anonymized.json"))
    raw["stopReason"] = "end_turn"
    response = normalize(raw)
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.stop_details is not None and response.stop_details.altered == "anonymized"


def test_a_blocking_guardrail_still_says_blocked() -> None:
    response = normalize(body("invoke-claude-guardrail-intervened.json"))
    assert response.stop_details is not None and response.stop_details.altered is None
    assert (notice(response) or "").startswith(FILTERED)


@pytest.mark.parametrize(
    ("name", "finish", "raw", "content"),
    [
        (
            "invoke-titan-content-filtered.json",
            FinishReason.CONTENT_FILTER,
            "CONTENT_FILTERED",
            None,
        ),
        ("invoke-llama-stop.json", FinishReason.STOP, "stop", " Paris is the capital of France."),
        (
            "invoke-mistral-length.json",
            FinishReason.LENGTH,
            "length",
            " The history of Paris begins",
        ),
    ],
)
def test_native_invoke_bodies_are_read(
    name: str, finish: FinishReason, raw: str, content: str | None
) -> None:
    response = normalize(body(name))
    assert (response.provider, response.api) == ("bedrock", "invoke")
    assert (response.finish_reason, response.raw_finish_reason) == (finish, raw)
    assert response.content == content
    assert response.cut_off is False


def test_an_unknown_native_finish_value_is_an_error_never_a_stop() -> None:
    raw = json.loads(body("invoke-llama-stop.json"))
    raw["stop_reason"] = "something_new"
    assert normalize(raw).finish_reason is FinishReason.ERROR


# --- streams --------------------------------------------------------------------------


def test_a_claude_refusal_inside_invoke_chunks_is_a_refusal_in_both_framings() -> None:
    response = both_framings("invoke-stream-claude-refusal.events.ndjson")
    assert response.provider == "bedrock"
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.error is None
    assert response.content == "I can"
    assert response.cut_off is True
    assert response.usage is not None and response.usage.output_tokens == 3
    assert notice(response) == f"{DECLINED}: I can. {NEXT_STEP}"


def test_the_intervened_marker_inside_a_claude_chunk_is_a_content_filter_stop() -> None:
    response = both_framings("invoke-stream-claude-guardrail.events.ndjson")
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert notice(response) == f"{FILTERED} (category: hate). {NEXT_STEP}"


def test_a_native_titan_stream_inside_chunks_is_read() -> None:
    response = both_framings("invoke-stream-titan.events.ndjson")
    assert response.finish_reason is FinishReason.STOP
    assert response.content == "Paris is the capital of France."
    assert response.error is None


def test_a_claude_chunk_stream_cut_before_message_stop_is_incomplete() -> None:
    events = chunk_events("invoke-stream-claude-refusal.events.ndjson")[:3]
    response, _ = decode_stream(as_event_stream(events))
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None and response.error.retryable


def test_a_chunk_whose_bytes_are_not_base64_json_is_an_error_event() -> None:
    decoder = bedrock.StreamReader("bedrock")
    decoder.feed("chunk", json.dumps({"bytes": "%%%not base64"}))
    decoder.close()
    assert decoder.response.finish_reason is FinishReason.ERROR
    assert decoder.response.error is not None


def test_the_intervened_marker_after_a_claude_stop_still_blocks_before_message_stop() -> None:
    events = chunk_events("invoke-stream-claude-refusal.events.ndjson")
    events[4] = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}
    events.insert(5, {"amazon-bedrock-guardrailAction": "INTERVENED", "type": "ping"})
    response, _ = decode_stream(as_event_stream(events))
    assert response.finish_reason is FinishReason.CONTENT_FILTER


def test_the_service_error_of_an_event_stream_is_transient_and_says_its_code() -> None:
    decoder = bedrock.StreamReader("bedrock")
    events = decoder.service_error("InternalFailure", "We encountered an internal error.")
    decoder.close()
    assert decoder.response.error is not None
    assert decoder.response.error.retryable
    assert decoder.response.error.message == ("InternalFailure: We encountered an internal error.")
    assert len(events) == 1


def test_a_service_error_that_says_a_filter_blocked_it_is_a_content_filter() -> None:
    decoder = bedrock.StreamReader("bedrock")
    decoder.service_error("ValidationException", "Output blocked by content filtering policy")
    decoder.close()
    assert decoder.response.finish_reason is FinishReason.CONTENT_FILTER
    assert decoder.response.error is not None and not decoder.response.error.retryable
