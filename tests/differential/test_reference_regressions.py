"""Cases where the port once differed from the Rust reference, with the reference's answer.

Each expected string was produced by the compiled reference (`rust/`, serde_json with
default features, Rust 1.95 / Unicode 17). They run everywhere, without cargo, so CI
keeps them fixed even where the differential test is skipped.
"""

from __future__ import annotations

import pytest

from refusals import FinishReason, LLMResponse, refusal_reason

PLAIN = (
    "The model declined this request. The request was not retried; rephrase it or switch models."
)
CYBER = (
    "The model declined this request (category: cyber). "
    "The request was not retried; rephrase it or switch models."
)


def _stop_details(extra: str) -> str:
    return '{"type":"stop_details","category":"cyber",' + extra + "}"


def _arrays(depth: int) -> str:
    return "[" * depth + "0" + "]" * depth


def _reason(content: str | None, details: list[str] | None = None) -> str:
    response = LLMResponse(
        content=content, finish_reason=FinishReason.REFUSAL, reasoning_details=details
    )
    return refusal_reason(response)


@pytest.mark.parametrize(
    ("detail", "expected"),
    [
        # serde_json fails on reaching 128 levels of nesting; 127 parse.
        pytest.param(_stop_details('"n":' + _arrays(126)), CYBER, id="depth-127"),
        pytest.param(_stop_details('"n":' + _arrays(127)), PLAIN, id="depth-128"),
        # The too-deep value is replaced by a duplicate key, but serde_json already failed.
        pytest.param(
            _stop_details('"n":' + _arrays(127) + ',"n":0'), PLAIN, id="deep-duplicate-key"
        ),
        # The same for a lone surrogate, on the path that parses numbers as serde_json does
        # (taken because of the 21-digit run in "id").
        pytest.param(
            _stop_details('"n":"\\ud800","n":"ok","id":"123456789012345678901"'),
            PLAIN,
            id="surrogate-in-replaced-value",
        ),
        # serde_json's float arithmetic (no float_roundtrip) differs from correct rounding
        # near f64::MAX: an overflow is an error, and the whole detail is skipped.
        pytest.param(_stop_details('"n":1.7976931348623157e308'), CYBER, id="f64-max"),
        pytest.param(_stop_details('"n":1.7976931348623158e308'), PLAIN, id="f64-max-rounded-up"),
        pytest.param(_stop_details('"n":1' + "0" * 308), CYBER, id="309-digit-1e308"),
        pytest.param(
            _stop_details('"n":179769313486231570' + "0" * 291), PLAIN, id="309-digit-max"
        ),
        pytest.param(_stop_details('"n":179769313486231582e291'), CYBER, id="finite-to-serde"),
        pytest.param(_stop_details('"n":1e400'), PLAIN, id="1e400"),
        pytest.param(_stop_details('"n":0e400'), CYBER, id="0e400"),
        # An integer part past u64 followed by a one-digit fraction: serde_json's check for
        # "a digit after the point" misfires and rejects the valid number.
        pytest.param(_stop_details('"n":18446744073709551616.3'), PLAIN, id="u64-overflow-.3"),
        pytest.param(_stop_details('"n":18446744073709551616.9'), CYBER, id="u64-overflow-.9"),
        pytest.param(_stop_details('"n":18446744073709551616.33'), CYBER, id="u64-overflow-.33"),
    ],
)
def test_details_are_skipped_exactly_where_serde_json_fails(detail: str, expected: str) -> None:
    assert _reason(None, [detail]) == expected


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        # Uppercase since Unicode 16; lowercases to U+0264.
        pytest.param("\ua7cbx is new", "\u0264x is new", id="U+A7CB"),
        pytest.param("\U00010d50\U00010d70", "\U00010d70\U00010d70", id="U+10D50"),
        # Lowercase in Python's Unicode 14, not in Rust's Unicode 17.
        pytest.param("B\u0295x", "B\u0295x", id="U+0295"),
        # Lowercase only in newer Unicode.
        pytest.param("A\ua7f2x", "a\ua7f2x", id="U+A7F2"),
    ],
)
def test_leading_word_follows_rusts_unicode_version(content: str, expected: str) -> None:
    assert _reason(content) == (
        f"The model declined this request: {expected}. "
        "The request was not retried; rephrase it or switch models."
    )
