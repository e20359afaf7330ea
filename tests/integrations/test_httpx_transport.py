"""RefusalTransport under plain httpx, against recorded payloads served over 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from refusals import FinishReason, decode_stream, normalize, notice
from refusals.integrations.httpx_transport import (
    VERDICT_EXTENSION,
    RefusalGuard,
    RefusalTransport,
    RefusedRequestError,
    RequestIdentity,
    ResponseVerdict,
    request_identity,
)
from tests.integrations._fixture_server import FIXTURES, FixtureServer, Reply, serve

TIMEOUT = httpx.Timeout(10.0)
REFUSAL_JSON = "anthropic/vercel-refusal-cyber.json"
REFUSAL_SSE = "anthropic/stream-refusal-cyber.sse"
ANSWER_SSE = "anthropic/stream-end-turn-basic.sse"


@pytest.fixture
def server() -> Iterator[FixtureServer]:
    with serve(
        {
            "refuse": Reply.fixture(REFUSAL_JSON),
            "refuse-stream": Reply.fixture(REFUSAL_SSE),
            "refuse-gzip": Reply.fixture(REFUSAL_JSON, gzip=True),
            "answer-stream": Reply.fixture(ANSWER_SSE),
            "filter": Reply.fixture("gemini/finish-safety-blocked.json"),
        }
    ) as running:
        yield running


def _body(model: str, prompt: str = "hello", **extra: object) -> dict[str, object]:
    return {"model": model, "messages": [{"role": "user", "content": prompt}], **extra}


def _client(
    seen: list[ResponseVerdict], *, provider: str | None = None, guard: bool = True
) -> httpx.Client:
    transport = RefusalTransport(
        httpx.HTTPTransport(), on_verdict=seen.append, provider=provider, guard=guard
    )
    return httpx.Client(transport=transport, timeout=TIMEOUT)


def test_a_refused_full_body_carries_the_verdict_and_the_notice(server: FixtureServer) -> None:
    seen: list[ResponseVerdict] = []
    with _client(seen) as client:
        response = client.post(server.base_url + "/v1/messages", json=_body("refuse"))
    expected = normalize((FIXTURES / REFUSAL_JSON).read_bytes())
    verdict = response.extensions[VERDICT_EXTENSION]
    assert seen == [verdict]
    assert verdict.finish_reason is FinishReason.REFUSAL
    assert verdict.blocked and verdict.complete and not verdict.streamed
    assert verdict.notice == notice(expected)
    assert verdict.response.stop_details is not None
    assert verdict.response.stop_details.category == "cyber"


def test_a_stream_passes_through_byte_for_byte_and_is_classified_as_read(
    server: FixtureServer,
) -> None:
    seen: list[ResponseVerdict] = []
    raw = (FIXTURES / REFUSAL_SSE).read_bytes()
    with (
        _client(seen) as client,
        client.stream("POST", server.base_url + "/v1/messages", json=_body("refuse-stream")) as r,
    ):
        received = b"".join(r.iter_bytes())
    assert received == raw
    expected, _ = decode_stream(raw)
    assert [v.streamed for v in seen] == [True]
    assert seen[0].finish_reason is FinishReason.REFUSAL
    assert seen[0].notice == notice(expected)


def test_a_stream_closed_at_its_verdict_is_still_guarded(server: FixtureServer) -> None:
    seen: list[ResponseVerdict] = []
    url = server.base_url + "/v1/messages"
    with _client(seen) as client:
        with client.stream("POST", url, json=_body("refuse-stream")) as response:
            for _ in response.iter_bytes():
                verdict = response.extensions.get(VERDICT_EXTENSION)
                if verdict is not None and verdict.blocked:
                    break
        with pytest.raises(RefusedRequestError):
            client.post(url, json=_body("refuse-stream"))
    assert server.count("refuse-stream") == 1
    assert len(seen) == 1
    assert seen[0].finish_reason is FinishReason.REFUSAL


def test_an_identical_request_is_never_sent_again_and_the_error_names_the_refusal(
    server: FixtureServer,
) -> None:
    seen: list[ResponseVerdict] = []
    url = server.base_url + "/v1/messages"
    with _client(seen) as client:
        client.post(url, json=_body("refuse"))
        with pytest.raises(RefusedRequestError) as raised:
            client.post(url, json=_body("refuse"))
        # Keys in another order and a streaming flag make it no different a prompt.
        with pytest.raises(RefusedRequestError):
            client.post(
                url,
                json={
                    "messages": _body("refuse")["messages"],
                    "model": "refuse",
                    "stream": True,
                    "metadata": {"user_id": "u1"},
                },
            )
    assert server.count("refuse") == 1
    assert raised.value.notice == seen[0].notice
    assert str(raised.value).endswith(str(seen[0].notice))
    assert "/v1/messages" in str(raised.value)


def test_a_different_prompt_and_an_answered_prompt_are_sent_as_often_as_asked(
    server: FixtureServer,
) -> None:
    seen: list[ResponseVerdict] = []
    url = server.base_url + "/v1/messages"
    with _client(seen) as client:
        client.post(url, json=_body("refuse", "first"))
        client.post(url, json=_body("refuse", "second"))
        for _ in range(2):
            with client.stream("POST", url, json=_body("answer-stream")) as response:
                response.read()
    assert server.count("refuse") == 2
    assert server.count("answer-stream") == 2
    assert [v.finish_reason for v in seen[2:]] == [FinishReason.STOP, FinishReason.STOP]


def test_a_content_filter_is_terminal_too(server: FixtureServer) -> None:
    seen: list[ResponseVerdict] = []
    secret = "AIza-sentinel-key-0123456789"
    url = server.base_url + f"/v1beta/models/gemini-x:generateContent?key={secret}"
    with _client(seen, provider="gemini") as client:
        client.post(url, json=_body("filter"))
        with pytest.raises(RefusedRequestError) as raised:
            client.post(url, json=_body("filter"))
    assert seen[0].finish_reason is FinishReason.CONTENT_FILTER
    # The key in the query string is in no identity, verdict or error text.
    assert secret not in str(raised.value)
    assert secret not in repr(seen[0])
    assert secret not in repr(raised.value.verdict.request)
    assert raised.value.notice == notice(seen[0].response)
    assert "filtered" in str(raised.value)
    assert server.count("filter") == 1


def test_a_gzip_coded_body_is_classified_from_its_decoded_bytes(server: FixtureServer) -> None:
    seen: list[ResponseVerdict] = []
    with _client(seen) as client:
        response = client.post(server.base_url + "/v1/messages", json=_body("refuse-gzip"))
    assert response.json()["stop_reason"] == "refusal"
    assert [v.finish_reason for v in seen] == [FinishReason.REFUSAL]


def test_a_body_that_is_no_provider_response_gets_no_verdict(server: FixtureServer) -> None:
    seen: list[ResponseVerdict] = []
    with _client(seen) as client:
        response = client.get(server.base_url + "/v1/models")
        missing = client.post(server.base_url + "/v1/messages", json=_body("nothing-here"))
    assert response.json()["data"][0]["id"] == "model-a"
    assert VERDICT_EXTENSION not in response.extensions
    assert missing.status_code == 404
    assert all(not v.blocked for v in seen)


def test_without_a_guard_a_refused_request_is_sent_again(server: FixtureServer) -> None:
    seen: list[ResponseVerdict] = []
    with _client(seen, guard=False) as client:
        for _ in range(2):
            client.post(server.base_url + "/v1/messages", json=_body("refuse"))
    assert server.count("refuse") == 2
    assert [v.blocked for v in seen] == [True, True]


def test_a_shared_guard_stops_the_resend_from_another_client(server: FixtureServer) -> None:
    guard = RefusalGuard()
    url = server.base_url + "/v1/messages"
    with httpx.Client(transport=RefusalTransport(httpx.HTTPTransport(), guard=guard)) as first:
        first.post(url, json=_body("refuse"))
    with (
        httpx.Client(transport=RefusalTransport(httpx.HTTPTransport(), guard=guard)) as second,
        pytest.raises(RefusedRequestError),
    ):
        second.post(url, json=_body("refuse"))
    assert server.count("refuse") == 1
    assert len(guard) == 1


def test_a_forgotten_refusal_may_be_sent_again(server: FixtureServer) -> None:
    guard = RefusalGuard()
    url = server.base_url + "/v1/messages"
    with httpx.Client(transport=RefusalTransport(httpx.HTTPTransport(), guard=guard)) as client:
        response = client.post(url, json=_body("refuse"))
        identity = response.extensions[VERDICT_EXTENSION].request
        guard.forget(identity)
        client.post(url, json=_body("refuse"))
    assert server.count("refuse") == 2


def test_the_async_client_is_classified_and_guarded_the_same_way(server: FixtureServer) -> None:
    seen: list[ResponseVerdict] = []
    url = server.base_url + "/v1/messages"

    async def run() -> None:
        transport = RefusalTransport(httpx.AsyncHTTPTransport(), on_verdict=seen.append)
        async with httpx.AsyncClient(transport=transport, timeout=TIMEOUT) as client:
            async with client.stream("POST", url, json=_body("refuse-stream")) as response:
                await response.aread()
            with pytest.raises(RefusedRequestError):
                await client.post(url, json=_body("refuse-stream"))

    asyncio.run(asyncio.wait_for(run(), timeout=20))
    assert [v.finish_reason for v in seen] == [FinishReason.REFUSAL]
    assert server.count("refuse-stream") == 1


def test_the_guard_forgets_the_oldest_refusal_beyond_its_bound() -> None:
    guard = RefusalGuard(max_entries=2)
    refused = normalize((FIXTURES / REFUSAL_JSON).read_bytes())
    identities: list[RequestIdentity] = []
    for n in range(3):
        identity = request_identity("POST", "http://h/v1/messages", f'{{"n": {n}}}'.encode())
        assert identity is not None
        identities.append(identity)
    for identity in identities:
        guard.record(ResponseVerdict(refused, 200, False, identity, True))
    assert len(guard) == 2
    assert guard.refused(identities[0]) is None
    assert guard.refused(identities[2]) is not None


def test_request_identity_ignores_key_order_volatile_fields_query_and_stream_paths() -> None:
    plain = request_identity(
        "post", "https://g/v1beta/models/m:generateContent", b'{"a": 1, "b": [1, {"c": 2}]}'
    )
    streamed = request_identity(
        "POST",
        "https://g/v1beta/models/m:streamGenerateContent?alt=sse&key=secret",
        b'{"b": [1, {"c": 2}], "stream": true, "a": 1}',
    )
    other = request_identity("POST", "https://g/v1beta/models/m:generateContent", b'{"a": 2}')
    assert plain == streamed
    assert plain != other
    assert (
        plain is not None and "secret" not in str(plain) and plain.path.endswith(":generateContent")
    )
    assert request_identity("POST", "https://g/upload", b"\x89PNG not json") is None


def test_wrapping_something_that_is_no_transport_is_a_clear_type_error() -> None:
    with pytest.raises(TypeError, match="wraps an httpx transport"):
        RefusalTransport(object())
