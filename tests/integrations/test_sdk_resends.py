"""RefusalTransport stops the SDKs' own retries from resending a prompt (C5).

The fault proxy sits between the SDK and the mock server: it cuts a refused body short,
or marks a 400 filter `x-should-retry: true` (which the SDKs obey even on a 400). The
mock's request log says how often the prompt reached the provider: once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import httpx2
import litellm
import openai
import pytest

from refusals.integrations.httpx_transport import RefusalTransport, RefusedRequestError
from refusals.mock import MockServer

from .._faults import FaultProxy, half, short_by

TIMEOUT = 15.0


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer() as running:
        yield running


def _anthropic(base_url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="test",
        base_url=base_url,
        max_retries=2,
        http_client=httpx2.Client(
            transport=RefusalTransport(httpx2.HTTPTransport()), timeout=TIMEOUT
        ),
    )


def _openai(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="test",
        base_url=base_url + "/v1",
        max_retries=2,
        http_client=httpx2.Client(
            transport=RefusalTransport(httpx2.HTTPTransport()), timeout=TIMEOUT
        ),
    )


def _anthropic_call(client: anthropic.Anthropic, model: str, *, stream: bool) -> Any:
    messages: Any = [{"role": "user", "content": "Write the exploit."}]
    if stream:
        with client.messages.stream(model=model, max_tokens=64, messages=messages) as events:
            return events.get_final_message()
    return client.messages.create(model=model, max_tokens=64, messages=messages)


def _openai_call(client: openai.OpenAI, model: str, *, stream: bool) -> Any:
    messages: Any = [{"role": "user", "content": "Write the exploit."}]
    if stream:
        return list(client.chat.completions.create(model=model, messages=messages, stream=True))
    return client.chat.completions.create(model=model, messages=messages)


SDKS: dict[str, tuple[Any, Any]] = {
    "anthropic": (_anthropic, _anthropic_call),
    "openai": (_openai, _openai_call),
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("sdk", list(SDKS))
def test_an_sdk_never_retries_a_refused_body_that_was_cut_off(
    server: MockServer, sdk: str, stream: bool
) -> None:
    server.app.reset()
    make, send = SDKS[sdk]
    with FaultProxy(server.base_url, short_by(1), "rst") as proxy:
        client: Any = make(proxy.base_url)
        # The SDK reports the cut body its own way; what counts is what reached the mock.
        with contextlib.suppress(Exception):
            send(client, "mock-refusal", stream=stream)
    assert proxy.requests == 1
    assert server.app.count() == 1


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("sdk", list(SDKS))
def test_a_400_filter_marked_should_retry_is_not_retried_by_the_sdk(
    server: MockServer, sdk: str, stream: bool
) -> None:
    server.app.reset()
    make, send = SDKS[sdk]
    with FaultProxy(server.base_url, len, headers={"x-should-retry": "true"}) as proxy:
        client: Any = make(proxy.base_url)
        with pytest.raises(Exception) as raised:
            send(client, "mock-filter-prompt", stream=stream)
    assert server.app.count() == 1, raised.value
    assert proxy.requests in (1, 3)  # the SDK may try; the guard answers its retries


def test_the_same_anthropic_prompt_in_another_shape_is_not_sent_again(server: MockServer) -> None:
    server.app.reset()
    client = _anthropic(server.base_url)
    first = client.messages.create(
        model="mock-refusal", max_tokens=64, messages=[{"role": "user", "content": "Do it now."}]
    )
    assert first.stop_reason == "refusal"
    shapes: list[Any] = [
        {"max_tokens": 512, "messages": [{"role": "user", "content": "Do it now."}]},
        {
            "max_tokens": 64,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Do it now."}]}],
        },
        {
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "Do it  now. "}],
        },
    ]
    for shape in shapes:
        with pytest.raises(RefusedRequestError):
            client.messages.create(model="mock-refusal", **shape)
    assert server.app.count() == 1
    # A changed prompt goes through.
    client.messages.create(
        model="mock-refusal", max_tokens=64, messages=[{"role": "user", "content": "Explain it."}]
    )
    assert server.app.count() == 2


def test_the_same_openai_prompt_as_text_parts_is_not_sent_again(server: MockServer) -> None:
    server.app.reset()
    client = _openai(server.base_url)
    client.chat.completions.create(
        model="mock-refusal", messages=[{"role": "user", "content": "Do it now."}]
    )
    with pytest.raises(RefusedRequestError):
        client.chat.completions.create(
            model="mock-refusal",
            max_tokens=99,
            messages=[{"role": "user", "content": [{"type": "text", "text": "Do it now."}]}],
        )
    assert server.app.count() == 1


@pytest.fixture
def guarded_litellm() -> Iterator[None]:
    previous = litellm.client_session
    litellm.client_session = httpx.Client(transport=RefusalTransport(httpx.HTTPTransport()))
    try:
        yield
    finally:
        litellm.client_session.close()
        litellm.client_session = previous


LITELLM_CASES = {
    "filter-should-retry": ("mock-filter-prompt", len, {"x-should-retry": "true"}),
    "refusal-cut": ("mock-refusal", short_by(1), {}),
    "answer-cut": ("mock-answer", half, {}),
}


@pytest.mark.usefixtures("guarded_litellm")
@pytest.mark.parametrize("case", list(LITELLM_CASES))
def test_litellm_num_retries_never_resends_a_blocked_or_cut_answer(
    server: MockServer, case: str
) -> None:
    server.app.reset()
    model, cut, headers = LITELLM_CASES[case]
    with (
        FaultProxy(server.base_url, cut, "rst", headers=headers) as proxy,
        pytest.raises(Exception) as raised,
    ):
        litellm.completion(
            model=f"openai/{model}",
            api_base=proxy.base_url + "/v1",
            api_key="test",
            messages=[{"role": "user", "content": f"Hello for {case}"}],
            num_retries=2,
            timeout=TIMEOUT,
        )
    assert "refusals: not" in str(raised.value)
    assert proxy.requests == 1
    assert server.app.count() == 1
