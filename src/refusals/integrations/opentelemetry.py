"""OpenTelemetry: put the refusal verdict on the span of the model call.

The GenAI semantic conventions have one free-form `gen_ai.response.finish_reasons`, which
must hold the provider's own values; they have no place for a category, an explanation
or whether a fallback ran. `enrich_span` sets that attribute to the provider's value and
adds the rest under `refusals.*`:

- `gen_ai.response.finish_reasons`: `[the provider's value]`, when it gave one;
- `refusals.finish_reason`: `stop length tool_calls content_filter pause refusal error`;
- `refusals.category`: the provider's category (several joined by `, `), and
  `refusals.categories` listing them when there are several;
- `refusals.explanation`: the provider's explanation (or a refusal's own text);
- `refusals.served_by_fallback`: whether a fallback model answered;
- `refusals.notice`: the refusal or content-filter notice, verbatim.

Install with `refusals[otel]`. `enrich_current_span` fits `RefusalTransport(on_verdict=...)`,
so every call an SDK makes through that transport is recorded on the active span. An SDK
that opens a span of its own around each call (the Anthropic SDK 2.x) makes that span the
active one, and without a global tracer provider it records nothing: add
`RefusalSpanProcessor()` to your tracer provider, and a verdict reported under such a
stand-in lands on the recording span it stands in for (yours).

`RefusalMetrics(meter_provider)` counts what the verdicts say, as OpenTelemetry metrics
(docs/integrations.md has the table): pass its `record` as `on_verdict`, or call
`install()` to count every response and fallback hop of the `refusals` clients (`exec`
and `chat` do it themselves when a global meter provider is configured, as
`opentelemetry-instrument` does). With
`opentelemetry-exporter-prometheus` (`refusals[prometheus]`) they are scraped like any
other Prometheus metrics.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from refusals.integrations.httpx_transport import ResponseVerdict
from refusals.model import FinishReason, LLMResponse
from refusals.refusal import MAX_EXPLANATION_CHARS, WHITESPACE
from refusals.refusal import notice as notice_of

try:
    from opentelemetry.sdk.trace import SpanProcessor
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "refusals.integrations.opentelemetry needs the OpenTelemetry SDK: "
        "pip install 'refusals[otel]'"
    ) from exc

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import Span

__all__ = [
    "FINISH_REASONS",
    "RefusalMetrics",
    "RefusalSpanProcessor",
    "enrich_current_span",
    "enrich_span",
    "install_if_configured",
    "span_attributes",
]

FINISH_REASONS = "gen_ai.response.finish_reasons"
"""The GenAI semantic-convention attribute that holds the provider's own finish reasons."""

AttributeValue = str | bool | Sequence[str]


def _response_of(result: LLMResponse | ResponseVerdict) -> LLMResponse:
    return result.response if isinstance(result, ResponseVerdict) else result


def span_attributes(result: LLMResponse | ResponseVerdict) -> Mapping[str, AttributeValue]:
    """The span attributes for one response (no value is None: OpenTelemetry forbids it)."""
    response = _response_of(result)
    attributes: dict[str, AttributeValue] = {
        "refusals.finish_reason": response.finish_reason.value,
        "refusals.served_by_fallback": response.served_by_fallback,
    }
    if response.raw_finish_reason:
        attributes[FINISH_REASONS] = [response.raw_finish_reason]
    stop = response.stop_details
    categories = list(stop.categories) if stop is not None else []
    if stop is not None and stop.category and stop.category not in categories:
        categories.insert(0, stop.category)
    if categories:
        attributes["refusals.category"] = ", ".join(categories)
        if len(categories) > 1:
            attributes["refusals.categories"] = categories
    explanation = stop.explanation if stop is not None else None
    if explanation is None and response.finish_reason is FinishReason.REFUSAL:
        # OpenAI-style refusals state their reason as the message text, as the notice does.
        text = (response.content or "").strip(WHITESPACE)
        explanation = text[:MAX_EXPLANATION_CHARS] or None
    if explanation:
        attributes["refusals.explanation"] = explanation
    notice = notice_of(response)
    if notice is not None:
        attributes["refusals.notice"] = notice
    return attributes


def enrich_span(span: Span, result: LLMResponse | ResponseVerdict) -> None:
    """Set the verdict's attributes on `span` (a no-op on a span that is not recording)."""
    if not span.is_recording():
        return
    for name, value in span_attributes(result).items():
        span.set_attribute(name, value)


# Live recording spans by span id, kept by `RefusalSpanProcessor` (weakly: a span that is
# dropped unended is not held).
_LIVE: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
_LIVE_LOCK = threading.Lock()


class RefusalSpanProcessor(SpanProcessor):
    """Add to a `TracerProvider`: its live spans can then be found by their id, so that a
    verdict reported under a non-recording stand-in span (an SDK's own span when no global
    tracer provider is set carries its parent's id) lands on the recording span."""

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        with _LIVE_LOCK:
            _LIVE[span.get_span_context().span_id] = span

    def on_end(self, span: ReadableSpan) -> None:
        context = span.get_span_context()
        if context is not None:
            with _LIVE_LOCK:
                _LIVE.pop(context.span_id, None)


