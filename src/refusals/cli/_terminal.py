"""Showing untrusted provider text on a terminal."""

from __future__ import annotations

import re

# CSI, OSC, DCS/SOS/PM/APC strings and two-byte escapes, then any C0/C1 control left
# over except newline and tab: provider text must not move the cursor, retitle the
# window or hide what follows.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b[@-Z\\-_]"
    r"|\x9b[0-?]*[ -/]*[@-~]"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def sanitize(text: str) -> str:
    """`text` with terminal control sequences and control characters removed."""
    return _ESCAPES.sub("", text)
