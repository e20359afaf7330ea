"""`refusals inspect` on hostile input: forged table rows, terminal controls, huge or
endless files, Ctrl-C, a closed pipe, secrets in error bodies. Each runs the real CLI."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from refusals import normalize, notice
from refusals.cli import main
from refusals.cli.inspect import _dumps

FIXTURES = Path(__file__).parent.parent / "fixtures"
EXAMPLE = Path(__file__).parents[2] / "examples" / "anthropic-refusal.json"
COMMAND = [sys.executable, "-m", "refusals", "inspect"]
# Characters no terminal output of ours may carry (tab and newline aside).
CONTROLS = [chr(c) for c in (*range(0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))]
INVISIBLE = ["\u200b", "\u200e", "\u2028", "\u2029", "\u202a", "\u202e", "\u2066", "\ufeff"]


def run(
    *args: str, stdin: bytes | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*COMMAND, *args], input=stdin, capture_output=True, timeout=timeout, check=False
    )


def invoke(*args: str, stdin: bytes | None = None) -> Any:
    return CliRunner().invoke(main, ["inspect", *args], input=stdin)


def write_json(path: Path, body: dict[str, Any]) -> Path:
    path.write_bytes(orjson.dumps(body))
    return path


def anthropic_refusal(**stop_details: Any) -> dict[str, Any]:
    body: dict[str, Any] = orjson.loads(EXAMPLE.read_bytes())
    body["stop_details"].update(stop_details)
    return body


def table_labels(out: str) -> list[str]:
    """The first-column labels of the table: lines that do not continue a cell."""
    table = out.split("\n\n", 1)[0]
    return [line.split()[0] for line in table.splitlines() if line and not line[0].isspace()]


def assert_terminal_safe(text: str) -> None:
    for char in CONTROLS + INVISIBLE:
        assert char not in text, f"{char!r} reached the terminal"


def test_newlines_in_provider_fields_never_forge_table_rows(tmp_path: Path) -> None:
    body = anthropic_refusal(
        category="cyber\nverdict      stop",
        explanation="Blocked.\r\nnotice       none\u2028served\u0085by fallback",
        recommended_model="claude-opus-4-8\nmodel        gpt-5",
    )
    body["model"] = "claude-fable-5\nverdict      stop\x1b[2K"
    result = run(str(write_json(tmp_path / "body.json", body)))
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert table_labels(out) == [
        "verdict",
        "provider",
        "model",
        "category",
        "explanation",
        "fallback",
    ]
    assert_terminal_safe(out)
    # The notice after the table is one paragraph too.
    notice = out.split("\n\n", 1)[1]
    assert " ".join(notice.split()).startswith("The model declined this request (category:")


def test_terminal_controls_in_every_field_are_removed_from_the_table(tmp_path: Path) -> None:
    hostile = "\x1b]8;;https://evil.example\x1b\\x\x1b]8;;\x1b\\\x1b]52;c;cm0gLXJm\x07\x9b2J\u202e"
    body = anthropic_refusal(
        category="cyber" + hostile, explanation="Blocked" + hostile, recommended_model="m" + hostile
    )
    body["model"] = "claude" + hostile
    result = run(str(write_json(tmp_path / "body.json", body)))
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert_terminal_safe(out)
    assert "evil.example" not in out and "cm0gLXJm" not in out
    assert "claudex" in out and "Blockedx" in out


def test_long_fields_are_cut_for_display_and_kept_whole_in_json(tmp_path: Path) -> None:
    explanation = " ".join(f"word{i}" for i in range(2000))
    path = write_json(tmp_path / "body.json", anthropic_refusal(explanation=explanation))
    table = run(str(path))
    assert table.returncode == 0, table.stderr
    out = table.stdout.decode()
    assert "\u2026" in out
    assert "word1999" not in out.split("\n\n", 1)[0]
    full = normalize(path.read_bytes())
    assert full.stop_details is not None
    data = orjson.loads(invoke("--json", str(path)).stdout)
    assert data["explanation"] == full.stop_details.explanation
    assert data["explanation"].endswith("word1999")


def test_json_keeps_provider_text_unaltered_and_the_notice_byte_exact(tmp_path: Path) -> None:
    model = "claude\x1b[31m-fable\n-5"
    body = anthropic_refusal()
    body["model"] = model
    path = write_json(tmp_path / "body.json", body)
    data = orjson.loads(invoke("--json", str(path)).stdout)
    response = normalize(path.read_bytes())
    assert data["model"] == response.model == model
    assert data["notice"] == notice(response)


def test_file_names_in_error_lines_are_sanitised(tmp_path: Path) -> None:
    path = tmp_path / "evil\x1b]0;pwned\x07\nname\u202e.json"
    path.write_bytes(b"<html>oops</html>")
    result = run(str(path))
    assert result.returncode == 2
    err = result.stderr.decode()
    assert err.count("\n") == 1, err
    assert_terminal_safe(err)
    assert "evil" in err and "name.json" in err
    assert "the payload is not JSON" in err


@pytest.mark.parametrize(
    ("make", "problem"),
    [(lambda tmp: tmp, "is a directory"), (lambda tmp: tmp / "missing.json", "no such file")],
    ids=["directory", "missing"],
)
def test_a_directory_or_missing_path_gets_one_line_and_exit_2(
    tmp_path: Path, make: Any, problem: str
) -> None:
    path = make(tmp_path)
    result = run(str(path))
    assert result.returncode == 2
    assert result.stdout == b""
    assert result.stderr.decode() == (
        f"refusals inspect: {path}: {problem}; give the path of a recorded body or stream, "
        "or - for standard input\n"
    )


def test_input_past_max_bytes_is_a_one_line_error_naming_the_option(tmp_path: Path) -> None:
    path = tmp_path / "body.json"
    path.write_bytes(EXAMPLE.read_bytes() + b" " * 2048)
    result = run("--max-bytes", "1K", str(path))
    assert result.returncode == 2
    assert result.stderr.decode() == (
        f"refusals inspect: {path}: more than 1 KiB (1024 bytes); pass --max-bytes to read a "
        "larger recording\n"
    )
    assert invoke("--max-bytes", "1M", "--json", str(path)).exit_code == 0


def test_a_stream_on_standard_input_past_max_bytes_stops_with_the_error() -> None:
    raw = (FIXTURES / "anthropic" / "stream-refusal-cyber.sse").read_bytes()
    result = run("--max-bytes", "4K", "-", stdin=raw + b": padding\n" * 1000)
    assert result.returncode == 2
    assert b"pass --max-bytes" in result.stderr
    assert result.stderr.count(b"\n") == 1


def test_a_bad_max_bytes_value_is_a_usage_error() -> None:
    result = invoke("--max-bytes", "lots", str(EXAMPLE))
    assert result.exit_code == 2
    assert "'lots' is not a byte count" in result.output


def test_a_sparse_two_gigabyte_file_fails_at_once(tmp_path: Path) -> None:
    path = tmp_path / "sparse.json"
    with path.open("wb") as file:
        file.truncate(2 << 30)
    start = time.monotonic()
    result = run(str(path), timeout=30)
    assert time.monotonic() - start < 15
    assert result.returncode == 2
    assert b"more than 64 MiB (67108864 bytes); pass --max-bytes" in result.stderr
    assert result.stderr.count(b"\n") == 1


def test_dev_zero_fails_fast_with_a_message() -> None:
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero on this system")
    start = time.monotonic()
    result = run("/dev/zero", timeout=60)
    assert time.monotonic() - start < 30
    assert result.returncode == 2
    assert b"pass --max-bytes" in result.stderr
    assert result.stderr.count(b"\n") == 1
    assert b"Traceback" not in result.stderr


# Runs the CLI and records its own peak memory (VmHWM: since exec, unlike ru_maxrss, which
# on Linux keeps the high-water mark of the forked copy of the test process).
PEAK_PROBE = """
import atexit, runpy, sys
target = sys.argv.pop()
def report():
    with open("/proc/self/status") as status, open(target, "w") as out:
        out.write("".join(line for line in status if line.startswith("VmHWM:")))
