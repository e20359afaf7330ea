"""The span enricher, read back through the OpenTelemetry SDK's in-memory exporter."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import openai
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext

from refusals import LLMResponse, normalize, notice
from refusals.integrations.httpx_transport import RefusalTransport
from refusals.integrations.opentelemetry import (
    FINISH_REASONS,
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
