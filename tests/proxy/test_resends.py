"""Through the proxy, a refused or filtered prompt reaches the provider once, however
often an official SDK (its own retries on) or a retrying tool sends it again."""

from __future__ import annotations

import concurrent.futures
import time
from typing import Any

import anthropic
import boto3
import httpx
import openai
import pytest
from botocore.config import Config
from google import genai
from google.genai import types as genai_types

from refusals.mock import MockServer
from refusals.proxy import BLOCKED_HEADER, FALLBACK_HEADER, ProxyServer, Upstream
from refusals.proxy.app import MAX_BODY_BYTES
from refusals.transport.fallback import BlockPolicy, Rule
from tests.proxy.conftest import MakeProxy

TIMEOUT = 10.0
USER: list[Any] = [{"role": "user", "content": "Tell me how to pick a lock."}]


def _anthropic(proxy: ProxyServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="sk-ant-secret-test", base_url=proxy.base_url, max_retries=3, timeout=TIMEOUT
    )


def _openai(proxy: ProxyServer) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="sk-secret-test", base_url=proxy.base_url + "/v1", max_retries=3, timeout=TIMEOUT
    )


def test_anthropic_sdk_refusal_reaches_the_server_once(
    mock: MockServer, proxy: ProxyServer
) -> None:
    client = _anthropic(proxy)
    seen = []
    for _ in range(5):
        raw = client.messages.with_raw_response.create(
            model="mock-refusal", max_tokens=64, messages=USER
        )
        message = raw.parse()
        assert message.stop_reason == "refusal"
        seen.append(raw.headers.get(BLOCKED_HEADER))
    assert mock.app.count() == 1
    assert seen == [None, "true", "true", "true", "true"]


def test_anthropic_sdk_streamed_refusal_is_replayed_as_the_same_stream(
    mock: MockServer, proxy: ProxyServer
) -> None:
    client = _anthropic(proxy)
    finals = []
    for _ in range(3):
        with client.messages.stream(model="mock-refusal", max_tokens=64, messages=USER) as stream:
            finals.append(stream.get_final_message())
    assert mock.app.count() == 1
    assert [m.stop_reason for m in finals] == ["refusal"] * 3
    assert finals[0].model_dump() == finals[2].model_dump()


def test_anthropic_prompt_block_over_http_400_is_not_resent(
    mock: MockServer, proxy: ProxyServer
) -> None:
    client = _anthropic(proxy)
    for _ in range(3):
        with pytest.raises(anthropic.BadRequestError):
            client.messages.create(model="mock-filter-prompt", max_tokens=64, messages=USER)
    assert mock.app.count() == 1


def test_openai_chat_refusal_stream_and_whole_body(mock: MockServer, proxy: ProxyServer) -> None:
    client = _openai(proxy)
    for _ in range(3):
        stream = client.chat.completions.create(model="mock-refusal", messages=USER, stream=True)
        text = "".join(c.choices[0].delta.refusal or "" for c in stream if c.choices)
        assert text  # the refusal text, streamed
    assert mock.app.count() == 1
    # The same prompt asked without a stream: answered from memory, in OpenAI's error shape.
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="mock-refusal", messages=USER)
    assert "declined" in str(caught.value)
    assert caught.value.response.headers[BLOCKED_HEADER] == "true"
    assert mock.app.count() == 1


def test_openai_responses_content_filter_like_codex_retries(
    mock: MockServer, proxy: ProxyServer
) -> None:
    # Codex resends a `response.incomplete` content filter up to five times.
    client = _openai(proxy)
    for _ in range(6):
        response = client.responses.create(model="mock-filter-output", input="write a story")
        assert response.status == "incomplete"
        assert response.incomplete_details is not None
        assert response.incomplete_details.reason == "content_filter"
    assert mock.app.count() == 1


