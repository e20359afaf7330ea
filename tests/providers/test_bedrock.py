"""Bedrock Converse: guardrail blocks, stop reasons and error bodies, end to end.

Response bodies go through `normalize` twice, once naming the provider and once by shape,
and both must give the same `LLMResponse`. Error bodies that name their exception are
detected by shape too; a bare `{"message": ...}` is not, because it fits many APIs.
Notices are asserted whole.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals import ErrorKind, FinishReason, LLMResponse, StopDetails, ToolCall, notice
from refusals.providers import NormalizeError, bedrock, normalize
from tests.providers._support import (
    NEXT_STEP,
    edit_in_place,
    json_paths,
    json_values,
    normalize_or_reject,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "bedrock"
WRITTEN = FIXTURES / "written"
FILTER = "The provider's content filter blocked this request"


def read(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def parse(name: str, status: int | None = None, detectable: bool = True) -> LLMResponse:
    """Normalise a fixture by provider name and, when it names itself, by shape."""
    payload = read(name)
    named = normalize(payload, provider="bedrock", status=status)
    if detectable:
        assert normalize(payload, status=status) == named
    else:
        assert bedrock.detect_provider(json.loads(payload)) is None
    assert named.provider == "bedrock"
    assert named.api == "converse"
    return named


def details(response: LLMResponse) -> list[Any]:
    return list(response.decoded_details())


# --- ordinary stops -----------------------------------------------------------------


def test_a_recorded_end_turn_is_a_stop_with_its_text_and_usage() -> None:
    response = parse("converse-end-turn.json")

    assert response.finish_reason is FinishReason.STOP
    assert response.raw_finish_reason == "end_turn"
    assert response.content is not None
    assert response.content.startswith('Let me count the "r"s in "strawberry":')
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (22, 57)
    assert (response.usage.cache_read_tokens, response.usage.cache_creation_tokens) == (0, 0)
    assert response.stop_details is None
    assert response.cut_off is False
    assert notice(response) is None


def test_a_recorded_max_tokens_is_a_length_stop() -> None:
    response = parse("converse-max-tokens.json")

    assert response.finish_reason is FinishReason.LENGTH
    assert response.raw_finish_reason == "max_tokens"
    assert response.content == "The capital of France is"
    assert notice(response) is None


def test_a_guardrail_trace_with_no_blocked_action_stays_a_stop() -> None:
    response = parse("converse-guardrail-trace-no-action.json")

    assert response.finish_reason is FinishReason.STOP
    assert response.raw_finish_reason == "end_turn"
    assert response.stop_details is None
    assert response.reasoning_details == []
    assert response.content is not None
    assert response.content.startswith("The capital of France is Paris.")
    assert notice(response) is None


@pytest.mark.parametrize(
    ("name", "raw", "finish"),
    [
        (
            "written/model-context-window-exceeded.json",
            "model_context_window_exceeded",
            FinishReason.LENGTH,
        ),
        ("written/stop-sequence.json", "stop_sequence", FinishReason.STOP),
    ],
)
def test_other_documented_stop_reasons_map_as_documented(
    name: str, raw: str, finish: FinishReason
) -> None:
    response = parse(name)

    assert response.finish_reason is finish
    assert response.raw_finish_reason == raw
    assert response.cut_off is False
    assert notice(response) is None


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("written/unknown-stop-reason.json", "awaiting_approval_2027"),
        ("written/malformed-model-output.json", "malformed_model_output"),
    ],
)
def test_unknown_and_malformed_stop_reasons_are_errors_that_keep_the_raw_value(
    name: str, raw: str
) -> None:
    response = parse(name)

    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == raw
    assert response.cut_off is True
    assert notice(response) is None


def test_tool_use_and_reasoning_blocks_become_tool_calls_and_reasoning() -> None:
    response = parse("written/tool-use-reasoning.json")

    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.raw_finish_reason == "tool_use"
    assert response.tool_calls == [
        ToolCall(
            id="tooluse_WrittenSeattle01",
            name="get_weather",
            arguments='{"city":"Seattle","unit":"fahrenheit"}',
        )
    ]
    assert response.content == "I'll look up the current weather in Seattle."
    assert response.reasoning == "The user wants the weather, so I should call the tool."
    assert details(response) == [
        {"type": "thinking", "signature": "c2lnLWJlZHJvY2stcmVhc29uaW5n"},
        {"type": "redacted_thinking", "data": "cmVkYWN0ZWQtYmVkcm9jaw=="},
    ]
    assert response.usage is not None
    assert (response.usage.cache_read_tokens, response.usage.cache_creation_tokens) == (256, 128)


@pytest.mark.parametrize(("raw", "finish"), list(bedrock.STOP_REASONS.items()))
def test_each_stop_reason_in_the_table_maps_as_documented(raw: str, finish: FinishReason) -> None:
    body = {"output": {"message": {"role": "assistant", "content": []}}, "stopReason": raw}

    response = normalize(body)

    assert response.finish_reason is finish
    assert response.raw_finish_reason == raw


@pytest.mark.parametrize("raw", [None, "", "END_TURN", 3])
def test_a_missing_or_odd_stop_reason_is_never_a_stop(raw: Any) -> None:
    body = {"output": {"message": {"content": [{"text": "x"}]}}, "stopReason": raw}

    response = normalize(body, provider="bedrock")

    assert response.finish_reason is FinishReason.ERROR


# --- guardrail and content-filter stops ---------------------------------------------


def test_an_input_block_names_the_denied_topic_and_the_content_filter() -> None:
    response = parse("written/guardrail-intervened-input-topic-content.json")

    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "guardrail_intervened"
    assert response.stop_details == StopDetails(
        category="Investment Advice",
        explanation="Guardrail blocked.",
        categories=("Investment Advice", "violence"),
    )
    assert response.content == "Sorry, the model cannot answer this question."
    assert response.cut_off is True
    assert notice(response) == (
        f"{FILTER} (categories: Investment Advice, violence): guardrail blocked. " + NEXT_STEP
    )


def test_an_output_block_names_blocked_pii_and_regexes_but_not_anonymized_ones() -> None:
    response = parse("written/guardrail-intervened-output-pii.json")

    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "guardrail_intervened"
    assert response.stop_details == StopDetails(
        category="email",
        explanation="Guardrail blocked.",
        categories=("email", "AccountNumber"),
    )
    assert response.content == "Sorry, the model cannot answer this question."
    assert notice(response) == (
        f"{FILTER} (categories: email, AccountNumber): guardrail blocked. " + NEXT_STEP
    )


def test_word_lists_and_grounding_checks_are_named_when_they_block() -> None:
    response = parse("written/guardrail-intervened-words-grounding.json")

    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "guardrail_intervened"
    assert response.stop_details == StopDetails(
        category="custom_word",
        explanation="Guardrail blocked.",
        categories=("custom_word", "profanity", "grounding"),
    )
    assert response.usage is not None
    assert response.usage.cache_read_tokens == 1024
    assert notice(response) == (
        f"{FILTER} (categories: custom_word, profanity, grounding): guardrail blocked. " + NEXT_STEP
    )


def test_an_automated_reasoning_finding_names_a_block_the_stop_reason_reported() -> None:
    response = parse("written/guardrail-intervened-automated-reasoning.json")

    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "guardrail_intervened"
    assert response.stop_details == StopDetails(
        category="automated_reasoning", explanation="Guardrail blocked."
    )
    assert notice(response) == (
        f"{FILTER} (category: automated_reasoning): guardrail blocked. " + NEXT_STEP
    )


def test_an_automated_reasoning_finding_alone_does_not_turn_a_stop_into_a_block() -> None:
    body = json.loads(read("written/guardrail-intervened-automated-reasoning.json"))
    body["stopReason"] = "end_turn"

    response = normalize(body)

    assert response.finish_reason is FinishReason.STOP
    assert response.stop_details is None


def test_a_guardrail_stop_without_a_trace_still_gets_a_filter_notice() -> None:
    response = parse("written/guardrail-intervened-no-trace.json")

    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "guardrail_intervened"
    assert response.stop_details is None
    assert notice(response) == f"{FILTER}. " + NEXT_STEP


def test_a_model_content_filter_stop_is_a_filter_stop_with_cut_off_output() -> None:
    response = parse("written/content-filtered.json")

    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "content_filtered"
    assert response.stop_details is None
    assert response.content == "The recipe starts with"
    assert response.cut_off is True
    assert notice(response) == f"{FILTER}. " + NEXT_STEP


def test_a_blocked_action_in_the_trace_is_a_filter_stop_whatever_the_stop_reason() -> None:
    body = json.loads(read("converse-guardrail-trace-no-action.json"))
    assessment = body["trace"]["guardrail"]["outputAssessments"]["xbgw7g293v7o"][0]
    assessment["contentPolicy"] = {
        "filters": [{"type": "HATE", "confidence": "HIGH", "action": "BLOCKED"}]
    }

    response = normalize(body)

    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "end_turn"
    assert response.stop_details == StopDetails(category="hate", explanation="No action.")
    assert notice(response) == f"{FILTER} (category: hate): no action. " + NEXT_STEP


# --- error bodies -------------------------------------------------------------------


class ErrorCase(NamedTuple):
    name: str
    status: int
    kind: ErrorKind
    code: str | None
    message: str
    detectable: bool = True
    """Whether the body names its exception, so shape detection may claim it."""


ERROR_CASES = [
    ErrorCase(
        "written/error-429-throttling.json",
        429,
        ErrorKind.TRANSIENT,
        "ThrottlingException",
        "Too many requests, please wait before trying again.",
    ),
    ErrorCase(
        "written/error-429-throttling-plain.json",
        429,
        ErrorKind.TRANSIENT,
        None,
        "Too many requests, please wait before trying again.",
        detectable=False,
    ),
    ErrorCase(
        "written/error-503-service-unavailable.json",
        503,
        ErrorKind.TRANSIENT,
        "ServiceUnavailableException",
        "Bedrock is unable to process your request.",
    ),
    ErrorCase(
        "written/error-429-model-not-ready.json",
        429,
        ErrorKind.TRANSIENT,
        "ModelNotReadyException",
        "The model is not ready to serve inference requests. Try again later.",
    ),
    ErrorCase(
        "written/error-424-model-error.json",
        424,
        ErrorKind.TRANSIENT,
        "ModelErrorException",
        "The request failed due to an error while processing the model.",
    ),
    ErrorCase(
        "written/error-500-internal.json",
        500,
        ErrorKind.TRANSIENT,
        "InternalServerException",
        "The server encountered an error processing your request.",
        detectable=False,
    ),
    ErrorCase(
        "written/error-403-access-denied.json",
        403,
        ErrorKind.AUTH,
        "AccessDeniedException",
        "You don't have access to the model with the specified model ID.",
    ),
    ErrorCase(
        "written/error-403-unrecognized-client.json",
        403,
        ErrorKind.AUTH,
        "UnrecognizedClientException",
        "The security token included in the request is invalid.",
    ),
    ErrorCase(
        "written/error-400-validation.json",
        400,
        ErrorKind.INVALID_REQUEST,
        None,
        "Malformed input request: #: required key [messages] not found, please reformat "
        "your input and try again.",
        detectable=False,
    ),
    ErrorCase(
        "written/error-400-validation-too-long.json",
        400,
        ErrorKind.INVALID_REQUEST,
        "ValidationException",
        "Input is too long for requested model.",
    ),
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=lambda case: case.name)
def test_error_bodies_are_classified_by_exception_name_or_status(case: ErrorCase) -> None:
    response = parse(case.name, status=case.status, detectable=case.detectable)

    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == (case.code or f"http_{case.status}")
    assert response.error is not None
    assert response.error.kind is case.kind
    assert response.error.retryable is (case.kind is ErrorKind.TRANSIENT)
    assert (response.error.status, response.error.code) == (case.status, case.code)
    assert response.error.message == case.message
    assert response.stop_details == StopDetails(explanation=case.message)
    assert notice(response) is None


def test_a_validation_error_saying_a_content_filter_blocked_it_is_a_policy_block() -> None:
    response = parse("written/error-400-validation-content-filter.json", status=400)

    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "ValidationException"
    assert response.error is not None
    assert response.error.kind is ErrorKind.POLICY
    assert response.error.retryable is False
    assert notice(response) == (
        f"{FILTER}: this request has been blocked by our content filters. Please adjust "
        "your text prompt to submit a new request. " + NEXT_STEP
    )


def test_a_guardrail_block_reported_as_a_plain_400_is_a_policy_block() -> None:
    response = parse("written/error-400-validation-guardrail.json", status=400, detectable=False)

    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "http_400"
    assert response.error is not None
    assert response.error.kind is ErrorKind.POLICY
    assert notice(response) == (
        f"{FILTER}: the input was blocked by the guardrail configured for this application. "
        + NEXT_STEP
    )


def test_an_access_denied_403_and_a_guardrail_403_are_told_apart_by_the_body() -> None:
    denied = normalize(read("written/error-403-access-denied.json"), status=403)
    blocked = normalize(
        {"__type": "AccessDeniedException", "message": "Input blocked by guardrail policy."},
        status=403,
    )

    assert denied.error is not None and denied.error.kind is ErrorKind.AUTH
    assert blocked.error is not None and blocked.error.kind is ErrorKind.POLICY


def test_a_botocore_client_error_dump_gives_its_code_status_and_request_id() -> None:
    response = parse("written/error-botocore-client-error.json")

    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "ThrottlingException"
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.status == 429
    assert response.error.message == "Rate exceeded"
    assert response.request_id == "4b1c7d3e-5f6a-4b8c-9d0e-1f2a3b4c5d6e"


def test_a_throttling_message_without_a_name_or_status_is_transient() -> None:
    response = normalize(read("written/error-429-throttling-plain.json"), provider="bedrock")

    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.status is None


def test_exception_names_from_event_streams_match_without_regard_to_case() -> None:
    response = normalize({"__type": "throttlingException", "message": "slow down"})

    assert response.provider == "bedrock"
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.code == "ThrottlingException"


def test_credentials_echoed_in_an_error_message_are_redacted() -> None:
    response = parse("written/error-403-key-echoed.json", status=403)

    assert response.error is not None
    assert response.error.kind is ErrorKind.AUTH
    message = response.error.message or ""
    assert "AKIA" not in message
    assert "Signature" not in message
    assert message == (
        "The security token included in the request is invalid. Credential=[redacted]"
        "/20270101/us-east-1/bedrock/aws4_request, [redacted]"
    )


def test_an_html_gateway_page_is_classified_by_its_status() -> None:
    response = normalize(read("written/error-503-gateway.html"), provider="bedrock", status=503)

    assert response.finish_reason is FinishReason.ERROR
    assert response.raw_finish_reason == "http_503"
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.message == "503 Service Temporarily Unavailable"


# --- shape detection ----------------------------------------------------------------


def test_shape_detection_does_not_claim_other_providers_bodies() -> None:
    others = [path for path in FIXTURES.parent.rglob("*.json") if FIXTURES not in path.parents]
    assert others
    for path in others:
        body = json.loads(path.read_bytes())
        assert bedrock.detect_provider(body) is None, path.name


@pytest.mark.parametrize(
    "body",
    [
        {"message": "Too many requests"},
        {"message": "x", "type": "ValidationException"},
        {"__type": "SomeOtherServiceException", "message": "x"},
        {"output": [], "stopReason": "end_turn"},
        {"stopReason": "end_turn"},
        {"error": {"message": "x"}},
    ],
)
def test_shape_detection_claims_only_bodies_that_are_plainly_bedrock(
    body: dict[str, Any],
) -> None:
    assert bedrock.detect_provider(body) is None


# --- malformed payloads -------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"output": None},
        {"output": {"message": "x"}},
        {"output": {"message": {"content": [None, 1, {"text": 5}, {"toolUse": "x"}]}}},
        {"output": {"message": {"content": [{"reasoningContent": {"reasoningText": 3}}]}}},
        {"usage": [1]},
        {"usage": {"inputTokens": "10", "outputTokens": True}},
        {"trace": None},
        {"trace": {"guardrail": {"inputAssessment": [1], "outputAssessments": {"a": {}}}}},
        {"trace": {"guardrail": {"outputAssessments": {"a": [{"contentPolicy": []}]}}}},
        {"trace": {"guardrail": {"actionReason": 7, "inputAssessment": {"a": None}}}},
    ],
)
def test_wrong_types_degrade_instead_of_raising(change: dict[str, Any]) -> None:
    body = json.loads(read("written/guardrail-intervened-input-topic-content.json"))
    body.update(change)

    response = normalize(body, provider="bedrock")

    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert notice(response) is not None


@pytest.mark.parametrize(
    "payload", [b"", b"not json", b"[]", b"null", b'{"foo": 1}', b"{", b'"text"']
)
def test_payloads_that_are_not_bedrock_bodies_raise_normalize_error(payload: bytes) -> None:
    with pytest.raises(NormalizeError):
        normalize(payload, provider="bedrock")


# --- property tests -----------------------------------------------------------------

HYPOTHESIS_FIXTURES = [
    "converse-end-turn.json",
    "converse-guardrail-trace-no-action.json",
    "converse-max-tokens.json",
    # InvokeModel bodies have no stopReason to mutate: test_bedrock_invoke.py covers them.
    *sorted(f"written/{p.name}" for p in WRITTEN.glob("*.json") if "invoke" not in p.name),
]
FILTER_STOPS = ("guardrail_intervened", "content_filtered")
SIGNAL_WORDS = ["BLOCKED", "NONE", "guardrail_intervened", "content_filtered", "end_turn"]
JSON_VALUES = json_values(SIGNAL_WORDS)


POLICY_LISTS = [
    ("topicPolicy", "topics"),
    ("contentPolicy", "filters"),
    ("wordPolicy", "customWords"),
    ("wordPolicy", "managedWordLists"),
    ("sensitiveInformationPolicy", "piiEntities"),
    ("sensitiveInformationPolicy", "regexes"),
    ("contextualGroundingPolicy", "filters"),
]


def has_blocked_action(doc: dict[str, Any]) -> bool:
    """Whether a documented guardrail policy in the trace reports a BLOCKED action."""
    trace = doc.get("trace")
    guardrail = trace.get("guardrail") if isinstance(trace, dict) else None
    if not isinstance(guardrail, dict):
        return False
    assessments: list[Any] = []
    for key in ("inputAssessment", "outputAssessments"):
        group = guardrail.get(key)
        if isinstance(group, dict):
            for value in group.values():
                assessments.extend(value if isinstance(value, list) else [value])
    for assessment in assessments:
        if not isinstance(assessment, dict):
            continue
        for policy, field in POLICY_LISTS:
            section = assessment.get(policy)
            items = section.get(field) if isinstance(section, dict) else None
            for item in items if isinstance(items, list) else []:
                if isinstance(item, dict) and item.get("action") == "BLOCKED":
                    return True
    return False


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_payloads_raise_only_normalize_error_and_never_hide_a_filter_stop(
    data: st.DataObject,
) -> None:
    name = data.draw(st.sampled_from(HYPOTHESIS_FIXTURES))
    doc = json.loads(read(name))
    if data.draw(st.booleans()):
        # A blocked trace must win over whatever stop reason comes with it.
        doc["stopReason"] = data.draw(st.sampled_from(list(bedrock.STOP_REASONS)) | st.text())
    for _ in range(data.draw(st.integers(0, 4))):
        candidates = json_paths(doc)[1:]  # below the root
        if not candidates:
            break
        path = data.draw(st.sampled_from(candidates))
        edit_in_place(doc, path, data.draw(JSON_VALUES), data.draw(st.booleans()))
    status = data.draw(st.sampled_from([None, None, 400, 403, 429, 503]))

    for provider in ("bedrock", None):
        try:
            response = normalize(copy.deepcopy(doc), provider=provider, status=status)
        except NormalizeError:
            continue
        if provider is None or status is not None or bedrock.is_error(doc):
            continue
        if doc.get("stopReason") in FILTER_STOPS:
            assert response.finish_reason is FinishReason.CONTENT_FILTER
            assert notice(response) is not None
        if has_blocked_action(doc):
            assert response.finish_reason is not FinishReason.STOP


@settings(max_examples=200)
@given(data=st.data())
def test_truncated_payloads_raise_only_normalize_error(data: st.DataObject) -> None:
    raw = read(data.draw(st.sampled_from(HYPOTHESIS_FIXTURES)))
    cut = raw[: data.draw(st.integers(0, len(raw)))]
    normalize_or_reject(cut, ("bedrock", None))


@given(payload=st.binary(max_size=64) | st.text(max_size=64))
def test_random_payloads_raise_only_normalize_error(payload: bytes | str) -> None:
    normalize_or_reject(payload, ("bedrock",))
