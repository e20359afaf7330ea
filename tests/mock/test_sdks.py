"""The official SDKs, pointed at the mock by their base-URL option, parse every scenario
of their wire format and report what it means (a stop reason, a refusal field, a block
reason, or the SDK's own exception for an error status). Faults are called with retries
off, and every call is bounded by a timeout.
"""

from __future__ import annotations

from typing import Any

import anthropic
import boto3
import openai
import pytest
from botocore.config import Config
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types
from google.oauth2.credentials import Credentials
from pydantic import BaseModel

from refusals.mock import MockServer
from tests.mock._wires import WEATHER_SCHEMA

TIMEOUT = 10.0
ANTHROPIC_TOOLS: list[Any] = [{"name": "get_weather", "input_schema": WEATHER_SCHEMA}]
CHAT_TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER_SCHEMA}}
]
USER: list[Any] = [{"role": "user", "content": "What is the weather like?"}]


# --- Anthropic --------------------------------------------------------------------------


def _anthropic(server: MockServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="sk-ant-test", base_url=server.base_url, max_retries=0, timeout=TIMEOUT
    )


ANTHROPIC_STOPS = {
    "answer": ("end_turn", ["text"]),
    "tool-then-answer": ("tool_use", ["tool_use"]),
    "refusal": ("refusal", []),
    "refusal-mid-stream": ("refusal", ["text"]),
    "refusal-recommended": ("refusal", []),
    "fallback-served": ("end_turn", ["fallback", "text"]),
    "fallback-declined": ("refusal", ["fallback"]),
    "length": ("max_tokens", ["text"]),
    "pause-turn": ("pause_turn", ["text"]),
    "rate-limited": ("end_turn", ["text"]),  # after its 429s; the first call is tested below
    "truncated-stream": ("end_turn", ["text"]),
    "slow": ("end_turn", ["text"]),
}


def _anthropic_call(scenario: str) -> dict[str, Any]:
    call: dict[str, Any] = {
        "model": f"mock-{scenario}",
        "max_tokens": 64,
        "messages": USER,
        "tools": ANTHROPIC_TOOLS,
    }
    if scenario.startswith("fallback"):
        call["extra_body"] = {"fallbacks": [{"model": "mock-fallback-model"}]}
        call["extra_headers"] = {"anthropic-beta": "server-side-fallback-2026-07-01"}
    return call


@pytest.mark.parametrize("scenario", sorted(set(ANTHROPIC_STOPS) - {"slow", "truncated-stream"}))
def test_anthropic_messages_create_reports_each_scenarios_stop(
    server: MockServer, scenario: str
) -> None:
    client = _anthropic(server)
    if scenario == "rate-limited":
        for _ in range(2):
            with pytest.raises(anthropic.RateLimitError):
                client.messages.create(**_anthropic_call(scenario))
    message = client.messages.create(**_anthropic_call(scenario))
    stop_reason, blocks = ANTHROPIC_STOPS[scenario]
    assert message.stop_reason == stop_reason
    assert [block.type for block in message.content] == blocks
    if stop_reason == "refusal":
        assert message.stop_details is not None
        assert message.stop_details.category == "cyber"


@pytest.mark.parametrize("scenario", sorted(ANTHROPIC_STOPS))
def test_anthropic_messages_stream_reports_each_scenarios_stop(
    server: MockServer, scenario: str
) -> None:
    client = _anthropic(server)
    if scenario == "rate-limited":
        server.app.reset()
        for _ in range(2):
            with pytest.raises(anthropic.RateLimitError):
                client.messages.create(**_anthropic_call(scenario))
    with client.messages.stream(**_anthropic_call(scenario)) as stream:
        events = [event.type for event in stream]
        message = stream.get_final_message()
    stop_reason, blocks = ANTHROPIC_STOPS[scenario]
    assert message.stop_reason == stop_reason
    assert [block.type for block in message.content] == blocks
    # The SDK does not notice a missing message_stop; our StreamDecoder does.
    assert ("message_stop" in events) is (scenario != "truncated-stream")


def test_anthropic_sdk_reads_the_recommended_model_and_credit_token(server: MockServer) -> None:
    message = _anthropic(server).messages.create(**_anthropic_call("refusal-recommended"))
    details = message.stop_details
    assert details is not None
    assert details.recommended_model == "mock-fallback"
    assert (details.fallback_credit_token or "").startswith("tok_mock_")
    assert details.fallback_has_prefill_claim is False


@pytest.mark.parametrize(
    ("scenario", "error", "status"),
    [
        ("filter-output", anthropic.BadRequestError, 400),
        ("filter-prompt", anthropic.BadRequestError, 400),
        ("rate-limited", anthropic.RateLimitError, 429),
        ("overloaded", anthropic.InternalServerError, 529),
        ("server-error", anthropic.InternalServerError, 500),
    ],
)
def test_anthropic_sdk_raises_its_own_error_for_each_error_scenario(
    server: MockServer, scenario: str, error: type[anthropic.APIStatusError], status: int
) -> None:
    with pytest.raises(error) as raised:
        _anthropic(server).messages.create(**_anthropic_call(scenario))
    assert raised.value.status_code == status


