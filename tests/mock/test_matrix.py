"""Every scenario on every wire format, whole and streamed, read back by our own readers.

`normalize` reads whole bodies (with the HTTP status) and `StreamDecoder` reads streams
as they arrive; each must come back to the verdict the scenario stands for. The expected
verdicts are stated per provider family below, from the provider's own signals: where a
provider has no refusal signal (Gemini, Bedrock, Cohere) its block reads as a content
filter; Ollama has neither, so its "refusal" is a plain answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx
import pytest

from refusals import StreamDecoder
from refusals.mock import SCENARIOS, MockServer
from refusals.model import LLMResponse
from refusals.providers import normalize
from tests.mock._wires import BLOCKING, REFUSING, WIRES, call

PROMPT_FILTER_STATUS = {"openrouter": 403, "xai": 403}
TIMEOUT = httpx.Timeout(10.0)


@dataclass(frozen=True)
class Expect:
    finish: str
    cut_off: bool = False
    status: int = 200
    error: str | None = None
    served_by_fallback: bool = False


def expected(wire: str, scenario: str, stream: bool) -> Expect:
    """The verdict `scenario` stands for on `wire`."""
    declined = "refusal" if wire in REFUSING else "content_filter"
    if scenario in ("answer", "slow"):
        return Expect("stop")
    if scenario in ("tool-then-answer", "subagent", "subagent-refusal"):
        return Expect("tool_calls")  # the weather tool is offered, spawn_agent is not
    if scenario == "rate-limited":
        return Expect("error", status=429, error="transient")
    if scenario == "overloaded":
        return Expect("error", status=529 if wire == "anthropic" else 503, error="transient")
    if scenario == "server-error":
        return Expect("error", status=500, error="transient")
    if scenario == "truncated-stream":
        # Anthropic's stream breaks after message_delta said how the answer ended: the
        # stream is still incomplete (an error), but its text is the whole answer.
        return Expect("error", cut_off=wire != "anthropic", error="transient")
    if scenario == "length":
        return Expect("length")
    if scenario == "pause-turn":
        if wire == "anthropic":
            return Expect("pause")
        return Expect("error", status=400, error="invalid_request")
    if wire == "ollama":
        if scenario.startswith("filter"):
            return Expect("error", status=400, error="invalid_request")
        return Expect("stop")  # a local model declines in words only
    if scenario == "filter-prompt":
        status = PROMPT_FILTER_STATUS.get(wire, 200 if wire in BLOCKING else 400)
        if wire == "openai-responses" and stream:
            # response.failed, once the stream has started: its error is the policy block.
            return Expect("content_filter", error="policy")
        return Expect("content_filter", status=status, error=None if status == 200 else "policy")
    if scenario == "filter-output":
        if wire == "anthropic" and not stream:
            return Expect("content_filter", status=400, error="policy")
        if wire == "anthropic":
            return Expect("content_filter", cut_off=True, error="policy")
        return Expect("content_filter", cut_off=True)
    if scenario == "refusal-mid-stream":
        return Expect(declined, cut_off=True)
    if wire == "anthropic" and scenario == "fallback-served":
        return Expect("stop", served_by_fallback=True)
    if wire == "anthropic" and scenario == "fallback-declined":
        return Expect("refusal", served_by_fallback=True)
    return Expect(declined)  # refusal, refusal-recommended, fallback-* without fallbacks


MATRIX_SCENARIOS = [s for s in SCENARIOS if s not in ("slow", "reset-mid-stream")]
CASES = [
    pytest.param(wire, scenario, stream, id=f"{wire}-{scenario}-{'stream' if stream else 'whole'}")
    for wire in WIRES
    for scenario in MATRIX_SCENARIOS
    for stream in (False, True)
    if not (scenario == "truncated-stream" and not stream)
]


def fetch(server: MockServer, wire: str, scenario: str, stream: bool) -> tuple[int, LLMResponse]:
    """Send `scenario` (by model name) on `wire`; read the answer back with our readers."""
    fallbacks = ["mock-fallback-model"] if wire == "anthropic" else None
    request = call(wire, f"mock-{scenario}", stream=stream, fallbacks=fallbacks)
    with (
        httpx.Client(base_url=server.base_url, timeout=TIMEOUT) as client,
        client.stream("POST", request.path, json=request.body, headers=request.headers) as answer,
    ):
        if not stream or answer.status_code != 200:
            body = answer.read()
            return answer.status_code, normalize(
                body, provider=request.provider, status=answer.status_code
            )
        decoder = StreamDecoder(request.provider)
        for chunk in answer.iter_bytes():
            decoder.feed(chunk)
        decoder.close()
        return answer.status_code, decoder.response


@pytest.mark.parametrize(("wire", "scenario", "stream"), CASES)
def test_each_scenario_reads_back_to_the_verdict_it_stands_for(
    server: MockServer, wire: str, scenario: str, stream: bool
) -> None:
    want = expected(wire, scenario, stream)
    status, response = fetch(server, wire, scenario, stream)
    assert status == want.status
    assert response.finish_reason.value == want.finish
    assert response.cut_off is want.cut_off
    assert (response.error.kind.value if response.error else None) == want.error
    assert response.served_by_fallback is want.served_by_fallback
    assert server.app.count() == 1


@pytest.mark.parametrize("wire", sorted(REFUSING))
def test_a_refusal_carries_the_scenarios_explanation_on_every_refusing_wire(
    server: MockServer, wire: str
) -> None:
    _, response = fetch(server, wire, "refusal", stream=False)
    assert response.finish_reason.value == "refusal"
    if wire == "anthropic":
        assert response.stop_details is not None
        assert response.stop_details.category == "cyber"
        assert response.stop_details.explanation is not None
    else:
        assert response.content == "I'm sorry, but I can't help with that request."


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_refusal_recommended_names_another_model_a_credit_token_and_the_prefill_claim(
    server: MockServer, stream: bool
) -> None:
    _, response = fetch(server, "anthropic", "refusal-recommended", stream)
    stop = response.stop_details
    assert stop is not None
    assert stop.recommended_model == "mock-fallback"
    assert stop.recommended_model != "mock-refusal-recommended"
    assert stop.fallback_credit_token is not None
    assert stop.fallback_credit_token.startswith("tok_mock_")
    assert stop.fallback_has_prefill_claim is False


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_served_fallback_names_both_models_and_answers_from_the_fallback(
    server: MockServer, stream: bool
) -> None:
    _, response = fetch(server, "anthropic", "fallback-served", stream)
    assert response.declined_models == ["mock-fallback-served"]
    assert response.fallback_model == "mock-fallback-model"
    assert response.content == "Mock answer: What is the weather like?"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_declined_fallback_refuses_after_the_fallback_ran(
    server: MockServer, stream: bool
) -> None:
    _, response = fetch(server, "anthropic", "fallback-declined", stream)
    assert response.finish_reason.value == "refusal"
    assert response.fallback_model == "mock-fallback-model"
    assert response.content is None


def test_without_fallbacks_asked_for_a_fallback_scenario_recommends_a_model(
    server: MockServer,
) -> None:
    request = call("anthropic", "mock-fallback-served")
    answer = httpx.post(
        server.base_url + request.path, json=request.body, headers=request.headers, timeout=10
    )
    response = normalize(answer.content, provider="anthropic")
    assert response.finish_reason.value == "refusal"
    assert response.stop_details is not None
    assert response.stop_details.recommended_model == "mock-fallback"
    assert not response.served_by_fallback


@pytest.mark.parametrize("wire", ["gemini", "bedrock", "azure"])
@pytest.mark.parametrize("scenario", ["filter-output", "filter-prompt"])
def test_filters_name_the_blocked_category_where_the_provider_gives_one(
    server: MockServer, wire: str, scenario: str
) -> None:
    _, response = fetch(server, wire, scenario, stream=False)
    assert response.stop_details is not None
    category = response.stop_details.category
    assert category == ("dangerous_content" if wire == "gemini" else "violence")


@pytest.mark.parametrize("wire", ["anthropic", "openai-chat", "gemini", "bedrock", "ollama"])
def test_a_reset_mid_stream_closes_the_connection_after_some_events(
    server: MockServer, wire: str
) -> None:
    request = call(wire, "mock-reset-mid-stream", stream=True)
    received = b""
    with (
        httpx.Client(base_url=server.base_url, timeout=TIMEOUT) as client,
        client.stream("POST", request.path, json=request.body, headers=request.headers) as answer,
        pytest.raises(httpx.RemoteProtocolError),
    ):
        for chunk in answer.iter_bytes():
            received += chunk
    assert received  # some events arrived before the cut
    assert server.app.count(scenario="reset-mid-stream") == 1


def test_a_whole_body_under_truncated_stream_is_cut_short(server: MockServer) -> None:
    request = call("anthropic", "mock-truncated-stream")
    answer = httpx.post(
        server.base_url + request.path, json=request.body, headers=request.headers, timeout=10
    )
    assert answer.status_code == 200
    with pytest.raises(ValueError, match="not JSON"):
        normalize(answer.content, provider="anthropic")


@pytest.mark.parametrize("wire", ["anthropic", "openai-chat"])
def test_slow_delays_the_first_byte_and_spaces_the_events_within_a_few_seconds(
    server: MockServer, wire: str
) -> None:
    import time  # noqa: PLC0415

    request = call(wire, "mock-slow", stream=True)
    started = time.monotonic()
    arrivals: list[float] = []
    with (
        httpx.Client(base_url=server.base_url, timeout=TIMEOUT) as client,
        client.stream("POST", request.path, json=request.body, headers=request.headers) as answer,
    ):
        for _ in answer.iter_raw():
            arrivals.append(time.monotonic() - started)
    assert arrivals[0] >= 0.9
    assert arrivals[-1] - arrivals[0] >= 0.5
    assert arrivals[-1] < 6.0


def test_gemini_streams_also_come_as_one_json_array(server: MockServer) -> None:
    request = call("gemini", "mock-refusal-mid-stream", stream=True, array_stream=True)
    answer = httpx.post(
        server.base_url + request.path, json=request.body, headers=request.headers, timeout=10
    )
    assert answer.content.startswith(b"[") and answer.content.endswith(b"]")
    decoder = StreamDecoder("gemini")
    decoder.feed(answer.content)
    decoder.close()
    assert decoder.framing == "json-array"
    assert decoder.response.finish_reason.value == "content_filter"
    assert decoder.response.cut_off


def test_azure_asynchronous_filter_flags_the_text_after_the_models_stop(
    server: MockServer,
) -> None:
    request = call("azure", "mock-filter-output", stream=True)
    headers = {**request.headers, "x-mock-azure-async-filter": "1"}
    answer = httpx.post(server.base_url + request.path, json=request.body, headers=headers)
    assert b"content_filter_offsets" in answer.content
    decoder = StreamDecoder("azure")
    decoder.feed(answer.content)
    decoder.close()
    assert decoder.response.finish_reason.value == "content_filter"
    assert decoder.response.raw_finish_reason == "stop" or decoder.response.cut_off