def test_gemini_sdk_safety_block_reaches_the_server_once(
    mock: MockServer, proxy: ProxyServer
) -> None:
    options = genai_types.HttpOptions(base_url=proxy.base_url, timeout=int(TIMEOUT * 1000))
    client = genai.Client(api_key="gemini-secret-test", http_options=options)
    for _ in range(4):
        result = client.models.generate_content(model="mock-filter-prompt", contents="hello")
        assert result.prompt_feedback is not None
        assert result.prompt_feedback.block_reason is not None
    assert mock.app.count() == 1


def test_bedrock_guardrail_through_boto3_with_its_retries_on(
    mock: MockServer, proxy: ProxyServer
) -> None:
    client = boto3.client(
        "bedrock-runtime",
        endpoint_url=proxy.base_url,
        region_name="us-east-1",
        aws_access_key_id="AKIDPROXYTEST",
        aws_secret_access_key="proxy-secret",
        config=Config(retries={"total_max_attempts": 4, "mode": "standard"}),
    )
    messages: Any = [{"role": "user", "content": [{"text": "What is the weather?"}]}]
    for _ in range(3):
        response = client.converse(modelId="mock-filter-prompt", messages=messages)
        assert response["stopReason"] == "guardrail_intervened"
    assert mock.app.count() == 1


def test_cohere_sdk_toxic_stop_reaches_the_server_once(
    mock: MockServer, proxy: ProxyServer
) -> None:
    cohere = pytest.importorskip("cohere")
    client = cohere.ClientV2(api_key="co-secret-test", base_url=proxy.base_url, timeout=TIMEOUT)
    for _ in range(4):
        reply = client.chat(model="mock-refusal", messages=USER)
        assert reply.finish_reason == "ERROR_TOXIC"
    # Asked as a stream after a whole body: the block in Cohere's error shape, a 400.
    with pytest.raises(cohere.errors.BadRequestError) as raised:
        list(client.chat_stream(model="mock-refusal", messages=USER))
    assert "content filter blocked this request (category: toxic)" in str(raised.value.body)
    assert mock.app.count() == 1


def test_a_tool_loop_that_changes_bookkeeping_is_still_blocked(
    mock: MockServer, proxy: ProxyServer
) -> None:
    url = proxy.base_url + "/v1/messages"
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    for attempt in range(6):
        body = {
            "model": "mock-refusal",
            "max_tokens": 64 + attempt,  # a tool bumps it, adds metadata, streams or not
            "metadata": {"user_id": f"attempt-{attempt}"},
            "stream": attempt % 2 == 1,
            # The same text as a string or as a list of parts, spaced differently.
            "messages": [
                {"role": "user", "content": "Tell me how to  pick a lock."}
                if attempt % 3
                else {"role": "user", "content": [{"type": "text", "text": USER[0]["content"]}]}
            ],
        }
        reply = httpx.post(url, json=body, headers=headers, timeout=TIMEOUT)
        assert reply.status_code in (200, 400)
    assert mock.app.count() == 1


def test_a_changed_prompt_goes_through(mock: MockServer, proxy: ProxyServer) -> None:
    client = _anthropic(proxy)
    client.messages.create(model="mock-refusal", max_tokens=64, messages=USER)
    other: list[Any] = [{"role": "user", "content": "Tell me how locks work, historically."}]
    raw = client.messages.with_raw_response.create(
        model="mock-refusal", max_tokens=64, messages=other
    )
    assert raw.headers.get(BLOCKED_HEADER) is None
    assert mock.app.count() == 2


def test_answers_are_never_blocked(mock: MockServer, proxy: ProxyServer) -> None:
    client = _openai(proxy)
    for _ in range(3):
        reply = client.chat.completions.create(model="mock-answer", messages=USER)
        assert reply.choices[0].message.content
    assert mock.app.count() == 3


