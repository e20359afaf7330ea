"""`refusal_reason` against the Rust reference itself, on thousands of generated cases.

The reference module is compiled (see `_harness.py`) and every case goes through both
implementations; the strings must be equal byte for byte. Cases come from a seeded
generator aimed at the places a port goes wrong: Unicode whitespace and case, the
400-character bound, terminal punctuation, and JSON that serde_json rejects but lenient
parsers accept (or the reverse). Set REFUSALS_DIFF_SEED / REFUSALS_DIFF_CASES to explore
further. Skipped, with the reason, where cargo or the offline serde_json sources are
missing: CI does not depend on a Rust toolchain.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from refusals import FinishReason, LLMResponse, Usage, refusal_reason
from refusals.refusal import WHITESPACE, lowercase_leading_word
from tests.differential import _harness

SEED = int(os.environ.get("REFUSALS_DIFF_SEED", "20240611"))
RANDOM_CASES = int(os.environ.get("REFUSALS_DIFF_CASES", "8000"))
REFERENCE_SOURCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "refusal.rs"

Case = dict[str, Any]

# --- alphabets --------------------------------------------------------------------------

RUST_WHITESPACE: list[str] = list(WHITESPACE)
# Separators and format characters that are not White_Space (Python's split() takes the first four).
NOT_RUST_WHITESPACE: list[str] = list("\x1c\x1d\x1e\x1f\u200b\u180e\ufeff\u2060")
SPACES: list[str] = RUST_WHITESPACE + NOT_RUST_WHITESPACE
UPPER_STARTS: list[str] = [
    *"ABCTXZ",
    "I",
    "İ",  # lowercases to two characters: i + U+0307
    "Σ",
    "Ǆ",  # Lu whose titlecase differs
    "ǅ",  # Lt: not Uppercase, so kept
    "ẞ",
    "Ω",  # U+2126 OHM SIGN, lowercases to ω
    "K",  # U+212A KELVIN SIGN, lowercases to k
    "Å",  # U+212B ANGSTROM SIGN
    "Ⅰ",  # U+2160, Nl but Uppercase
    "Ⓐ",  # U+24B6, So but Uppercase
    "ᾈ",  # Lt with special casing
    "Ꟈ",  # U+A7C7 (Unicode 13)
    "\ua7cb",  # U+A7CB: Uppercase only since Unicode 16
    "\ua7dc",
    "\u1c89",
    "\U00010d50",  # Garay capital (Unicode 16)
    "\U00016ea0",  # Beria Erfe capital (Unicode 17)
    "𝐀",  # U+1D400 math bold capital: Uppercase, no lowercase mapping
    "Ａ",  # fullwidth
]
LOWER_SECONDS: list[str] = [
    *"aenz",
    "ß",
    "ª",  # Lo with Other_Lowercase
    "ʰ",  # modifier letter, Lowercase
    "\u0345",  # combining, Other_Lowercase
    "\u0295",  # Lowercase in Python's Unicode 14, not in Rust's
    "\u10fc",  # Lowercase only in newer Unicode
    "\ua7f2",
    "\U00010d70",
    "ς",
    "ǆ",
    "𝐚",
]
OTHER_SECONDS: list[str] = [*"AZI1.,-'’:", "\u0301", "ǅ", "😀", "中", "\x00", "\x7f"]
TERMINALS: list[str] = [".", "!", "?", "...", "…", "。", "?!", ".)", ";", ":", "", "..", "!?."]
WORDS: list[str] = [
    "help",
    "that",
    "Request",
    "policy",
    "MCP",
    "cyber",
    "malware",
    "I",
    "can't",
    "Sorry",
    "naïve",
    "İstanbul",
    "ΣΟΦΙΑ",
    "ǅemal",
    "中文",
    "😀",
    "x",
]


def random_char(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.35:
        return chr(rng.randrange(0x20, 0x7F))
    if roll < 0.45:
        return rng.choice(SPACES)
    if roll < 0.6:
        return rng.choice(UPPER_STARTS + LOWER_SECONDS + OTHER_SECONDS)
    if roll < 0.75:
        return chr(rng.randrange(0xA0, 0x250))
    if roll < 0.9:
        code = rng.randrange(0x250, 0x10000)
        return chr(code) if not 0xD800 <= code <= 0xDFFF else "\ufffd"
    return chr(rng.randrange(0x10000, 0x110000))


def random_text(rng: random.Random, max_len: int = 30) -> str:
    return "".join(random_char(rng) for _ in range(rng.randrange(max_len + 1)))


def spaces(rng: random.Random, most: int = 3) -> str:
    return "".join(rng.choice(SPACES) for _ in range(rng.randrange(most + 1)))


def sentence(rng: random.Random) -> str:
    """Text shaped like a refusal: a leading word, a body, an ending, odd whitespace."""
    roll = rng.random()
    if roll < 0.5:
        start = rng.choice(UPPER_STARTS)
        second = rng.choice(LOWER_SECONDS + OTHER_SECONDS + SPACES + [""])
        head = start + second
    elif roll < 0.8:
        head = rng.choice(WORDS)
    else:
        head = random_text(rng, 3)
    body = ""
    for _ in range(rng.randrange(6)):
        body += (rng.choice(SPACES) or " ") + rng.choice([*WORDS, random_text(rng, 6)])
    return spaces(rng) + head + body + rng.choice(TERMINALS) + spaces(rng)


def sized_content(rng: random.Random) -> str:
    """Content whose collapsed length lands around the 400-code-point bound."""
    target = rng.randrange(394, 407)
    words: list[str] = []
    length = -1
    while length < target:
        word = rng.choice([*WORDS, "word", random_text(rng, 5).strip(WHITESPACE) or "w"])
        words.append(word)
        length += len(word) + 1
    text = rng.choice(WORDS) + " " + " ".join(words)
    collapsed_cut = text[: target - rng.randrange(0, 4)]
    tail = rng.choice(TERMINALS)
    joined = collapsed_cut.rstrip(WHITESPACE) + tail
    # Re-spread whitespace so collapsing has work to do, without changing the count.
    spread = "".join(
        c if c != " " or rng.random() < 0.7 else rng.choice(RUST_WHITESPACE) * rng.randrange(1, 3)
        for c in joined
    )
    return spaces(rng) + spread + spaces(rng)


def random_content(rng: random.Random) -> str | None:
    roll = rng.random()
    if roll < 0.1:
        return None
    if roll < 0.2:
        return rng.choice(["", spaces(rng, 5), "\x1c", " \x1f ", "\u3000.\u3000"])
    if roll < 0.45:
        return sized_content(rng)
    if roll < 0.55:
        return random_text(rng, 40)
    if roll < 0.6:
        # Long enough to be cut, with a multi-paragraph shape.
        return "\n\n".join(sentence(rng) for _ in range(rng.randrange(20, 60)))
    return sentence(rng)


# --- JSON texts -------------------------------------------------------------------------

# Number tokens around the edges of serde_json's (non-float_roundtrip) parser: values it
# computes as infinite are errors, so the whole detail is skipped.
NUMBER_TOKENS = [
    "0",
    "-0",
    "1.5",
    "-12e3",
    "1E+2",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "-9223372036854775809",
    "1" + "0" * 30,
    "1e400",
    "-1e400",
    "1E400",
    "1e-400",
    "0e400",
    "0.0e99999999999",
    "1e99999999999",
    "1e-99999999999",
    "1e308",
    "1e309",
    "1.7976931348623157e308",
    "1.7976931348623158e308",
    "1.7976931348623159e308",
    "179769313486231582e291",  # infinite when rounded correctly, finite to serde_json
    "179769313486231599e291",
    "18446744073709551616.3",  # serde_json rejects: see refusals.model._serde_number
    "18446744073709551616.9",
    "-1.7976931348623157e308",
    "179769313486231570" + "0" * 291,
    "179769313486231580" + "0" * 291,
    "17976931348623157" + "0" * 292,
    "1" + "0" * 308,
    "1" + "0" * 309,
    "9" * 309,
    "0." + "0" * 400 + "1e400",
    "0." + "0" * 30 + "1e330",
    "123456789012345678901234567890e290",
    "1.0000000000000000000000000001e308",
    "2.2250738585072014e-308",
    "4.9e-324",
]
INVALID_NUMBER_TOKENS = [
    "NaN",
    "-NaN",
    "Infinity",
    "-Infinity",
    "01",
    "1.",
    ".5",
    "+1",
    "1e",
    "0x10",
    "1_000",
]
STRING_TOKENS = [
    '"plain"',
    '"\\ud800"',
    '"\\udc00"',
    '"a\\ud800b"',
    '"\\ud800\\u0041"',
    '"\\ud83d\\ude00"',
    '"\\udc00\\ud800"',
    '"\\u0000"',
    '"\\/"',
    '"\\x41"',
    '"tab\there"',
    '"nl\\nok"',
    '"\x7f"',
    '"\x1f"',
]


def json_string(rng: random.Random, text: str) -> str:
    return json.dumps(text, ensure_ascii=rng.random() < 0.5)


def random_digits(rng: random.Random, count: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(count))


def number_token(rng: random.Random) -> str:
    """A number literal, valid JSON, shaped to reach serde_json's overflow paths."""
    if rng.random() < 0.4:
        return rng.choice(NUMBER_TOKENS)
    length = rng.choice([rng.randrange(1, 26), rng.randrange(300, 312)])
    token = ("-" if rng.random() < 0.2 else "") + rng.choice("123456789")
    token += rng.choice(["18446744073709551", "9" * 18, ""]) if length > 17 else ""
    token += random_digits(rng, max(length - len(token.lstrip("-")), 0))
    if rng.random() < 0.5:
        token += "." + random_digits(rng, rng.choice([1, 2, rng.randrange(1, 30)]))
    if rng.random() < 0.6:
        power = rng.choice([rng.randrange(20), rng.randrange(280, 330), 2**31 - 1, 2**31, 10**12])
        sign = rng.choice(["", "+", "-"])
        token += rng.choice("eE") + sign + "0" * rng.choice([0, 0, 2]) + str(power)
    return token


