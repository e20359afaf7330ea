"""Azure OpenAI's content filter results and OpenAI's moderation object, read wherever they
appear: Chat Completions bodies, chunks and error bodies, and Responses objects.

Both come in many shapes across API versions (a category as an object, a list or null;
blocklists as a list or an object with `details`; moderation results per side or as a
list), so they stay `Raw` in the schemas and are read here, from their decoded value,
only when present. `quiet` tells from the bytes alone that a filter report has nothing
to say (every category `safe`, nothing filtered or detected), which is the common case,
without decoding it.
https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter,
https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter-annotations
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from refusals.model import Detail
from refusals.providers._common import JsonObject, arr, bounded_message, json_text, obj, string
from refusals.providers._lenient import Given

__all__ = [
    "FilterSignals",
    "ModerationSignals",
    "add_azure_results",
    "azure_category",
    "azure_filter_signals",
    "azure_filtered_categories",
    "clean_message",
    "dump",
    "moderation_signals",
    "quiet",
]


@dataclass
class FilterSignals:
    """What a filter or moderation report says: the categories that blocked, and details."""

    filtered: list[str] = field(default_factory=list)
    details: list[Detail] = field(default_factory=list)


@dataclass
class ModerationSignals:
    """Categories of a moderation result that says it blocked, and one detail per result."""

    blocked: list[str] = field(default_factory=list)
    details: list[Detail] = field(default_factory=list)


_SAFE_SEVERITY = b'"severity":"safe"'


def quiet(value: Any) -> bool:
    """Whether filter results given as raw bytes certainly say nothing: no `true` (nothing
    filtered or detected), no severity but `safe`, no filter `error`, no blocklist, and no
    escape that could spell any of those otherwise. False means "read them"."""
    if isinstance(value, Given) or not value:
        return False
    data = bytes(value)
    return (
        b"true" not in data
        and b"\\" not in data
        and b"error" not in data
        and b"custom_blocklists" not in data
        and data.count(b'"severity"') == data.count(_SAFE_SEVERITY)
    )


def azure_filter_signals(prompt: Any, completion: Any) -> FilterSignals:
    """Azure `prompt_filter_results` entries (earlier API versions: `prompt_annotations`)
    and a choice's `content_filter_results`, as decoded values."""
    signals = FilterSignals()
    for entry in arr(prompt):
        item = obj(entry)
        extra: JsonObject = {"source": "prompt"}
        index = item.get("prompt_index")
        if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < 2**31:
            extra["prompt_index"] = index
        add_azure_results(signals, item.get("content_filter_results"), extra)
    add_azure_results(signals, completion, {"source": "completion"})
    return signals


def azure_filtered_categories(results: Any) -> tuple[list[str], JsonObject]:
    """The categories marked `filtered: true`, and every category worth recording.

    A category is recorded when it was filtered, detected, or rated above `safe`; its
    `filtered`, `severity` and `detected` values are kept as given. `error` is not a
    category: it says the filter did not run.
    """
    filtered: list[str] = []
    kept: JsonObject = {}
    for name, value in obj(results).items():
        if name == "error" or not isinstance(name, str):
            continue
        if name == "custom_blocklists":
            entries = value if isinstance(value, list) else arr(obj(value).get("details"))
            hits = [string(obj(e).get("id")) for e in entries if obj(e).get("filtered") is True]
            if obj(value).get("filtered") is True or hits:
                filtered.append(name)
                kept[name] = {"filtered": True, "ids": [h for h in hits if h]}
            continue
        item = obj(value)
        severity = item.get("severity")
        if item.get("filtered") is True:
            filtered.append(azure_category(name))
        if (
            item.get("filtered") is True
            or item.get("detected") is True
            or (isinstance(severity, str) and severity != "safe")
        ):
            kept[name] = {
                k: item[k]
                for k in ("filtered", "severity", "detected")
                if isinstance(item.get(k), bool | str)
            }
    return filtered, kept


_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@functools.lru_cache(maxsize=256)
def azure_category(name: str) -> str:
    """One spelling for a filter category: `SelfHarm`, `self-harm` and `self harm` (as
    Azure AI Content Safety and some API versions write them) are all `self_harm`."""
    snake = _CAMEL_BOUNDARY.sub("_", name.strip())
    return re.sub(r"[\s-]+", "_", snake).lower()


def add_azure_results(signals: FilterSignals, results: Any, extra: JsonObject) -> None:
    """Add one filter report's categories and its detail (when it says anything)."""
    filtered, kept = azure_filtered_categories(results)
    filter_error = obj(obj(results).get("error"))
    signals.filtered.extend(filtered)
    if not kept and not filter_error:
        return
    detail: JsonObject = {"type": "azure_content_filter", **extra}
    if kept:
        detail["results"] = kept
    if filter_error:
        # The filter did not run (timeout, outage): the text was not filtered, not blocked.
        detail["error"] = {
            "code": string(filter_error.get("code")),
            "message": clean_message(filter_error.get("message")),
        }
    signals.details.append(dump(detail))


def moderation_signals(moderation: Any) -> ModerationSignals:
    """The OpenAI `moderation` object of a chat completion or a Responses object.

    Chat Completions gives `{input|output: {type: "moderation_results", results: [...]}}`;
    Responses gives one result per side. A flagged result is recorded, never a block by
    itself: only a result that says it blocked (`blocked: true` or `action: "block"`, not
    seen in any recording so far) makes the response a content-filter stop. A moderation
    `error` outcome (the moderation did not run) is recorded.
    """
    signals = ModerationSignals()
    for source in ("input", "output"):
        outcome = obj(obj(moderation).get(source))
        if not outcome:
            continue
        if outcome.get("type") == "error":
            signals.details.append(
                dump(
                    {
                        "type": "moderation",
                        "source": source,
                        "error": {
                            "code": string(outcome.get("code")),
                            "message": clean_message(outcome.get("message")),
                        },
                    }
                )
            )
            continue
        results = outcome.get("results") if "results" in outcome else [outcome]
        for result in arr(results):
            item = obj(result)
            categories = [
                name
                for name, value in obj(item.get("categories")).items()
                if value is True and isinstance(name, str)
            ]
            blocked = _says_blocked(item) or _says_blocked(outcome)
            if not (item.get("flagged") is True or categories or blocked):
                continue
            if blocked:
                signals.blocked.extend(categories)
            detail: JsonObject = {
                "type": "moderation",
                "source": source,
                "flagged": item.get("flagged") is True,
                "categories": categories,
            }
            if blocked:
                detail["blocked"] = True
            model = string(item.get("model")) or string(outcome.get("model"))
            if model:
                detail["model"] = model
            signals.details.append(dump(detail))
    return signals


def _says_blocked(item: JsonObject) -> bool:
    action = string(item.get("action"))
    return item.get("blocked") is True or (
        action is not None and action.lower() in ("block", "blocked")
    )


def clean_message(value: Any) -> str | None:
    """A provider message made safe to show: secrets redacted, whitespace collapsed, bounded.

    Non-string messages (Mistral sends validation errors as objects) are shown as JSON.
    """
    return bounded_message(value if isinstance(value, str) else text_of(value))


def text_of(value: Any) -> str | None:
    """A message as text: strings as given, objects and arrays as JSON, anything else None."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return json_text(value)
    return None


def dump(detail: JsonObject) -> str:
    return orjson.dumps(detail).decode()