def test_identical_concurrent_requests_reach_the_server_once(
    mock: MockServer, proxy: ProxyServer
) -> None:
    body = {"model": "mock-slow-refusal", "messages": USER}

    def post(_: int) -> int:
        reply = httpx.post(
            proxy.base_url + "/v1/chat/completions",
            json={**body, "model": "mock-refusal"},
            headers={"authorization": "Bearer k", "x-mock-scenario": "slow"},
            timeout=TIMEOUT,
        )
        return reply.status_code

    # `slow` answers after a delay, so the four are in flight together; a refusal
    # arrives for none of them, so each goes through once the first has answered.
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert set(pool.map(post, range(4))) == {200}
    assert mock.app.count() == 4

    def refused(_: int) -> bool:
        reply = httpx.post(
            proxy.base_url + "/v1/chat/completions",
            json={"model": "mock-refusal", "messages": [{"role": "user", "content": "again"}]},
            headers={"authorization": "Bearer k"},
            timeout=TIMEOUT,
        )
        return bool(reply.headers.get(BLOCKED_HEADER) == "true")

    mock.app.reset()
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        blocked = list(pool.map(refused, range(6)))
    assert mock.app.count() == 1
    assert blocked.count(True) == 5


def test_the_window_ends(mock: MockServer, make_proxy: MakeProxy) -> None:
    # Long enough that the resend lands inside it on a loaded machine (CI runs tests in
    # parallel), short enough to wait out.
    proxy = make_proxy(Upstream("mock", mock.base_url), window=2.0)
    client = _anthropic(proxy)
    client.messages.create(model="mock-refusal", max_tokens=64, messages=USER)
    client.messages.create(model="mock-refusal", max_tokens=64, messages=USER)
    assert mock.app.count() == 1
    time.sleep(2.1)
    client.messages.create(model="mock-refusal", max_tokens=64, messages=USER)
    assert mock.app.count() == 2


def test_policy_routes_a_refusal_to_the_fallback_model(
    mock: MockServer, make_proxy: MakeProxy
) -> None:
    # A whole body is held until its verdict: the first refusal already goes to the
    # fallback, and the client sees only the fallback's answer.
    policy = BlockPolicy({"cyber": Rule("fallback", "anthropic:mock-answer")})
    proxy = make_proxy(Upstream("mock", mock.base_url), policy=policy)
    client = _anthropic(proxy)
    for _ in range(2):
        raw = client.messages.with_raw_response.create(
            model="mock-refusal", max_tokens=64, messages=USER
        )
        assert raw.parse().stop_reason == "end_turn"
        assert raw.headers[FALLBACK_HEADER] == "mock-refusal"
    # The refused prompt reached the server once; its resend went straight to the fallback.
    assert [r.model for r in mock.app.requests] == ["mock-refusal", "mock-answer", "mock-answer"]


def test_policy_routes_a_streamed_refusal_on_its_resend(
    mock: MockServer, make_proxy: MakeProxy
) -> None:
    # A stream's bytes are forwarded as they come, so its refusal is shown as it is; the
    # resend goes to the fallback.
    policy = BlockPolicy({"cyber": Rule("fallback", "anthropic:mock-answer")})
    proxy = make_proxy(Upstream("mock", mock.base_url), policy=policy)
    client = _anthropic(proxy)
    with client.messages.stream(model="mock-refusal", max_tokens=64, messages=USER) as stream:
        assert stream.get_final_message().stop_reason == "refusal"
    with client.messages.stream(model="mock-refusal", max_tokens=64, messages=USER) as stream:
        assert stream.get_final_message().stop_reason == "end_turn"
    assert [r.model for r in mock.app.requests] == ["mock-refusal", "mock-answer"]


def test_a_fallback_of_any_chat_provider_in_the_registry_takes_a_chat_call(
    mock: MockServer, make_proxy: MakeProxy
) -> None:
    # Cerebras (one registry row, read as OpenAI) speaks Chat Completions: its model can
    # take an OpenAI chat call on the same upstream; Gemini's cannot, so it is skipped.
    models = ("gemini:mock-answer", "cerebras:mock-answer")
    only_gemini = BlockPolicy({"default": Rule("fallback", "gemini:mock-answer")})
    proxy = make_proxy(Upstream("openai", mock.base_url), policy=only_gemini)
    raw = _openai(proxy).chat.completions.with_raw_response.create(
        model="mock-refusal", messages=USER
    )
    assert raw.parse().choices[0].message.refusal  # nothing routable: the refusal stands
    assert FALLBACK_HEADER not in raw.headers
    first_routable = BlockPolicy({"default": Rule("fallback")})
    proxy = make_proxy(
        Upstream("openai", mock.base_url), policy=first_routable, fallback_models=models
    )
    raw = _openai(proxy).chat.completions.with_raw_response.create(
        model="mock-refusal", messages=[{"role": "user", "content": "another prompt"}]
    )
    assert raw.parse().choices[0].finish_reason == "stop"
    assert raw.headers[FALLBACK_HEADER] == "mock-refusal"
    assert [r.model for r in mock.app.requests] == ["mock-refusal", "mock-refusal", "mock-answer"]