def json_scalar(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.35:
        return number_token(rng)
    if roll < 0.4:
        return rng.choice(INVALID_NUMBER_TOKENS)
    if roll < 0.6:
        return rng.choice(STRING_TOKENS)
    if roll < 0.7:
        return rng.choice(["true", "false", "null", "[]", "{}", "[1,2]", '{"k":"v"}'])
    return json_string(rng, random_text(rng, 8))


def nested(depth: int, kind: str, inner: str = "0") -> str:
    """`depth` levels of arrays or objects (or both alternating) around `inner`."""
    out = inner
    for level in range(depth):
        if kind == "array" or (kind == "mixed" and level % 2):
            out = "[" + out + "]"
        else:
            out = '{"n":' + out + "}"
    return out


def text_field(rng: random.Random, good: Callable[[], str]) -> str:
    """A field value: usually a JSON string, sometimes another JSON type."""
    roll = rng.random()
    if roll < 0.75:
        return json_string(rng, good())
    if roll < 0.8:
        return json_string(rng, rng.choice(["", spaces(rng, 4), "\x1c", "\u3000\u3000"]))
    return rng.choice(["1", "0", "-1.5", "null", "true", "false", '["cyber"]', '{"a":"b"}'])


def json_object(rng: random.Random, members: list[tuple[str, str]]) -> str:
    sep = rng.choice([",", ", ", " ,\n", ",\t"])
    colon = rng.choice([":", ": ", " : "])
    body = sep.join(
        f"{key if key.startswith(chr(34)) else json_string(rng, key)}{colon}{value}"
        for key, value in members
    )
    return "{" + body + "}"


def type_token(rng: random.Random, kind: str) -> str:
    roll = rng.random()
    if roll < 0.85:
        return json.dumps(kind)
    if roll < 0.9:
        # The same string spelt with escapes: equal once decoded.
        return '"' + "".join(f"\\u{ord(c):04x}" if rng.random() < 0.4 else c for c in kind) + '"'
    return rng.choice(
        [json.dumps(kind.upper()), json.dumps(" " + kind), json.dumps(kind + " "), "1", "null"]
    )


def stop_details_text(rng: random.Random) -> str:
    members: list[tuple[str, str]] = [("type", type_token(rng, "stop_details"))]
    if rng.random() < 0.8:
        members.append(("category", text_field(rng, lambda: rng.choice(CATEGORIES))))
    if rng.random() < 0.7:
        members.append(("explanation", text_field(rng, lambda: sentence(rng))))
    if rng.random() < 0.3:
        members.append(("explanation", text_field(rng, lambda: sized_content(rng))))
    if rng.random() < 0.35:
        members.append(("recommended_model", text_field(rng, lambda: rng.choice(MODELS))))
    if rng.random() < 0.2:
        members.append(("fallback_credit_token", json_string(rng, "tok_" + random_text(rng, 4))))
    if rng.random() < 0.2:
        members.append(("fallback_has_prefill_claim", rng.choice(["true", "false", "null"])))
    if rng.random() < 0.3:
        members.append(("extra", json_scalar(rng)))
    if rng.random() < 0.08:
        members.append(("deep", nested(rng.randrange(120, 132), rng.choice(NEST_KINDS))))
    if rng.random() < 0.15:
        # Duplicate keys: the last occurrence wins.
        name = rng.choice(["type", "category", "explanation", "recommended_model"])
        value = (
            type_token(rng, rng.choice(["stop_details", "fallback", "message"]))
            if name == "type"
            else text_field(rng, lambda: rng.choice(CATEGORIES))
        )
        members.append((name, value))
    if rng.random() < 0.3:
        rng.shuffle(members)
    return json_object(rng, members)


def fallback_text(rng: random.Random) -> str:
    members = [
        ("type", type_token(rng, "fallback")),
        ("from", json_object(rng, [("model", json_string(rng, rng.choice(MODELS)))])),
        ("to", json_object(rng, [("model", json_string(rng, rng.choice(MODELS)))])),
    ]
    if rng.random() < 0.2:
        members.append(("trigger", '{"type":"refusal"}'))
    return json_object(rng, members)


def other_detail_text(rng: random.Random) -> str:
    kind = rng.choice(["reasoning.text", "message", "thinking", "fallback_message"])
    return json_object(rng, [("type", type_token(rng, kind)), ("text", json_scalar(rng))])


def corrupt(rng: random.Random, text: str) -> str:
    """Turn a detail into something serde_json may reject (and a lenient parser accept)."""
    mutation = rng.randrange(13)
    if mutation == 0 and text.endswith("}"):
        return text[:-1] + ",}"  # trailing comma
    if mutation == 1 and text.endswith("}"):
        return text[:-1] + ',"x":' + rng.choice(INVALID_NUMBER_TOKENS) + "}"
    if mutation == 2 and text.endswith("}"):
        return text[:-1] + ',"x":' + number_token(rng) + "}"
    if mutation == 3 and text.endswith("}"):
        return text[:-1] + ',"x":' + rng.choice(STRING_TOKENS) + "}"
    if mutation == 4:
        return rng.choice(["\ufeff", " ", "\n", "\t", "\r", "\x0c", "\xa0", "\u3000"]) + text
    if mutation == 5:
        return text + rng.choice([" ", "\n", "\r\n", "\x0c", "\xa0", "x", "}", "// c", "\x00"])
    if mutation == 6:
        return text[: rng.randrange(len(text) + 1)]  # truncated
    if mutation == 7:
        return "/* c */" + text
    if mutation == 8:
        return text.replace('"', "'", 2)
    if mutation == 9:
        return nested(rng.randrange(124, 131), "array", text)
    if mutation == 10 and text.endswith("}"):
        return text[:-1] + ',"deep":' + nested(rng.randrange(124, 131), "mixed") + "}"
    if mutation == 11:
        return text + text  # two documents
    return rng.choice(["", "null", "1", '"stop_details"', "[]", "{}", '[{"type":"stop_details"}]'])


def random_details(rng: random.Random) -> list[str] | None:
    roll = rng.random()
    if roll < 0.1:
        return None
    if roll < 0.15:
        return []
    details: list[str] = []
    for _ in range(rng.randrange(1, 6)):
        pick = rng.random()
        if pick < 0.5:
            text = stop_details_text(rng)
        elif pick < 0.7:
            text = fallback_text(rng)
        else:
            text = other_detail_text(rng)
        if rng.random() < 0.1 and text.endswith("}"):
            # A long digit run, even inside a string, sends the Python side down its
            # serde-arithmetic parser: cover that parser with every other mutation too.
            text = text[:-1] + ',"id":"' + random_digits(rng, 24) + '"}'
        if rng.random() < 0.25:
            text = corrupt(rng, text)
        details.append(text)
    return details


def random_iterations(rng: random.Random) -> list[Any] | None:
    roll = rng.random()
    if roll < 0.4:
        return None
    if roll < 0.5:
        return []
    iterations: list[Any] = []
    for _ in range(rng.randrange(1, 5)):
        pick = rng.random()
        if pick < 0.7:
            kind: Any = rng.choice(ITERATION_TYPES)
            item: Any = {"type": kind, "input_tokens": rng.randrange(100), "output_tokens": 0}
            if rng.random() < 0.3:
                item["model"] = rng.choice(MODELS)
        else:
            item = rng.choice(
                ["fallback_message", 1, None, [{"type": "fallback_message"}], {"kind": "x"}]
            )
        iterations.append(item)
    return iterations


CATEGORIES = ["cyber", "bio", "csam", " cyber ", "Cyber Security", "中文", "\u3000x\u3000", "a\x1c"]
MODELS = ["claude-opus-4-8", "claude-sonnet-4-5", " model ", "m`x", "gpt-5"]
ITERATION_TYPES = [
    "message",
    "fallback_message",
    "compaction",
    "advisor_message",
    "Fallback_message",
    1,
    None,
    ["fallback_message"],
]
NEST_KINDS = ["array", "object", "mixed"]


# --- cases ------------------------------------------------------------------------------


def edge_cases() -> Iterator[Case]:
    """Hand-picked cases: each stresses one rule on its own."""
    for start in UPPER_STARTS + LOWER_SECONDS + OTHER_SECONDS:
        for second in [*LOWER_SECONDS, *OTHER_SECONDS, *SPACES, ""]:
            yield {"content": start + second + "x", "reasoning_details": None, "iterations": None}
            yield {"content": start + second, "reasoning_details": None, "iterations": None}
    for space in SPACES:
        for text in (f"{space}Hello{space}world{space}", f"A{space}", f"{space}", f"x.{space}"):
            yield {"content": text, "reasoning_details": None, "iterations": None}
            detail = json.dumps({"type": "stop_details", "explanation": text, "category": text})
            yield {"content": None, "reasoning_details": [detail], "iterations": None}
    for length in range(395, 406):
        for tail in TERMINALS:
            body = ("Sorry " * 100)[: length - len(tail)] + tail
            yield {"content": body, "reasoning_details": None, "iterations": None}
            yield {
                "content": "é" * (length - len(tail)) + tail,
                "reasoning_details": None,
                "iterations": None,
            }
            yield {"content": "😀" * length, "reasoning_details": None, "iterations": None}
    for tail in TERMINALS:
        for space in ("", " ", "\u3000", "\x1c", "\x85"):
            explanation = "Policy violation" + tail + space
            detail = json.dumps({"type": "stop_details", "explanation": explanation})
            yield {"content": None, "reasoning_details": [detail], "iterations": None}
    for token in NUMBER_TOKENS + INVALID_NUMBER_TOKENS + STRING_TOKENS:
        detail = '{"type":"stop_details","category":"cyber","x":' + token + "}"
        yield {"content": "c", "reasoning_details": [detail], "iterations": None}
    for depth in range(120, 134):
        for kind in NEST_KINDS:
            inner = '{"type":"stop_details","category":"deep"}'
            for detail in (
                nested(depth, kind, inner),
                '{"type":"stop_details","category":"deep","n":' + nested(depth, kind) + "}",
                '{"type":"fallback","n":' + nested(depth, kind) + "}",
            ):
                yield {"content": None, "reasoning_details": [detail], "iterations": None}
    first = json.dumps({"type": "stop_details", "category": "first"})
    second = json.dumps({"type": "stop_details", "category": "second", "explanation": "Two"})
    fallback = json.dumps({"type": "fallback", "from": {"model": "a"}, "to": {"model": "b"}})
    recommended = json.dumps({"type": "stop_details", "recommended_model": "claude-opus-4-8"})
    for details in (
        [first, second],
        [second, first],
        [fallback, recommended],
        [recommended, fallback],
        ["NaN", first],
        ['{"type":"stop_details","category":"dup","category":"last"}'],
        ['{"type":"fallback","type":"stop_details","category":"last-type-wins"}'],
        ['{"type":"stop_details","category":"first-type-wins","type":"fallback"}'],
        ['{"type":"stop_details","category":["cyber"]}', second],
        ['{"type":"stop_details","category":null,"explanation":7}'],
    ):
        yield {"content": "Content", "reasoning_details": details, "iterations": None}
        yield {
            "content": None,
            "reasoning_details": details,
            "iterations": [{"type": "message"}, {"type": "fallback_message"}],
        }


def random_case(rng: random.Random) -> Case:
    return {
        "content": random_content(rng),
        "reasoning_details": random_details(rng),
        "iterations": random_iterations(rng),
    }


def all_cases() -> list[Case]:
    rng = random.Random(SEED)
    return [*edge_cases(), *(random_case(rng) for _ in range(RANDOM_CASES))]


def python_reason(case: Case) -> str:
    iterations = case.get("iterations")
    response = LLMResponse(
        content=case.get("content"),
        finish_reason=FinishReason.REFUSAL,
        reasoning_details=case.get("reasoning_details"),
        usage=None if iterations is None else Usage(iterations=iterations),
    )
    return refusal_reason(response)


# --- tests ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def harness() -> Path:
    reason = _harness.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    return _harness.build()


def test_harness_compiles_the_reference_verbatim() -> None:
    if not REFERENCE_SOURCE.is_file():
        pytest.skip(f"the reference module is not at {REFERENCE_SOURCE}")
    copy = _harness.HARNESS_DIR / "src" / "refusal.rs"
    assert copy.read_bytes() == REFERENCE_SOURCE.read_bytes(), (
        f"{copy} differs from {REFERENCE_SOURCE}: copy the reference again"
    )


def test_refusal_reason_matches_the_rust_reference(
    harness: Path, record_property: Callable[[str, object], None]
) -> None:
    started = time.perf_counter()
    cases = all_cases()
    expected = _harness.run_cases(harness, cases)
    mismatches = []
    for case, rust in zip(cases, expected, strict=True):
        python = python_reason(case)
        if python != rust:
            mismatches.append((case, rust, python))
    elapsed = time.perf_counter() - started
    record_property("differential_cases", len(cases))
    print(f"\ncompared {len(cases)} cases with the Rust reference in {elapsed:.1f}s (seed {SEED})")
    report = "\n".join(
        f"case   {json.dumps(case, ensure_ascii=True)}\nrust   {rust!r}\npython {python!r}\n"
        for case, rust, python in mismatches[:10]
    )
    assert not mismatches, f"{len(mismatches)} of {len(cases)} cases differ:\n{report}"


def test_leading_word_case_matches_rust_for_every_character(harness: Path) -> None:
    """Rust's char predicates and lowercase mapping, as `lowercase_leading_word` uses them.

    For each character c, `c + "a"` exercises `is_uppercase(c)` and `to_lowercase(c)`,
    and `"A" + c` exercises `is_lowercase(c)` (and `is_whitespace(c)`).
    """
    dump = _harness.unicode_dump(harness)
    wrong: list[str] = []
    for char in _harness.all_chars():
        facts = dump.of(char)
        lowered = dump.lowercase(char)
        as_first = lowered + "a" if facts.is_uppercase and char != "I" else char + "a"
        as_second = "a" + char if facts.is_lowercase or facts.is_whitespace else "A" + char
        if lowercase_leading_word(char + "a") != as_first:
            wrong.append(f"U+{ord(char):04X} as first character")
        if lowercase_leading_word("A" + char) != as_second:
            wrong.append(f"U+{ord(char):04X} as second character")
        if facts.is_whitespace != (char in WHITESPACE):
            wrong.append(f"U+{ord(char):04X} White_Space")
    assert not wrong, (
        f"{len(wrong)} differences from Rust (Unicode {dump.version}); "
        f"run `python -m tests.differential.gen_unicode`: {wrong[:20]}"
    )
