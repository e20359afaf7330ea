"""Anthropic Messages: refusals, fallbacks, stop reasons and error bodies, end to end.

Every payload goes through `normalize` twice, once naming the provider and once by shape,
and both must give the same `LLMResponse`. Notices are asserted whole: they are the
contract every surface shows verbatim.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals import (
    ErrorKind,
    Fallback,
    FinishReason,
    LLMResponse,
    StopDetails,
    ToolCall,
    notice,
)
from refusals.providers import NormalizeError, anthropic, normalize
from tests.providers._support import (
    NEXT_STEP,
    edit_in_place,
    json_paths,
    json_values,
    normalize_or_reject,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "anthropic"
WRITTEN = FIXTURES / "written"


def read(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def parse(name: str, status: int | None = None) -> LLMResponse:
    """Normalise a fixture by provider name and by shape; both must agree."""
    payload = read(name)
    named = normalize(payload, provider="anthropic", status=status)
    detected = normalize(payload, status=status)
    assert named == detected
    assert named.provider == "anthropic"
    assert named.api == "messages"
    return named


def details(response: LLMResponse) -> list[Any]:
    return list(response.decoded_details())


# --- refusals -----------------------------------------------------------------------


def test_a_recorded_refusal_reports_its_category_explanation_and_recommended_model() -> None:
    response = parse("vercel-refusal-cyber.json")

    assert response.finish_reason is FinishReason.REFUSAL
    assert response.raw_finish_reason == "refusal"
    assert response.stop_details == StopDetails(
        category="cyber",
        explanation=(
            "This request triggered restrictions on violative cyber content and was blocked "
            "under Anthropic's Usage Policy."
        ),
        recommended_model="claude-fable-5",
    )
    assert notice(response) == (
        "The model declined this request (category: cyber): this request triggered "
        "restrictions on violative cyber content and was blocked under Anthropic's Usage "
        "Policy. A fallback to `claude-fable-5` was recommended but could not run. " + NEXT_STEP
    )
    assert response.content is None
    assert response.cut_off is False
    assert response.served_by_fallback is False
    assert response.model == "claude-fable-5"
    assert response.request_id == "msg_01RefusalExampleAbcdefghijk"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (18, 5)


def test_a_refusal_with_null_stop_details_is_still_a_refusal_with_a_plain_notice() -> None:
    response = parse("vercel-refusal-no-details.json")

    assert response.finish_reason is FinishReason.REFUSAL
    assert response.raw_finish_reason == "refusal"
    assert response.stop_details is None
    assert response.reasoning_details == []
    assert notice(response) == "The model declined this request. " + NEXT_STEP


def test_a_refusal_without_a_stop_details_key_explains_itself_with_its_content() -> None:
    response = parse("written/refusal-stop-details-absent.json")

    assert response.finish_reason is FinishReason.REFUSAL
    assert response.raw_finish_reason == "refusal"
    assert response.stop_details is None
    assert response.content == "I can't help with that request."
    assert response.cut_off is True
    assert notice(response) == (
        "The model declined this request: I can't help with that request. " + NEXT_STEP
    )


def test_a_refusal_after_a_fallback_iteration_says_the_fallback_also_declined() -> None:
    response = parse("written/refusal-fallback-iterations.json")

    assert response.finish_reason is FinishReason.REFUSAL
    assert response.raw_finish_reason == "refusal"
    assert response.stop_details == StopDetails(
        category="bio",
        explanation="This request asked for synthesis steps for a dangerous pathogen.",
    )
    assert response.served_by_fallback is True
    assert response.declined_models == ["claude-fable-5"]
    assert response.fallback_model == "claude-opus-4-8"
    assert response.usage is not None
    assert [it["type"] for it in response.usage.iterations] == ["message", "fallback_message"]
    assert notice(response) == (
        "The model declined this request (category: bio): this request asked for synthesis "
        "steps for a dangerous pathogen. The configured fallback model also declined. " + NEXT_STEP
    )


def test_an_unknown_category_passes_through_with_the_fallback_credit_facts() -> None:
    response = parse("written/refusal-new-category.json")

    assert response.finish_reason is FinishReason.REFUSAL
    assert response.raw_finish_reason == "refusal"
    assert response.stop_details == StopDetails(
        category="new_category_2027",
        explanation="Requests of this kind are not supported.",
        fallback_credit_token="tok_written_fixture_0001",
        fallback_has_prefill_claim=True,
    )
    assert response.content == "Sure, the first step is to"
    assert response.reasoning == "The user is asking about the weights of another lab's model."
    assert response.cut_off is True
    assert response.served_by_fallback is False
    assert notice(response) == (
        "The model declined this request (category: new_category_2027): requests of this "
        "kind are not supported. " + NEXT_STEP
    )


def test_an_explanation_starting_with_an_acronym_keeps_its_case_in_the_notice() -> None:
    response = parse("written/refusal-reasoning-extraction.json")

    assert response.finish_reason is FinishReason.REFUSAL
    assert response.raw_finish_reason == "refusal"
    assert response.stop_details == StopDetails(
        category="reasoning_extraction",
        explanation="MCP server output asked the model to reveal its hidden reasoning.",
    )
    assert notice(response) == (
        "The model declined this request (category: reasoning_extraction): MCP server output "
        "asked the model to reveal its hidden reasoning. " + NEXT_STEP
    )


@pytest.mark.parametrize(
    "category", ["cyber", "bio", "frontier_llm", "reasoning_extraction", "general_harms"]
)
def test_every_documented_category_is_reported_as_given(category: str) -> None:
    body = json.loads(read("vercel-refusal-cyber.json"))
    body["stop_details"] = {"type": "refusal", "category": category, "explanation": None}

    response = normalize(body, provider="anthropic")

    assert response.finish_reason is FinishReason.REFUSAL
    assert response.stop_details == StopDetails(category=category)
    assert notice(response) == f"The model declined this request (category: {category}). " + (
        NEXT_STEP
    )


# --- fallbacks ----------------------------------------------------------------------


def test_a_server_fallback_is_served_by_the_fallback_model_and_is_no_refusal() -> None:
    response = parse("vercel-server-fallback.json")

    assert response.finish_reason is FinishReason.STOP
    assert response.raw_finish_reason == "end_turn"
    assert response.stop_details is None
    assert response.content == (
        "The printing press was invented by Johannes Gutenberg around 1440."
    )
    assert response.fallbacks == [Fallback(from_model="claude-fable-5", to_model="claude-opus-4-8")]
    assert response.served_by_fallback is True
    assert response.declined_models == ["claude-fable-5"]
    assert response.fallback_model == "claude-opus-4-8"
    assert response.usage is not None
    assert response.usage.iterations == [
        {
            "type": "message",
            "model": "claude-fable-5",
            "input_tokens": 408,
            "output_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        },
        {
            "type": "fallback_message",
            "model": "claude-opus-4-8",
            "input_tokens": 412,
            "output_tokens": 264,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        },
    ]
    assert notice(response) is None


def test_a_fallback_block_keeps_its_trigger_and_its_place_among_thinking_details() -> None:
    response = parse("written/fallback-block-trigger.json")

    assert response.finish_reason is FinishReason.STOP
    assert response.raw_finish_reason == "end_turn"
    assert details(response) == [
        {"type": "thinking", "signature": "c2lnLWJlZm9yZS1mYWxsYmFjaw=="},
        {
            "type": "fallback",
            "from": {"model": "claude-fable-5"},
            "to": {"model": "claude-opus-4-8"},
            "trigger": {"type": "refusal"},
        },
        {"type": "redacted_thinking", "data": "RW5jcnlwdGVkIHJlYXNvbmluZw=="},
    ]
    assert response.fallbacks == [
        Fallback(from_model="claude-fable-5", to_model="claude-opus-4-8", trigger="refusal")
    ]
    assert response.served_by_fallback is True
    assert response.content == "Here is a summary of the incident report."
    assert response.reasoning == "The user wants a summary of the incident report."
    assert response.usage is not None
    assert response.usage.cache_read_tokens == 128
    assert response.usage.cache_creation_tokens == 64
    assert notice(response) is None


def test_advisor_iterations_without_a_model_are_copied_and_are_no_fallback() -> None:
    response = parse("written/advisor-iterations.json")

    assert response.finish_reason is FinishReason.STOP
    assert response.usage is not None
    assert [it["type"] for it in response.usage.iterations] == [
        "message",
        "advisor_message",
        "message",
    ]
    assert "model" not in response.usage.iterations[1]
    assert response.served_by_fallback is False
    assert response.content == "Run the schema migration before the data migration."
    assert response.tool_calls == []


# --- other stop reasons -------------------------------------------------------------


def test_a_recorded_pause_turn_with_server_tools_pauses_without_client_tool_calls() -> None:
    response = parse("pause-turn-web-search.json")

    assert response.finish_reason is FinishReason.PAUSE
    assert response.raw_finish_reason == "pause_turn"
    assert response.tool_calls == []
    assert response.content is not None
    assert response.content.startswith(
        "I'll run these searches for you one at a time. Let me begin:Now continuing"
    )
    assert response.reasoning is not None
    assert response.reasoning.startswith("The user wants me to run 15 separate web searches")
    assert details(response)[0]["type"] == "thinking"
    assert response.usage is not None
    assert response.usage.input_tokens == 401468
    assert response.cut_off is False
    assert notice(response) is None


def test_a_recorded_stop_sequence_is_a_normal_stop() -> None:
    response = parse("stop-sequence.json")

    assert response.finish_reason is FinishReason.STOP
    assert response.raw_finish_reason == "stop_sequence"
    assert response.content == "The beautiful city of "
    assert response.request_id == "msg_01376yZQxHcw9pER2Ab2SvQb"
    assert notice(response) is None


def test_a_compaction_stop_pauses_and_copies_the_compaction_iteration() -> None:
    response = parse("written/compaction.json")

    assert response.finish_reason is FinishReason.PAUSE
    assert response.raw_finish_reason == "compaction"
    assert response.content is None
    assert response.usage is not None
    assert [it["type"] for it in response.usage.iterations] == ["compaction"]
    assert response.served_by_fallback is False
    assert notice(response) is None


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("written/model-context-window-exceeded.json", "model_context_window_exceeded"),
        ("written/max-tokens.json", "max_tokens"),
    ],
)
def test_running_out_of_room_is_a_length_stop(name: str, raw: str) -> None:
    response = parse(name)

    assert response.finish_reason is FinishReason.LENGTH
    assert response.raw_finish_reason == raw
    assert response.cut_off is False
    assert notice(response) is None


def test_an_unknown_stop_reason_is_an_error_that_keeps_the_raw_value() -> None:
    response = parse("written/unknown-stop-reason.json")

    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "paused_for_review_2027"
    assert response.content == "Step one is done; waiting for"
    assert response.cut_off is True
    assert notice(response) is None


def test_tool_use_blocks_become_tool_calls_with_json_arguments() -> None:
    response = parse("written/tool-use-thinking.json")

    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.raw_finish_reason == "tool_use"
    assert response.tool_calls == [
        ToolCall(
            id="toolu_01WrittenWeather",
            name="get_weather",
            arguments='{"location":"Paris, France","unit":"celsius"}',
        )
    ]
    assert response.content == "Let me check the weather in Paris."
    assert response.reasoning == "I should look up the weather first."
    assert details(response) == [
        {"type": "thinking", "signature": "c2lnLXRvb2wtdXNl"},
        {"type": "redacted_thinking", "data": "cmVkYWN0ZWQtdG9vbC11c2U="},
    ]


@pytest.mark.parametrize(("raw", "finish"), list(anthropic.STOP_REASONS.items()))
def test_each_stop_reason_in_the_table_maps_as_documented(raw: str, finish: FinishReason) -> None:
    body = {"type": "message", "model": "m", "content": [], "stop_reason": raw}

    response = normalize(body)

    assert response.finish_reason is finish
    assert response.raw_finish_reason == raw


@pytest.mark.parametrize("raw", [None, "", "END_TURN", 7])
def test_a_missing_or_odd_stop_reason_is_never_a_stop(raw: Any) -> None:
    body = {"type": "message", "model": "m", "content": [], "stop_reason": raw}

    response = normalize(body, provider="anthropic")

    assert response.finish_reason is FinishReason.ERROR


# --- error bodies -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "status", "kind", "code", "message"),
    [
        (
            "written/error-400-invalid-request.json",
            400,
            ErrorKind.INVALID_REQUEST,
            "invalid_request_error",
            "prompt is too long: 215000 tokens > 200000 maximum",
        ),
        (
            "written/error-401-authentication.json",
            401,
            ErrorKind.AUTH,
            "authentication_error",
            "invalid x-api-key",
        ),
        (
            "written/error-403-permission.json",
            403,
            ErrorKind.AUTH,
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
        (
            "written/error-404-not-found.json",
            404,
            ErrorKind.INVALID_REQUEST,
            "not_found_error",
            "model: claude-nonexistent-1",
        ),
        (
            "written/error-413-request-too-large.json",
            413,
            ErrorKind.INVALID_REQUEST,
            "request_too_large",
            "Request exceeds the maximum allowed number of bytes.",
        ),
        (
            "written/error-429-spend-limit.json",
            429,
            ErrorKind.AUTH,
            "enforced_spend_limit_reached",
            "You have reached your specified API usage limits. You will regain access on "
            "2027-01-01 at 00:00 UTC.",
        ),
        (
            "written/error-500-api.json",
            500,
            ErrorKind.TRANSIENT,
            "api_error",
            "Internal server error",
        ),
        (
            "written/error-529-overloaded.json",
            529,
            ErrorKind.TRANSIENT,
            "overloaded_error",
            "Overloaded",
        ),
    ],
)
def test_error_bodies_are_classified_by_their_error_type(
    name: str, status: int, kind: ErrorKind, code: str, message: str
) -> None:
    response = parse(name, status=status)

    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == code
    assert response.error is not None
    assert response.error.kind is kind
    assert response.error.retryable is (kind is ErrorKind.TRANSIENT)
    assert (response.error.status, response.error.code) == (status, code)
    assert response.error.message == message
    assert response.stop_details == StopDetails(explanation=message)
    assert notice(response) is None


def test_the_recorded_rate_limit_is_transient_and_keeps_its_request_id() -> None:
    response = parse("error-429-rate-limit.json", status=429)

    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "rate_limit_error"
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.retryable is True
    assert response.request_id == "req_011CYK5n67SytMUxm8WMZUWY"
    assert response.error.message is not None
    assert response.error.message.startswith(
        "This request would exceed your organization's rate limit"
    )


def test_an_error_body_is_recognised_without_an_http_status() -> None:
    response = parse("error-429-rate-limit.json")

    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.status is None


def test_an_output_blocked_400_is_a_content_filter_stop_with_its_notice() -> None:
    response = parse("written/error-400-output-blocked.json", status=400)

    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "invalid_request_error"
    assert response.error is not None
    assert response.error.kind is ErrorKind.POLICY
    assert response.error.retryable is False
    assert response.stop_details == StopDetails(
        explanation="Output blocked by content filtering policy"
    )
    assert response.request_id == "req_011WrittenOutputBlocked"
    assert notice(response) == (
        "The provider's content filter blocked this request: output blocked by content "
        "filtering policy. " + NEXT_STEP
    )


def test_a_bad_key_403_and_a_policy_block_403_are_told_apart_by_the_body() -> None:
    bad_key = normalize(read("written/error-403-permission.json"), status=403)
    blocked = normalize(
        {
            "type": "error",
            "error": {"type": "permission_error", "message": "Request blocked by safety filters"},
        },
        status=403,
    )

    assert bad_key.error is not None and bad_key.error.kind is ErrorKind.AUTH
    assert blocked.error is not None and blocked.error.kind is ErrorKind.POLICY
    assert blocked.finish_reason is FinishReason.CONTENT_FILTER


def test_api_keys_echoed_in_an_error_message_are_redacted() -> None:
    response = parse("written/error-401-key-echoed.json", status=401)

    assert response.error is not None
    assert response.error.kind is ErrorKind.AUTH
    message = response.error.message or ""
    assert "sk-ant" not in message
    assert "secret" not in message
    assert message == "invalid [redacted] (header [redacted]"
    assert "sk-ant" not in json.dumps(list(response.decoded_details()))


def test_a_long_error_message_is_bounded() -> None:
    body = {"type": "error", "error": {"type": "api_error", "message": "x" * 5000}}

    response = normalize(body, status=500)

    assert response.error is not None
    assert response.error.message == "x" * 497 + "..."


def test_an_html_gateway_page_is_classified_by_its_status() -> None:
    page = read("written/error-502-gateway.html")

    response = normalize(page, provider="anthropic", status=502)

    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "http_502"
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.message == "502 Bad Gateway"


# --- shape detection ----------------------------------------------------------------


def test_shape_detection_does_not_claim_other_providers_bodies() -> None:
    others = [path for path in (FIXTURES.parent).rglob("*.json") if FIXTURES not in path.parents]
    assert others
    for path in others:
        body = json.loads(path.read_bytes())
        if path.name.startswith("invoke-claude-"):
            continue  # Claude on Bedrock: an Anthropic Messages body with Bedrock's keys
        assert anthropic.detect_provider(body) is None, path.name


@pytest.mark.parametrize(
    "body",
    [
        # OpenAI Responses stream error event: same outer shape, different provider.
        {
            "type": "error",
            "sequence_number": 2,
            "error": {"type": "insufficient_quota", "code": "insufficient_quota", "message": "x"},
        },
        # OpenAI Responses output item.
        {
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "hi"}],
        },
        {"error": {"type": "invalid_request_error", "message": "x"}},
        {"type": "error", "error": "x"},
        {"type": "message"},
    ],
)
def test_shape_detection_is_specific(body: dict[str, Any]) -> None:
    assert anthropic.detect_provider(body) is None


# --- malformed payloads -------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"content": None},
        {"content": "text"},
        {"content": [None, 3, "x", {"type": 5}, {"type": "text", "text": 9}]},
        {"content": [{"type": "tool_use", "id": 1, "name": None}]},
        {"content": [{"type": "fallback", "from": "a", "to": None, "trigger": "x"}]},
        {"content": [{"type": "thinking", "thinking": None, "signature": 4}]},
        {"usage": "lots"},
        {"usage": {"input_tokens": -3, "output_tokens": "9", "iterations": {"type": "x"}}},
        {"usage": {"iterations": [1, None, {"type": "fallback_message"}]}},
        {"stop_details": ["cyber"]},
        {"stop_details": {"category": 3, "explanation": ["x"], "fallback_has_prefill_claim": 1}},
        {"model": 12, "id": None},
    ],
)
def test_wrong_types_degrade_instead_of_raising(change: dict[str, Any]) -> None:
    body = json.loads(read("vercel-refusal-cyber.json"))
    body.update(change)

    response = normalize(body, provider="anthropic")

    assert response.finish_reason is FinishReason.REFUSAL
    assert notice(response) is not None


@pytest.mark.parametrize(
    "payload",
    [b"", b"   ", b"not json", b"[1, 2]", b"null", b'{"foo": 1}', b'"text"', b"{"],
)
def test_payloads_that_are_not_anthropic_bodies_raise_normalize_error(payload: bytes) -> None:
    with pytest.raises(NormalizeError):
        normalize(payload, provider="anthropic")


# --- property tests -----------------------------------------------------------------

HYPOTHESIS_FIXTURES = [
    "vercel-refusal-cyber.json",
    "vercel-refusal-no-details.json",
    "vercel-server-fallback.json",
    "stop-sequence.json",
    "error-429-rate-limit.json",
    *sorted(f"written/{p.name}" for p in WRITTEN.glob("*.json")),
]
SIGNAL_WORDS = ["refusal", "end_turn", "message", "error", "fallback", "fallback_message"]
JSON_VALUES = json_values(SIGNAL_WORDS)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_payloads_raise_only_normalize_error_and_never_hide_a_refusal(
    data: st.DataObject,
) -> None:
    name = data.draw(st.sampled_from(HYPOTHESIS_FIXTURES))
    doc = json.loads(read(name))
    for _ in range(data.draw(st.integers(1, 4))):
        candidates = json_paths(doc)[1:]  # below the root
        if not candidates:
            break
        path = data.draw(st.sampled_from(candidates))
        edit_in_place(doc, path, data.draw(JSON_VALUES), data.draw(st.booleans()))
    status = data.draw(st.sampled_from([None, None, 400, 403, 429, 500, 529]))

    for provider in ("anthropic", None):
        try:
            response = normalize(copy.deepcopy(doc), provider=provider, status=status)
        except NormalizeError:
            continue
        if provider is not None and status is None and doc.get("stop_reason") == "refusal":
            assert response.finish_reason is not FinishReason.STOP
            if not anthropic.is_error(doc):
                assert response.finish_reason is FinishReason.REFUSAL
                assert notice(response) is not None


@settings(max_examples=200)
@given(data=st.data())
def test_truncated_payloads_raise_only_normalize_error(data: st.DataObject) -> None:
    raw = read(data.draw(st.sampled_from(HYPOTHESIS_FIXTURES)))
    cut = raw[: data.draw(st.integers(0, len(raw)))]
    normalize_or_reject(cut, ("anthropic", None))


@given(payload=st.binary(max_size=64) | st.text(max_size=64))
def test_random_payloads_raise_only_normalize_error(payload: bytes | str) -> None:
    normalize_or_reject(payload, ("anthropic",))