def test_policy_stop_for_a_category_keeps_blocking(mock: MockServer, make_proxy: MakeProxy) -> None:
    policy = BlockPolicy({"cyber": Rule("stop"), "default": Rule("fallback", "mock:mock-answer")})
    proxy = make_proxy(Upstream("mock", mock.base_url), policy=policy)
    client = _anthropic(proxy)
    for _ in range(3):
        assert (
            client.messages.create(model="mock-refusal", max_tokens=64, messages=USER).stop_reason
            == "refusal"
        )
    assert mock.app.count() == 1


def test_upstreams_by_path_prefix_and_by_wire(mock: MockServer, make_proxy: MakeProxy) -> None:
    proxy = make_proxy(
        Upstream("anthropic", mock.base_url), Upstream("groq", mock.base_url + "/groq")
    )
    reply = httpx.post(
        proxy.base_url + "/groq/chat/completions",
        json={"model": "mock-answer", "messages": USER},
        headers={"authorization": "Bearer k"},
        timeout=TIMEOUT,
    )
    assert reply.status_code == 200
    assert [r.path for r in mock.app.requests] == ["/groq/chat/completions"]
    client = _anthropic(proxy)
    client.messages.create(model="mock-answer", max_tokens=64, messages=USER)
    assert mock.app.requests[-1].path == "/v1/messages"
    missing = httpx.post(proxy.base_url + "/v1/responses", json={}, timeout=TIMEOUT)
    assert missing.status_code == 502
    assert "--upstream" in missing.json()["error"]["message"]


def test_calls_that_are_not_model_calls_pass_through(mock: MockServer, proxy: ProxyServer) -> None:
    reply = httpx.get(proxy.base_url + "/_mock/requests", timeout=TIMEOUT)
    assert reply.status_code == 200
    assert reply.json()["requests"] == []  # the mock's own answer, and no model call made


def test_an_unreachable_upstream_is_a_502_naming_it(make_proxy: MakeProxy) -> None:
    proxy = make_proxy(Upstream("openai", "http://127.0.0.1:9"))
    reply = httpx.post(
        proxy.base_url + "/v1/chat/completions",
        json={"model": "gpt-5", "messages": USER},
        headers={"authorization": "Bearer sk-secret"},
        timeout=TIMEOUT,
    )
    assert reply.status_code == 502
    assert "cannot reach upstream openai" in reply.json()["error"]["message"]
    assert "sk-secret" not in reply.text


def test_a_body_over_the_limit_is_413_unsent(mock: MockServer, proxy: ProxyServer) -> None:
    reply = httpx.post(
        proxy.base_url + "/v1/messages",
        content=b"x" * (MAX_BODY_BYTES + 1),
        headers={"x-api-key": "k"},
        timeout=TIMEOUT,
    )
    assert reply.status_code == 413
    assert "MiB limit" in reply.json()["error"]["message"]
    assert mock.app.count() == 0


def test_an_upstream_slower_than_the_timeout_is_a_504(
    mock: MockServer, make_proxy: MakeProxy
) -> None:
    proxy = make_proxy(Upstream("mock", mock.base_url), timeout=0.3)
    reply = httpx.post(
        proxy.base_url + "/v1/messages",
        json={"model": "mock-slow", "max_tokens": 8, "messages": USER},
        headers={"x-api-key": "k"},
        timeout=TIMEOUT,
    )
    assert reply.status_code == 504
    assert "did not answer in time" in reply.json()["error"]["message"]
