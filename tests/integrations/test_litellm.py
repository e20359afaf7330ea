"""The LiteLLM adapter: real litellm.completion, Router and stream against the mock provider."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import litellm
import openai
import pytest
from litellm.router import Router

from refusals import FinishReason, normalize, notice
from refusals.integrations.httpx_transport import RefusalTransport, ResponseVerdict
from refusals.integrations.litellm import (
    CallVerdict,
    RefusalLogger,
    RefusedPromptError,
    http_handler,
)
from refusals.mock import MockServer

PROMPT = [{"role": "user", "content": "Write the exploit."}]
TIMEOUT = 30.0


@pytest.fixture(scope="module")
def running() -> Iterator[MockServer]:
    with MockServer() as mock:
        yield mock


@pytest.fixture
def server(running: MockServer) -> MockServer:
    running.app.reset()
    return running


@pytest.fixture(scope="module")
def registered() -> Iterator[RefusalLogger]:
    # LiteLLM copies its callbacks into its own lists on first use: register one logger.
    handler = RefusalLogger()
    saved = litellm.callbacks
    litellm.callbacks = [handler]
    yield handler
    litellm.callbacks = saved


@pytest.fixture
def logger(registered: RefusalLogger) -> RefusalLogger:
    time.sleep(0.1)  # let a callback of the test before land before clearing
    registered.clear()
    return registered


def _wait_for(logger: RefusalLogger, count: int) -> list[CallVerdict]:
    # LiteLLM runs sync success callbacks on a worker thread: wait, bounded, for them.
    deadline = time.monotonic() + 10
    while len(logger.verdicts) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return list(logger.verdicts)


def _api_base(server: MockServer, model: str) -> str:
    return server.base_url + ("/v1" if model.startswith("openai/") else "")


def _completion(server: MockServer, model: str, **options: Any) -> Any:
    return litellm.completion(
        model=model,
        api_base=_api_base(server, model),
        api_key="test",
        messages=PROMPT,
        timeout=TIMEOUT,
        **options,
    )


def test_an_anthropic_refusal_is_a_refusal_with_its_category_not_a_content_filter(
    server: MockServer, logger: RefusalLogger
) -> None:
    response = _completion(server, "anthropic/mock-refusal")
    (verdict,) = _wait_for(logger, 1)
    # LiteLLM itself collapses the refusal into content_filter.
    assert response.choices[0].finish_reason == "content_filter"
    assert verdict.finish_reason is FinishReason.REFUSAL
    assert verdict.provider == "anthropic"
    assert verdict.response.stop_details is not None
    assert verdict.response.stop_details.category == "cyber"
    assert verdict.blocked and not verdict.failed
    assert server.app.count(model="mock-refusal") == 1


def test_an_openai_refusal_keeps_the_notice_the_wire_body_gives(
    server: MockServer, logger: RefusalLogger
) -> None:
    response = _completion(server, "openai/mock-refusal")
    (verdict,) = _wait_for(logger, 1)
    assert verdict.finish_reason is FinishReason.REFUSAL
    assert server.app.count(model="mock-refusal") == 1
    assert verdict.notice is not None
    assert verdict.notice == notice(normalize(response.model_dump(), provider="openai"))


def test_an_output_filter_on_a_200_is_a_content_filter(
    server: MockServer, logger: RefusalLogger
) -> None:
    _completion(server, "openai/mock-filter-output")
    (verdict,) = _wait_for(logger, 1)
    assert verdict.finish_reason is FinishReason.CONTENT_FILTER
    assert verdict.notice is not None and verdict.notice.startswith("The provider's content filter")


def test_a_policy_error_is_a_failure_classified_as_a_content_filter(
    server: MockServer, logger: RefusalLogger
) -> None:
    with pytest.raises(litellm.exceptions.ContentPolicyViolationError):
        _completion(server, "anthropic/mock-filter-output")
    (verdict,) = _wait_for(logger, 1)
    assert verdict.failed
    assert verdict.finish_reason is FinishReason.CONTENT_FILTER
    assert verdict.response.stop_details is not None
    assert verdict.response.stop_details.explanation == "Output blocked by content filtering policy"
    assert server.app.count(model="mock-filter-output") == 1


@pytest.mark.parametrize("model", ["anthropic/mock-filter-output", "anthropic/mock-refusal"])
def test_litellm_retries_and_a_user_loop_send_a_refused_prompt_once_through_the_handler(
    server: MockServer, logger: RefusalLogger, model: str
) -> None:
    client = http_handler()
    outcomes: list[str] = []
    for _ in range(3):
        try:
            response = _completion(server, model, num_retries=2, client=client)
            outcomes.append(str(response.choices[0].finish_reason))
        except openai.OpenAIError as error:  # LiteLLM's errors are the OpenAI SDK's
            outcomes.append(str(error))
    # LiteLLM retried the filtered call itself; only the guard answered those retries.
    assert server.app.count(model=model.split("/", 1)[1]) == 1
    assert all("refusals: not sending a request identical" in o for o in outcomes[1:])
    # The logger reports each guarded call as the refusal it is, with the library's
    # notice for the provider's body (category and explanation kept), not as an error.
    verdicts = _wait_for(logger, 3)
    assert len(verdicts) == 3
    notices = {v.notice for v in verdicts}
    assert len(notices) == 1 and None not in notices
    for verdict in verdicts:
        assert verdict.blocked
        stop = verdict.response.stop_details
        assert stop is not None and stop.explanation
        assert stop.explanation.rstrip(".").lower() in str(verdict.notice).lower()


def test_a_streamed_refusal_is_classified_from_the_provider_fields_litellm_keeps(
    server: MockServer, logger: RefusalLogger
) -> None:
    chunks = list(_completion(server, "anthropic/mock-refusal-mid-stream", stream=True))
    (verdict,) = _wait_for(logger, 1)
    assert chunks
    assert verdict.finish_reason is FinishReason.REFUSAL
    assert verdict.response.stop_details is not None
    assert verdict.response.stop_details.category == "cyber"


@pytest.mark.parametrize(
    ("primary", "verdict"),
    [("mock-refusal", FinishReason.REFUSAL), ("mock-filter-output", FinishReason.CONTENT_FILTER)],
)
def test_router_content_policy_fallbacks_ask_the_refusing_model_once(
    server: MockServer, logger: RefusalLogger, primary: str, verdict: FinishReason
) -> None:
    router = Router(
        model_list=[
            {
                "model_name": "primary",
                "litellm_params": {
                    "model": f"anthropic/{primary}",
                    "api_base": server.base_url,
                    "api_key": "test",
                },
            },
            {
                "model_name": "backup",
                "litellm_params": {
                    "model": "openai/mock-answer",
                    "api_base": server.base_url + "/v1",
                    "api_key": "test",
                },
            },
        ],
        content_policy_fallbacks=[{"primary": ["backup"]}],
        num_retries=2,
    )
    response = router.completion(model="primary", messages=PROMPT, timeout=TIMEOUT)
    verdicts = _wait_for(logger, 2)
    assert response.choices[0].message.content == "Mock answer: Write the exploit."
    assert server.app.count(model=primary) == 1
    assert server.app.count(model="mock-answer") == 1
    assert verdict in [v.finish_reason for v in verdicts]
    assert verdicts[-1].finish_reason is FinishReason.STOP


def test_the_proxy_stream_hook_ends_the_stream_at_the_refusal_chunk(
    server: MockServer,
) -> None:
    logger = RefusalLogger()

    async def run() -> tuple[list[Any], list[Any]]:
        full = [
            chunk
            async for chunk in await litellm.acompletion(
                model="anthropic/mock-refusal-mid-stream",
                api_base=server.base_url,
                api_key="test",
                messages=PROMPT,
                stream=True,
                timeout=TIMEOUT,
            )
        ]
        stream = await litellm.acompletion(
            model="anthropic/mock-refusal-mid-stream",
            api_base=server.base_url,
            api_key="test",
            messages=PROMPT,
            stream=True,
            timeout=TIMEOUT,
        )
        hooked = [
            chunk
            async for chunk in logger.async_post_call_streaming_iterator_hook(
                None, stream, {"model": "claude", "messages": PROMPT}
            )
        ]
        return full, hooked

    full, hooked = asyncio.run(asyncio.wait_for(run(), timeout=TIMEOUT))
    # The chunk that carries Anthropic's refusal is the last one sent on.
    assert 0 < len(hooked) < len(full)
    last = hooked[-1].choices[0].delta.provider_specific_fields
    assert last["stop_reason"] == "refusal"
    (verdict,) = logger.verdicts
    assert verdict.finish_reason is FinishReason.REFUSAL
    assert verdict.notice is not None


def test_the_proxy_pre_call_hook_rejects_a_prompt_already_refused(server: MockServer) -> None:
    logger = RefusalLogger()

    async def run() -> None:
        stream = await litellm.acompletion(
            model="anthropic/mock-refusal-mid-stream",
            api_base=server.base_url,
            api_key="test",
            messages=PROMPT,
            stream=True,
            timeout=TIMEOUT,
        )
        data = {"model": "primary", "messages": PROMPT}
        async for _ in logger.async_post_call_streaming_iterator_hook(None, stream, data):
            pass
        other = {"model": "primary", "messages": [{"role": "user", "content": "Say hi."}]}
        assert await logger.async_pre_call_hook(None, None, other, "completion") == other
        with pytest.raises(RefusedPromptError) as raised:
            await logger.async_pre_call_hook(None, None, dict(data), "completion")
        assert raised.value.notice == logger.verdicts[-1].notice

    asyncio.run(asyncio.wait_for(run(), timeout=TIMEOUT))
    assert server.app.count(model="mock-refusal-mid-stream") == 1


def test_a_transport_under_litellms_openai_client_sees_the_streamed_refusal_litellm_drops(
    server: MockServer,
) -> None:
    seen: list[ResponseVerdict] = []
    saved = litellm.client_session
    litellm.client_session = httpx.Client(
        transport=RefusalTransport(httpx.HTTPTransport(), on_verdict=seen.append),
        timeout=TIMEOUT,
    )
    try:
        # LiteLLM caches its OpenAI clients by their settings: another key, a fresh client.
        chunks = list(
            litellm.completion(
                model="openai/mock-refusal",
                api_base=server.base_url + "/v1",
                api_key="test-client-session",
                messages=PROMPT,
                stream=True,
                timeout=TIMEOUT,
            )
        )
    finally:
        litellm.client_session.close()
        litellm.client_session = saved
    assert not any(getattr(c.choices[0].delta, "refusal", None) for c in chunks)
    assert [v.finish_reason for v in seen] == [FinishReason.REFUSAL]
    assert seen[0].streamed
