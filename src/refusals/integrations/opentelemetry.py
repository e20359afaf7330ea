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
so every call an SDK makes through that transport is recorded on the active span.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from refusals.integrations.httpx_transport import ResponseVerdict
from refusals.model import FinishReason, LLMResponse
from refusals.refusal import MAX_EXPLANATION_CHARS, WHITESPACE
from refusals.refusal import notice as notice_of

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = [
    "FINISH_REASONS",
    "enrich_current_span",
    "enrich_span",
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


def enrich_current_span(result: LLMResponse | ResponseVerdict) -> None:
    """`enrich_span` on the active span; pass it as `RefusalTransport(on_verdict=...)`."""
    # Lazy: opentelemetry is an optional extra.
    from opentelemetry import trace  # noqa: PLC0415

    enrich_span(trace.get_current_span(), result)
