"""The real clients against the mock server on 127.0.0.1: every scenario of every wire format.

Each test resets the server's request log, makes one call (streamed or whole) with the
sleep recorded instead of waited, and checks the verdict, the number of requests that
reached the server, and the retry delays.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

import refusals
from refusals.events import StreamError, StreamEvent, TextDelta, Verdict
from refusals.mock import MAGIC_REFUSAL_STRING, SCENARIOS, MockServer
from refusals.model import ErrorKind, FinishReason, LLMResponse
from refusals.request import Message, Request
from refusals.transport.base import Attempt
from refusals.transport.clients import ClientError, HTTPClient, client_for, parse_model_string
from refusals.transport.retry import RetryPolicy, retry_after

from ._mockwire import CASES, SENTINEL_KEY, Sleeps, WireCase, hello, key_for, run


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer() as running:
        yield running


@dataclass(frozen=True)
class Expect:
    finish: FinishReason
    requests: int = 1
    cut_off: bool | None = None


# What each scenario stands for on every wire, whole and streamed. Faults are retried by
# the policy (three attempts); refusals and filters reach the server exactly once.
EXPECT: dict[str, Expect] = {
    "answer": Expect(FinishReason.STOP),
    "tool-then-answer": Expect(FinishReason.TOOL_CALLS),
    "subagent": Expect(FinishReason.TOOL_CALLS),
    "subagent-refusal": Expect(FinishReason.TOOL_CALLS),
    "refusal": Expect(FinishReason.REFUSAL),
    "refusal-mid-stream": Expect(FinishReason.REFUSAL, cut_off=True),
    "refusal-recommended": Expect(FinishReason.REFUSAL),
    "fallback-served": Expect(FinishReason.REFUSAL),
    "fallback-declined": Expect(FinishReason.REFUSAL),
    "filter-output": Expect(FinishReason.CONTENT_FILTER),
    "filter-prompt": Expect(FinishReason.CONTENT_FILTER, cut_off=False),
    "length": Expect(FinishReason.LENGTH),
    "rate-limited": Expect(FinishReason.STOP, requests=3),
    "overloaded": Expect(FinishReason.ERROR, requests=3),
    "server-error": Expect(FinishReason.ERROR, requests=3),
}
FAST_SCENARIOS = [s for s in SCENARIOS if s != "slow"]
BLOCKED = ["refusal", "refusal-mid-stream", "refusal-recommended", "filter-output", "filter-prompt"]
POLICY = RetryPolicy(jitter=0.0)
# Gemini, Vertex AI, Bedrock and Cohere have no refusal signal: what the mock's refusal scenarios
# send there is each provider's safety block, a content-filter stop.
NO_REFUSAL_SIGNAL = frozenset({"gemini", "vertex", "bedrock", "cohere"})


def declined(case: WireCase) -> FinishReason:
    """How a model's refusal reads on this wire."""
    return FinishReason.CONTENT_FILTER if case.wire in NO_REFUSAL_SIGNAL else FinishReason.REFUSAL


def call(
    case: WireCase, root: str, model: str, request: Request, *, stream: bool, sleeps: Sleeps
) -> tuple[LLMResponse, list[StreamEvent], list[Attempt]]:
    """One call with the recorded sleep; the response, the events and the attempts."""
    policy = RetryPolicy(jitter=0.0, sleep=sleeps)
    client = client_for(
        f"{case.provider}:{model}",
        base_url=case.base_url(root),
        api_key=key_for(case),
        retry=policy,
        timeout=15.0,
    )

    async def go() -> tuple[LLMResponse, list[StreamEvent], list[Attempt]]:
        if not stream:
            result = await client.complete(request)
            return result, [], client.attempts
        events: list[StreamEvent] = []
        handle = client.stream(request)
        async for event in handle:
            events.append(event)
        return handle.response, events, handle.attempts

    return run(go())


