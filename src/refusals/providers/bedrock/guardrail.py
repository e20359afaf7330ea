"""Bedrock's guardrail trace (Converse `trace.guardrail`, InvokeModel's
`amazon-bedrock-trace.guardrail`): which policies blocked or masked what. The trace comes
in many shapes across policies, so it is read from its decoded value.
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_GuardrailTraceAssessment.html"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from refusals.model import (
    FinishReason,
    StopDetails,
)
from refusals.providers._common import (
    JsonObject,
    arr,
    obj,
    string,
)
from refusals.providers._lenient import Given, raw_value

_BLOCKED = "BLOCKED"

_ANONYMIZED = "ANONYMIZED"

# Findings of an automated reasoning check that contradict the policy. The check reports
# findings but no action of its own, so they only name a block that the stop reason or
# another policy reported; they never turn a response into a block.
_REASONING_VIOLATIONS = ("invalid", "impossible")


def guardrail_outcome(
    finish: FinishReason, guardrail: JsonObject
) -> tuple[FinishReason, StopDetails | None]:
    """The finish reason once the guardrail trace is read, and the stop details it gives.

    A trace in which a policy blocked something is a filter stop whatever the stop reason
    said (unless that was already an error or a pause); the blocked categories and the
    `actionReason` become the stop details of a filter stop.
    """
    if not guardrail:
        return finish, None  # no trace: nothing to add (the common case)
    blocked = _blocked_categories(guardrail)
    ordinary = (FinishReason.STOP, FinishReason.LENGTH, FinishReason.TOOL_CALLS)
    masked: list[str] = []
    if not blocked:
        masked = _masked_categories(guardrail, outputs_only=finish in ordinary)
    if (blocked or masked) and finish in ordinary:
        # The trace shows a policy blocked or masked the text: a filter stop whatever
        # stopReason says (masked output was delivered, but not as the model wrote it).
        finish = FinishReason.CONTENT_FILTER
    if finish is not FinishReason.CONTENT_FILTER:
        return finish, None
    categories = blocked or masked or _reasoning_categories(guardrail)
    stop = StopDetails(
        category=categories[0] if categories else None,
        explanation=string(guardrail.get("actionReason")),
        categories=tuple(categories) if len(categories) > 1 else (),
        altered=ANONYMIZED_ACTION if masked else None,
    )
    return finish, (None if stop.is_empty() else stop)


ANONYMIZED_ACTION = "anonymized"
"""`StopDetails.altered` of a guardrail that masked parts of the output and let it through."""


def _masked_categories(guardrail: JsonObject, *, outputs_only: bool) -> list[str]:
    """The PII types and regexes a policy anonymized (action ANONYMIZED), in trace order;
    with `outputs_only`, only those of the output assessments (the model's text)."""
    found: list[str] = []
    keys = ("outputAssessments", "outputs") if outputs_only else None
    for assessment in _assessments(guardrail, keys):
        sensitive = obj(assessment.get("sensitiveInformationPolicy"))
        for item in _acted(sensitive.get("piiEntities"), _ANONYMIZED):
            name = _lower(item.get("type")) or "pii"
            if name not in found:
                found.append(name)
        for item in _acted(sensitive.get("regexes"), _ANONYMIZED):
            name = string(item.get("name")) or "regex"
            if name not in found:
                found.append(name)
    return found


_TRACE_KEYS = ("inputAssessment", "outputAssessments", "input", "outputs")
"""Converse names the trace's parts `inputAssessment` / `outputAssessments`; InvokeModel's
`amazon-bedrock-trace.guardrail` names them `input` / `outputs`."""


def _assessments(
    guardrail: JsonObject, keys: tuple[str, ...] | None = None
) -> Iterator[JsonObject]:
    """Every guardrail assessment of the trace, input first, in order. A part is a map of
    guardrail id → assessment (or list of assessments), or a list of such maps."""
    for key in keys or _TRACE_KEYS:
        part = guardrail.get(key)
        maps = part if isinstance(part, list) else [part]
        for mapping in maps:
            for value in obj(mapping).values():
                items = value if isinstance(value, list) else [value]
                for item in items:
                    if isinstance(item, dict):
                        yield item


def _blocked_categories(guardrail: JsonObject) -> list[str]:
    """What each policy blocked (action BLOCKED), in trace order, without repeats.

    Enumerated types (content filter types, PII types, managed word lists, grounding
    filters) are lower-cased; names the guardrail's owner chose (denied topics, regex
    filters) are kept as spelled.
    """
    found: list[str] = []

    def add(value: str | None) -> None:
        if value and value not in found:
            found.append(value)

    for assessment in _assessments(guardrail):
        for topic in _blocked(obj(assessment.get("topicPolicy")).get("topics")):
            add(string(topic.get("name")) or "denied_topic")
        for item in _blocked(obj(assessment.get("contentPolicy")).get("filters")):
            add(_lower(item.get("type")) or "content_filter")
        words = obj(assessment.get("wordPolicy"))
        for _ in _blocked(words.get("customWords")):
            add("custom_word")
        for item in _blocked(words.get("managedWordLists")):
            add(_lower(item.get("type")) or "managed_word")
        sensitive = obj(assessment.get("sensitiveInformationPolicy"))
        for item in _blocked(sensitive.get("piiEntities")):
            add(_lower(item.get("type")) or "pii")
        for item in _blocked(sensitive.get("regexes")):
            add(string(item.get("name")) or "regex")
        for item in _blocked(obj(assessment.get("contextualGroundingPolicy")).get("filters")):
            add(_lower(item.get("type")) or "contextual_grounding")
        for _ in _blocked(obj(assessment.get("automatedReasoningPolicy")).get("findings")):
            add("automated_reasoning")
    return found


def _reasoning_categories(guardrail: JsonObject) -> list[str]:
    for assessment in _assessments(guardrail):
        for finding in arr(obj(assessment.get("automatedReasoningPolicy")).get("findings")):
            if isinstance(finding, dict) and any(k in finding for k in _REASONING_VIOLATIONS):
                return ["automated_reasoning"]
    return []


def _blocked(items: Any) -> Iterator[JsonObject]:
    return _acted(items, _BLOCKED)


def _acted(items: Any, wanted: str) -> Iterator[JsonObject]:
    for item in arr(items):
        if isinstance(item, dict):
            action = string(item.get("action"))
            if action is not None and action.upper() == wanted:
                yield item


def _lower(value: Any) -> str | None:
    text = string(value)
    return text.lower() if text else None


def trace_guardrail(trace: msgspec.Raw | Given) -> JsonObject:
    """The `guardrail` part of a raw guardrail trace (Converse `trace`, InvokeModel's
    `amazon-bedrock-trace`); empty when there is none."""
    if not trace:
        return {}
    return obj(obj(raw_value(trace)).get("guardrail"))
