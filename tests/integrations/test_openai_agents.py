"""The OpenAI Agents SDK adapter: a real Agent and Runner against the mock provider."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from agents import (
    Agent,
    ModelRefusalError,
    OpenAIChatCompletionsModel,
    Runner,
    RunResult,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from refusals import FinishReason
from refusals.integrations.httpx_transport import (
    RefusalGuard,
    RefusedRequestError,
    ResponseVerdict,
)
from refusals.integrations.openai_agents import (
    AgentVerdict,
    RefusalRunHooks,
    error_handlers,
    notice_on_refusal,
)
from refusals.mock import MockServer

TIMEOUT = 30.0


@pytest.fixture(scope="module", autouse=True)
def no_trace_export() -> Iterator[None]:
    # The SDK would otherwise send traces to OpenAI: these tests stay on 127.0.0.1.
    set_tracing_disabled(True)
    yield


@pytest.fixture(scope="module")
def running() -> Iterator[MockServer]:
    with MockServer() as mock:
        yield mock


@pytest.fixture
def server(running: MockServer) -> MockServer:
    running.app.reset()
    return running


class Setup:
    """An agent on the mock, its client's transport verdicts, and the run hooks."""

    def __init__(self, server: MockServer, model: str, guard: RefusalGuard | None = None) -> None:
        self.wire: list[ResponseVerdict] = []
        self.hooks = RefusalRunHooks()
        # The documented set-up: the hooks' own transport under the model's client.
        transport = self.hooks.transport(
            httpx2.AsyncHTTPTransport(), on_verdict=self.wire.append, guard=guard or True
        )
        self.http = httpx2.AsyncClient(transport=transport, timeout=TIMEOUT)
        client = AsyncOpenAI(
            api_key="test", base_url=server.base_url + "/v1", http_client=self.http, max_retries=2
        )
        self.agent: Agent[Any] = Agent(
            name="helper",
            instructions="Answer briefly.",
            model=OpenAIChatCompletionsModel(model=model, openai_client=client),
        )

    async def run(self, prompt: str, **options: Any) -> RunResult:
        try:
            return await Runner.run(self.agent, prompt, hooks=self.hooks, **options)
        finally:
            await self.http.aclose()


def _run(setup: Setup, prompt: str, **options: Any) -> RunResult:
    return asyncio.run(asyncio.wait_for(setup.run(prompt, **options), timeout=TIMEOUT))


def test_the_hooks_record_a_refusal_with_the_notice_the_wire_gives(server: MockServer) -> None:
    setup = Setup(server, "mock-refusal")
    with pytest.raises(ModelRefusalError) as raised:
        _run(setup, "Write the exploit.")
    (verdict,) = setup.hooks.verdicts
    assert verdict.agent == "helper"
    assert verdict.finish_reason is FinishReason.REFUSAL
    assert setup.hooks.blocked == [verdict]
    assert verdict.notice == setup.wire[0].notice
    assert verdict.notice is not None and raised.value.refusal in verdict.notice
    assert server.app.count(model="mock-refusal") == 1


def test_the_error_handler_ends_the_run_with_the_notice_kept_out_of_history(
    server: MockServer,
) -> None:
    setup = Setup(server, "mock-refusal")
    result = _run(setup, "Write the exploit.", error_handlers=error_handlers())
    assert result.final_output == setup.wire[0].notice
    assert result.final_output == setup.hooks.verdicts[0].notice
    assert not any(
        isinstance(item, dict) and item.get("content") == result.final_output
        for item in result.to_input_list()
    )
    assert server.app.count(model="mock-refusal") == 1


def test_the_handler_can_be_given_by_hand_too(server: MockServer) -> None:
    setup = Setup(server, "mock-refusal")
    result = _run(setup, "Write the exploit.", error_handlers={"model_refusal": notice_on_refusal})
    assert isinstance(result.final_output, str)
    assert result.final_output.startswith("The model declined this request")


def test_a_second_run_of_the_refused_prompt_is_stopped_before_it_is_sent(
    server: MockServer,
) -> None:
    guard = RefusalGuard()
    first = _run(
        Setup(server, "mock-refusal", guard), "Write the exploit.", error_handlers=error_handlers()
    )
    with pytest.raises(RefusedRequestError) as raised:
        _run(
            Setup(server, "mock-refusal", guard),
            "Write the exploit.",
            error_handlers=error_handlers(),
        )
    assert raised.value.notice == first.final_output
    assert server.app.count(model="mock-refusal") == 1


def test_an_answer_is_recorded_as_a_stop_with_no_notice(server: MockServer) -> None:
    calls: list[AgentVerdict] = []
    setup = Setup(server, "mock-answer")
    setup.hooks.on_verdict = calls.append
    result = _run(setup, "Say hello.")
    assert isinstance(result.final_output, str)
    assert result.final_output.startswith("Mock answer: ")
    assert [v.finish_reason for v in setup.hooks.verdicts] == [FinishReason.STOP]
    assert calls == setup.hooks.verdicts
    assert setup.hooks.blocked == []
    assert setup.hooks.verdicts[0].notice is None


def test_a_content_filtered_partial_answer_never_passes_for_the_final_output(
    server: MockServer,
) -> None:
    setup = Setup(server, "mock-filter-output")
    result = _run(setup, "Write a story.", error_handlers=error_handlers())
    [wire] = setup.wire
    assert wire.finish_reason is FinishReason.CONTENT_FILTER
    assert wire.response.content  # the provider sent a partial answer before the filter
    (verdict,) = setup.hooks.blocked
    assert verdict.finish_reason is FinishReason.CONTENT_FILTER
    assert result.final_output == wire.notice == verdict.notice
    assert str(result.final_output).startswith("The provider's content filter")
    # The cut-off text is neither the output nor in the history a next turn would send.
    history = str(result.to_input_list())
    assert str(wire.response.content) not in history
    assert server.app.count(model="mock-filter-output") == 1


def test_without_a_handler_a_content_filter_raises_instead_of_answering(
    server: MockServer,
) -> None:
    setup = Setup(server, "mock-filter-output")
    with pytest.raises(ModelRefusalError) as raised:
        _run(setup, "Write a story.")
    assert raised.value.refusal == setup.wire[0].notice
