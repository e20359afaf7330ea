"""The provider registry: one row serves normalize, the clients and provider_for_url.

Cerebras was added by following docs/adding-a-provider.md (one row); these tests call it
against the mock provider as a user would, and check the tables derived from the rows.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from refusals import FinishReason, normalize
from refusals.mock.server import MockServer
from refusals.providers import PROVIDERS, provider_for_url
from refusals.providers.registry import VENDORS, vendor
from refusals.transport import clients
from refusals.transport.clients import MODEL_PROVIDERS, ClientError, HTTPClient, client_for

from ._mockwire import SENTINEL_KEY, hello, run


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer() as running:
        yield running


def test_every_name_normalize_takes_reads_a_body_of_its_format() -> None:
    body = {"choices": [{"index": 0, "message": {"content": "hi"}, "finish_reason": "stop"}]}
    for row in VENDORS:
        if row.reads_as is None and row.format == "openai-chat":
            assert normalize(body, provider=row.name).finish_reason is FinishReason.STOP
    assert set(PROVIDERS) == {row.name for row in VENDORS if row.reads_as is None}
    assert set(MODEL_PROVIDERS) == {row.name for row in VENDORS if row.wire is not None}


def test_a_row_with_a_host_names_its_provider_from_a_url() -> None:
    for row in VENDORS:
        for host in row.hosts:
            # A subdomain host as Bedrock's runtime endpoints are named.
            name = "bedrock-runtime.us-east-1" + host if host.startswith(".") else host
            url = f"https://{name}/v1/chat"
            assert provider_for_url(url) == row.read_name


def test_cerebras_is_called_on_its_chat_completions_endpoint(server: MockServer) -> None:
    row = vendor("cerebras")
    assert row is not None and row.base_url == "https://api.cerebras.ai/v1"
    server.app.reset()
    client = client_for(
        "cerebras:mock-refusal", base_url=server.base_url + "/v1", api_key=SENTINEL_KEY
    )
    response = run(client.complete(hello()))
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.provider == "openai"
    # Refused: sent once, never again.
    assert [r.path for r in server.app.requests] == ["/v1/chat/completions"]
    answer = client_for("cerebras:mock-answer", base_url=server.base_url + "/v1", api_key="k")
    assert run(answer.complete(hello())).finish_reason is FinishReason.STOP


def test_cerebras_reads_its_key_from_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CEREBRAS_API_KEY", raising=False)
    with pytest.raises(ClientError, match="CEREBRAS_API_KEY"):
        client_for("cerebras:llama3.1-8b")
    monkeypatch.setenv("CEREBRAS_API_KEY", SENTINEL_KEY)
    client = client_for("cerebras:llama3.1-8b")
    assert isinstance(client, HTTPClient)
    assert client.base_url == "https://api.cerebras.ai/v1"
    assert client.wire == "openai-chat"


def test_the_exec_command_of_the_guide_exits_3_for_a_refusal(server: MockServer) -> None:
    server.app.reset()
    result = subprocess.run(
        [sys.executable, "-m", "refusals", "exec", "-m", "cerebras:mock-refusal",
         "--base-url", server.base_url + "/v1", "hi"],
        capture_output=True, text=True, timeout=60, check=False,
        env={"CEREBRAS_API_KEY": "test", "PATH": "/usr/bin:/bin", "HOME": "/tmp"},
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert server.app.count() == 1


def test_a_provider_that_is_read_but_not_called_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    # No row is read-only today; a row without a wire would be.
    monkeypatch.setattr(clients, "_READ_ONLY", frozenset({"acme"}))
    with pytest.raises(ClientError, match="acme responses can be read"):
        client_for("acme:model")


def test_cohere_is_called_on_its_chat_endpoint_with_the_sdk_variables(
    server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = vendor("cohere")
    assert row is not None and row.wire == "cohere" and row.base_url == "https://api.cohere.com"
    monkeypatch.setenv("CO_API_KEY", SENTINEL_KEY)
    monkeypatch.setenv("CO_API_URL", server.base_url)
    server.app.reset()
    client = client_for("cohere:mock-refusal")
    response = run(client.complete(hello()))
    # Cohere has no refusal signal: its only word for blocked output is ERROR_TOXIC.
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.provider == "cohere"
    assert [r.path for r in server.app.requests] == ["/v2/chat"]
    stream = client_for("cohere:mock-answer").stream(hello())
    events: list[object] = []

    async def collect() -> None:
        async for event in stream:
            events.append(event)

    run(collect())
    assert stream.response.finish_reason is FinishReason.STOP
    assert stream.response.content
    assert server.app.count() == 2
    assert server.app.requests[-1].path == "/v2/chat"
    assert SENTINEL_KEY not in repr(events) + repr(stream.response)
