"""InvokeModel bodies: an Anthropic Messages body or a native Titan, Llama or Mistral one,
with Bedrock's guardrail marker and trace beside it (read from the decoded value).
https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters.html"""

from __future__ import annotations

from refusals.model import (
    FinishReason,
    LLMResponse,
    Usage,
    decode_detail,
    detail_type,
)
from refusals.providers import anthropic  # Claude on Bedrock speaks Anthropic's format
from refusals.providers._common import (
    JsonObject,
    interrupted,
)
from refusals.providers._lenient import lenient
from refusals.providers.bedrock.guardrail import guardrail_outcome, trace_guardrail
from refusals.providers.bedrock.schema import GUARDRAIL_ACTION, INVOCATION_METRICS, InvokeBody

INVOKE_API = "invoke"

NATIVE_STOP_REASONS: dict[str, FinishReason] = {
    # Amazon Titan Text `completionReason`
    "FINISH": FinishReason.STOP,
    "LENGTH": FinishReason.LENGTH,
    "CONTENT_FILTERED": FinishReason.CONTENT_FILTER,
    "STOP_CRITERIA_MET": FinishReason.STOP,
    "RAG_QUERY_WHEN_RAG_DISABLED": FinishReason.ERROR,
    # Meta Llama and Mistral `stop_reason`
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
    "model_length": FinishReason.LENGTH,
}
"""Finish values of the native InvokeModel bodies (Titan, Llama, Mistral); anything not
listed is ERROR. https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters.html"""


def is_invoke_body(body: JsonObject) -> bool:
    """Whether `body` is an InvokeModel response: it carries Bedrock's own keys, or it is a
    native Titan, Llama or Mistral body (Anthropic-on-Bedrock bodies are Messages bodies,
    recognised by the keys Bedrock adds)."""
    if GUARDRAIL_ACTION in body or INVOCATION_METRICS in body:
        return True
    return _native_kind(body) is not None


def _native_kind(body: JsonObject) -> str | None:
    results = body.get("results")
    if isinstance(results, list) and "inputTextTokenCount" in body:
        return "titan"
    if isinstance(body.get("generation"), str) and (
        "generation_token_count" in body or "stop_reason" in body
    ):
        return "llama"
    outputs = body.get("outputs")
    if (
        isinstance(outputs, list)
        and outputs
        and all(isinstance(o, dict) and "text" in o for o in outputs)
    ):
        return "mistral"
    return None


def parse_invoke(body: JsonObject, provider: str) -> LLMResponse:
    """An InvokeModel response body: an Anthropic Messages body or a native Titan, Llama
    or Mistral one, with Bedrock's guardrail marker and trace applied."""
    kind = _native_kind(body)
    invoke = lenient(body, InvokeBody)
    if kind is None and anthropic.looks_like(body):
        result = anthropic.parse_response(body, provider)
    else:
        text, raw = _native_output(invoke, kind)
        finish = NATIVE_STOP_REASONS.get(raw, FinishReason.ERROR) if raw else FinishReason.ERROR
        result = LLMResponse(
            content=text or None,
            finish_reason=finish,
            raw_finish_reason=raw,
            usage=_native_usage(invoke),
            provider=provider,
            cut_off=interrupted(finish) and bool(text),
        )
    result.api = INVOKE_API
    return _with_guardrail(result, invoke)


def _native_output(body: InvokeBody, kind: str | None) -> tuple[str, str | None]:
    if kind == "titan":
        first = body.results[0] if body.results else None
        if first is None:
            return "", None
        return first.output_text or "", first.completion_reason
    if kind == "llama":
        return body.generation or "", body.stop_reason
    if kind == "mistral":
        output = body.outputs[0] if body.outputs else None
        if output is None:
            return "", None
        text = output.text
        return (text if isinstance(text, str) else None) or "", output.stop_reason
    return "", None


def _native_usage(body: InvokeBody) -> Usage:
    metrics = body.metrics
    first = body.results[0] if body.results else None
    return Usage(
        input_tokens=body.input_text_token_count
        or body.prompt_token_count
        or (metrics.input_token_count if metrics is not None else 0)
        or 0,
        output_tokens=(first.token_count if first is not None else 0)
        or body.generation_token_count
        or (metrics.output_token_count if metrics is not None else 0)
        or 0,
    )


def _with_guardrail(result: LLMResponse, body: InvokeBody) -> LLMResponse:
    """`result` as a content-filter stop when Bedrock's marker says a guardrail intervened,
    with the categories and `altered` its trace gives."""
    action = body.guardrail_action
    if action is None or action.upper() != "INTERVENED":
        return result
    trace = trace_guardrail(body.guardrail_trace)
    _, stop = guardrail_outcome(FinishReason.CONTENT_FILTER, trace)
    result.finish_reason = FinishReason.CONTENT_FILTER
    result.raw_finish_reason = action
    details = [
        d for d in result.reasoning_details or () if detail_type(decode_detail(d)) != "stop_details"
    ]
    if stop is not None:
        details.insert(0, stop.to_detail())
    result.reasoning_details = details
    altered = stop is not None and stop.altered is not None
    result.cut_off = bool(result.content or result.tool_calls) and not altered
    return result
