"""What the mock does with a request before any scenario: auth, malformed and oversized
bodies, unknown paths, the request log, and credentials, which are never kept or echoed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import orjson
import pytest

from refusals.mock import MAX_BODY_BYTES, MockApp, MockServer, assert_not_resent, assert_sent_once
from refusals.mock.wire import WIRES
from refusals.model import ErrorKind
from refusals.providers import normalize
from refusals.providers.registry import VENDORS
from tests.mock._wires import call

AUTHENTICATED = (
    "anthropic",
    "openai-chat",
    "openai-responses",
    "azure",
    "gemini",
    "vertex",
    "bedrock",
    "cohere",
    "openrouter",
    "xai",
    "groq",
    "deepseek",
    "mistral",
)
SECRET = "sk-live-THIS-MUST-NEVER-SHOW"


def post(server: MockServer, path: str, body: Any, headers: dict[str, str]) -> httpx.Response:
    content = body if isinstance(body, bytes) else orjson.dumps(body)
    return httpx.post(server.base_url + path, content=content, headers=headers, timeout=10)


@pytest.mark.parametrize("wire", AUTHENTICATED)
def test_a_request_without_its_auth_header_is_refused_in_the_providers_shape(
    server: MockServer, wire: str
) -> None:
    request = call(wire, "mock-answer")
    answer = post(server, request.path, request.body, {})
    assert answer.status_code == (403 if wire in ("gemini", "bedrock") else 401)
    response = normalize(answer.content, provider=request.provider, status=answer.status_code)
    assert response.error is not None
    assert response.error.kind is ErrorKind.AUTH


def test_ollama_asks_for_no_credentials(server: MockServer) -> None:
    request = call("ollama", "mock-answer")
    assert post(server, request.path, request.body, {}).status_code == 200


@pytest.mark.parametrize(
    "authorization",
    ["Bearer", "AWS4-HMAC-SHA256 Credential=AKID/x", "Basic dXNlcjpwYXNz"],
)
def test_bedrock_wants_the_shape_of_a_sigv4_header(server: MockServer, authorization: str) -> None:
    request = call("bedrock", "mock-answer")
    answer = post(server, request.path, request.body, {"authorization": authorization})
    assert answer.status_code == 403
    assert answer.headers["x-amzn-errortype"].startswith("AccessDeniedException")


@pytest.mark.parametrize("wire", [*AUTHENTICATED, "ollama"])
def test_malformed_json_gets_the_providers_400_naming_the_problem(
    server: MockServer, wire: str
) -> None:
    request = call(wire, "mock-answer")
    answer = post(server, request.path, b'{"model": "x", "messages": [', request.headers)
    assert answer.status_code == 400
    assert b"not valid JSON" in answer.content
    response = normalize(answer.content, provider=request.provider, status=400)
    assert response.error is not None
    assert response.error.kind is ErrorKind.INVALID_REQUEST
    # The server is still there for the next request.
    assert post(server, request.path, request.body, request.headers).status_code == 200


@pytest.mark.parametrize(
    ("wire", "field", "named"),
    [
        ("anthropic", "model", "model: field required"),
        ("anthropic", "messages", "messages: field required"),
        ("openai-chat", "messages", "messages: field required"),
        ("openai-responses", "input", "input: field required"),
        ("gemini", "contents", "contents: field required"),
        ("bedrock", "messages", "messages: field required"),
        ("cohere", "model", "model: field required"),
        ("ollama", "messages", "messages: field required"),
    ],
)
def test_a_body_missing_a_required_field_gets_a_400_naming_it(
    server: MockServer, wire: str, field: str, named: str
) -> None:
    request = call(wire, "mock-answer")
    body = {k: v for k, v in request.body.items() if k != field}
    answer = post(server, request.path, body, request.headers)
    assert answer.status_code == 400
    assert named in answer.text


def test_azure_requires_an_api_version(server: MockServer) -> None:
    request = call("azure", "mock-answer")
    answer = post(server, request.path.split("?")[0], request.body, request.headers)
    assert answer.status_code == 400
    assert "api-version" in answer.text


def test_a_body_over_the_size_limit_is_answered_413_without_a_crash() -> None:
    app = MockApp()
    oversized = b"x" * (MAX_BODY_BYTES + 1)

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://mock.invalid") as c:
            return await c.post("/v1/messages", content=oversized, headers={"x-api-key": "k"})

    answer = asyncio.run(send())
    assert answer.status_code == 413
    assert answer.json()["error"]["type"] == "request_too_large"
    assert [r.status for r in app.requests] == [413]


def test_an_unknown_path_gets_a_404_that_points_to_the_docs(server: MockServer) -> None:
    answer = post(server, "/v9/unknown", {}, {})
    assert answer.status_code == 404
    assert "docs/mock.md" in answer.text
    assert server.app.count() == 0


def test_an_unknown_scenario_header_gets_a_400_naming_it(server: MockServer) -> None:
    request = call("anthropic", "claude-x")
    headers = {**request.headers, "x-mock-scenario": "no-such-thing"}
    answer = post(server, request.path, request.body, headers)
    assert answer.status_code == 400
    assert "'no-such-thing'" in answer.text


@pytest.mark.parametrize("wire", AUTHENTICATED)
def test_no_key_value_is_logged_or_echoed(server: MockServer, wire: str) -> None:
    request = call(wire, "mock-answer")
    headers = dict.fromkeys(request.headers, SECRET)
    if "authorization" in headers:
        headers["authorization"] = (
            request.headers["authorization"]
            .replace("sk-test-secret", SECRET)
            .replace("0" * 64, SECRET)
        )
    headers["x-api-key"] = SECRET
    body = {**request.body, "api_key": SECRET}
    answers = [
        post(server, request.path, body, headers),
        post(server, request.path, body, {}),
        post(server, request.path, b"{bad", headers),
    ]
    logged = httpx.get(server.base_url + "/_mock/requests", timeout=10).content
    for answer in answers:
        assert SECRET.encode() not in answer.content
        assert SECRET not in str(answer.headers)
    assert SECRET.encode() not in logged
    assert SECRET not in repr(server.app.requests)
    assert b"[redacted]" in logged


def test_the_log_counts_one_refused_request_once(server: MockServer) -> None:
    request = call("anthropic", "mock-refusal")
    assert post(server, request.path, request.body, request.headers).status_code == 200
    assert server.app.count(scenario="refusal") == 1
    assert server.app.count(model="mock-refusal", wire="anthropic", path="/v1/messages") == 1
    assert_sent_once(server.app, scenario="refusal")
    assert_not_resent(server.app, model="mock-refusal")
    post(server, request.path, request.body, request.headers)
    with pytest.raises(AssertionError, match="sent 2 times"):
        assert_not_resent(server.app, model="mock-refusal")
    with pytest.raises(AssertionError, match="got 2"):
        assert_sent_once(server.app, scenario="refusal")


@pytest.mark.parametrize(("model", "times"), [("mock-rate-limited", 2), ("mock-rate-limited-3", 3)])
def test_rate_limited_answers_429_n_times_then_answers(
    server: MockServer, model: str, times: int
) -> None:
    request = call("openai-chat", model)
    answers = [post(server, request.path, request.body, request.headers) for _ in range(times + 1)]
    assert [a.status_code for a in answers] == [429] * times + [200]
    assert answers[0].headers["retry-after"] == "1"
    assert answers[0].headers["retry-after-ms"] == "100"
    assert server.app.count(model=model) == times + 1
    assert [r.status for r in server.app.requests] == [429] * times + [200]


def test_reset_forgets_the_log_and_the_rate_limits_served(server: MockServer) -> None:
    request = call("anthropic", "mock-rate-limited")
    statuses = [post(server, request.path, request.body, request.headers).status_code]
    assert httpx.post(server.base_url + "/_mock/reset", timeout=10).json() == {"reset": True}
    assert server.app.count() == 0
    statuses.append(post(server, request.path, request.body, request.headers).status_code)
    assert statuses == [429, 429]


def test_get_requests_lists_each_request_and_counts_by_model_and_scenario(
    server: MockServer,
) -> None:
    for model in ("mock-refusal", "mock-refusal", "claude-x"):
        request = call("anthropic", model, stream=True)
        post(server, request.path, request.body, request.headers)
    listing = httpx.get(server.base_url + "/_mock/requests", timeout=10).json()
    assert listing["counts"] == {
        "by_model": {"mock-refusal": 2, "claude-x": 1},
        "by_scenario": {"refusal": 2, "answer": 1},
    }
    first = listing["requests"][0]
    assert {k: first[k] for k in ("path", "method", "wire", "model", "scenario", "stream")} == {
        "path": "/v1/messages",
        "method": "POST",
        "wire": "anthropic",
        "model": "mock-refusal",
        "scenario": "refusal",
        "stream": True,
    }
    assert first["status"] == 200
    assert first["body"]["messages"] == [{"role": "user", "content": "What is the weather like?"}]


def test_the_in_process_app_answers_the_anthropic_wire_without_a_port() -> None:
    app = MockApp()

    async def ask() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://mock.invalid") as c:
            request = call("anthropic", "mock-refusal-mid-stream", stream=True)
            return await c.post(request.path, json=request.body, headers=request.headers)

    answer = asyncio.run(ask())
    assert answer.headers["content-type"] == "text/event-stream"
    assert b"event: message_stop" in answer.content
    assert app.count(scenario="refusal-mid-stream") == 1
    app.reset()
    assert app.requests == []


def test_in_process_a_reset_reaches_the_client_as_a_transport_error() -> None:
    async def ask() -> None:
        transport = httpx.ASGITransport(app=MockApp())
        async with httpx.AsyncClient(transport=transport, base_url="http://mock.invalid") as c:
            request = call("anthropic", "mock-reset-mid-stream", stream=True)
            await c.post(request.path, json=request.body, headers=request.headers)

    with pytest.raises(httpx.TransportError):
        asyncio.run(ask())


def test_the_pytest_plugin_fixtures_serve_a_fresh_app(
    mock_app: MockApp, mock_server: MockServer
) -> None:
    assert mock_server.app is mock_app
    assert mock_server.base_url == f"http://127.0.0.1:{mock_server.port}"
    request = call("openai-chat", "mock-refusal")
    post(mock_server, request.path, request.body, request.headers)
    assert_sent_once(mock_app, scenario="refusal", wire="openai-chat")


def test_the_pytest_plugin_is_registered_as_an_entry_point() -> None:
    from importlib.metadata import entry_points  # noqa: PLC0415

    plugins = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert plugins.get("refusals") == "refusals.mock.pytest_plugin"


def test_a_bedrock_model_arn_with_an_encoded_slash_is_routed_and_decoded(
    server: MockServer,
) -> None:
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/mock-refusal"
    request = call("bedrock", "x")
    path = "/model/" + arn.replace(":", "%3A").replace("/", "%2F") + "/converse"
    answer = post(server, path, request.body, request.headers)
    assert answer.status_code == 200
    assert server.app.requests[-1].model == arn
    assert server.app.requests[-1].scenario == "refusal"


def test_a_wire_path_answers_only_post(server: MockServer) -> None:
    answer = httpx.get(server.base_url + "/v1/messages", timeout=10)
    assert answer.status_code == 405
    assert answer.headers["allow"] == "POST"


def test_every_chat_vendor_of_the_registry_is_served_under_its_name(server: MockServer) -> None:
    own_dialect = {
        row.name
        for row in VENDORS
        if row.format == "openai-chat" and row.reads_as is None and row.name != "openai"
    }
    assert own_dialect <= set(WIRES)
    for name in sorted(own_dialect - {"azure"}):  # Azure names a deployment instead
        server.app.reset()
        reply = post(
            server,
            f"/{name}/v1/chat/completions",
            {"model": "mock-answer", "messages": [{"role": "user", "content": "hi"}]},
            {"authorization": "Bearer k"},
        )
        assert reply.status_code == 200, name
        assert [r.wire for r in server.app.requests] == [name]
        assert normalize(reply.content, provider=name).content
