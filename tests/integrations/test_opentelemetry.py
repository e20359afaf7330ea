"""The span enricher, read back through the OpenTelemetry SDK's in-memory exporter."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext
from prometheus_client import start_http_server
from prometheus_client.parser import text_string_to_metric_families

from refusals import LLMResponse, normalize, notice
from refusals.integrations.httpx_transport import RefusalTransport
from refusals.integrations.opentelemetry import (
    FINISH_REASONS,
    RefusalMetrics,
    RefusalSpanProcessor,
    enrich_current_span,
    enrich_span,
    span_attributes,
)
from refusals.mock import MockServer
from tests.integrations._fixture_server import FIXTURES


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield tracer_provider
    tracer_provider.shutdown()


def _fixture(name: str) -> LLMResponse:
    return normalize((FIXTURES / name).read_bytes())


def _exported(
    provider: TracerProvider, exporter: InMemorySpanExporter, response: LLMResponse
) -> dict[str, Any]:
    with provider.get_tracer("test").start_as_current_span("chat claude") as span:
        enrich_span(span, response)
    (finished,) = exporter.get_finished_spans()
    assert isinstance(finished, ReadableSpan)
    return dict(finished.attributes or {})


def test_a_refusal_span_keeps_the_provider_value_category_explanation_and_notice(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    response = _fixture("anthropic/vercel-refusal-cyber.json")
    assert response.stop_details is not None
    assert _exported(provider, exporter, response) == {
        FINISH_REASONS: ("refusal",),
        "refusals.finish_reason": "refusal",
        "refusals.category": "cyber",
        "refusals.explanation": response.stop_details.explanation,
        "refusals.served_by_fallback": False,
        "refusals.notice": notice(response),
    }


def test_a_content_filter_is_not_a_refusal_on_the_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    response = _fixture("gemini/finish-safety-blocked.json")
    attributes = _exported(provider, exporter, response)
    assert attributes[FINISH_REASONS] == ("SAFETY",)
    assert attributes["refusals.finish_reason"] == "content_filter"
    assert attributes["refusals.category"] == "hate_speech"
    assert attributes["refusals.notice"] == notice(response)


def test_an_openai_refusal_explains_itself_with_its_own_text(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    response = _fixture("openai-chat/refusal.json")
    attributes = _exported(provider, exporter, response)
    # The conventions want the provider's value: OpenAI says "stop" for a refusal.
    assert attributes[FINISH_REASONS] == ("stop",)
    assert attributes["refusals.finish_reason"] == "refusal"
    assert attributes["refusals.explanation"] == response.content
    assert "refusals.category" not in attributes


def test_an_answer_served_by_a_fallback_says_so_and_has_no_notice(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    attributes = _exported(provider, exporter, _fixture("anthropic/vercel-server-fallback.json"))
    assert attributes["refusals.served_by_fallback"] is True
    assert attributes["refusals.finish_reason"] == "stop"
    assert attributes[FINISH_REASONS] == ("end_turn",)
    assert "refusals.notice" not in attributes


def test_a_response_without_a_provider_value_sets_no_finish_reasons() -> None:
    attributes = span_attributes(LLMResponse(content="hi"))
    assert FINISH_REASONS not in attributes
    assert attributes["refusals.finish_reason"] == "stop"


def test_a_span_that_is_not_recording_is_left_alone() -> None:
    span = NonRecordingSpan(SpanContext(trace_id=1, span_id=1, is_remote=False))
    enrich_span(span, _fixture("anthropic/vercel-refusal-cyber.json"))
    assert not span.is_recording()


def test_calls_through_the_transport_enrich_the_active_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    with MockServer() as server:
        http = httpx2.Client(
            transport=RefusalTransport(httpx2.HTTPTransport(), on_verdict=enrich_current_span),
            timeout=10,
        )
        client = openai.OpenAI(
            api_key="test", base_url=server.base_url + "/v1", http_client=http, max_retries=0
        )
        with provider.get_tracer("test").start_as_current_span("chat mock-refusal"):
            completion = client.chat.completions.create(
                model="mock-refusal", messages=[{"role": "user", "content": "hello"}]
            )
        http.close()
    (span,) = exporter.get_finished_spans()
    attributes = dict(span.attributes or {})
    assert attributes["refusals.finish_reason"] == "refusal"
    assert attributes["refusals.explanation"] == completion.choices[0].message.refusal
    assert attributes["refusals.notice"] == notice(normalize(completion))
    assert server.app.count(model="mock-refusal") == 1


def _anthropic_call_under_a_span(
    provider: TracerProvider, on_verdict: Any
) -> tuple[anthropic.types.Message, MockServer]:
    with MockServer() as server:
        http = httpx2.Client(
            transport=RefusalTransport(httpx2.HTTPTransport(), on_verdict=on_verdict), timeout=10
        )
        client = anthropic.Anthropic(
            api_key="test", base_url=server.base_url, http_client=http, max_retries=0
        )
        with provider.get_tracer("test").start_as_current_span("chat mock-refusal"):
            message = client.messages.create(
                model="mock-refusal", max_tokens=32, messages=[{"role": "user", "content": "hi"}]
            )
        http.close()
    return message, server


def test_under_the_anthropic_sdks_own_span_the_verdict_lands_on_the_recording_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    # The Anthropic SDK 2.x opens a span of its own per call; with no global tracer
    # provider that span records nothing. RefusalSpanProcessor finds the user's span.
    provider.add_span_processor(RefusalSpanProcessor())
    message, _ = _anthropic_call_under_a_span(provider, enrich_current_span)
    (span,) = exporter.get_finished_spans()
    attributes = dict(span.attributes or {})
    assert attributes["refusals.finish_reason"] == "refusal"
    assert attributes["refusals.category"] == "cyber"
    assert attributes["refusals.notice"] == notice(normalize(message))


def test_without_the_processor_the_sdks_stand_in_span_swallows_the_verdict(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    # What users saw before: attributes set on a span that records nothing.
    _anthropic_call_under_a_span(provider, enrich_current_span)
    (span,) = exporter.get_finished_spans()
    assert "refusals.finish_reason" not in dict(span.attributes or {})


def test_metrics_are_scraped_from_prometheus_with_their_documented_names() -> None:
    # The reader registers with prometheus_client's default registry, which the exposition
    # server serves: as a Prometheus server would scrape an application.
    reader = PrometheusMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    metrics = RefusalMetrics(meters)
    server, _ = start_http_server(0, addr="127.0.0.1")
    try:
        with MockServer() as mock:
            http = httpx2.Client(
                transport=RefusalTransport(httpx2.HTTPTransport(), on_verdict=metrics.record),
                timeout=10,
            )
            client = anthropic.Anthropic(
                api_key="test", base_url=mock.base_url, http_client=http, max_retries=0
            )
            for model in ("mock-refusal", "mock-answer", "mock-refusal-recommended"):
                client.messages.create(
                    model=model, max_tokens=32, messages=[{"role": "user", "content": model}]
                )
            http.close()
        metrics.fallback("answered", provider="anthropic", model="mock-answer")
        port = server.server_address[1]
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    finally:
        server.shutdown()
        meters.shutdown()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }

    def total(name: str, **labels: str) -> float:
        return sum(
            value
            for (sample, found), value in samples.items()
            if sample == name and set(labels.items()) <= set(found)
        )

    requests = "gen_ai_client_refusals_requests_total"
    assert total(requests, refusals_finish_reason="refusal") == 2
    assert total(requests, refusals_finish_reason="stop", gen_ai_request_model="mock-answer") == 1
    assert (
        total(
            "gen_ai_client_refusals_blocked_total",
            refusals_kind="refusal",
            refusals_category="cyber",
        )
        == 2
    )
    assert total("gen_ai_client_refusals_blocked_tokens_total", gen_ai_token_type="input") > 0
    assert total("gen_ai_client_refusals_fallbacks_total", refusals_outcome="answered") == 1
