"""The fallback policy: server-side fallbacks passed through, the client-side chain, hops."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

import refusals
from refusals.events import FallbackSeam, StreamEvent, TextDelta, Verdict
from refusals.mock import MockApp, MockServer
from refusals.model import FinishReason, LLMResponse, StopDetails
from refusals.providers.anthropic.request import FALLBACK_CREDIT_BETA
from refusals.refusal import FALLBACK_DECLINED_SENTENCE, NEXT_STEP_SENTENCE
from refusals.request import Message, Request
from refusals.transport.clients import HTTPClient, client_for
from refusals.transport.fallback import FallbackChain, hop_request
from refusals.transport.retry import RetryPolicy

from ._mockwire import SENTINEL_KEY, Sleeps, hello, run

DECLINED_ENDING = f"{FALLBACK_DECLINED_SENTENCE} {NEXT_STEP_SENTENCE}"
NO_RETRY = RetryPolicy.never()


@pytest.fixture
def app() -> MockApp:
    return MockApp()


def in_process(app: MockApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock.invalid")


def chain_for(app: MockApp, primary: str, *fallbacks: str, **options: Any) -> FallbackChain:
    chain = client_for(
        f"mock:{primary}",
        fallbacks=[f"mock:{f}" for f in fallbacks],
        http_client=in_process(app),
        retry=options.pop("retry", NO_RETRY),
        **options,
    )
    assert isinstance(chain, FallbackChain)
    return chain


async def streamed(client: Any, request: Request) -> tuple[LLMResponse, list[StreamEvent]]:
    handle = client.stream(request)
    events = [event async for event in handle]
    return handle.response, events


def hops(response: LLMResponse) -> list[dict[str, Any]]:
    """The client-side hop records of a response."""
    found = []
    for detail in response.decoded_details():
        if isinstance(detail, dict) and detail.get("source") == "client":
            found.append(detail)
    return found


# --- the client-side chain ---------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("primary", ["refusal", "refusal-mid-stream", "filter-prompt"])
def test_a_declined_request_goes_once_to_the_fallback_which_answers(
    app: MockApp, primary: str, stream: bool
) -> None:
    chain = chain_for(app, primary, "answer")
    request = hello()
    response = run(streamed(chain, request))[0] if stream else run(chain.complete(request))
    assert response.finish_reason is FinishReason.STOP
    assert response.model == "mock-answer"
    assert refusals.notice(response) is None
    assert app.count(model=f"mock-{primary}") == 1
    assert app.count(model="mock-answer") == 1
    trigger = "content_filter" if primary.startswith("filter") else "refusal"
    [record] = hops(response)
    assert record["from"] == {"model": f"mock:{primary}"}
    assert record["to"] == {"model": "mock:answer"}
    assert record["trigger"]["type"] == trigger
    assert response.served_by_fallback
    assert [a.model for a in chain.attempts] == [f"mock:{primary}", "mock:answer"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_when_the_fallback_declines_too_the_notice_says_so(app: MockApp, stream: bool) -> None:
    chain = chain_for(app, "refusal", "refusal-mid-stream")
    request = hello()
    response = run(streamed(chain, request))[0] if stream else run(chain.complete(request))
    assert response.finish_reason is FinishReason.REFUSAL
    notice = refusals.notice(response)
    assert notice is not None
    assert notice.endswith(DECLINED_ENDING)
    assert app.count(model="mock-refusal") == 1
    assert app.count(model="mock-refusal-mid-stream") == 1


def test_without_a_fallback_the_notice_says_nothing_about_fallbacks(app: MockApp) -> None:
    client = client_for("mock:refusal", http_client=in_process(app), retry=NO_RETRY)
    response = run(client.complete(hello()))
    notice = refusals.notice(response)
    assert notice is not None
    assert FALLBACK_DECLINED_SENTENCE not in notice
    assert app.count() == 1


def test_the_same_model_is_never_asked_twice_in_one_call(app: MockApp) -> None:
    chain = chain_for(app, "refusal", "refusal", "refusal-mid-stream", "refusal")
    response = run(chain.complete(hello()))
    assert response.finish_reason is FinishReason.REFUSAL
    assert app.count(model="mock-refusal") == 1
    assert app.count(model="mock-refusal-mid-stream") == 1
    assert len(hops(response)) == 1


def test_hops_are_bounded(app: MockApp) -> None:
    chain = chain_for(app, "refusal", "refusal-mid-stream", "filter-prompt", "answer", max_hops=1)
    response = run(chain.complete(hello()))
    assert response.finish_reason is FinishReason.REFUSAL
    assert app.count() == 2
    assert app.count(model="mock-answer") == 0


def test_an_error_is_not_a_reason_to_fall_back(app: MockApp) -> None:
    chain = chain_for(app, "server-error", "answer")
    response = run(chain.complete(hello()))
    assert response.finish_reason is FinishReason.ERROR
    assert app.count(model="mock-answer") == 0
    assert hops(response) == []


def test_a_fallback_that_fails_is_skipped_and_the_next_one_asked(app: MockApp) -> None:
    chain = chain_for(app, "refusal", "server-error", "answer")
    response = run(chain.complete(hello()))
    assert response.finish_reason is FinishReason.STOP
    [record] = [hop for hop in hops(response) if hop["type"] == "fallback"]
    assert record["from"] == {"model": "mock:refusal"}
    assert record["to"] == {"model": "mock:answer"}
    assert [a.status for a in chain.attempts] == [200, 500, 200]
    # The hop that could not be asked is recorded apart, for the surfaces to report.
    [failed] = [d for d in response.decoded_details() if d.get("type") == "fallback_failed"]
    assert failed["to"] == {"model": "mock:server-error"}
    assert "Internal server error" in failed["error"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_when_every_fallback_fails_the_caller_gets_the_refusal(app: MockApp, stream: bool) -> None:
    chain = chain_for(app, "refusal", "server-error")
    request = hello()
    response = run(streamed(chain, request))[0] if stream else run(chain.complete(request))
    assert response.finish_reason is FinishReason.REFUSAL
    notice = refusals.notice(response)
    assert notice is not None
    # No fallback model answered, so none "also declined".
    assert FALLBACK_DECLINED_SENTENCE not in notice
    assert app.count(model="mock-server-error") == 1


def test_a_stream_marks_the_seam_and_holds_back_the_declined_verdict(app: MockApp) -> None:
    chain = chain_for(app, "refusal-mid-stream", "answer")
    response, events = run(streamed(chain, hello()))
    seams = [i for i, e in enumerate(events) if isinstance(e, FallbackSeam)]
    assert len(seams) == 1
    seam = events[seams[0]]
    assert isinstance(seam, FallbackSeam)
    assert seam.fallback.from_model == "mock:refusal-mid-stream"
    assert seam.fallback.to_model == "mock:answer"
    assert seam.fallback.trigger == "refusal"
    verdicts = [e for e in events if isinstance(e, Verdict)]
    assert [v.finish_reason for v in verdicts] == [FinishReason.STOP]
    after = "".join(e.text for e in events[seams[0] :] if isinstance(e, TextDelta))
    assert after == response.content
    assert response.content is not None
    assert response.content.startswith("Mock answer: ")


def test_turn_scope_stays_within_the_turn_and_returns_to_the_primary_next_turn(
    app: MockApp,
) -> None:
    chain = chain_for(app, "refusal", "answer", fallback_scope="turn")

    async def turns() -> list[str | None]:
        models = [(await chain.complete(hello())).model]
        models.append((await chain.complete(hello())).model)  # a tool round, same turn
        chain.begin_turn()
        models.append((await chain.complete(hello())).model)
        return models

    assert run(turns()) == ["mock-answer", "mock-answer", "mock-answer"]
    assert app.count(model="mock-refusal") == 2
    assert app.count(model="mock-answer") == 3


def test_session_scope_stays_on_the_model_that_answered(app: MockApp) -> None:
    chain = chain_for(app, "refusal", "answer", fallback_scope="session")

    async def turns() -> None:
        await chain.complete(hello())
        chain.begin_turn()
        await chain.complete(hello())
        chain.begin_turn()
        await chain.complete(hello())

    run(turns())
    assert app.count(model="mock-refusal") == 1
    assert app.count(model="mock-answer") == 3
    assert chain.current_model == "mock:answer"


def test_a_chain_across_providers_sends_one_request_per_hop() -> None:
    with MockServer() as server:
        primary = client_for(
            "anthropic:mock-refusal", base_url=server.base_url, api_key=SENTINEL_KEY
        )
        second = client_for(
            "openai:mock-filter-output", base_url=server.base_url + "/v1", api_key=SENTINEL_KEY
        )
        third = client_for("gemini:mock-answer", base_url=server.base_url, api_key=SENTINEL_KEY)
        chain = FallbackChain([primary, second, third])
        response, events = run(streamed(chain, hello()))
        assert response.finish_reason is FinishReason.STOP
        assert server.app.count(wire="anthropic") == 1
        assert server.app.count(wire="openai-chat") == 1
        assert server.app.count(wire="gemini") == 1
        assert [
            (h["from"]["model"], h["to"]["model"], h["trigger"]["type"]) for h in hops(response)
        ] == [
            ("anthropic:mock-refusal", "openai:mock-filter-output", "refusal"),
            ("openai:mock-filter-output", "gemini:mock-answer", "content_filter"),
        ]
        assert len([e for e in events if isinstance(e, FallbackSeam)]) == 2
        assert SENTINEL_KEY not in repr(events) + repr(response) + repr(chain.attempts)


# --- Anthropic's recommended model, credit token and prefill claim ------------------------


def test_a_recommended_model_is_asked_first_with_the_credit_token(app: MockApp) -> None:
    chain = chain_for(app, "refusal-recommended", "answer")
    response = run(chain.complete(hello()))
    assert response.finish_reason is FinishReason.STOP
    assert response.model == "mock-fallback"
    first, second = app.requests
    assert first.model == "mock-refusal-recommended"
    assert second.model == "mock-fallback"
    assert str(second.body["fallback_credit_token"]).startswith("tok_mock_")
    # The refusal granted no prefill claim: the retry is the same conversation.
    assert second.body["messages"] == first.body["messages"]
    assert app.count(model="mock-answer") == 0


def test_a_recommended_model_is_not_followed_without_a_configured_fallback(app: MockApp) -> None:
    client = client_for("mock:refusal-recommended", http_client=in_process(app), retry=NO_RETRY)
    response = run(client.complete(hello()))
    assert app.count() == 1
    assert refusals.notice(response) == (
        "The model declined this request (category: cyber): this request triggered the mock "
        "provider's refusal scenario and was declined. A fallback to `mock-fallback` was "
        f"recommended but could not run. {NEXT_STEP_SENTENCE}"
    )


def test_the_primary_of_a_chain_asks_for_credit_tokens(app: MockApp) -> None:
    chain = chain_for(app, "answer", "refusal")
    primary = chain.clients[0]
    assert isinstance(primary, HTTPClient)
    prepared = primary._prepare(chain._for_client(hello(), primary), stream=True)
    assert FALLBACK_CREDIT_BETA in prepared.headers["anthropic-beta"].split(",")


def refused(content: str, **stop: Any) -> LLMResponse:
    details = [StopDetails(category="cyber", **stop).to_detail()]
    return LLMResponse(
        content=content, finish_reason=FinishReason.REFUSAL, reasoning_details=details, cut_off=True
    )


def anthropic_client(model: str, base_url: str = "https://api.anthropic.com") -> HTTPClient:
    client = client_for(f"anthropic:{model}", base_url=base_url, api_key=SENTINEL_KEY)
    assert isinstance(client, HTTPClient)
    return client


def test_a_prefill_claim_resends_the_partial_output_without_trailing_whitespace() -> None:
    blocked = refused(
        "Partial answer \n", fallback_credit_token="tok", fallback_has_prefill_claim=True
    )
    request, prefill = hop_request(hello(), blocked, anthropic_client("a"), anthropic_client("b"))
    assert prefill == "Partial answer"
    assert request.fallback_credit_token == "tok"
    assert request.messages[-1] == Message("assistant", "Partial answer")


def test_without_a_prefill_claim_the_partial_output_is_not_resent() -> None:
    blocked = refused("Partial", fallback_credit_token="tok", fallback_has_prefill_claim=False)
    request, prefill = hop_request(hello(), blocked, anthropic_client("a"), anthropic_client("b"))
    assert prefill is None
    assert request.messages == hello().messages
    assert request.fallback_credit_token == "tok"


def test_a_forced_tool_choice_forbids_the_prefill_form() -> None:
    blocked = refused("Partial", fallback_credit_token="tok", fallback_has_prefill_claim=True)
    original = hello(extra={"tool_choice": {"type": "any"}})
    request, prefill = hop_request(original, blocked, anthropic_client("a"), anthropic_client("b"))
    assert prefill is None
    assert request.messages == original.messages


def test_a_credit_token_never_leaves_its_platform() -> None:
    blocked = refused("Partial", fallback_credit_token="tok", fallback_has_prefill_claim=True)
    other_host = anthropic_client("b", base_url="https://gateway.example")
    openai = client_for("openai:gpt-x", api_key=SENTINEL_KEY)
    for target in (other_host, openai):
        request, prefill = hop_request(hello(), blocked, anthropic_client("a"), target)
        assert request.fallback_credit_token is None
        assert prefill is None


def test_server_side_fallbacks_are_not_sent_on_a_client_side_hop() -> None:
    blocked = refused("")
    request, _ = hop_request(
        hello(fallbacks=["m2"]), blocked, anthropic_client("a"), anthropic_client("b")
    )
    assert request.fallbacks == []


# --- server-side fallbacks ----------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_server_side_fallbacks_are_passed_through_and_their_facts_kept(
    app: MockApp, stream: bool
) -> None:
    client = client_for("mock:fallback-served", http_client=in_process(app), retry=NO_RETRY)
    request = hello(fallbacks=["mock-fallback"])
    response = run(streamed(client, request))[0] if stream else run(client.complete(request))
    assert response.finish_reason is FinishReason.STOP
    assert response.served_by_fallback
    assert response.fallback_model == "mock-fallback"
    assert refusals.notice(response) is None
    [sent] = app.requests
    assert sent.body["fallbacks"] == [{"model": "mock-fallback"}]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_declined_server_side_fallback_is_stated_in_the_notice(
    app: MockApp, stream: bool
) -> None:
    client = client_for("mock:fallback-declined", http_client=in_process(app), retry=NO_RETRY)
    request = hello(fallbacks=["mock-fallback"])
    response = run(streamed(client, request))[0] if stream else run(client.complete(request))
    notice = refusals.notice(response)
    assert notice is not None
    assert notice.endswith(DECLINED_ENDING)
    assert app.count() == 1


def test_a_chain_keeps_the_retry_policy_per_hop(app: MockApp) -> None:
    sleeps = Sleeps()
    chain = chain_for(app, "refusal", "rate-limited", retry=RetryPolicy(jitter=0.0, sleep=sleeps))
    response = run(chain.complete(hello()))
    assert response.finish_reason is FinishReason.STOP
    assert app.count(model="mock-refusal") == 1
    assert app.count(model="mock-rate-limited") == 3
    assert len(sleeps.delays) == 2


def test_a_chain_rejects_impossible_settings(app: MockApp) -> None:
    with pytest.raises(ValueError, match="scope"):
        FallbackChain([client_for("mock:answer")], scope="forever")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="primary"):
        FallbackChain([])


def test_hop_records_are_json_with_from_to_and_trigger_category(app: MockApp) -> None:
    chain = chain_for(app, "refusal", "answer")
    response = run(chain.complete(hello()))
    raw = [d for d in response.reasoning_details or () if isinstance(d, str)]
    record = orjson.loads(raw[0])
    assert record == {
        "type": "fallback",
        "from": {"model": "mock:refusal"},
        "to": {"model": "mock:answer"},
        "trigger": {
            "type": "refusal",
            "category": "cyber",
            "explanation": (
                "This request triggered the mock provider's refusal scenario and was declined."
            ),
        },
        "source": "client",
        "request_id": "msg_mock_000001",
        # The declined call's tokens (the response's usage is the answering hop's).
        "usage": {
            "input_tokens": record["usage"]["input_tokens"],
            "output_tokens": 1,
            "cache_read_tokens": 0,
            "cache_creation_tokens": 0,
        },
    }
    assert record["usage"]["input_tokens"] > 0


def test_fallbacks_of_the_same_provider_share_the_endpoint(app: MockApp) -> None:
    chain = chain_for(app, "refusal", "answer")
    assert [c.model for c in chain.clients] == ["mock:refusal", "mock:answer"]
    assert repr(chain) == "FallbackChain([mock:refusal, mock:answer], scope='turn')"


def test_a_caller_that_stops_at_the_final_verdict_still_gets_the_hop_records(
    app: MockApp,
) -> None:
    chain = chain_for(app, "refusal", "refusal-mid-stream")

    async def go() -> LLMResponse:
        handle = chain.stream(hello())
        async for event in handle:
            if isinstance(event, Verdict):
                break
        await handle.aclose()
        return handle.response

    response = run(go())
    assert response.finish_reason is FinishReason.REFUSAL
    notice = refusals.notice(response)
    assert notice is not None
    assert notice.endswith(DECLINED_ENDING)


def test_a_chain_behind_the_sync_facade_falls_back_the_same_way(app: MockApp) -> None:
    chain = chain_for(app, "refusal", "answer")
    with chain.sync() as sync:
        handle = sync.stream(hello())
        events = list(handle)
        handle.close()
    assert handle.response.finish_reason is FinishReason.STOP
    assert any(isinstance(e, FallbackSeam) for e in events)
    assert app.count(model="mock-refusal") == 1
    assert app.count(model="mock-answer") == 1


def test_a_mock_model_is_shown_as_typed_and_sent_under_its_wire_name(app: MockApp) -> None:
    chain = chain_for(app, "refusal", "answer")
    response = run(chain.complete(hello()))
    assert chain.model == "mock:refusal"
    assert [a.model for a in chain.attempts] == ["mock:refusal", "mock:answer"]
    assert [h["to"] for h in hops(response)] == [{"model": "mock:answer"}]
    assert [entry.model for entry in app.requests] == ["mock-refusal", "mock-answer"]


def test_a_model_the_mock_recommends_is_shown_without_its_wire_prefix(app: MockApp) -> None:
    chain = chain_for(app, "refusal-recommended", "answer")
    run(chain.complete(hello()))
    assert [a.model for a in chain.attempts] == ["mock:refusal-recommended", "mock:fallback"]
    assert [entry.model for entry in app.requests] == ["mock-refusal-recommended", "mock-fallback"]


@pytest.mark.parametrize("spelling", ["mock-refusal", " mock-refusal"])
def test_the_same_wire_model_under_another_spelling_is_not_asked_again(
    app: MockApp, spelling: str
) -> None:
    chain = chain_for(app, "refusal", spelling, "refusal-mid-stream")
    response = run(chain.complete(hello()))
    assert response.finish_reason is FinishReason.REFUSAL
    assert app.count(model="mock-refusal") == 1
    assert app.count(model="mock-refusal-mid-stream") == 1
