"""`refusals scan` stays bounded on hostile input: long lines, bombs, FIFOs, devices.

Each scan runs in a child process whose peak memory is read from the kernel afterwards
(`RUSAGE_CHILDREN`), so a bound that fails shows as a number, not as a test killed.
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
import zstandard

FIXTURES = Path(__file__).parent.parent / "fixtures"
REFUSAL = orjson.dumps(orjson.loads((FIXTURES / "openai-chat" / "refusal.json").read_bytes()))
MIB = 1 << 20


# The scan, reporting at exit its own memory high-water mark (VmHWM: the process image's
# own, unlike ru_maxrss, which keeps the forking test process's size across exec).
_MEASURED = """
import atexit, sys
def report():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                sys.stderr.write("\\nVMHWM " + line.split()[1] + "\\n")
atexit.register(report)
from refusals.cli import main
sys.argv = ["refusals", "scan", *sys.argv[1:]]
main()
"""


def scan(*args: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess[bytes], int]:
    """The scan's result and its own peak RSS in MiB."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, "--jobs", "1", *args],
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    found = re.search(rb"\nVMHWM (\d+)\n", done.stderr)
    assert found is not None, done.stderr
    return done, int(found.group(1)) // 1024


def output(tmp_path: Path) -> Path:
    """Where a scan's summary goes: beside, never inside, what it scans."""
    folder = tmp_path.parent / (tmp_path.name + "-out")
    folder.mkdir(exist_ok=True)
    return folder / "summary.json"


def summary(done: subprocess.CompletedProcess[bytes], path: Path) -> dict[str, object]:
    assert done.returncode == 0, done.stderr
    data: dict[str, object] = orjson.loads(path.read_bytes())
    return data


def test_a_first_line_longer_than_the_sniffed_head_does_not_hide_the_records_after_it(
    tmp_path: Path,
) -> None:
    body = orjson.loads((FIXTURES / "openai-chat" / "length.json").read_bytes())
    body["choices"][0]["message"]["content"] = "x" * (200 * 1024)
    log = tmp_path / "log.jsonl"
    log.write_bytes(orjson.dumps(body) + b"\n" + (REFUSAL + b"\n") * 5)
    out = output(tmp_path)
    done, _ = scan(str(log), "--summary-json", str(out), "--fail-on-rate", "50%")
    assert done.returncode == 1, done.stderr  # 5 of 6 refused: above the rate
    assert orjson.loads(out.read_bytes())["records"] == 6


def test_an_endless_line_is_one_bad_record_and_the_rest_of_the_file_is_read(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.jsonl"
    with log.open("wb") as handle:
        handle.write(REFUSAL + b"\n")
        handle.write(b'{"a":"' + b"y" * (80 * MIB))
        handle.write(b'"}\n' + (REFUSAL + b"\n") * 3)
    out = output(tmp_path)
    done, peak = scan(str(log), "--summary-json", str(out))
    result = summary(done, out)
    assert result["records"] == 4
    assert result["bad_records"] == 1
    assert b"a line over 64 MiB, skipped" in done.stdout + done.stderr or result["problems"]
    assert peak < 400, f"peak RSS {peak} MiB"


def test_a_gzip_of_zeros_is_read_in_bounded_memory(tmp_path: Path) -> None:
    bomb = tmp_path / "zeros.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as handle:
        chunk = bytes(16 * MIB)
        for _ in range(16):  # 256 MiB of NULs without a line end
            handle.write(chunk)
    (tmp_path / "fine.jsonl").write_bytes(REFUSAL + b"\n")
    out = output(tmp_path)
    done, peak = scan(str(tmp_path), "--summary-json", str(out))
    result = summary(done, out)
    assert result["records"] == 1
    assert peak < 400, f"peak RSS {peak} MiB"


def test_a_zstd_bomb_stops_as_a_problem_without_reading_it_all(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.jsonl.zst"
    with bomb.open("wb") as raw, zstandard.ZstdCompressor().stream_writer(raw) as handle:
        line = b" " * (MIB - 1) + b"\n"
        for _ in range(1100):  # 1.1 GiB of blank lines, in a few kilobytes
            handle.write(line)
    assert bomb.stat().st_size < 1 * MIB
    out = output(tmp_path)
    started = time.monotonic()
    done, peak = scan(str(bomb), "--summary-json", str(out))
    result = summary(done, out)
    assert result["file_errors"] == 1
    assert "decompression bomb" in orjson.dumps(result["problems"]).decode()
    assert time.monotonic() - started < 60
    assert peak < 400, f"peak RSS {peak} MiB"


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero on this system")
def test_fifos_and_devices_are_reported_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.jsonl")
    (tmp_path / "fine.jsonl").write_bytes(REFUSAL + b"\n")
    out = output(tmp_path)
    started = time.monotonic()
    done, _ = scan(str(tmp_path), "/dev/zero", "--summary-json", str(out), timeout=60)
    result = summary(done, out)
    assert time.monotonic() - started < 30
    assert result["records"] == 1
    assert result["file_errors"] == 2
    assert "not a regular file" in orjson.dumps(result["problems"]).decode()


def test_a_small_truncated_gzip_keeps_the_records_before_the_cut(tmp_path: Path) -> None:
    whole = gzip.compress((REFUSAL + b"\n") * 2000)
    (tmp_path / "cut.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    out = output(tmp_path)
    done, _ = scan(str(tmp_path), "--summary-json", str(out))
    result = summary(done, out)
    assert 0 < int(str(result["records"])) < 2000
    assert result["file_errors"] == 1
