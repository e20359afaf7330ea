"""The public sanitiser: terminal controls, invisible and reordering characters removed."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

import refusals
from refusals.sanitize import ELLIPSIS, sanitize

# What must never reach a terminal: ESC, every C0 control but tab and newline, DEL, C1,
# bidi controls, zero-width characters, line separators, tag characters.
FORBIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"
    "\U000e0000-\U000e007f\ud800-\udfff]"
)
# Printable text: letters, marks, numbers, punctuation, symbols and plain spaces.
printable = st.text(
    st.characters(categories=["L", "M", "N", "P", "S", "Zs"]) | st.sampled_from("\n\t")
)
# Text built to be hostile: printable runs mixed with control introducers and pieces.
hostile_pieces = st.sampled_from(
    [
        "\x1b",
        "\x1b[",
        "\x1b]",
        "\x1bP",
        "\x1b\\",
        "\x07",
        "\x9b",
        "\x9c",
        "\x9d",
        "\x90",
        "\r",
        "31m",
        ";",
        "8;;http://x",
        "52;c;aGk=",
        "\u202e",
        "\u2066",
        "\u200b",
        "\ufeff",
        "\u2028",
        "\x85",
        "\U000e0041",
        "\ud83d",
    ]
)
hostile = st.lists(hostile_pieces | st.text(max_size=5), max_size=20).map("".join)


def test_sanitize_is_public_from_the_package() -> None:
    assert refusals.sanitize is sanitize


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("a\x1b[2J\x1b[1;1Hb", "ab"),  # clear screen, cursor home
        ("\x1b[31mred\x1b[0m", "red"),
        ("\x1b]0;pwned\x07title", "title"),  # window title, BEL-terminated
        ("\x1b]8;;https://evil.example\x1b\\docs\x1b]8;;\x1b\\", "docs"),  # hyperlink
        ("\x1b]52;c;cm0gLXJmIH4=\x07copied", "copied"),  # clipboard write
        ("\x1bP1$r0m\x1b\\dcs", "dcs"),
        ("\x1bX sos \x1b\\|\x1b^ pm \x1b\\|\x1b_ apc \x1b\\", "||"),
        ("\x1bcreset", "reset"),  # full reset
        ("\x1b7save\x1b8", "save"),
        ("\x1b#8fill", "fill"),
        ("8-bit \x9b2Jcsi", "8-bit csi"),
        ("8-bit \x9d0;t\x9cosc", "8-bit osc"),
        ("nel\x85here", "nelhere"),
        ("abc\u202edcba\u202c", "abcdcba"),  # right-to-left override
        ("\u2066isolate\u2069 \u2067rtl\u2069 \u2068first\u2069", "isolate rtl first"),
        ("zero\u200bwidth\u200c\u200d\u2060\ufeffjoin", "zerowidthjoin"),
        ("lrm\u200e\u200f\u061cmarks", "lrmmarks"),
        ("line\u2028para\u2029end", "lineparaend"),
        ("bell\x07 back\x08space del\x7f", "bell backspace del"),
        ("tag\U000e0069\U000e0067smuggled", "tagsmuggled"),
        ("crlf\r\nand\rcr", "crlf\nand\ncr"),
        ("lone \ud83d surrogate", "lone \ufffd surrogate"),
        ("tabs\tand\nnewlines stay", "tabs\tand\nnewlines stay"),
    ],
)
def test_each_kind_of_control_is_removed_and_the_text_around_it_kept(raw: str, clean: str) -> None:
    assert sanitize(raw) == clean


def test_single_line_turns_newlines_and_tabs_into_spaces() -> None:
    assert sanitize("model\nverdict  stop\r\n\tx", single_line=True) == "model verdict  stop  x"


def test_max_chars_cuts_with_an_ellipsis_and_leaves_short_text_alone() -> None:
    assert sanitize("abcdefgh", max_chars=5) == "abcd" + ELLIPSIS
    assert sanitize("abcde", max_chars=5) == "abcde"
    assert sanitize("\x1b[31mabcde\x1b[0m", max_chars=5) == "abcde"


def test_max_chars_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_chars must be at least 1, not 0"):
        sanitize("x", max_chars=0)


@given(hostile | st.text(), st.booleans())
def test_output_never_contains_an_escape_a_c1_control_or_a_bidi_control(
    text: str, single_line: bool
) -> None:
    out = sanitize(text, single_line=single_line)
    assert FORBIDDEN.search(out) is None, repr(out)
    if single_line:
        assert "\n" not in out and "\t" not in out


@given(hostile | st.text(), st.booleans(), st.none() | st.integers(1, 30))
def test_sanitizing_twice_changes_nothing_more(
    text: str, single_line: bool, max_chars: int | None
) -> None:
    once = sanitize(text, single_line=single_line, max_chars=max_chars)
    assert sanitize(once, single_line=single_line, max_chars=max_chars) == once


@given(printable)
def test_plain_printable_text_is_unchanged(text: str) -> None:
    assert sanitize(text) == text


@given(hostile | st.text(), st.integers(1, 40))
def test_a_cut_result_is_never_longer_than_max_chars(text: str, max_chars: int) -> None:
    out = sanitize(text, max_chars=max_chars)
    assert len(out) <= max_chars
    if len(sanitize(text)) > max_chars:
        assert out.endswith(ELLIPSIS)
