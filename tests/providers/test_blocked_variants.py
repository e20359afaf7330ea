"""Valid refusal and filter shapes that read as `stop` before (issue 23's variants)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from refusals import FinishReason, normalize, notice
from refusals.transport.streams import decode_stream

RATING = {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}
SAFE = {"hate": {"filtered": False, "severity": "safe"}}
VIOLENCE = {"violence": {"filtered": True, "severity": "high"}}
CLEAN_CHOICE = {
    "index": 0,
    "message": {"role": "assistant", "content": "Here is the first answer."},
    "finish_reason": "stop",
    "content_filter_results": SAFE,
}
FILTERED_CHOICE = {
    "index": 1,
    "message": {"role": "assistant", "content": "Here is"},
    "finish_reason": "content_filter",
    "content_filter_results": VIOLENCE,
}


def _completion(*choices: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-2",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [*choices],
    }


BODIES: dict[str, tuple[dict[str, Any], str | None, int | None, FinishReason]] = {
    "openai refusal as a list of parts": (
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "refusal": [{"type": "refusal", "refusal": "I can't help with that."}],
                    },
                    "finish_reason": "stop",
                }
            ],
        },
        None,
        None,
        FinishReason.REFUSAL,
    ),
    "responses completed with a content_filter reason": (
        {
            "id": "resp_1",
            "object": "response",
            "status": "completed",
            "model": "gpt-4o",
            "incomplete_details": {"reason": "content_filter"},
            "output": [],
        },
        None,
        None,
        FinishReason.CONTENT_FILTER,
    ),
    "gemini STOP with a blocked rating": (
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": "Here"}]},
                    "finishReason": "STOP",
                    "safetyRatings": [RATING],
                }
            ],
            "modelVersion": "gemini-2.0-flash",
        },
        None,
        None,
        FinishReason.CONTENT_FILTER,
    ),
    "azure filtered on choice 1 beside a clean choice 0": (
        _completion(CLEAN_CHOICE, FILTERED_CHOICE),
        "azure",
        None,
        FinishReason.CONTENT_FILTER,
    ),
    "azure filtered on choice 1 listed first": (
        _completion(FILTERED_CHOICE, CLEAN_CHOICE),
        None,
        None,
        FinishReason.CONTENT_FILTER,
    ),
    "azure lone choice under index 1": (
        _completion(FILTERED_CHOICE),
        "azure",
        None,
        FinishReason.CONTENT_FILTER,
    ),
    "openai content_filter finish on choice 1 only": (
        _completion(
            {k: v for k, v in CLEAN_CHOICE.items() if k != "content_filter_results"},
            {k: v for k, v in FILTERED_CHOICE.items() if k != "content_filter_results"},
        ),
        "openai",
        None,
        FinishReason.CONTENT_FILTER,
    ),
    "anthropic 400 violates our Usage Policy": (
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "This request violates our Usage Policy.",
            },
        },
        "anthropic",
        400,
        FinishReason.CONTENT_FILTER,
    ),
}


@pytest.mark.parametrize("as_bytes", [False, True], ids=["dict", "bytes"])
@pytest.mark.parametrize("name", list(BODIES))
def test_the_variant_reads_as_its_verdict_with_a_notice(name: str, as_bytes: bool) -> None:
    body, provider, status, expected = BODIES[name]
    payload: Any = orjson.dumps(body) if as_bytes else body
    response = normalize(payload, provider=provider, status=status)
    assert response.finish_reason is expected
    assert notice(response) is not None


def test_a_gemini_stream_ending_stop_with_a_blocked_rating_is_a_filter() -> None:
    chunk = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "Here"}]},
                "finishReason": "STOP",
                "safetyRatings": [RATING],
            }
        ],
        "modelVersion": "gemini-2.0-flash",
    }
    response, _ = decode_stream(b"data: " + orjson.dumps(chunk) + b"\r\n\r\n", "gemini")
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.stop_details is not None
    assert response.stop_details.category == "dangerous_content"


def test_an_openai_stream_with_the_refusal_as_parts_is_a_refusal() -> None:
    chunks = [
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "role": "assistant",
                        "refusal": [{"type": "refusal", "refusal": "No."}],
                    },
                }
            ],
        },
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "model": "gpt-4o",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        },
    ]
    stream = b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    response, _ = decode_stream(stream, "openai")
    assert response.finish_reason is FinishReason.REFUSAL


def test_the_answer_of_a_filtered_n2_body_is_choice_0_and_names_choice_1s_category() -> None:
    response = normalize(orjson.dumps(_completion(CLEAN_CHOICE, FILTERED_CHOICE)), provider="azure")
    assert response.content == "Here is the first answer."
    assert response.stop_details is not None
    assert response.stop_details.category == "violence"
    assert any('"choice_index":1' in str(d) for d in response.reasoning_details or ())


def test_two_clean_choices_stay_a_stop() -> None:
    other = {**CLEAN_CHOICE, "index": 1, "message": {"role": "assistant", "content": "Second."}}
    for payload in (
        _completion(CLEAN_CHOICE, other),
        orjson.dumps(_completion(CLEAN_CHOICE, other)),
    ):
        response = normalize(payload, provider="azure")
        assert response.finish_reason is FinishReason.STOP
        assert response.content == "Here is the first answer."


def test_an_azure_n2_stream_filtered_on_choice_1_is_a_filter_with_choice_0s_text() -> None:
    def chunk(index: int, content: str | None, finish: str | None, results: Any) -> bytes:
        choice: dict[str, Any] = {
            "index": index,
            "delta": {"content": content} if content else {},
            "finish_reason": finish,
            "content_filter_results": results,
        }
        body = {
            "id": "c2",
            "object": "chat.completion.chunk",
            "model": "gpt-4o",
            "choices": [choice],
        }
        return b"data: " + orjson.dumps(body) + b"\n\n"

    stream = (
        chunk(0, "Hi", None, SAFE)
        + chunk(1, "Here", None, SAFE)
        + chunk(1, None, "content_filter", VIOLENCE)
        + chunk(0, None, "stop", SAFE)
        + b"data: [DONE]\n\n"
    )
    response, _ = decode_stream(stream, "azure")
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.content == "Hi"
    assert response.stop_details is not None
    assert response.stop_details.category == "violence"
