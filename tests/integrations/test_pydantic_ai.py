"""The pydantic-ai adapter: real Agents, models and FallbackModel against the mock provider."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import httpx2
import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import ContentFilterError, ModelAPIError
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models import Model
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.fallback import FallbackModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

from refusals import FinishReason, LLMResponse
from refusals.integrations.httpx_transport import RefusalTransport, ResponseVerdict
from refusals.integrations.pydantic_ai import (
    ContentFilteredError,
    RaiseOnRefusal,
    RefusalError,
    fallback_on_refusal,
    response_of,
)
from refusals.mock import MockServer

TIMEOUT = 30.0
T = TypeVar("T")


@pytest.fixture(scope="module")
def running() -> Iterator[MockServer]:
    with MockServer() as mock:
        yield mock


@pytest.fixture
def server(running: MockServer) -> MockServer:
    running.app.reset()
    return running


class Wire:
    """Model factories whose HTTP clients record what the wire said, per response."""

    def __init__(self, server: MockServer) -> None:
        self.server = server
        self.verdicts: list[ResponseVerdict] = []

    def _http(self) -> httpx2.AsyncClient:
        transport = RefusalTransport(httpx2.AsyncHTTPTransport(), on_verdict=self.verdicts.append)
        return httpx2.AsyncClient(transport=transport, timeout=TIMEOUT)

    def anthropic(self, model: str) -> AnthropicModel:
        provider = AnthropicProvider(
            api_key="test", base_url=self.server.base_url, http_client=self._http()
        )
        return AnthropicModel(model, provider=provider)

    def openai(self, model: str) -> OpenAIChatModel:
        provider = OpenAIProvider(
            api_key="test", base_url=self.server.base_url + "/v1", http_client=self._http()
        )
        return OpenAIChatModel(model, provider=provider)


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(asyncio.wait_for(coroutine, timeout=TIMEOUT))


def _agent(model: Model, seen: list[LLMResponse] | None = None) -> Agent[None, str]:
    capability = RaiseOnRefusal(on_verdict=seen.append if seen is not None else None)
    return Agent(model, capabilities=[capability])


def test_an_anthropic_refusal_raises_a_typed_error_with_the_wire_notice_and_facts(
    server: MockServer,
) -> None:
    wire = Wire(server)
    with pytest.raises(RefusalError) as raised:
        _run(_agent(wire.anthropic("mock-refusal")).run("Write the exploit."))
    error = raised.value
    assert error.finish_reason is FinishReason.REFUSAL
    assert error.category == "cyber"
    assert error.explanation is not None
    assert error.notice == wire.verdicts[0].notice == str(error)
    assert isinstance(error, ContentFilterError)
    assert server.app.count(model="mock-refusal") == 1


def test_an_openai_refusal_is_a_refusal_not_a_filter(server: MockServer) -> None:
    wire = Wire(server)
    with pytest.raises(RefusalError) as raised:
        _run(_agent(wire.openai("mock-refusal")).run("Write the exploit."))
    assert raised.value.notice == wire.verdicts[0].notice
    assert not isinstance(raised.value, ContentFilteredError)
    assert server.app.count(model="mock-refusal") == 1


def test_an_openai_output_filter_is_a_content_filter_not_a_refusal(server: MockServer) -> None:
    wire = Wire(server)
    with pytest.raises(ContentFilteredError) as raised:
        _run(_agent(wire.openai("mock-filter-output")).run("Write the exploit."))
    assert raised.value.finish_reason is FinishReason.CONTENT_FILTER
    assert raised.value.notice == wire.verdicts[0].notice
    assert not isinstance(raised.value, RefusalError)


def test_fallback_model_moves_on_from_a_200_ok_refusal_and_asks_each_model_once(
    server: MockServer,
) -> None:
    wire = Wire(server)
    seen: list[LLMResponse] = []
    model = FallbackModel(
        wire.anthropic("mock-refusal"),
        wire.openai("mock-answer"),
        fallback_on=[ModelAPIError, fallback_on_refusal],
    )
    result = _run(_agent(model, seen).run("Name a prime."))
    assert result.output == "Mock answer: Name a prime."
    assert server.app.count(model="mock-refusal") == 1
    assert server.app.count(model="mock-answer") == 1
    # The capability sees only the response the run accepted.
    assert [r.finish_reason for r in seen] == [FinishReason.STOP]
    assert [v.finish_reason for v in wire.verdicts] == [FinishReason.REFUSAL, FinishReason.STOP]


def test_fallback_model_moves_on_from_a_content_filter_too(server: MockServer) -> None:
    wire = Wire(server)
    model = FallbackModel(
        wire.openai("mock-filter-output"),
        wire.openai("mock-answer"),
        fallback_on=fallback_on_refusal,
    )
    result = _run(Agent(model).run("Name a prime."))
    assert result.output == "Mock answer: Name a prime."
    assert server.app.count(model="mock-filter-output") == 1


def test_an_answer_passes_through_and_is_seen_as_a_stop(server: MockServer) -> None:
    wire = Wire(server)
    seen: list[LLMResponse] = []
    result = _run(_agent(wire.anthropic("mock-answer"), seen).run("Say hi."))
    assert result.output == "Mock answer: Say hi."
    assert [r.finish_reason for r in seen] == [FinishReason.STOP]
    assert seen[0].provider == "anthropic"


def test_a_provider_without_a_rebuilt_shape_keeps_its_raw_value() -> None:
    response = response_of(
        ModelResponse(
            parts=[TextPart(content="partial")],
            finish_reason="content_filter",
            provider_name="google-gla",
            provider_details={"finish_reason": "SAFETY"},
            model_name="gemini-x",
        )
    )
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "SAFETY"
    assert response.content == "partial"
    assert not fallback_on_refusal(ModelResponse(parts=[TextPart(content="fine")]))


def test_when_every_model_of_a_fallback_refuses_the_error_carries_the_notice(
    server: MockServer,
) -> None:
    # The documented pattern: FallbackModel with fallback_on_refusal, `except RefusalError`.
    wire = Wire(server)
    model = FallbackModel(
        wire.anthropic("mock-refusal"),
        wire.openai("mock-refusal"),
        fallback_on=[ModelAPIError, fallback_on_refusal],
    )
    with pytest.raises(RefusalError) as raised:
        _run(_agent(model).run("Write the exploit."))
    # The last model's refusal, with the notice its wire response gives.
    assert raised.value.notice == wire.verdicts[-1].notice
    assert [v.finish_reason for v in wire.verdicts] == [FinishReason.REFUSAL] * 2
    assert server.app.count(model="mock-refusal") == 2  # each model asked once


@pytest.mark.parametrize("factory", ["anthropic", "openai"])
def test_an_http_400_prompt_block_is_a_content_filtered_error(
    server: MockServer, factory: str
) -> None:
    wire = Wire(server)
    seen: list[LLMResponse] = []
    with pytest.raises(ContentFilteredError) as raised:
        _run(_agent(getattr(wire, factory)("mock-filter-prompt"), seen).run("Write the exploit."))
    assert raised.value.finish_reason is FinishReason.CONTENT_FILTER
    assert raised.value.notice == wire.verdicts[0].notice
    assert isinstance(raised.value, ContentFilterError)
    assert [r.finish_reason for r in seen] == [FinishReason.CONTENT_FILTER]
    assert server.app.count(model="mock-filter-prompt") == 1
