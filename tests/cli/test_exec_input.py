"""Odd input to `refusals exec`: bytes that are not UTF-8, and line separators in JSON."""

from __future__ import annotations

import subprocess
import sys

import orjson


def test_a_prompt_that_is_not_utf8_is_a_usage_error_naming_the_byte() -> None:
    for argv, stdin in (
        (["exec", b"hi \xff there".decode("utf-8", "surrogateescape")], b""),
        (["exec", "-"], b"hi \xff there"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "refusals", *argv],
            input=stdin,
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.decode().endswith(
            "the prompt is not valid UTF-8 (byte 0xff at character 3); convert it to UTF-8 "
            "(e.g. iconv -t UTF-8) and pass it again\n"
        )


def test_unicode_line_separators_are_escaped_so_every_event_is_one_line() -> None:
    prompt = "a\u2028b\u2029c\x85d"
    done = subprocess.run(
        [sys.executable, "-m", "refusals", "exec", "--json", prompt],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode()
    assert not any(ch in text for ch in "\u2028\u2029\x85")
    events = [orjson.loads(line) for line in text.splitlines()]
    answer = [e for e in events if e["type"] == "item.completed"][-1]["item"]["text"]
    assert answer == f"Mock answer: {prompt}"


def test_a_mistyped_mock_scenario_is_a_usage_error_with_a_suggestion() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "refusals", "exec", "--model", "mock:refusl", "hi"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.decode() == (
        "refusals exec: unknown mock scenario 'refusl' in 'mock:refusl'; did you mean "
        "mock:refusal? (`refusals mock-server --list` lists them)\n"
    )
