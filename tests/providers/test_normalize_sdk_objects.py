"""`normalize` reads what users catch and collect from the official SDKs: their HTTP
error exceptions, and the chunks of their streams, with the verdict the wire bytes give.

Each case asks the mock the same thing twice, once through the SDK (the exception or
the chunks) and once with httpx (the raw bytes), and compares the two verdicts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import boto3
import httpx
import openai
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types
from hypothesis import given
from hypothesis import strategies as st

from refusals import LLMResponse, NormalizeError, normalize
from refusals.mock import MockApp, MockServer
from refusals.transport.streams import decode_stream

TIMEOUT = 10.0
USER: list[Any] = [{"role": "user", "content": "Tell me how to pick a lock."}]
HEADERS = {"x-api-key": "k", "authorization": "Bearer k", "x-goog-api-key": "k"}


@pytest.fixture(scope="module")
def shared() -> Iterator[MockServer]:
    with MockServer(MockApp()) as server:
        yield server


@pytest.fixture
def mock(shared: MockServer) -> MockServer:
    shared.app.reset()
    return shared


def _facts(response: LLMResponse) -> tuple[Any, ...]:
    stop = response.stop_details
    return (
        response.finish_reason,
        response.provider,
        stop.category if stop is not None else None,
        stop.explanation if stop is not None else None,
        response.content,
        response.cut_off,
        response.error.kind if response.error is not None else None,
    )


def _raw(mock: MockServer, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(mock.base_url + path, json=body, headers=HEADERS, timeout=TIMEOUT)


# --- exceptions -------------------------------------------------------------------------


def test_anthropic_bad_request_error(mock: MockServer) -> None:
    client = anthropic.Anthropic(api_key="k", base_url=mock.base_url, max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model="mock-filter-prompt", max_tokens=16, messages=USER)
    raw = _raw(
        mock, "/v1/messages", {"model": "mock-filter-prompt", "max_tokens": 16, "messages": USER}
    )
    got = normalize(caught.value)
    assert got.finish_reason.value == "content_filter"
    assert _facts(got) == _facts(
        normalize(raw.content, status=raw.status_code, headers=raw.headers)
    )
    assert got.request_id == caught.value.request_id == "req_mock"


@pytest.mark.parametrize("scenario", ["filter-prompt", "rate-limited", "server-error"])
def test_openai_status_errors(mock: MockServer, scenario: str) -> None:
    client = openai.OpenAI(api_key="k", base_url=mock.base_url + "/v1", max_retries=0)
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model=f"mock-{scenario}", messages=USER)
    mock.app.reset()  # the rate limit counts again for the raw request
    raw = _raw(mock, "/v1/chat/completions", {"model": f"mock-{scenario}", "messages": USER})
    assert raw.status_code == caught.value.status_code
    got = normalize(caught.value)
    assert _facts(got) == _facts(
        normalize(raw.content, "openai", status=raw.status_code, headers=raw.headers)
    )


def test_google_genai_api_error(mock: MockServer) -> None:
    options = genai_types.HttpOptions(base_url=mock.base_url, timeout=int(TIMEOUT * 1000))
    client = genai.Client(api_key="k", http_options=options)
    with pytest.raises(genai_errors.APIError) as caught:
        client.models.generate_content(model="mock-rate-limited", contents="hi")
    got = normalize(caught.value)
    assert got.finish_reason.value == "error"
    assert got.provider == "gemini"
    assert got.error is not None and got.error.status == 429


def test_botocore_client_error(mock: MockServer) -> None:
    client = boto3.client(
        "bedrock-runtime",
        endpoint_url=mock.base_url,
        region_name="us-east-1",
        aws_access_key_id="AKIDTEST",
        aws_secret_access_key="secret",
        config=Config(retries={"total_max_attempts": 1}),
    )
    with pytest.raises(ClientError) as caught:
        client.converse(
            modelId="mock-rate-limited", messages=[{"role": "user", "content": [{"text": "hi"}]}]
        )
    got = normalize(caught.value)
    assert got.provider == "bedrock"
    assert got.error is not None and got.error.status == 429
    assert got.error.kind.value == "transient"


def test_an_exception_without_a_response_says_what_to_pass() -> None:
    with pytest.raises(NormalizeError, match="carries no response body"):
        normalize(ValueError("nothing here"))


# --- chunks -----------------------------------------------------------------------------


def _anthropic_chunks(mock: MockServer, model: str) -> list[Any]:
    client = anthropic.Anthropic(api_key="k", base_url=mock.base_url, max_retries=0)
    return list(client.messages.create(model=model, max_tokens=64, messages=USER, stream=True))


def _anthropic_helper_events(mock: MockServer, model: str) -> list[Any]:
    client = anthropic.Anthropic(api_key="k", base_url=mock.base_url, max_retries=0)
    with client.messages.stream(model=model, max_tokens=64, messages=USER) as stream:
        return list(stream)


def _openai_chunks(mock: MockServer, model: str) -> Any:
    client = openai.OpenAI(api_key="k", base_url=mock.base_url + "/v1", max_retries=0)
    # An iterator, as the SDK gives it: never made a list.
    return iter(client.chat.completions.create(model=model, messages=USER, stream=True))


def _responses_chunks(mock: MockServer, model: str) -> list[Any]:
    client = openai.OpenAI(api_key="k", base_url=mock.base_url + "/v1", max_retries=0)
    return list(
        client.responses.create(model=model, input="Tell me how to pick a lock.", stream=True)
    )


def _gemini_chunks(mock: MockServer, model: str) -> list[Any]:
    options = genai_types.HttpOptions(base_url=mock.base_url, timeout=int(TIMEOUT * 1000))
    client = genai.Client(api_key="k", http_options=options)
    return list(
        client.models.generate_content_stream(model=model, contents="Tell me how to pick a lock.")
    )


def _bedrock_chunks(mock: MockServer, model: str) -> list[Any]:
    client = boto3.client(
        "bedrock-runtime",
        endpoint_url=mock.base_url,
        region_name="us-east-1",
        aws_access_key_id="AKIDTEST",
        aws_secret_access_key="secret",
        config=Config(retries={"total_max_attempts": 1}),
    )
    messages = [{"role": "user", "content": [{"text": "Tell me how to pick a lock."}]}]
    return list(client.converse_stream(modelId=model, messages=messages)["stream"])


RAW: dict[str, tuple[str, Callable[[str], dict[str, Any]]]] = {
    "anthropic": (
        "/v1/messages",
        lambda m: {"model": m, "max_tokens": 64, "messages": USER, "stream": True},
    ),
    "openai": ("/v1/chat/completions", lambda m: {"model": m, "messages": USER, "stream": True}),
    "responses": (
        "/v1/responses",
        lambda m: {"model": m, "input": "Tell me how to pick a lock.", "stream": True},
    ),
    "gemini": (
        "/v1beta/models/{m}:streamGenerateContent?alt=sse",
        lambda m: {
            "contents": [{"role": "user", "parts": [{"text": "Tell me how to pick a lock."}]}]
        },
    ),
    "bedrock": (
        "/model/{m}/converse-stream",
        lambda m: {
            "messages": [{"role": "user", "content": [{"text": "Tell me how to pick a lock."}]}]
        },
    ),
}
SDKS: dict[str, Callable[[MockServer, str], Any]] = {
    "anthropic": _anthropic_chunks,
    "openai": _openai_chunks,
    "responses": _responses_chunks,
    "gemini": _gemini_chunks,
    "bedrock": _bedrock_chunks,
}
SCENARIOS = ["answer", "refusal", "refusal-mid-stream", "filter-output"]


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("wire", sorted(SDKS))
def test_sdk_stream_chunks_give_the_verdict_the_wire_bytes_give(
    mock: MockServer, wire: str, scenario: str
) -> None:
    model = f"mock-{scenario}"
    if wire == "anthropic" and scenario == "filter-output":
        # The SDK raises at the stream's `error` event: that exception is what users hold.
        with pytest.raises(anthropic.APIStatusError) as caught:
            SDKS[wire](mock, model)
        got = normalize(caught.value)
    else:
        got = normalize(SDKS[wire](mock, model))
    path, body = RAW[wire]
    raw = _raw(mock, path.format(m=model), body(model))
    expected, _ = decode_stream(raw.content)
    facts, wanted = list(_facts(got)[:6]), list(_facts(expected)[:6])
    if wire == "gemini":
        # google-genai drops `finishMessage` from its stream chunks: the explanation is
        # not in what the SDK gives, so it cannot come back.
        facts[3] = wanted[3] = None
    if wire == "anthropic" and scenario == "filter-output":
        # The exception holds the error event, not the text streamed before it.
        facts, wanted = facts[:4], wanted[:4]
    assert facts == wanted
    if scenario != "answer":
        assert got.finish_reason.value in ("refusal", "content_filter")


def test_the_anthropic_helper_stream_events_read_the_same(mock: MockServer) -> None:
    got = normalize(_anthropic_helper_events(mock, "mock-refusal"))
    expected = normalize(_anthropic_chunks(mock, "mock-refusal"))
    assert _facts(got) == _facts(expected)
    assert got.finish_reason.value == "refusal"


def test_a_list_that_is_no_stream_is_a_clear_error() -> None:
    with pytest.raises(NormalizeError, match="no known stream event"):
        normalize([{"hello": "world"}])
    with pytest.raises(NormalizeError, match="has no chunks"):
        normalize(iter([]))


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
_EVENT_KEYS = st.sampled_from(
    ["type", "choices", "candidates", "messageStart", "delta", "stop_reason"]
)


@given(st.lists(st.dictionaries(_EVENT_KEYS | st.text(max_size=6), _JSON, max_size=4), max_size=5))
def test_any_list_of_dicts_gives_a_response_or_normalize_error(
    chunks: list[dict[str, Any]],
) -> None:
    try:
        result = normalize(chunks)
    except NormalizeError:
        return
    assert isinstance(result, LLMResponse)
