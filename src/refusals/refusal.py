"""The refusal notice and the content-filter notice, built in one place.

A refusal (`FinishReason.REFUSAL`) or a content-filter stop is terminal for the prompt
that caused it: resending the same prompt is refused again, and any partial output was
cut off by the provider. Every surface (the interactive chat, `exec` JSON output and
subagent results) stops on one and reports the notice built here, verbatim.

`refusal_reason` gives, byte for byte, the string of the reference module
(`refusal.rs`) for the same input; the Rust semantics it depends on (Unicode
White_Space, strict JSON, code-point counts) are reproduced explicitly below.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from refusals import _unicode
from refusals.model import FinishReason, LLMResponse, detail_type, shared_details

REFUSAL_NOTICE_PREFIX = "The model declined this request"
"""Leading text of every refusal notice; gates match it through `is_refusal_notice`."""

CONTENT_FILTER_NOTICE_PREFIX = "The provider's content filter blocked this request"
"""Leading text of every content-filter notice; gates match it through `is_blocked_notice`."""

CONTENT_FILTER_ALTERED_PREFIX = "The provider's content filter altered this response"
"""Leading text of the content-filter notice when the filter masked parts of the output and
delivered the rest (`StopDetails.altered`): nothing was blocked, but the answer is not the
model's own. Gates match it too."""

MAX_EXPLANATION_CHARS = 400
"""Upper bound, in code points, on explanation text copied from the response content."""

NEXT_STEP_SENTENCE = "The request was not retried; rephrase it or switch models."
"""Last sentence of both notices: what the user can do, since retrying cannot help."""

FALLBACK_DECLINED_SENTENCE = "The configured fallback model also declined."

