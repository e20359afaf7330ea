"""Regenerate `src/refusals/_unicode.py`: where Python's case data differs from Rust's.

`lowercase_leading_word` must answer as Rust's `char::is_uppercase`, `char::is_lowercase`
and `char::to_lowercase` do, and Rust (1.95: Unicode 17) ships newer Unicode data than
Python 3.11 (Unicode 14). This script asks the compiled reference harness for Rust's
answer on every character, compares it with `str.isupper`, `str.islower` and `str.lower`
of this interpreter, and writes the differences as override tables.

Run from the repository root, with cargo and librust-serde-json-dev installed:

    python -m tests.differential.gen_unicode          # rewrite the module
    python -m tests.differential.gen_unicode --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import argparse
import sys
import unicodedata
from pathlib import Path

from tests.differential import _harness

MODULE = Path(__file__).resolve().parents[2] / "src" / "refusals" / "_unicode.py"


def _code_points(name: str, chars: list[str]) -> list[str]:
    if not chars:
        return [f"{name}: frozenset[str] = frozenset()"]
    lines = [f"{name}: frozenset[str] = frozenset(", "    map(", "        chr,", "        ("]
    for char in chars:
        # Characters newer than Python's Unicode data have no name here.
        entry = f"            0x{ord(char):04X},"
        label = unicodedata.name(char, "")
        lines.append(f"{entry}  # {label}" if label else entry)
    lines.extend(["        ),", "    )", ")"])
    return lines


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\U{code:08x}" if code > 0xFFFF else f"\\u{code:04x}"


def _literal(text: str) -> str:
    return '"' + "".join(map(_escape, text)) + '"'


def render(dump: _harness.UnicodeDump) -> str:
    """The module text for Rust's answers in `dump` against this interpreter's."""
    extra_upper: list[str] = []
    not_upper: list[str] = []
    extra_lower: list[str] = []
    not_lower: list[str] = []
    mappings: list[tuple[str, str]] = []
    for char in _harness.all_chars():
        facts = dump.of(char)
        if facts.is_uppercase != char.isupper():
            (extra_upper if facts.is_uppercase else not_upper).append(char)
        if facts.is_lowercase != char.islower():
            (extra_lower if facts.is_lowercase else not_lower).append(char)
        if dump.lowercase(char) != char.lower():
            mappings.append((char, dump.lowercase(char)))

    lines = [
        '"""Where Rust\'s character case data differs from Python\'s (generated; do not edit).',
        "",
        "`refusal.lowercase_leading_word` answers as Rust's `char::is_uppercase`,",
        "`char::is_lowercase` and `char::to_lowercase`; these tables correct `str.isupper`,",
        "`str.islower` and `str.lower` where the Unicode data of the two differ.",
        f"Rust: Unicode {dump.version}; Python: Unicode {unicodedata.unidata_version}.",
        "Regenerate with `python -m tests.differential.gen_unicode` (needs cargo).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f'RUST_UNICODE_VERSION = "{dump.version}"',
        f'PYTHON_UNICODE_VERSION = "{unicodedata.unidata_version}"',
        "",
        *_code_points("EXTRA_UPPERCASE", extra_upper),
        '"""Uppercase in Rust, not `str.isupper()` in Python."""',
        "",
        *_code_points("NOT_UPPERCASE", not_upper),
        '"""`str.isupper()` in Python, not uppercase in Rust."""',
        "",
        *_code_points("EXTRA_LOWERCASE", extra_lower),
        '"""Lowercase in Rust, not `str.islower()` in Python."""',
        "",
        *_code_points("NOT_LOWERCASE", not_lower),
        '"""`str.islower()` in Python, not lowercase in Rust."""',
        "",
        "LOWERCASE_MAPPINGS: dict[str, str] = {",
        *(f"    {_literal(char)}: {_literal(lowered)}," for char, lowered in mappings),
        "}",
        '"""Rust\'s `to_lowercase()` where it differs from Python\'s `str.lower()`."""',
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="only report whether it is current")
    args = parser.parse_args(argv)
    dump = _harness.unicode_dump(_harness.build())
    text = render(dump)
    current = MODULE.read_text(encoding="utf-8") if MODULE.exists() else ""
    if args.check:
        if text != current:
            print(f"{MODULE} is out of date; run python -m tests.differential.gen_unicode")
            return 1
        print(f"{MODULE} is current (Rust Unicode {dump.version})")
        return 0
    MODULE.write_text(text, encoding="utf-8")
    print(f"wrote {MODULE} (Rust Unicode {dump.version}, Python {unicodedata.unidata_version})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
