"""Make untrusted provider text safe to show on a terminal or in a one-line table cell.

Provider text (refusal explanations, categories, model names, error messages) is written
by a third party and may carry terminal control sequences: a cursor move or screen clear
that hides what came before, an OSC 8 hyperlink whose target differs from its text, an
OSC 52 clipboard write, bidi overrides that show text in another order than it is read,
zero-width characters that hide words. Every surface renders such text through
`sanitize`; the library's own values (the notice included) stay byte-exact, so only the
rendering changes.
"""

from __future__ import annotations

import re

__all__ = ["ELLIPSIS", "sanitize"]

ELLIPSIS = "\u2026"
"""Marks text that `sanitize(..., max_chars=N)` cut for display."""

# One pass, longest forms first. 7-bit and 8-bit (C1) introducers are both handled:
# some terminals act on U+009B and friends as CSI, OSC, DCS… even in UTF-8 mode.
# - CSI: ESC [ or U+009B, parameter bytes, intermediate bytes, one final byte.
# - OSC: ESC ] or U+009D up to BEL or ST (ESC \ or U+009C); an unterminated one runs to
#   the end of the text, as it would swallow it on a terminal.
# - DCS, SOS, PM, APC (ESC P X ^ _ or U+0090 U+0098 U+009E U+009F) up to ST.
# - Any other escape: ESC, intermediates, one final byte (ESC c resets the terminal,
#   ESC 7 / ESC 8 save and restore the cursor, ESC # 8 fills the screen).
# - Then every control left over: C0 but tab and newline, DEL, C1; bidi embeddings,
#   overrides and isolates and the Arabic letter mark; zero-width characters and the
#   byte-order mark; line and paragraph separators; Unicode tag characters (invisible
#   ASCII look-alikes used to smuggle text past a reader).
_UNSAFE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f"
    "\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"
    "\U000e0000-\U000e007f]"
)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_LINE_BREAK = re.compile(r"\r\n?")
_SINGLE_LINE = str.maketrans({"\n": " ", "\t": " "})


def sanitize(text: str, *, max_chars: int | None = None, single_line: bool = False) -> str:
    """`text` without terminal controls, invisible or reordering characters.

    Tabs and newlines stay (a CR or CRLF becomes a newline) unless `single_line`, which
    turns each into a space, for table cells whose rows a newline would forge. Lone
    surrogates become U+FFFD so the text can always be encoded. `max_chars` cuts the
    result to at most that many characters, the last one an ellipsis. Idempotent.
    """
    if max_chars is not None and max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, not {max_chars}")
    if "\r" in text:
        text = _LINE_BREAK.sub("\n", text)
    text = _UNSAFE.sub("", text)
    if _LONE_SURROGATE.search(text):
        text = _LONE_SURROGATE.sub("\ufffd", text)
    if single_line:
        text = text.translate(_SINGLE_LINE)
    if max_chars is not None and len(text) > max_chars:
        text = text[: max_chars - 1] + ELLIPSIS
    return text