atexit.register(report)
sys.argv = ["refusals", *sys.argv[1:]]
runpy.run_module("refusals", run_name="__main__", alter_sys=True)
"""


def test_a_large_stream_is_decoded_as_it_is_read_in_bounded_memory(tmp_path: Path) -> None:
    if not Path("/proc/self/status").exists():
        pytest.skip("peak memory is read from /proc/self/status, which this system lacks")
    # 150 MB of stream (keep-alive comments after a recorded refusal) through a pipe: read
    # whole it would need that much memory; decoded chunk by chunk, a few MB.
    raw = (FIXTURES / "anthropic" / "stream-refusal-cyber.sse").read_bytes()
    padding = b": " + b"p" * 1000 + b"\n"
    probe = tmp_path / "peak"
    args = ["inspect", "--json", "--max-bytes", "1G", "-", str(probe)]
    proc = subprocess.Popen(
        [sys.executable, "-c", PEAK_PROBE, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(raw)
        for _ in range(150):
            proc.stdin.write(padding * 1000)
        proc.stdin.close()
        out = proc.stdout.read()  # a few hundred bytes: no pipe fills up
        err = proc.stderr.read()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert orjson.loads(out)["finish_reason"] == "refusal"
    peak_kib = int(probe.read_text().split()[1])
    assert peak_kib < 100 * 1024, f"peak memory {peak_kib} KiB"


def open_fifo_for_writing(path: Path, timeout: float = 30) -> int:
    """Open a FIFO's write end once the reader has opened it (bounded in time)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_ctrl_c_while_reading_a_stream_exits_130_without_a_traceback(tmp_path: Path) -> None:
    fifo = tmp_path / "live.sse"
    os.mkfifo(fifo)
    proc = subprocess.Popen([*COMMAND, str(fifo)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # The reader opened the FIFO: it is past start-up, in the command itself.
        writer = open_fifo_for_writing(fifo)
        os.write(writer, b'event: message_start\ndata: {"type": "message_start"')
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        os.close(writer)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert err == b"refusals inspect: interrupted\n"
    assert out == b""


def test_a_closed_output_pipe_exits_141_quietly() -> None:
    proc = subprocess.Popen(
        [*COMMAND, "--json", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdout.close()  # the reader is gone before anything was written
        _, err = proc.communicate(EXAMPLE.read_bytes(), timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 141
    assert err == b""


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "table"])
def test_piping_into_head_ends_quietly(tmp_path: Path, as_json: bool) -> None:
    # Output far larger than a pipe's usual buffer, so `head` closes it mid-write.
    body = {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "long answer " * 100_000},
                "finish_reason": "stop",
            }
        ],
    }
    path = write_json(tmp_path / "big.json", body)
    flag = "--json" if as_json else ""
    script = f'"$0" -m refusals inspect {flag} "$1" | head -c 10; echo " ${{PIPESTATUS[0]}}"'
    result = subprocess.run(
        ["bash", "-c", script, sys.executable, str(path)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.stderr == b""
    head, code = result.stdout.rsplit(b" ", 1)
    assert len(head) == 10
    # 141 when the write met the closed pipe; 0 when the pipe took all the output before
    # `head` left (pipe buffers differ between kernels). Never a traceback, never 1.
    assert code.strip() in (b"141", b"0")


KEYS = {
    "prose": "sk-proj-" + "S3NT1NELprose" + "a1B2" * 8,
    "glued": "sk-" + "S3NT1NELglued" + "c3D4" * 8,
}


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "table"])
def test_an_api_key_inside_an_error_body_never_appears_in_the_output(
    tmp_path: Path, as_json: bool
) -> None:
    bodies = {
        "prose": {
            "error": {
                "message": f"Incorrect API key provided: {KEYS['prose']}. You can find your API "
                "key at https://platform.openai.com/account/api-keys.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        },
        "glued": {
            "error": {
                "message": f"Invalid header value api_key_{KEYS['glued']} for this project",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        },
    }
    for shape, body in bodies.items():
        path = write_json(tmp_path / f"{shape}.json", body)
        args = ["--json"] if as_json else []
        result = run(*args, "--status", "401", str(path))
        assert result.returncode == 0, result.stderr
        output = result.stdout + result.stderr
        assert b"S3NT1NEL" not in output, (shape, output)
        assert b"[redacted]" in output, shape


def test_an_api_key_in_a_stream_error_event_never_appears_in_the_output(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "S3NT1NELstream" + "e5F6" * 8
    error = {
        "type": "error",
        "error": {"type": "authentication_error", "message": f"invalid x-api-key: {key}"},
    }
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-fable-5",
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
    }
    raw = (
        b"event: message_start\ndata: " + orjson.dumps(start) + b"\n\n"
        b"event: error\ndata: " + orjson.dumps(error) + b"\n\n"
    )
    path = tmp_path / "stream.sse"
    path.write_bytes(raw)
    for args in (["--json"], []):
        result = run(*args, str(path))
        assert result.returncode == 0, result.stderr
        assert b"S3NT1NEL" not in result.stdout + result.stderr


def test_json_carries_the_error_cut_off_and_categories() -> None:
    error = orjson.loads(
        invoke(
            "--json", "--status", "429", str(FIXTURES / "anthropic" / "error-429-rate-limit.json")
        ).stdout
    )
    assert error["error"]["kind"] == "transient"
    assert error["error"]["retryable"] is True
    assert error["error"]["code"] == "rate_limit_error"
    assert error["error"]["message"].startswith("This request would exceed your organization")
    assert error["cut_off"] is False

    stream = orjson.loads(
        invoke("--json", str(FIXTURES / "anthropic" / "fable-fallback-stream-a-refusal.sse")).stdout
    )
    assert stream["finish_reason"] == "refusal"
    assert stream["cut_off"] is True
    assert stream["error"] is None
    assert isinstance(stream["verdict_event"], int)

    path = FIXTURES / "azure" / "written" / "chat-finish-content-filter.json"
    filtered = orjson.loads(invoke("--json", str(path)).stdout)
    stop = normalize(path.read_bytes()).stop_details
    assert stop is not None
    assert filtered["categories"] == list(stop.categories)
    assert len(filtered["categories"]) >= 2


def test_a_byte_order_mark_before_a_json_body_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "body.json"
    path.write_bytes(b"\xef\xbb\xbf" + EXAMPLE.read_bytes())
    data = orjson.loads(invoke("--json", str(path)).stdout)
    assert data["finish_reason"] == "refusal"
    assert data["streamed"] is False


@pytest.mark.parametrize("newline", [b"\r", b"\r\n"], ids=["cr", "crlf"])
def test_json_lines_with_cr_line_ends_are_read_as_a_stream(tmp_path: Path, newline: bytes) -> None:
    raw = (FIXTURES / "gemini" / "stream-stop.chunks.txt").read_bytes()
    path = tmp_path / "stream.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + raw.replace(b"\n", newline))
    data = orjson.loads(invoke("--json", str(path)).stdout)
    assert data["streamed"] is True
    assert data["provider"] == "gemini"
    assert data["finish_reason"] == "stop"


def test_json_output_survives_text_the_fast_encoder_refuses() -> None:
    # A lone surrogate (from a decoded dict, say) is escaped, and the line stays JSON.
    line = _dumps({"model": "claude\ud83d", "notice": None})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert orjson.loads(line.replace(b"\\ud83d", b"")) == {"model": "claude", "notice": None}


def test_a_stream_arriving_a_few_bytes_at_a_time_through_a_pipe_is_read_as_a_stream(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "slow.sse"
    os.mkfifo(fifo)
    raw = (FIXTURES / "anthropic" / "stream-refusal-cyber.sse").read_bytes()
    proc = subprocess.Popen(
        [*COMMAND, "--json", str(fifo)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        writer = open_fifo_for_writing(fifo)
        try:
            # Too few bytes to tell SSE from anything else, then the rest.
            for piece in (raw[:2], raw[2:5], raw[5:]):
                os.write(writer, piece)
                time.sleep(0.2)
        finally:
            os.close(writer)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    data = orjson.loads(out)
    assert data["streamed"] is True
    assert data["finish_reason"] == "refusal"
    assert data["verdict_event"] == 3