# Unicode White_Space, which Rust's trim and split_whitespace use. Python's str.strip()
# and str.split() also strip U+001C..U+001F, which Rust keeps.
WHITESPACE = (
    "\t\n\v\f\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_WHITESPACE_SET = frozenset(WHITESPACE)
_ELLIPSIS = "..."


def is_refusal(response: LLMResponse) -> bool:
    """Whether `response` ended with a provider refusal."""
    return response.finish_reason is FinishReason.REFUSAL


def is_content_filtered(response: LLMResponse) -> bool:
    """Whether a provider's content filter blocked the input or output of `response`."""
    return response.finish_reason is FinishReason.CONTENT_FILTER


def is_refusal_notice(text: str) -> bool:
    """Whether `text` is a notice produced by `refusal_reason`."""
    return text.lstrip(WHITESPACE).startswith(REFUSAL_NOTICE_PREFIX)


def is_content_filter_notice(text: str) -> bool:
    """Whether `text` is a notice produced by `content_filter_reason`."""
    stripped = text.lstrip(WHITESPACE)
    return stripped.startswith((CONTENT_FILTER_NOTICE_PREFIX, CONTENT_FILTER_ALTERED_PREFIX))


def is_blocked_notice(text: str) -> bool:
    """Whether `text` is either notice: the request is terminal and must never be retried.

    Auto-continue, recovery and retry gates use this one predicate.
    """
    stripped = text.lstrip(WHITESPACE)
    return stripped.startswith(
        (REFUSAL_NOTICE_PREFIX, CONTENT_FILTER_NOTICE_PREFIX, CONTENT_FILTER_ALTERED_PREFIX)
    )


def refusal_explanation(response: LLMResponse) -> str | None:
    """The explanation `refusal_reason` quotes: the stop details', else the refusal text
    in the content (OpenAI's `message.refusal`), trimmed and bounded; None without one."""
    stop = _first_stop_details(list(shared_details(response.reasoning_details)))
    return _refusal_explanation(response, stop)


def _refusal_explanation(response: LLMResponse, stop: Any) -> str | None:
    explanation = _stop_field(stop, "explanation")
    if explanation is None:
        content = _trim(response.content or "")
        if content:
            explanation = _bounded_explanation(content)
    return explanation


def refusal_reason(response: LLMResponse) -> str:
    """User-facing explanation for a provider refusal.

    Anthropic reports the category and explanation in a `stop_details` reasoning detail,
    and fallback activity as a `fallback` detail, `fallback_message` usage iterations, or
    a `recommended_model` when the fallback could not run. Other providers only report
    the finish reason, sometimes with a refusal message in the content; that content,
    trimmed and bounded, is the explanation when `stop_details` has none.
    """
    details = list(shared_details(response.reasoning_details))
    stop = _first_stop_details(details)

    category = _stop_field(stop, "category")
    reason = REFUSAL_NOTICE_PREFIX
    if category is not None:
        reason += f" (category: {category})"

    reason = _append_explanation(reason, _refusal_explanation(response, stop))

    sentence = _fallback_sentence(response, details, _stop_field(stop, "recommended_model"))
    if sentence is not None:
        reason += " " + sentence
    return reason + " " + NEXT_STEP_SENTENCE


def content_filter_reason(response: LLMResponse) -> str:
    """User-facing explanation for a content-filter stop.

    States the categories and explanation the provider gave; when the filter only masked
    parts of the output (`altered`), says it altered the response, and how. The content
    is never used as the explanation: when a filter stops a response, the content is the
    cut-off output, not a message about the block.
    """
    stop = _first_stop_details(list(shared_details(response.reasoning_details)))
    categories = _stop_categories(stop)
    altered = _stop_field(stop, "altered")
    label = "category" if len(categories) == 1 else "categories"
    if altered is not None:
        # Masked, not blocked: say how, so the user knows the answer they see was changed.
        reason = f"{CONTENT_FILTER_ALTERED_PREFIX} ({altered}"
        reason += f"; {label}: {', '.join(categories)})" if categories else ")"
    else:
        reason = CONTENT_FILTER_NOTICE_PREFIX
        if categories:
            reason += f" ({label}: {', '.join(categories)})"
    explanation = _stop_field(stop, "explanation")
    if explanation is not None:
        explanation = _bounded_explanation(explanation)
    reason = _append_explanation(reason, explanation)
    return reason + " " + NEXT_STEP_SENTENCE


def notice(response: LLMResponse) -> str | None:
    """The notice for a refused or filtered response; None for any other finish."""
    if is_refusal(response):
        return refusal_reason(response)
    if is_content_filtered(response):
        return content_filter_reason(response)
    return None


def lowercase_leading_word(text: str) -> str:
    """Lowercase the first character when it starts an ordinary capitalised word.

    `Tool calls` becomes `tool calls`; `MCP server`, `X1 exploit`, `I cannot` and
    `It is` keep their case. Case follows Rust's rules and Unicode version, as in the
    reference (see `_is_uppercase`).
    """
    if not text:
        return text
    first = text[0]
    if first == "I" or not _is_uppercase(first):
        return text
    if len(text) > 1:
        second = text[1]
        if not (_is_lowercase(second) or second in _WHITESPACE_SET):
            return text
    return _to_lowercase(first) + text[1:]


# Rust's `char::is_uppercase`, `char::is_lowercase` and `char::to_lowercase` (Unicode
# Uppercase, Lowercase and the full lowercase mapping, without context) for one character.
# Python's str methods give the same answers from older Unicode data; `_unicode` lists the
# characters where the two disagree. ASCII never does, and is answered first.


def _is_uppercase(char: str) -> bool:
    if char.isascii():
        return "A" <= char <= "Z"
    if char in _unicode.EXTRA_UPPERCASE:
        return True
    return char.isupper() and char not in _unicode.NOT_UPPERCASE


def _is_lowercase(char: str) -> bool:
    if char.isascii():
        return "a" <= char <= "z"
    if char in _unicode.EXTRA_LOWERCASE:
        return True
    return char.islower() and char not in _unicode.NOT_LOWERCASE


def _to_lowercase(char: str) -> str:
    if char.isascii():
        return char.lower()
    return _unicode.LOWERCASE_MAPPINGS.get(char) or char.lower()


def truncate_within(text: str, max_len: int, ellipsis: str) -> str:
    """`text` if it has at most `max_len` code points, else cut with `ellipsis` to fit."""
    if len(text) <= max_len:
        return text
    keep = max(max_len - len(ellipsis), 0)
    return text[:keep] + ellipsis


def _trim(text: str) -> str:
    return text.strip(WHITESPACE)


def _split_whitespace(text: str) -> list[str]:
    words: list[str] = []
    start = -1
    for index, char in enumerate(text):
        if char in _WHITESPACE_SET:
            if start >= 0:
                words.append(text[start:index])
                start = -1
        elif start < 0:
            start = index
    if start >= 0:
        words.append(text[start:])
    return words


def _collapse_whitespace(text: str) -> str:
    # Fast path: str.split() splits on a superset of White_Space (it adds
    # U+001C..U+001F), so when none of those four occur it gives Rust's answer.
    if any(sep in text for sep in "\x1c\x1d\x1e\x1f"):
        return " ".join(_split_whitespace(text))
    return " ".join(text.split())


def _bounded_explanation(content: str) -> str:
    # Collapse whitespace so a multi-paragraph message reads as one sentence in the notice.
    return truncate_within(_collapse_whitespace(content), MAX_EXPLANATION_CHARS, _ELLIPSIS)


def _ends_with_terminal_punctuation(text: str) -> bool:
    trimmed = text.rstrip(WHITESPACE)
    return trimmed.endswith((".", "!", "?"))


def _append_explanation(reason: str, explanation: str | None) -> str:
    if explanation is None:
        return reason + "."
    reason += ": " + lowercase_leading_word(explanation)
    if not _ends_with_terminal_punctuation(reason):
        reason += "."
    return reason


def _first_stop_details(details: Iterable[Any]) -> Any:
    for detail in details:
        if detail_type(detail) == "stop_details":
            return detail
    return None


def _stop_field(stop: Any, name: str) -> str | None:
    if stop is None:
        return None
    value = stop.get(name)
    if not isinstance(value, str):
        return None
    value = _trim(value)
    return value or None


def _stop_categories(stop: Any) -> list[str]:
    if stop is None:
        return []
    raw = stop.get("categories")
    categories: list[str] = []
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, str):
                name = _trim(item)
                if name and name not in categories:
                    categories.append(name)
    if not categories:
        category = _stop_field(stop, "category")
        if category is not None:
            categories.append(category)
    return categories


def _fallback_sentence(
    response: LLMResponse, details: list[Any], recommended_model: str | None
) -> str | None:
    # Fallback activity is stated only when the response shows a fallback ran or was
    # recommended; a refusal without those signals says nothing about fallbacks.
    served = any(detail_type(d) == "fallback" for d in details) or bool(
        response.fallback_iterations
    )
    if served:
        return FALLBACK_DECLINED_SENTENCE
    if recommended_model is not None:
        return f"A fallback to `{recommended_model}` was recommended but could not run."
    return None