def test_anthropic_stream_raises_on_an_output_block_after_partial_text(
    server: MockServer,
) -> None:
    texts: list[str] = []
    client = _anthropic(server)
    with (
        pytest.raises(anthropic.APIStatusError, match="Output blocked by content filtering"),
        client.messages.stream(**_anthropic_call("filter-output")) as stream,
    ):
        texts.extend(stream.text_stream)
    assert "".join(texts) == "Here is the first part of the answer, "


def test_anthropic_stream_sees_a_reset_as_a_broken_connection(server: MockServer) -> None:
    # The SDK's own HTTP client (httpx or its fork httpx2) raises its RemoteProtocolError;
    # the SDK from 2.17 on wraps it in its APIConnectionError, as any broken connection.
    client = _anthropic(server)
    with (
        pytest.raises(Exception, match="peer closed connection") as raised,
        client.messages.stream(**_anthropic_call("reset-mid-stream")) as stream,
    ):
        for _ in stream:
            pass
    error: BaseException | None = raised.value
    if isinstance(error, anthropic.APIConnectionError):
        error = error.__cause__
    assert type(error).__name__ == "RemoteProtocolError"


# --- OpenAI -----------------------------------------------------------------------------


def _openai(server: MockServer) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="sk-test", base_url=server.base_url + "/v1", max_retries=0, timeout=TIMEOUT
    )


class Weather(BaseModel):
    city: str
    days: int


CHAT_FINISH = {
    "answer": ("stop", None),
    "tool-then-answer": ("tool_calls", None),
    "refusal": ("stop", "I'm sorry, but I can't help with that request."),
    "refusal-mid-stream": ("stop", "I'm sorry, but I can't help with that request."),
    "filter-output": ("content_filter", None),
    "length": ("length", None),
}


