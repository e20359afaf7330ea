"""`refusals inspect` on real recorded bodies and on bad input, as a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from refusals.cli import main

FIXTURES = Path(__file__).parent.parent / "fixtures"
JSON_KEYS = {
    "provider",
    "api",
    "streamed",
    "finish_reason",
    "raw_finish_reason",
    "category",
    "explanation",
    "model",
    "served_by_fallback",
    "recommended_model",
    "notice",
    "content",
    "categories",
    "cut_off",
    "error",
    "altered",
}
FINISH_REASONS = {"stop", "length", "tool_calls", "content_filter", "pause", "refusal", "error"}
# Every recorded body of ../shared/fixtures, copied byte for byte (see SOURCES.md there).
RECORDED_BODIES = sorted(p for p in FIXTURES.rglob("*.json") if "written" not in p.parts)


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "refusals", "inspect", *args],
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )


def inspect_json(path: Path, *extra: str) -> dict[str, object]:
    result = CliRunner().invoke(main, ["inspect", "--json", str(path), *extra])
    assert result.exit_code == 0, result.output
    data: dict[str, object] = orjson.loads(result.stdout)
    return data


def status_of(path: Path) -> list[str]:
    if path.name.startswith("error-"):
        return ["--status", path.name.split("-")[1]] if path.name.split("-")[1].isdigit() else []
    return []


@pytest.mark.parametrize("path", RECORDED_BODIES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_recorded_body_gets_a_verdict_with_exactly_the_documented_keys(path: Path) -> None:
    data = inspect_json(path, *status_of(path))
    assert set(data) == JSON_KEYS
    assert data["finish_reason"] in FINISH_REASONS
    assert data["streamed"] is False
    assert data["provider"] is not None
    if data["finish_reason"] in ("refusal", "content_filter"):
        assert isinstance(data["notice"], str)
        assert data["notice"].endswith("The request was not retried; rephrase it or switch models.")
    else:
        assert data["notice"] is None


def test_the_bundled_example_reports_the_refusal_with_its_notice() -> None:
    data = inspect_json(Path(__file__).parents[2] / "examples" / "anthropic-refusal.json")
    # The example shows a fallback recommendation: to another model than the one that declined.
    assert data["model"] != data["recommended_model"]
    assert data == {
        "provider": "anthropic",
        "api": "messages",
        "streamed": False,
        "finish_reason": "refusal",
        "raw_finish_reason": "refusal",
        "category": "cyber",
        "explanation": "This request triggered restrictions on violative cyber content and was "
        "blocked under Anthropic's Usage Policy.",
        "categories": ["cyber"],
        "model": "claude-fable-5",
        "served_by_fallback": False,
        "recommended_model": "claude-opus-4-8",
        "notice": "The model declined this request (category: cyber): this request triggered "
        "restrictions on violative cyber content and was blocked under Anthropic's Usage "
        "Policy. A fallback to `claude-opus-4-8` was recommended but could not run. The request "
        "was not retried; rephrase it or switch models.",
        "content": None,
        "cut_off": False,
        "altered": None,
        "error": None,
    }


def test_a_server_side_fallback_is_reported_as_served_by_fallback() -> None:
    data = inspect_json(FIXTURES / "anthropic" / "vercel-server-fallback.json")
    assert data["served_by_fallback"] is True
    assert data["finish_reason"] == "stop"


def test_readable_output_shows_the_verdict_and_the_notice() -> None:
    result = run(str(FIXTURES / "anthropic" / "vercel-refusal-cyber.json"))
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert "refusal" in out
    assert "cyber" in out
    assert "was recommended but could not run." in " ".join(out.split())


def test_an_error_body_with_its_status_is_classified() -> None:
    data = inspect_json(FIXTURES / "anthropic" / "error-429-rate-limit.json", "--status", "429")
    assert data["finish_reason"] == "error"
    assert data["notice"] is None


def test_standard_input_is_read_with_a_dash() -> None:
    body = (FIXTURES / "openai-chat" / "refusal.json").read_bytes()
    result = run("--json", "-", stdin=body)
    assert result.returncode == 0, result.stderr
    data = orjson.loads(result.stdout)
    assert data["finish_reason"] == "refusal"
    assert data["provider"] == "openai"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "the payload is empty; expected a provider response or error body"),
        (b"   \n", "the payload is empty; expected a provider response or error body"),
        (b"<html>oops</html>", "the payload is not JSON"),
        (b'{"hello": "world"}', "unrecognised JSON object (keys: hello)"),
        (b"[1, 2]", "expected a provider response or error body"),
    ],
)
def test_bad_input_gets_one_line_naming_what_was_expected_and_exit_2(
    tmp_path: Path, content: bytes, expected: str
) -> None:
    path = tmp_path / "body.json"
    path.write_bytes(content)
    result = run(str(path))
    assert result.returncode == 2
    assert result.stdout == b""
    err = result.stderr.decode()
    assert err.count("\n") == 1, err
    assert expected in err
    assert "Traceback" not in err
    assert "expected" in err


def test_a_missing_file_is_a_usage_error_without_traceback(tmp_path: Path) -> None:
    result = run(str(tmp_path / "nope.json"))
    assert result.returncode == 2
    assert b"Traceback" not in result.stderr
    assert b"nope.json" in result.stderr


def test_terminal_control_sequences_from_the_provider_are_stripped(tmp_path: Path) -> None:
    body = {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "refusal": "I can\u2019t\x1b[2J\x1b]0;pwned\x07 help\x1b[31m with that.",
                },
                "finish_reason": "stop",
            }
        ],
    }
    path = tmp_path / "body.json"
    path.write_bytes(orjson.dumps(body))
    result = run(str(path))
    assert result.returncode == 0, result.stderr
    assert b"\x1b" not in result.stdout
    assert b"\x07" not in result.stdout
    assert "help with that." in result.stdout.decode()


RECORDED_STREAMS = sorted(
    p
    for pattern in ("*.sse", "*.chunks.txt")
    for p in FIXTURES.rglob(pattern)
    if "written" not in p.parts
)


@pytest.mark.parametrize("path", RECORDED_STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_recorded_stream_gets_a_verdict_and_the_event_that_carried_it(path: Path) -> None:
    data = inspect_json(path)
    assert set(data) == {*JSON_KEYS, "verdict_event"}
    assert data["streamed"] is True
    assert data["finish_reason"] in FINISH_REASONS
    assert isinstance(data["verdict_event"], int)
    assert data["provider"] is not None


def test_a_streamed_refusal_names_the_event_that_carried_it() -> None:
    data = inspect_json(FIXTURES / "anthropic" / "stream-refusal-cyber.sse")
    assert data["finish_reason"] == "refusal"
    assert data["category"] == "cyber"
    assert data["verdict_event"] == 3  # message_delta, the fourth event
    assert data["notice"] == (
        "The model declined this request (category: cyber): this request was refused due to "
        "policy. The request was not retried; rephrase it or switch models."
    )


def test_a_stream_from_standard_input_is_read_as_a_stream() -> None:
    raw = (FIXTURES / "openai-chat" / "stream-refusal.sse").read_bytes()
    result = run("--json", "-", stdin=raw)
    assert result.returncode == 0, result.stderr
    data = orjson.loads(result.stdout)
    assert data["streamed"] is True
    assert data["finish_reason"] == "refusal"
    assert data["verdict_event"] == 1


def test_a_stream_of_no_known_format_is_a_one_line_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "stream.sse"
    path.write_bytes(b'data: {"hello": 1}\n\n')
    result = run(str(path))
    assert result.returncode == 2
    err = result.stderr.decode()
    assert err.count("\n") == 1
    assert "no known provider format" in err


def test_a_gemini_json_array_stream_is_read_as_a_stream(tmp_path: Path) -> None:
    lines = (FIXTURES / "gemini" / "stream-stop.chunks.txt").read_bytes().splitlines()
    chunks = [orjson.loads(line) for line in lines if line.strip()]
    path = tmp_path / "stream.json"
    path.write_bytes(b"[" + b",\n".join(orjson.dumps(c) for c in chunks) + b"]")
    data = inspect_json(path)
    assert data["streamed"] is True
    assert data["provider"] == "gemini"
    assert data["finish_reason"] == "stop"
    assert data["verdict_event"] == 2


def test_an_error_body_wrapped_in_an_array_with_its_status_is_read_as_a_body(
    tmp_path: Path,
) -> None:
    path = tmp_path / "error.json"
    path.write_bytes(
        b'[{"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}]'
    )
    data = inspect_json(path, "--provider", "gemini", "--status", "429")
    assert data["streamed"] is False
    assert data["finish_reason"] == "error"


def test_a_guardrail_that_masked_output_says_it_was_altered_not_blocked() -> None:
    path = FIXTURES / "bedrock" / "written" / "converse-guardrail-anonymized.json"
    data = inspect_json(path)
    assert data["finish_reason"] == "content_filter"
    assert data["altered"] == "anonymized"
    assert data["cut_off"] is False
    assert str(data["notice"]).startswith("The provider's content filter altered this response")
    table = CliRunner().invoke(main, ["inspect", str(path)]).output
    assert "altered by the filter (anonymized), the rest delivered" in table