def _recording(span: Span) -> Span:
    if span.is_recording():
        return span
    with _LIVE_LOCK:
        found = _LIVE.get(span.get_span_context().span_id)
    return found if found is not None and found.is_recording() else span


def enrich_current_span(result: LLMResponse | ResponseVerdict) -> None:
    """`enrich_span` on the active span; pass it as `RefusalTransport(on_verdict=...)`.

    When the active span records nothing and stands in for a span `RefusalSpanProcessor`
    knows, that span is enriched instead.
    """
    # Lazy: opentelemetry is an optional extra.
    from opentelemetry import trace  # noqa: PLC0415

    enrich_span(_recording(trace.get_current_span()), result)


_BLOCKED = (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER)


class RefusalMetrics:
    """OpenTelemetry counters of what the verdicts say.

    | instrument | unit | attributes |
    |---|---|---|
    | `gen_ai.client.refusals.requests` | `{request}` | provider, model, finish reason |
    | `gen_ai.client.refusals.blocked` | `{request}` | provider, model, kind, category |
    | `gen_ai.client.refusals.blocked_tokens` | `{token}` | provider, model, token type |
    | `gen_ai.client.refusals.fallbacks` | `{fallback}` | provider, model, outcome |

    Attribute names follow the GenAI conventions (`gen_ai.provider.name`,
    `gen_ai.request.model`, `gen_ai.token.type`), plus `refusals.finish_reason`,
    `refusals.kind`, `refusals.category` and `refusals.outcome`.
    """

    def __init__(self, meter_provider: MeterProvider | None = None) -> None:
        from opentelemetry import metrics  # noqa: PLC0415

        meter = (meter_provider or metrics.get_meter_provider()).get_meter("refusals")
        self._requests = meter.create_counter(
            "gen_ai.client.refusals.requests",
            unit="{request}",
            description="Model responses, by finish reason.",
        )
        self._blocked = meter.create_counter(
            "gen_ai.client.refusals.blocked",
            unit="{request}",
            description="Refused and content-filtered responses.",
        )
        self._tokens = meter.create_counter(
            "gen_ai.client.refusals.blocked_tokens",
            unit="{token}",
            description="Tokens spent on refused and content-filtered requests.",
        )
        self._fallbacks = meter.create_counter(
            "gen_ai.client.refusals.fallbacks",
            unit="{fallback}",
            description="Fallback hops, by outcome.",
        )

    def record(self, result: LLMResponse | ResponseVerdict) -> None:
        """Count one response (fits `RefusalTransport(on_verdict=...)`)."""
        response = _response_of(result)
        base: dict[str, str] = {
            "gen_ai.provider.name": response.provider or "unknown",
            "gen_ai.request.model": response.model or "unknown",
        }
        finish = response.finish_reason
        self._requests.add(1, {**base, "refusals.finish_reason": finish.value})
        if finish not in _BLOCKED:
            return
        stop = response.stop_details
        category = (stop.category or (stop.categories or ("",))[0]) if stop is not None else ""
        self._blocked.add(
            1, {**base, "refusals.kind": finish.value, "refusals.category": category or "none"}
        )
        usage = response.usage
        if usage is not None:
            for kind, count in (("input", usage.input_tokens), ("output", usage.output_tokens)):
                if count:
                    self._tokens.add(count, {**base, "gen_ai.token.type": kind})

    def install(self) -> Callable[[], None]:
        """Count every response the `refusals` clients return, and each fallback hop of
        their chains, from now on; returns the function that stops it."""
        from refusals.transport.base import observe_responses  # noqa: PLC0415

        def hop(outcome: str, from_model: str, to_model: str) -> None:
            provider, _, model = from_model.partition(":")
            self.fallback(outcome, provider=provider or None, model=model or from_model)

        return observe_responses(self.record, hop)

    def fallback(self, outcome: str, *, provider: str | None, model: str | None) -> None:
        """Count one fallback hop (`answered`, `declined`, `failed`, `no_fallback`...)."""
        self._fallbacks.add(
            1,
            {
                "gen_ai.provider.name": provider or "unknown",
                "gen_ai.request.model": model or "unknown",
                "refusals.outcome": outcome,
            },
        )


def install_if_configured() -> RefusalMetrics | None:
    """`RefusalMetrics(...).install()` on the global meter provider, when one was set (by
    `opentelemetry-instrument`, or by the application); None, and nothing done, else."""
    import sys  # noqa: PLC0415

    if "opentelemetry.metrics" not in sys.modules:
        return None  # nothing configured metrics in this process: no import to pay for
    from opentelemetry import metrics  # noqa: PLC0415
    from opentelemetry.sdk.metrics import MeterProvider  # noqa: PLC0415

    provider = metrics.get_meter_provider()
    if not isinstance(provider, MeterProvider):
        return None
    recorder = RefusalMetrics(provider)
    recorder.install()
    return recorder