@pytest.mark.parametrize("scenario", sorted(CHAT_FINISH))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_openai_chat_completions_report_each_scenarios_finish_and_refusal(
    server: MockServer, scenario: str, stream: bool
) -> None:
    client = _openai(server)
    finish, refusal = CHAT_FINISH[scenario]
    model = f"mock-{scenario}"
    if not stream:
        completion = client.chat.completions.create(model=model, messages=USER, tools=CHAT_TOOLS)
        choice = completion.choices[0]
        assert choice.finish_reason == finish
        assert choice.message.refusal == refusal
        if finish == "tool_calls":
            assert choice.message.tool_calls is not None
            call = choice.message.tool_calls[0]
            assert call.type == "function"
            assert call.function.arguments == '{"city":".","days":1}'
        return
    chunks = list(
        client.chat.completions.create(
            model=model,
            messages=USER,
            tools=CHAT_TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    refusals = "".join(c.choices[0].delta.refusal or "" for c in chunks if c.choices)
    assert finishes[-1] == finish
    assert (refusals or None) == refusal
    assert chunks[-1].usage is not None


def test_openai_parse_reads_a_structured_output_refusal(server: MockServer) -> None:
    completion = _openai(server).chat.completions.parse(
        model="mock-refusal", messages=USER, response_format=Weather
    )
    message = completion.choices[0].message
    assert message.parsed is None
    assert message.refusal == "I'm sorry, but I can't help with that request."


def test_openai_parse_reads_an_answer_that_fits_the_schema(server: MockServer) -> None:
    completion = _openai(server).chat.completions.parse(
        model="mock-answer", messages=USER, response_format=Weather
    )
    assert completion.choices[0].message.parsed == Weather(city=".", days=1)


def test_openai_parse_raises_on_an_output_filter(server: MockServer) -> None:
    with pytest.raises(openai.ContentFilterFinishReasonError):
        _openai(server).chat.completions.parse(
            model="mock-filter-output", messages=USER, response_format=Weather
        )


@pytest.mark.parametrize(
    ("scenario", "error", "code"),
    [
        ("filter-prompt", openai.BadRequestError, "invalid_prompt"),
        ("rate-limited", openai.RateLimitError, "rate_limit_exceeded"),
        ("overloaded", openai.InternalServerError, "overloaded"),
        ("server-error", openai.InternalServerError, None),
        ("pause-turn", openai.BadRequestError, None),
    ],
)
def test_openai_sdk_raises_its_own_error_for_each_error_scenario(
    server: MockServer, scenario: str, error: type[openai.APIStatusError], code: str | None
) -> None:
    with pytest.raises(error) as raised:
        _openai(server).chat.completions.create(model=f"mock-{scenario}", messages=USER)
    assert getattr(raised.value, "code", None) == code


def test_openai_stream_sees_a_reset_as_a_connection_error(server: MockServer) -> None:
    with pytest.raises(openai.APIConnectionError):
        list(
            _openai(server).chat.completions.create(
                model="mock-reset-mid-stream", messages=USER, stream=True
            )
        )


RESPONSES = {
    "answer": ("completed", None, ["output_text"]),
    "tool-then-answer": ("completed", None, []),
    "refusal": ("completed", None, ["refusal"]),
    "refusal-mid-stream": ("completed", None, ["output_text", "refusal"]),
    "filter-output": ("incomplete", "content_filter", ["output_text"]),
    "length": ("incomplete", "max_output_tokens", ["output_text"]),
}
RESPONSES_TOOLS: list[Any] = [
    {"type": "function", "name": "get_weather", "parameters": WEATHER_SCHEMA, "strict": False}
]


@pytest.mark.parametrize("scenario", sorted(RESPONSES))
def test_openai_responses_create_reports_each_scenarios_status_and_parts(
    server: MockServer, scenario: str
) -> None:
    response = _openai(server).responses.create(
        model=f"mock-{scenario}", input="What is the weather like?", tools=RESPONSES_TOOLS
    )
    status, reason, parts = RESPONSES[scenario]
    assert response.status == status
    assert (response.incomplete_details.reason if response.incomplete_details else None) == reason
    messages = [item for item in response.output if item.type == "message"]
    assert [part.type for m in messages for part in m.content] == parts
    calls = [item for item in response.output if item.type == "function_call"]
    assert bool(calls) is (scenario == "tool-then-answer")


@pytest.mark.parametrize(
    ("scenario", "terminal"),
    [
        ("answer", "response.completed"),
        ("refusal", "response.completed"),
        ("refusal-mid-stream", "response.completed"),
        ("filter-output", "response.incomplete"),
        ("filter-prompt", "response.failed"),
        ("length", "response.incomplete"),
        ("tool-then-answer", "response.completed"),
    ],
)
def test_openai_responses_stream_ends_with_the_scenarios_terminal_event(
    server: MockServer, scenario: str, terminal: str
) -> None:
    events = list(
        _openai(server).responses.create(
            model=f"mock-{scenario}", input="hi", tools=RESPONSES_TOOLS, stream=True
        )
    )
    assert events[-1].type == terminal
    has_refusal = any(event.type == "response.refusal.delta" for event in events)
    assert has_refusal is scenario.startswith("refusal")


def test_azure_openai_client_reads_completion_and_prompt_filters(server: MockServer) -> None:
    client = openai.AzureOpenAI(
        api_key="azure-test",
        azure_endpoint=server.base_url,
        api_version="2024-10-21",
        max_retries=0,
        timeout=TIMEOUT,
    )
    completion = client.chat.completions.create(model="mock-filter-output", messages=USER)
    assert completion.choices[0].finish_reason == "content_filter"
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="mock-filter-prompt", messages=USER)
    assert raised.value.code == "content_filter"
    assert server.app.count(wire="azure") == 2


# --- Google GenAI -----------------------------------------------------------------------


def _genai(server: MockServer, vertex: bool = False) -> genai.Client:
    options = genai_types.HttpOptions(base_url=server.base_url, timeout=int(TIMEOUT * 1000))
    if vertex:
        # A static OAuth token: the SDK sends it as a bearer token and never refreshes it.
        token = Credentials(token="vertex-test")  # type: ignore[no-untyped-call]
        return genai.Client(
            vertexai=True,
            project="mock-project",
            location="us-central1",
            credentials=token,
            http_options=options,
        )
    return genai.Client(api_key="gemini-test", http_options=options)


GENAI_CONFIG = genai_types.GenerateContentConfig(
    tools=[
        genai_types.Tool(
            function_declarations=[
                genai_types.FunctionDeclaration(
                    name="get_weather", parameters_json_schema=WEATHER_SCHEMA
                )
            ]
        )
    ]
)
GEMINI = {
    "answer": "STOP",
    "tool-then-answer": "STOP",
    "refusal": "PROHIBITED_CONTENT",
    "refusal-mid-stream": "PROHIBITED_CONTENT",
    "filter-output": "SAFETY",
    "filter-prompt": None,
    "length": "MAX_TOKENS",
}


@pytest.mark.parametrize("scenario", sorted(GEMINI))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("vertex", [False, True], ids=["gemini", "vertex"])
def test_google_genai_reports_each_scenarios_finish_or_block_reason(
    server: MockServer, scenario: str, stream: bool, vertex: bool
) -> None:
    client = _genai(server, vertex)  # held: a collected client closes its connection pool
    models = client.models
    model = f"mock-{scenario}"
    if stream:
        chunks = list(
            models.generate_content_stream(model=model, contents="hi", config=GENAI_CONFIG)
        )
        last = chunks[-1]
    else:
        last = models.generate_content(model=model, contents="hi", config=GENAI_CONFIG)
    assert server.app.requests[-1].wire == ("vertex" if vertex else "gemini")
    finish = GEMINI[scenario]
    if finish is None:
        assert last.prompt_feedback is not None
        assert last.prompt_feedback.block_reason == genai_types.BlockedReason.SAFETY
        assert not last.candidates
        return
    assert last.candidates
    assert last.candidates[0].finish_reason == genai_types.FinishReason(finish)
    if scenario == "tool-then-answer":
        calls = [
            part.function_call
            for chunk in (chunks if stream else [last])
            for part in (chunk.candidates or [])[0].content.parts or []  # type: ignore[union-attr]
            if part.function_call
        ]
        assert calls[0].name == "get_weather"
        assert calls[0].args == {"city": ".", "days": 1}


@pytest.mark.parametrize(
    ("scenario", "error", "code"),
    [
        ("rate-limited", genai_errors.ClientError, 429),
        ("overloaded", genai_errors.ServerError, 503),
        ("server-error", genai_errors.ServerError, 500),
    ],
)
def test_google_genai_raises_its_own_error_for_each_error_scenario(
    server: MockServer, scenario: str, error: type[genai_errors.APIError], code: int
) -> None:
    client = _genai(server)
    with pytest.raises(error) as raised:
        client.models.generate_content(model=f"mock-{scenario}", contents="hi")
    assert raised.value.code == code


# --- boto3 bedrock-runtime --------------------------------------------------------------


def _bedrock(server: MockServer) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=server.base_url,
        region_name="us-east-1",
        aws_access_key_id="AKIDMOCK",
        aws_secret_access_key="mock-secret",
        config=Config(
            retries={"total_max_attempts": 1}, read_timeout=TIMEOUT, connect_timeout=TIMEOUT
        ),
    )


