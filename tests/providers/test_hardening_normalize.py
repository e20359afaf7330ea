"""`normalize` on the shapes an adversarial pass found read wrongly, and on hostile input:
the verdicts, the facts that travel in headers, and no crash, no blow-up."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from refusals import notice
from refusals.model import MAX_REPR_CHARS, ErrorKind, FinishReason, LLMResponse, ProviderError
from refusals.providers import NormalizeError, normalize, provider_for_url
from refusals.providers._common import page_text, strip_tags
from refusals.transport.streams import decode_stream

from ._support import DECLINED, FILTERED, NEXT_STEP


def sse(*bodies: Any) -> bytes:
    return b"".join(b"data: " + json.dumps(body).encode() + b"\n\n" for body in bodies) + (
        b"data: [DONE]\n\n"
    )


# --- OpenAI Chat and Gemini: choice / candidate 0 -----------------------------------------

TWO_CHOICES = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4o",
    "choices": [
        {"index": 1, "message": {"role": "assistant", "content": "Sure."}, "finish_reason": "stop"},
        {
            "index": 0,
            "message": {"role": "assistant", "content": None, "refusal": "I can't help."},
            "finish_reason": "stop",
        },
    ],
}


def test_a_chat_body_reports_the_choice_with_index_0_wherever_it_sits() -> None:
    response = normalize(TWO_CHOICES)
    assert response.finish_reason is FinishReason.REFUSAL
    assert notice(response) == f"{DECLINED}: I can't help. {NEXT_STEP}"


def test_a_chat_body_and_its_stream_agree_on_choice_0() -> None:
    chunks = [
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "model": "gpt-4o",
            "choices": [
                {"index": 1, "delta": {"content": "Sure."}, "finish_reason": "stop"},
                {"index": 0, "delta": {"refusal": "I can't help."}, "finish_reason": "stop"},
            ],
        }
    ]
    streamed, _ = decode_stream(sse(*chunks))
    full = normalize(TWO_CHOICES)
    assert (streamed.finish_reason, streamed.content) == (full.finish_reason, full.content)


TWO_CANDIDATES = {
    "candidates": [
        {"index": 1, "content": {"parts": [{"text": "fine"}]}, "finishReason": "STOP"},
        {"index": 0, "content": {"parts": [{"text": "par"}]}, "finishReason": "SAFETY"},
    ],
    "modelVersion": "gemini-2.5-flash",
}


def test_a_gemini_body_and_its_stream_both_report_candidate_0() -> None:
    full = normalize(TWO_CANDIDATES)
    streamed, _ = decode_stream(sse(TWO_CANDIDATES)[: -len(b"data: [DONE]\n\n")])
    assert full.finish_reason is FinishReason.CONTENT_FILTER
    assert (streamed.finish_reason, streamed.content) == (full.finish_reason, full.content)


# --- Chat refusal parts, OpenRouter native reasons, compatible vendors --------------------


def chat_body(message: dict[str, Any], finish: str = "stop", **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
    choice.update(extra.pop("choice", {}))
    return {
        "id": "c1",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [choice],
        **extra,
    }


def test_chat_content_given_as_parts_with_a_refusal_part_is_a_refusal() -> None:
    body = chat_body({"content": [{"type": "refusal", "refusal": "I won't do that."}]})
    response = normalize(body)
    assert response.finish_reason is FinishReason.REFUSAL
    assert notice(response) == f"{DECLINED}: I won't do that. {NEXT_STEP}"


def test_a_chat_stream_delta_with_a_refusal_part_is_a_refusal() -> None:
    chunk = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "gpt-4o",
        "choices": [{"index": 0, "delta": {"content": [{"type": "refusal", "refusal": "No."}]}}],
    }
    end = {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    response, _ = decode_stream(sse(chunk, end))
    assert response.finish_reason is FinishReason.REFUSAL
    assert notice(response) == f"{DECLINED}: no. {NEXT_STEP}"


@pytest.mark.parametrize(
    ("native", "finish"),
    [
        ("refusal", FinishReason.REFUSAL),
        ("SAFETY", FinishReason.CONTENT_FILTER),
        ("PROHIBITED_CONTENT", FinishReason.CONTENT_FILTER),
        ("guardrail_intervened", FinishReason.CONTENT_FILTER),
        ("content_filter", FinishReason.CONTENT_FILTER),
    ],
)
def test_an_openrouter_native_block_wins_over_finish_reason_stop(
    native: str, finish: FinishReason
) -> None:
    body = chat_body({"content": ""}, provider="Anthropic", choice={"native_finish_reason": native})
    body["model"] = "anthropic/claude-sonnet-4"
    full = normalize(body)
    chunk = {
        "id": "gen-1",
        "object": "chat.completion.chunk",
        "model": "anthropic/claude-sonnet-4",
        "provider": "Anthropic",
        "choices": [
            {"index": 0, "delta": {}, "finish_reason": "stop", "native_finish_reason": native}
        ],
    }
    streamed, _ = decode_stream(sse(chunk))
    assert full.provider == "openrouter"
    assert full.finish_reason is finish
    assert streamed.finish_reason is finish
    assert full.raw_finish_reason == native


def test_togethers_eos_is_a_complete_stop_not_a_cut_off_error() -> None:
    body = chat_body({"content": "Paris."}, finish="eos")
    body["model"] = "meta-llama/Llama-3.3-70B-Instruct-Turbo"
    response = normalize(body)
    assert response.finish_reason is FinishReason.STOP
    assert response.raw_finish_reason == "eos"
    assert response.cut_off is False


def test_a_vendor_prefixed_model_served_elsewhere_is_not_taken_for_that_vendor() -> None:
    body = chat_body({"content": "Hi"})
    body["model"] = "mistralai/Mixtral-8x7B-Instruct-v0.1"
    assert normalize(body).provider == "openai"
    body["model"] = "mistral-large-latest"
    assert normalize(body).provider == "mistral"


@pytest.mark.parametrize(
    ("url", "provider"),
    [
        ("https://api.mistral.ai/v1/chat/completions", "mistral"),
        ("https://openrouter.ai/api/v1/chat/completions", "openrouter"),
        ("https://res.openai.azure.com/openai/deployments/d/chat/completions", "azure"),
        ("https://api.openai.com/v1/responses", "openai-responses"),
        ("https://api.together.xyz/v1/chat/completions", None),
        ("https://api.openai.com.example.net/v1/chat/completions", None),
    ],
)
def test_the_provider_is_read_from_the_request_url(url: str, provider: str | None) -> None:
    assert provider_for_url(url) == provider


def test_normalize_takes_the_vendor_from_the_url_over_the_model_name() -> None:
    body = chat_body({"content": "Hi"})
    body["model"] = "mistralai/Mistral-7B"
    assert normalize(body, url="https://api.mistral.ai/v1/chat/completions").provider == "mistral"


# --- error bodies and headers ---------------------------------------------------------------

BLOCKED_MESSAGE = {"message": "This request has been blocked by our content filters."}


def test_a_bedrock_400_named_only_by_its_header_is_a_content_filter_stop() -> None:
    response = normalize(
        BLOCKED_MESSAGE,
        status=400,
        headers={"X-Amzn-ErrorType": "ValidationException:http://internal.amazon.com/coral/"},
    )
    assert response.provider == "bedrock"
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.error is not None
    assert response.error.code == "ValidationException"
    assert not response.error.retryable
    explanation = "this request has been blocked by our content filters."
    assert notice(response) == f"{FILTERED}: {explanation} {NEXT_STEP}"


def test_a_400_that_says_content_filters_blocked_it_is_a_filter_without_any_header() -> None:
    response = normalize(BLOCKED_MESSAGE, status=400)
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.error is not None and response.error.kind is ErrorKind.POLICY


def test_a_gemini_error_body_wrapped_in_an_array_is_an_error_body() -> None:
    body = [{"error": {"code": 429, "message": "Quota exceeded.", "status": "RESOURCE_EXHAUSTED"}}]
    response = normalize(body)
    assert response.provider == "gemini"
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None and response.error.retryable
    assert normalize(json.dumps(body)) == response


@pytest.mark.parametrize(
    "name", ["request-id", "X-Request-Id", "x-amzn-RequestId", "apim-request-id"]
)
def test_a_request_id_in_a_header_is_kept_when_the_body_has_none(name: str) -> None:
    response = normalize(BLOCKED_MESSAGE, provider="bedrock", status=400, headers={name: "req-9"})
    assert response.request_id == "req-9"


def test_a_request_id_in_the_body_wins_over_the_header() -> None:
    body = {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
        "request_id": "req_body",
    }
    response = normalize(body, status=529, headers={"request-id": "req_header"})
    assert response.request_id == "req_body"


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"Retry-After": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-3"}, None),
    ],
)
def test_retry_after_headers_become_seconds_on_the_error(
    headers: dict[str, str], seconds: float | None
) -> None:
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down"}}
    response = normalize(body, status=429, headers=headers)
    assert response.error is not None
    assert response.error.retry_after == seconds


def test_a_retry_after_date_becomes_the_seconds_until_it() -> None:
    when = datetime.now(UTC) + timedelta(seconds=120)
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down"}}
    response = normalize(body, status=429, headers={"retry-after": format_datetime(when, True)})
    assert response.error is not None and response.error.retry_after is not None
    assert 100 < response.error.retry_after <= 120


def test_x_should_retry_false_makes_a_transient_error_not_retryable() -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    advised = normalize(body, status=529, headers={"x-should-retry": "false"})
    plain = normalize(body, status=529)
    assert advised.error is not None and plain.error is not None
    assert advised.error.should_retry is False
    assert not advised.error.retryable
    assert plain.error.retryable


def test_x_should_retry_true_never_makes_a_policy_block_retryable() -> None:
    response = normalize(BLOCKED_MESSAGE, status=400, headers={"x-should-retry": "true"})
    assert response.error is not None
    assert response.error.should_retry is True
    assert not response.error.retryable


def test_provider_error_retryable_follows_kind_and_advice() -> None:
    assert ProviderError(ErrorKind.TRANSIENT).retryable
    assert not ProviderError(ErrorKind.TRANSIENT, should_retry=False).retryable
    assert not ProviderError(ErrorKind.AUTH, should_retry=True).retryable


# --- arguments ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"status": "400"}, "status"),
        ({"status": 400.0}, "status"),
        ({"status": True}, "status"),
        ({"provider": 3}, "provider"),
        ({"headers": [("a", "b")]}, "headers"),
        ({"url": b"https://api.openai.com"}, "url"),
    ],
)
def test_an_argument_of_the_wrong_type_raises_a_type_error_naming_it(
    kwargs: dict[str, Any], name: str
) -> None:
    with pytest.raises(TypeError, match=f"^{name} must be"):
        normalize(chat_body({"content": "x"}), **kwargs)


# --- hostile payloads ---------------------------------------------------------------------

REFUSAL_TEXT = '{"type":"message","model":"m","content":[{"type":"text","text":"T"}],'
REFUSAL_TEXT += '"stop_reason":"refusal","stop_details":{"category":"cyber","explanation":"E"}}'


@pytest.mark.parametrize("odd", ["\\ud83d", "\\udfff", "\\ud800\\u0041", "\\u0000", "\\u202e"])
def test_escaped_odd_unicode_in_provider_text_never_changes_the_verdict(odd: str) -> None:
    for field in ("T", "E"):
        payload = REFUSAL_TEXT.replace(f'"{field}"', f'"x{odd}"')
        response = normalize(payload.encode())
        assert response.finish_reason is FinishReason.REFUSAL
        text = notice(response)
        assert text is not None and text.startswith(f"{DECLINED} (category: cyber)")
        text.encode("utf-8")


def test_bytes_that_are_not_utf8_are_read_with_replacement() -> None:
    payload = REFUSAL_TEXT.replace('"T"', '"caf\xe9"').encode("latin-1")
    response = normalize(payload)
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.content == "caf\ufffd"


def test_lone_surrogates_in_a_decoded_dict_give_printable_text() -> None:
    body = json.loads(REFUSAL_TEXT)
    body["content"][0]["text"] = "\ud83d"
    body["stop_details"]["explanation"] = "because \udc00"
    response = normalize(body)
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.content == "\ufffd"
    text = notice(response)
    assert text == f"{DECLINED} (category: cyber): because \ufffd. {NEXT_STEP}"


def test_integers_beyond_64_bits_in_a_decoded_dict_are_read() -> None:
    body = json.loads(REFUSAL_TEXT)
    body["usage"] = {"input_tokens": 2**70, "output_tokens": -(2**90)}
    body["content"].append({"type": "tool_use", "id": "t", "name": "f", "input": {"n": 2**100}})
    response = normalize(body)
    assert response.finish_reason is FinishReason.REFUSAL
    assert isinstance(repr(response), str)


def test_gemini_ratings_with_huge_integers_are_still_a_filter_stop() -> None:
    body = {
        "candidates": [
            {
                "finishReason": "SAFETY",
                "safetyRatings": [
                    {
                        "category": "HARM_CATEGORY_HARASSMENT",
                        "blocked": True,
                        "probabilityScore": 2**80,
                    }
                ],
            }
        ]
    }
    response = normalize(body)
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.stop_details is not None
    assert response.stop_details.category == "harassment"


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"type": "thinking", "thinking": [value]}
    return value


@pytest.mark.parametrize("depth", [1_000, 5_000])
def test_nesting_thousands_deep_in_a_decoded_dict_gives_a_response(depth: int) -> None:
    body = chat_body({"content": [nested(depth), {"type": "refusal", "refusal": "No."}]})
    response = normalize(body)
    assert isinstance(response, LLMResponse)
    assert response.finish_reason is FinishReason.REFUSAL


def test_nesting_thousands_deep_in_bytes_is_a_normalize_error_or_a_response() -> None:
    payload = json.dumps(chat_body({"content": "x", "extra": nested(50)})).encode()
    deep = b'{"choices":[' + b"[" * 5000 + b"]" * 5000 + b"]}"
    assert normalize(payload).finish_reason is FinishReason.STOP
    try:
        result = normalize(deep)
    except NormalizeError:
        return
    assert isinstance(result, LLMResponse)


def test_the_repr_of_a_huge_response_is_bounded() -> None:
    body = json.loads(REFUSAL_TEXT)
    body["content"] = [{"type": "text", "text": "x" * 1_000_000}] + [
        {"type": "thinking", "thinking": "t" * 10_000, "signature": "s" * 10_000}
    ] * 200
    response = normalize(body)
    text = repr(response)
    assert len(text) <= MAX_REPR_CHARS + 100
    assert "more characters" in text
    assert text.startswith("LLMResponse(content='xxx")


def test_the_repr_of_a_small_response_is_whole() -> None:
    response = LLMResponse(content="hello", finish_reason=FinishReason.REFUSAL)
    assert "content='hello'" in repr(response)
    assert "cut:" not in repr(response)


# --- error pages ------------------------------------------------------------------------


def test_strip_tags_and_page_text_keep_their_meaning() -> None:
    assert strip_tags("a<b>c</b>d") == "a c d"
    assert strip_tags("a<b<c>d<e") == "a d<e"
    assert page_text("<html><TITLE lang=en>502 Bad Gateway</title><p>x</p>") == "502 Bad Gateway"
    assert page_text("<title>  </title><p>Down</p>").split() == ["Down"]
    assert page_text("plain text") == "plain text"


@pytest.mark.parametrize("unit", ["<a", "<", "<title", "<title>", "<title><", "</title><title>"])
def test_reading_a_hostile_error_page_is_linear_in_its_size(unit: str) -> None:
    page = unit * (5_000_000 // len(unit))
    started = time.perf_counter()
    page_text(page)
    normalize(page.encode(), provider="anthropic", status=502)
    # Quadratic scanning takes minutes on 5 MB; a linear one well under this on any machine.
    assert time.perf_counter() - started < 5.0


# --- Azure categories ---------------------------------------------------------------------


def test_azure_filter_results_naming_several_categories_report_all_in_one_spelling() -> None:
    body = chat_body(
        {"content": "partial"},
        finish="content_filter",
        choice={
            "content_filter_results": {
                "hate": {"filtered": True, "severity": "high"},
                "self-harm": {"filtered": True, "severity": "medium"},
                "SelfHarm": {"filtered": True, "severity": "medium"},
                "Violence": {"filtered": True, "severity": "high"},
                "sexual": {"filtered": False, "severity": "safe"},
            }
        },
        prompt_filter_results=[],
    )
    response = normalize(body)
    assert response.provider == "azure"
    assert response.stop_details is not None
    assert response.stop_details.categories == ("hate", "self_harm", "violence")
    assert notice(response) == f"{FILTERED} (categories: hate, self_harm, violence). {NEXT_STEP}"


def test_headers_may_be_httpx_headers_or_raw_bytes() -> None:
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down"}}
    from_httpx = normalize(
        body, status=429, headers=httpx.Headers({"Retry-After": "3", "Request-Id": "req_1"})
    )
    from_bytes = normalize(
        body, status=429, headers={b"retry-after": b"3", b"request-id": b"req_1"}
    )
    for response in (from_httpx, from_bytes):
        assert response.error is not None and response.error.retry_after == 3.0
        assert response.request_id == "req_1"


def test_a_header_value_too_long_to_be_a_fact_is_ignored() -> None:
    response = normalize(BLOCKED_MESSAGE, status=400, headers={"x-request-id": "r" * 10_000})
    assert response.request_id is None
