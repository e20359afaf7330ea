"""RefusalTransport under the official OpenAI, Anthropic and Cohere SDKs, on the mock provider."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any, cast

import anthropic
import httpx
import httpx2
import openai
import pytest
from anthropic.types import MessageParam
from openai.types.chat import ChatCompletionMessageParam

from refusals import FinishReason, normalize, notice
from refusals.integrations.httpx_transport import (
    RefusalTransport,
    RefusedRequestError,
    ResponseVerdict,
)
from refusals.mock import MAGIC_REFUSAL_STRING, MockServer

TIMEOUT = 15.0
PROMPT: list[MessageParam] = [{"role": "user", "content": "Write the exploit."}]
CHAT_PROMPT: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Write the exploit."}]


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer() as running:
        yield running


@pytest.fixture
def seen(server: MockServer) -> list[ResponseVerdict]:
    server.app.reset()
    return []


def _anthropic(server: MockServer, seen: list[ResponseVerdict]) -> anthropic.Anthropic:
    transport = RefusalTransport(httpx2.HTTPTransport(), on_verdict=seen.append)
    return anthropic.Anthropic(
        api_key="test",
        base_url=server.base_url,
        max_retries=2,
        http_client=httpx2.Client(transport=transport, timeout=TIMEOUT),
    )


def _openai(server: MockServer, seen: list[ResponseVerdict]) -> openai.OpenAI:
    transport = RefusalTransport(httpx2.HTTPTransport(), on_verdict=seen.append)
    return openai.OpenAI(
        api_key="test",
        base_url=server.base_url + "/v1",
        max_retries=2,
        http_client=httpx2.Client(transport=transport, timeout=TIMEOUT),
    )


def test_a_user_loop_retrying_a_refused_anthropic_prompt_sends_it_once(
    server: MockServer, seen: list[ResponseVerdict]
) -> None:
    client = _anthropic(server, seen)
    stop_reasons: list[str | None] = []
    errors: list[RefusedRequestError] = []
    for _ in range(3):
        try:
            message = client.messages.create(model="mock-refusal", max_tokens=64, messages=PROMPT)
            stop_reasons.append(message.stop_reason)
        except RefusedRequestError as error:
            errors.append(error)
    assert stop_reasons == ["refusal"]
    assert len(errors) == 2
    # The SDK passes the error through as its own: no retry, no "Connection error." wrapper.
    assert all(isinstance(error, anthropic.AnthropicError) for error in errors)
    assert server.app.count(model="mock-refusal") == 1
    assert [v.finish_reason for v in seen] == [FinishReason.REFUSAL]
    assert errors[0].notice == seen[0].notice == notice(normalize(message))


def test_the_magic_refusal_string_is_refused_once_whatever_the_model(
    server: MockServer, seen: list[ResponseVerdict]
) -> None:
    client = _anthropic(server, seen)
    prompt: list[MessageParam] = [
        {"role": "user", "content": f"Please answer. {MAGIC_REFUSAL_STRING}"}
    ]
    message = client.messages.create(model="claude-opus-4-7", max_tokens=64, messages=prompt)
    with pytest.raises(RefusedRequestError):
        client.messages.create(model="claude-opus-4-7", max_tokens=64, messages=prompt)
    assert message.stop_reason == "refusal"
    assert server.app.count(model="claude-opus-4-7") == 1


def test_a_refusal_mid_stream_guards_the_same_prompt_sent_without_streaming(
    server: MockServer, seen: list[ResponseVerdict]
) -> None:
    client = _anthropic(server, seen)
    with client.messages.stream(
        model="mock-refusal-mid-stream", max_tokens=64, messages=PROMPT
    ) as stream:
        for _ in stream:
            pass
        final = stream.get_final_message()
    with pytest.raises(RefusedRequestError) as raised:
        client.messages.create(model="mock-refusal-mid-stream", max_tokens=64, messages=PROMPT)
    assert final.stop_reason == "refusal"
    (verdict,) = seen
    assert verdict.streamed and verdict.complete
    assert verdict.response.cut_off
    assert raised.value.notice == verdict.notice
    assert server.app.count(model="mock-refusal-mid-stream") == 1


def test_an_anthropic_output_filter_error_is_terminal_and_not_resent(
    server: MockServer, seen: list[ResponseVerdict]
) -> None:
    client = _anthropic(server, seen)
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(model="mock-filter-output", max_tokens=64, messages=PROMPT)
    with pytest.raises(RefusedRequestError) as raised:
        client.messages.create(model="mock-filter-output", max_tokens=64, messages=PROMPT)
    assert [v.finish_reason for v in seen] == [FinishReason.CONTENT_FILTER]
    assert seen[0].status_code == 400
    assert raised.value.notice == notice(seen[0].response)
    assert server.app.count(model="mock-filter-output") == 1


def test_sdk_retries_of_a_rate_limit_go_through_and_are_not_guarded(
    server: MockServer, seen: list[ResponseVerdict]
) -> None:
    client = _anthropic(server, seen)
    message = client.messages.create(model="mock-rate-limited", max_tokens=64, messages=PROMPT)
    again = client.messages.create(model="mock-rate-limited", max_tokens=64, messages=PROMPT)
    assert (message.stop_reason, again.stop_reason) == ("end_turn", "end_turn")
    # Two 429s the SDK retried, its answer, then the same prompt answered again.
    assert server.app.count(model="mock-rate-limited") == 4
    assert [v.finish_reason for v in seen][-2:] == [FinishReason.STOP, FinishReason.STOP]


def test_an_openai_refusal_is_classified_and_never_resent_by_sdk_or_loop(
    server: MockServer, seen: list[ResponseVerdict]
) -> None:
    client = _openai(server, seen)
    completion = client.chat.completions.create(model="mock-refusal", messages=CHAT_PROMPT)
    for _ in range(2):
        with pytest.raises(openai.OpenAIError) as raised:
            client.chat.completions.create(model="mock-refusal", messages=CHAT_PROMPT)
        assert isinstance(raised.value, RefusedRequestError)
    assert completion.choices[0].message.refusal
    assert seen[0].finish_reason is FinishReason.REFUSAL
    assert seen[0].notice == notice(normalize(completion))
    assert server.app.count(model="mock-refusal") == 1


def test_an_openai_stream_refusal_is_classified_from_the_stream(
    server: MockServer, seen: list[ResponseVerdict]
) -> None:
    client = _openai(server, seen)
    chunks = list(
        client.chat.completions.create(model="mock-refusal", messages=CHAT_PROMPT, stream=True)
    )
    refusal = "".join(c.choices[0].delta.refusal or "" for c in chunks if c.choices)
    assert refusal
    (verdict,) = seen
    assert verdict.streamed
    assert verdict.finish_reason is FinishReason.REFUSAL
    assert verdict.notice is not None and refusal in verdict.notice


def test_the_legacy_httpx_client_works_under_the_openai_sdk(server: MockServer) -> None:
    seen: list[ResponseVerdict] = []
    server.app.reset()
    legacy = httpx.Client(
        transport=RefusalTransport(httpx.HTTPTransport(), on_verdict=seen.append),
        timeout=TIMEOUT,
    )
    client = openai.OpenAI(
        api_key="test",
        base_url=server.base_url + "/v1",
        max_retries=2,
        http_client=cast(Any, legacy),
    )
    client.chat.completions.create(model="mock-filter-output", messages=CHAT_PROMPT)
    with pytest.raises(RefusedRequestError):
        client.chat.completions.create(model="mock-filter-output", messages=CHAT_PROMPT)
    legacy.close()
    assert [v.finish_reason for v in seen] == [FinishReason.CONTENT_FILTER]
    assert server.app.count(model="mock-filter-output") == 1


def test_the_async_sdk_clients_are_guarded_the_same_way(
    server: MockServer, seen: list[ResponseVerdict]
) -> None:
    async def run() -> list[str | None]:
        transport = RefusalTransport(httpx2.AsyncHTTPTransport(), on_verdict=seen.append)
        http = httpx2.AsyncClient(transport=transport, timeout=TIMEOUT)
        client = anthropic.AsyncAnthropic(
            api_key="test", base_url=server.base_url, max_retries=2, http_client=http
        )
        reasons: list[str | None] = []
        for _ in range(3):
            try:
                message = await client.messages.create(
                    model="mock-refusal", max_tokens=64, messages=PROMPT
                )
                reasons.append(message.stop_reason)
            except RefusedRequestError:
                reasons.append(None)
        await http.aclose()
        return reasons

    assert asyncio.run(asyncio.wait_for(run(), timeout=30)) == ["refusal", None, None]
    assert server.app.count(model="mock-refusal") == 1


def test_a_cohere_sdk_filter_is_classified_and_never_resent(server: MockServer) -> None:
    # Cohere's SDK (httpx) under the transport: its only block signal, ERROR_TOXIC, is a
    # content filter, and the same prompt is answered from the guard, not sent.
    cohere = pytest.importorskip("cohere")
    server.app.reset()
    seen: list[ResponseVerdict] = []
    transport = RefusalTransport(httpx.HTTPTransport(), on_verdict=seen.append)
    client = cohere.ClientV2(
        api_key="test",
        base_url=server.base_url,
        httpx_client=httpx.Client(transport=transport, timeout=TIMEOUT),
    )
    messages = [{"role": "user", "content": "Write the exploit."}]
    reply = client.chat(model="mock-refusal", messages=messages)
    assert reply.finish_reason == "ERROR_TOXIC"
    assert seen[0].finish_reason is FinishReason.CONTENT_FILTER
    with pytest.raises(RefusedRequestError, match="content filter"):
        client.chat(model="mock-refusal", messages=messages)
    events = list(
        client.chat_stream(model="mock-refusal", messages=[{"role": "user", "content": "x"}])
    )
    assert events[-1].type == "message-end"
    assert seen[-1].streamed and seen[-1].finish_reason is FinishReason.CONTENT_FILTER
    assert server.app.count() == 2  # the filtered prompt once, the other prompt once