BEDROCK_MESSAGES: list[Any] = [{"role": "user", "content": [{"text": "What is the weather?"}]}]
BEDROCK_TOOLS: dict[str, Any] = {
    "tools": [{"toolSpec": {"name": "get_weather", "inputSchema": {"json": WEATHER_SCHEMA}}}]
}
BEDROCK = {
    "answer": "end_turn",
    "tool-then-answer": "tool_use",
    "refusal": "content_filtered",
    "refusal-mid-stream": "content_filtered",
    "filter-output": "guardrail_intervened",
    "filter-prompt": "guardrail_intervened",
    "length": "max_tokens",
}


@pytest.mark.parametrize("scenario", sorted(BEDROCK))
def test_boto3_converse_reports_each_scenarios_stop_reason_and_trace(
    server: MockServer, scenario: str
) -> None:
    response = _bedrock(server).converse(
        modelId=f"mock-{scenario}", messages=BEDROCK_MESSAGES, toolConfig=BEDROCK_TOOLS
    )
    assert response["stopReason"] == BEDROCK[scenario]
    guardrail = response.get("trace", {}).get("guardrail", {})
    side = {"filter-output": "outputAssessments", "filter-prompt": "inputAssessment"}
    assert sorted(k for k in guardrail if k.endswith(("Assessment", "Assessments"))) == (
        [side[scenario]] if scenario in side else []
    )


@pytest.mark.parametrize("scenario", sorted(BEDROCK))
def test_boto3_converse_stream_reports_each_scenarios_stop_then_metadata(
    server: MockServer, scenario: str
) -> None:
    response = _bedrock(server).converse_stream(
        modelId=f"mock-{scenario}", messages=BEDROCK_MESSAGES, toolConfig=BEDROCK_TOOLS
    )
    events = list(response["stream"])
    names = [next(iter(event)) for event in events]
    assert names[0] == "messageStart"
    assert names[-2:] == ["messageStop", "metadata"]
    assert events[-2]["messageStop"]["stopReason"] == BEDROCK[scenario]
    if scenario.startswith("filter"):
        assert "guardrail" in events[-1]["metadata"]["trace"]


@pytest.mark.parametrize(
    ("scenario", "code", "status"),
    [
        ("rate-limited", "ThrottlingException", 429),
        ("overloaded", "ServiceUnavailableException", 503),
        ("server-error", "InternalServerException", 500),
    ],
)
def test_boto3_raises_the_named_exception_for_each_error_scenario(
    server: MockServer, scenario: str, code: str, status: int
) -> None:
    client = _bedrock(server)
    with pytest.raises(client.exceptions.ClientError) as raised:
        client.converse(modelId=f"mock-{scenario}", messages=BEDROCK_MESSAGES)
    assert raised.value.response["Error"]["Code"] == code
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
    assert server.app.count(scenario=scenario) == 1
