"""`refusals scan` never destroys its input, nor leaves a half-written output (C9)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

FIXTURES = Path(__file__).parent.parent / "fixtures"
REFUSAL = FIXTURES / "openai-chat" / "refusal.json"


def run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "refusals", "scan", *args],
        capture_output=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    root.mkdir()
    shutil.copy(REFUSAL, root / "a.jsonl")
    return root


@pytest.mark.parametrize("option", ["--resubmit", "--parquet", "--summary-json"])
def test_an_output_naming_an_input_is_refused_before_anything_is_opened(
    logs: Path, option: str
) -> None:
    target = logs / "a.jsonl"
    before = target.read_bytes()
    result = run(str(target), option, str(target))
    assert result.returncode == 2
    assert result.stderr.decode() == (
        f"refusals scan: {option} {target} is one of the inputs; writing it would destroy it\n"
    )
    assert target.read_bytes() == before


@pytest.mark.parametrize("option", ["--resubmit", "--parquet", "--summary-json", "--chart"])
def test_an_output_inside_an_input_directory_a_directory_or_a_fifo_is_refused(
    logs: Path, tmp_path: Path, option: str
) -> None:
    name = "out.png" if option == "--chart" else "out.jsonl"
    inside = run(str(logs), option, str(logs / name))
    assert inside.returncode == 2
    assert b"is inside the input directory" in inside.stderr
    assert not (logs / name).exists()
    folder = tmp_path / ("dir.png" if option == "--chart" else "dir")
    folder.mkdir()
    directory = run(str(logs), option, str(folder))
    assert directory.returncode == 2 and b"is a directory" in directory.stderr
    fifo = tmp_path / ("pipe.png" if option == "--chart" else "pipe")
    os.mkfifo(fifo)
    started = time.monotonic()
    piped = run(str(logs), option, str(fifo))
    assert piped.returncode == 2 and b"not a regular file" in piped.stderr
    assert time.monotonic() - started < 30
    assert piped.stderr.count(b"\n") == 1 and b"Traceback" not in piped.stderr


def test_two_options_naming_one_file_are_refused(logs: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    result = run(str(logs), "--resubmit", str(out), "--summary-json", str(out))
    assert result.returncode == 2
    assert b"name the same file" in result.stderr
    assert not out.exists()


def test_an_interrupted_scan_leaves_the_previous_output_whole(tmp_path: Path) -> None:
    # A scan slow enough to interrupt: many copies of a fixture.
    big = tmp_path / "big.jsonl"
    line = orjson.dumps(orjson.loads(REFUSAL.read_bytes()))
    with big.open("wb") as handle:
        for _ in range(400_000):
            handle.write(line + b"\n")
    out = tmp_path / "summary.json"
    out.write_text("previous\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "refusals", "scan", str(big), "--jobs=1", f"--summary-json={out}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    time.sleep(1.5)
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)
    assert process.returncode == 130
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.jsonl", "summary.json"]


def test_outputs_are_written_whole_on_success(logs: Path, tmp_path: Path) -> None:
    out = tmp_path / "summary.json"
    result = run(str(logs), "--summary-json", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_bytes().startswith(b"{")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs", "summary.json"]