def expected(case: WireCase, scenario: str, stream: bool) -> Expect:
    if scenario == "pause-turn":
        # Only Anthropic has pause_turn; the other wires answer it as a bad request.
        if case.wire == "anthropic":
            return Expect(FinishReason.PAUSE)
        return Expect(FinishReason.ERROR)
    if scenario in ("reset-mid-stream", "truncated-stream"):
        # Once any byte of the body arrived the request is never sent again, streamed or
        # whole: the bytes lost may have been a refusal, and the model has been paid.
        if stream:
            # Anthropic's truncated stream broke after message_delta ended the answer.
            whole = scenario == "truncated-stream" and case.wire == "anthropic"
            return Expect(FinishReason.ERROR, requests=1, cut_off=not whole)
        return Expect(FinishReason.ERROR, requests=1)
    want = EXPECT[scenario]
    if want.finish is FinishReason.REFUSAL:
        return Expect(declined(case), want.requests, want.cut_off)
    return want


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("scenario", FAST_SCENARIOS)
@pytest.mark.parametrize("case", CASES, ids=[c.wire for c in CASES])
def test_every_scenario_reads_back_to_its_verdict_with_the_expected_request_count(
    case: WireCase,
    scenario: str,
    stream: bool,
    server: MockServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    case.prepare(monkeypatch)
    server.app.reset()
    sleeps = Sleeps()
    response, events, attempts = call(
        case, server.base_url, f"mock-{scenario}", hello(), stream=stream, sleeps=sleeps
    )
    want = expected(case, scenario, stream)
    assert response.finish_reason is want.finish, response
    assert server.app.count() == want.requests
    assert len(attempts) == want.requests
    assert [a.retried for a in attempts] == [True] * (want.requests - 1) + [False]
    assert len(sleeps.delays) == want.requests - 1
    if want.cut_off is not None:
        assert response.cut_off is want.cut_off
    if stream:
        verdicts = [e for e in events if isinstance(e, Verdict)]
        if want.finish in (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER):
            assert verdicts
            assert verdicts[-1].finish_reason is want.finish
        if want.finish is FinishReason.ERROR:
            assert any(isinstance(e, StreamError) for e in events)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("scenario", BLOCKED)
@pytest.mark.parametrize("case", CASES, ids=[c.wire for c in CASES])
def test_a_refused_or_filtered_prompt_reaches_the_server_exactly_once(
    case: WireCase,
    scenario: str,
    stream: bool,
    server: MockServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    case.prepare(monkeypatch)
    server.app.reset()
    sleeps = Sleeps()
    response, _, attempts = call(
        case, server.base_url, f"mock-{scenario}", hello(), stream=stream, sleeps=sleeps
    )
    assert refusals.notice(response) is not None
    assert server.app.count(scenario=scenario) == 1
    assert server.app.count() == 1
    assert sleeps.delays == []
    assert [a.retried for a in attempts] == [False]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("case", CASES, ids=[c.wire for c in CASES])
def test_the_documented_refusal_test_string_is_refused_once_and_never_resent(
    case: WireCase, stream: bool, server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    case.prepare(monkeypatch)
    server.app.reset()
    request = Request(model="", messages=[Message("user", f"Please {MAGIC_REFUSAL_STRING}")])
    response, _, _ = call(
        case, server.base_url, "any-model", request, stream=stream, sleeps=Sleeps()
    )
    assert response.finish_reason is declined(case)
    assert server.app.count() == 1


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("case", CASES, ids=[c.wire for c in CASES])
def test_rate_limits_wait_exactly_what_the_server_asked_then_succeed(
    case: WireCase, stream: bool, server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    case.prepare(monkeypatch)
    server.app.reset()
    sleeps = Sleeps()
    response, _, attempts = call(
        case, server.base_url, "mock-rate-limited", hello(), stream=stream, sleeps=sleeps
    )
    assert response.finish_reason is FinishReason.STOP
    assert [a.status for a in attempts] == [429, 429, 200]
    # What the server asks for, read from a 429 of its own (the same for every attempt).
    server.app.reset()
    probe = client_for(
        f"{case.provider}:mock-rate-limited",
        base_url=case.base_url(server.base_url),
        api_key=key_for(case),
        retry=RetryPolicy.never(),
    )
    prepared = probe._prepare(hello(), stream=False)  # type: ignore[union-attr]
    reply = httpx.post(
        prepared.url, headers=prepared.headers, content=prepared.content, timeout=10.0
    )
    assert reply.status_code == 429
    asked = retry_after(reply.headers)
    assert asked is not None
    assert sleeps.delays == [asked, asked]


@pytest.mark.parametrize("scenario", ["overloaded", "server-error"])
@pytest.mark.parametrize("case", CASES, ids=[c.wire for c in CASES])
def test_server_faults_back_off_exponentially_then_report_the_error(
    case: WireCase, scenario: str, server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    case.prepare(monkeypatch)
    server.app.reset()
    sleeps = Sleeps()
    response, _, attempts = call(
        case, server.base_url, f"mock-{scenario}", hello(), stream=False, sleeps=sleeps
    )
    assert sleeps.delays == [POLICY.backoff(1), POLICY.backoff(2)]
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert all(a.status is not None and a.status >= 500 for a in attempts)


@pytest.mark.parametrize("case", CASES, ids=[c.wire for c in CASES])
def test_the_slow_scenario_is_waited_for_within_the_timeout(
    case: WireCase, server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    case.prepare(monkeypatch)
    server.app.reset()
    response, events, _ = call(
        case, server.base_url, "mock-slow", hello(), stream=True, sleeps=Sleeps()
    )
    assert response.finish_reason is FinishReason.STOP
    assert any(isinstance(e, TextDelta) for e in events)
    assert server.app.count() == 1


def test_a_stream_stopped_at_the_verdict_keeps_the_refusal_and_sends_nothing_more(
    server: MockServer,
) -> None:
    server.app.reset()
    client = client_for(
        "anthropic:mock-refusal-mid-stream", base_url=server.base_url, api_key=SENTINEL_KEY
    )

    async def go() -> tuple[LLMResponse, list[StreamEvent], list[Attempt]]:
        handle = client.stream(hello())
        seen: list[StreamEvent] = []
        async for event in handle:
            seen.append(event)
            if isinstance(event, Verdict):
                break
        await handle.aclose()
        return handle.response, seen, handle.attempts

    async def whole() -> LLMResponse:
        handle = client.stream(hello())
        async for _ in handle:
            pass
        return handle.response

    response, seen, attempts = run(go())
    assert response.finish_reason is FinishReason.REFUSAL
    assert isinstance(seen[-1], Verdict)
    assert seen[-1].finish_reason is FinishReason.REFUSAL
    assert any(isinstance(e, TextDelta) for e in seen)
    assert server.app.count() == 1
    # The facts read up to the verdict are kept, with no error for the early close.
    assert response.error is None
    assert response.cut_off is True
    assert response.stop_details is not None
    assert refusals.notice(response) == refusals.notice(run(whole()))
    assert [(a.model, a.status, a.error) for a in attempts] == [
        ("anthropic:mock-refusal-mid-stream", 200, None)
    ]
    assert client.attempts[0] == attempts[0]


def test_a_chain_stopped_at_its_final_verdict_keeps_the_refusal_and_every_attempt(
    server: MockServer,
) -> None:
    server.app.reset()
    client = client_for(
        "anthropic:mock-refusal-mid-stream",
        base_url=server.base_url,
        api_key=SENTINEL_KEY,
        fallbacks=["anthropic:mock-refusal"],
    )

    async def go() -> tuple[LLMResponse, list[Attempt]]:
        handle = client.stream(hello())
        async for event in handle:
            if isinstance(event, Verdict):
                break
        await handle.aclose()
        return handle.response, handle.attempts

    response, attempts = run(go())
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.declined_models == ["anthropic:mock-refusal-mid-stream"]
    assert [a.model for a in attempts] == [
        "anthropic:mock-refusal-mid-stream",
        "anthropic:mock-refusal",
    ]
    assert [a.model for a in client.attempts] == [a.model for a in attempts]
    assert server.app.count() == 2


def test_an_unreachable_server_is_an_error_response_after_the_retries() -> None:
    sleeps = Sleeps()
    # Port 9 (discard) is closed on a test machine: the connection is refused at once.
    client = client_for(
        "anthropic:claude-x",
        base_url="http://127.0.0.1:9",
        api_key=SENTINEL_KEY,
        retry=RetryPolicy(jitter=0.0, sleep=sleeps),
        timeout=5.0,
    )
    response = run(client.complete(hello()))
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.message is not None
    assert response.error.message.startswith("could not reach anthropic:claude-x at ")
    assert response.error.message.endswith("after 3 attempts")
    assert [a.status for a in client.attempts] == [None, None, None]
    assert sleeps.delays == [POLICY.backoff(1), POLICY.backoff(2)]


def test_the_sync_facade_shares_the_async_implementation(server: MockServer) -> None:
    server.app.reset()
    client = client_for(
        "openai:mock-refusal-mid-stream", base_url=server.base_url + "/v1", api_key=SENTINEL_KEY
    )
    with client.sync() as sync:
        whole = sync.complete(hello())
        handle = sync.stream(hello())
        events = list(handle)
    assert whole.finish_reason is FinishReason.REFUSAL
    assert handle.response.finish_reason is FinishReason.REFUSAL
    assert handle.response.content == whole.content
    assert any(isinstance(e, Verdict) for e in events)
    assert server.app.count() == 2
    assert len(handle.attempts) == 1


def test_the_response_names_the_model_and_request_that_answered(server: MockServer) -> None:
    server.app.reset()
    client = client_for("anthropic:mock-answer", base_url=server.base_url, api_key=SENTINEL_KEY)
    response = run(client.complete(hello()))
    assert response.model == "mock-answer"
    assert response.provider == "anthropic"
    assert client.attempts[0].model == "anthropic:mock-answer"
    assert client.attempts[0].status == 200
    assert client.attempts[0].seconds >= 0


@pytest.mark.parametrize(
    "scenario", ["refusal", "filter-prompt", "server-error", "reset-mid-stream"]
)
@pytest.mark.parametrize("case", CASES, ids=[c.wire for c in CASES])
def test_the_api_key_appears_nowhere(
    case: WireCase,
    scenario: str,
    server: MockServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    case.prepare(monkeypatch)
    server.app.reset()
    client = client_for(
        f"{case.provider}:mock-{scenario}",
        base_url=case.base_url(server.base_url),
        api_key=key_for(case),
        retry=RetryPolicy(max_attempts=2, jitter=0.0, sleep=Sleeps()),
    )

    async def go() -> list[object]:
        whole = await client.complete(hello())
        handle = client.stream(hello())
        events = [event async for event in handle]
        return [client, whole, whole.error, handle, handle.response, *events, *client.attempts]

    seen = run(go())
    texts = [repr(item) for item in seen] + [str(item) for item in seen]
    texts += [repr(r.body) for r in server.app.requests]
    out = capsys.readouterr()
    texts += [out.out, out.err]
    assert not [t for t in texts if SENTINEL_KEY in t]


def test_a_missing_key_names_the_variable_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ClientError) as caught:
        client_for("anthropic:claude-opus-4-8")
    message = str(caught.value)
    assert message == "no API key for anthropic: set ANTHROPIC_API_KEY (or pass api_key=...)"


@pytest.mark.parametrize(
    ("model", "names"),
    [
        ("openai:gpt-5.2", "OPENAI_API_KEY"),
        ("gemini:gemini-2.5-pro", "GEMINI_API_KEY or GOOGLE_API_KEY"),
        ("groq:llama", "GROQ_API_KEY"),
        ("azure:deployment", "AZURE_OPENAI_API_KEY or AZURE_OPENAI_AD_TOKEN"),
        ("cohere:command-a-03-2025", "CO_API_KEY or COHERE_API_KEY"),
    ],
)
def test_each_provider_names_its_conventional_variables(
    model: str, names: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in names.split(" or "):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ClientError, match=names):
        client_for(model)


def test_a_key_from_the_environment_is_used_and_never_shown(
    server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SENTINEL_KEY)
    server.app.reset()
    client = client_for("anthropic:mock-answer", base_url=server.base_url)
    response = run(client.complete(hello()))
    assert response.finish_reason is FinishReason.STOP
    assert SENTINEL_KEY not in repr(client)
    assert "ANTHROPIC_API_KEY" not in repr(response)


def test_the_in_process_mock_needs_no_key_and_speaks_anthropic() -> None:
    client = client_for("mock:refusal")
    response = run(client.complete(hello()))
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.model == "mock-refusal"
    assert client.model == "mock:refusal"


def test_an_openai_compatible_server_needs_a_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_BASE_URL", raising=False)
    with pytest.raises(ClientError, match="vllm needs the server's URL: pass base_url="):
        client_for("vllm:some-model")


def test_a_server_without_a_key_gets_no_authorization_header(server: MockServer) -> None:
    # Ollama's OpenAI-compatible endpoint needs no key; the mock then answers 401.
    server.app.reset()
    client = client_for("ollama:mock-answer", base_url=server.base_url + "/v1")
    response = run(client.complete(hello()))
    assert response.error is not None
    assert response.error.kind is ErrorKind.AUTH
    assert server.app.count() == 1


@pytest.mark.parametrize(
    ("model", "provider", "name"),
    [
        ("anthropic:claude-opus-4-8", "anthropic", "claude-opus-4-8"),
        ("ollama:llama3:8b", "ollama", "llama3:8b"),
        (
            "bedrock:arn:aws:bedrock:us-east-1::foundation-model/x",
            "bedrock",
            "arn:aws:bedrock:us-east-1::foundation-model/x",
        ),
        (" OpenAI : gpt-5.2 ", "openai", "gpt-5.2"),
    ],
)
def test_a_model_string_splits_at_its_first_colon(model: str, provider: str, name: str) -> None:
    assert parse_model_string(model) == (provider, name)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("gpt-5.2", "model 'gpt-5.2' names no provider: write PROVIDER:MODEL"),
        ("acme:model", "unknown provider 'acme' in model 'acme:model'; expected one of: anthropic"),
        ("openai:", "model 'openai:' names no model after 'openai'"),
    ],
)
def test_a_bad_model_string_is_a_one_line_client_error(model: str, message: str) -> None:
    with pytest.raises(ClientError) as caught:
        parse_model_string(model)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("model", "env", "url", "auth"),
    [
        ("anthropic:m", {}, "https://api.anthropic.com/v1/messages", ("x-api-key", "KEY")),
        (
            "openai:m",
            {},
            "https://api.openai.com/v1/chat/completions",
            ("authorization", "Bearer KEY"),
        ),
        (
            "openai-responses:m",
            {},
            "https://api.openai.com/v1/responses",
            ("authorization", "Bearer KEY"),
        ),
        (
            "groq:m",
            {},
            "https://api.groq.com/openai/v1/chat/completions",
            ("authorization", "Bearer KEY"),
        ),
        (
            "azure:my-deploy",
            {
                "AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com",
                "OPENAI_API_VERSION": "2024-10-21",
            },
            "https://res.openai.azure.com/openai/deployments/my-deploy/chat/completions?api-version=2024-10-21",
            ("api-key", "KEY"),
        ),
        (
            "gemini:gemini-2.5-pro",
            {},
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
            ("x-goog-api-key", "KEY"),
        ),
        (
            "vertex:gemini-2.5-pro",
            {"GOOGLE_CLOUD_PROJECT": "proj", "GOOGLE_CLOUD_LOCATION": "europe-west4"},
            "https://europe-west4-aiplatform.googleapis.com/v1/projects/proj/locations/europe-west4/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
            ("authorization", "Bearer KEY"),
        ),
        (
            "cohere:command-a-03-2025",
            {},
            "https://api.cohere.com/v2/chat",
            ("authorization", "Bearer KEY"),
        ),
        (
            "bedrock:anthropic.claude-x:0",
            {"AWS_REGION": "us-west-2"},
            "https://bedrock-runtime.us-west-2.amazonaws.com/model/anthropic.claude-x%3A0/converse-stream",
            ("authorization", "Bearer KEY"),
        ),
    ],
)
def test_each_provider_is_reached_at_its_documented_url_with_its_auth_header(
    model: str,
    env: dict[str, str],
    url: str,
    auth: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("CO_API_URL", raising=False)
    client = client_for(model, api_key="KEY")
    assert isinstance(client, HTTPClient)
    prepared = client._prepare(hello(), stream=True)
    assert prepared.url == url
    assert prepared.headers[auth[0]] == auth[1]


def test_an_azure_ad_token_is_sent_as_a_bearer_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", SENTINEL_KEY)
    client = client_for("azure:d", base_url="https://res.openai.azure.com")
    assert isinstance(client, HTTPClient)
    headers = client._prepare(hello(), stream=False).headers
    assert headers["authorization"] == f"Bearer {SENTINEL_KEY}"
    assert "api-key" not in headers


def test_bedrock_requests_are_signed_with_sigv4_from_the_aws_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDMOCKEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SENTINEL_KEY)
    client = client_for("bedrock:m")
    assert isinstance(client, HTTPClient)
    headers = client._prepare(hello(), stream=False).headers
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDMOCKEXAMPLE/")
    assert "/us-east-1/bedrock/aws4_request" in headers["Authorization"]
    assert SENTINEL_KEY not in repr(headers)
    assert SENTINEL_KEY not in repr(client)


def test_a_very_short_key_is_not_scrubbed_letter_by_letter_from_messages() -> None:
    def error_with(key: str) -> tuple[str | None, str | None]:
        client = client_for("mock:server-error", api_key=key, retry=RetryPolicy.never())
        response = run(client.complete(hello()))
        assert response.error is not None
        return response.error.message, client.attempts[0].error

    # The mock's message holds many a `k` ("mock"); a one-letter key must leave it whole.
    assert error_with("k") == error_with("a-key-not-in-the-message")
    message, _ = error_with("k")
    assert message is not None and "mock scenario" in message and "[redacted]" not in message


def test_a_key_of_eight_characters_or_more_is_scrubbed_wherever_it_appears() -> None:
    client = client_for("mock:answer", api_key="abcd1234")
    short = client_for("mock:answer", api_key="abcd123")
    assert isinstance(client, HTTPClient) and isinstance(short, HTTPClient)
    assert client.scrub("bad key abcd1234 (abcd1234)") == "bad key [redacted] ([redacted])"
    assert short.scrub("bad key abcd123") == "bad key abcd123"
    # Pattern-based redaction still applies whatever the caller's key.
    assert SENTINEL_KEY not in short.scrub(f"bad key {SENTINEL_KEY}")
