"""The word pre-filters in front of the error-message patterns are exact: a message the
pre-filter turns away is one the pattern would not have matched, under case-insensitive
matching too (the non-ASCII letters that match ASCII ones: İ, ı, ſ, the Kelvin sign; that
the fold takes every such letter is checked over all of Unicode in
test_hardening_secrets.py)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from refusals.providers import _common
from refusals.providers._common import POLICY_BLOCK, may_contain, says_blocked
from refusals.providers.openai_chat import errors as chat_errors

WORDS = [
    "blocked", "flagged", "filtered", "violates", "violation", "against", "content",
    "filter", "filters", "content_filter", "guardrail", "safety", "moderation", "usage",
    "policy", "policies", "acceptable use", "our", "the", "this", "request", "has", "been",
    "by", "incorrect", "invalid", "api", "key", "is", "missing", "disabled", "credits",
    "credit", "spending", "limit", "authentication", "fails", "no", "auth", "credentials",
    "insufficient", "balance", "system", "as", "potentially", "management", "\u0130",
    "\u0131", "\u017f", "\u212a", "SAFETY", "BLOCKED", "Ag\u0131inst", "\u017fafety",
    "bloc\u212aed", "Po\u013ficy", "-", "_", ".", ",", "\n",
]  # fmt: skip


def _case(draw: st.DrawFn, word: str) -> str:
    return "".join(c.upper() if draw(st.booleans()) else c for c in word)


@st.composite
def messages(draw: st.DrawFn) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), max_size=14))
    cased = [_case(draw, word) for word in words]
    separators = draw(st.lists(st.sampled_from([" ", "  ", "", "-", " a "]), min_size=len(cased)))
    return "".join(w + s for w, s in zip(cased, separators, strict=False))


def _matches(pattern: re.Pattern[str], text: str) -> bool:
    return pattern.search(text) is not None


@settings(max_examples=400, deadline=None)
@given(messages())
def test_the_policy_words_filter_is_exact(text: str) -> None:
    assert says_blocked(text) == _matches(POLICY_BLOCK, text)
    if _matches(POLICY_BLOCK, text):
        assert may_contain(text, _common._POLICY_WORDS)


@settings(max_examples=400, deadline=None)
@given(messages())
def test_the_chat_error_word_filters_are_exact(text: str) -> None:
    if _matches(chat_errors._AUTH_MESSAGE, text):
        assert may_contain(text, chat_errors._AUTH_WORDS)
    if _matches(chat_errors._POLICY_MESSAGE, text):
        assert may_contain(text, chat_errors._POLICY_MESSAGE_WORDS)


def test_known_wordings_still_match() -> None:
    assert says_blocked("This request has been blocked by our content filters.")
    assert says_blocked("Output BLOC\u212aED by content filtering policy")
    assert says_blocked("This request violates our Usage Policy")
    assert not says_blocked("Rate limit reached for requests")
    assert may_contain("Incorrect API key provided", chat_errors._AUTH_WORDS)
    assert may_contain("You exceeded your \u017fpending limit", chat_errors._AUTH_WORDS)
    assert not may_contain("The server had an error", chat_errors._AUTH_WORDS)
