"""`refusals scan` as a user runs it: outputs, exit codes and bad input."""

from __future__ import annotations

import csv
import io
import re
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pyarrow.parquet as pq

from refusals.scan import COLUMNS
from refusals.scan.corpus import Truth, write_bench_file

FIXTURES = Path(__file__).parent.parent / "fixtures"


def run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "refusals", "scan", *args],
        capture_output=True,
        timeout=120,
        check=False,
    )


def test_the_table_states_the_totals(corpus: tuple[Path, Truth]) -> None:
    root, truth = corpus
    result = run(str(root), "--jobs", "2")
    assert result.returncode == 0, result.stderr
    by_finish = truth.by_finish()
    refused, filtered = by_finish["refusal"], by_finish["content_filter"]
    first = result.stdout.decode().splitlines()[0]
    assert first == (
        f"{truth.records} records: {refused} refused ({100 * refused / truth.records:.1f}%), "
        f"{filtered} filtered ({100 * filtered / truth.records:.1f}%), "
        f"{by_finish['error']} errors"
    )
    assert f"{truth.bad_records} bad records, 0 unreadable files" in result.stdout.decode()


def test_json_prints_one_verdict_per_record(corpus: tuple[Path, Truth]) -> None:
    root, truth = corpus
    result = run(str(root), "--json")
    assert result.returncode == 0, result.stderr
    verdicts = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert len(verdicts) == truth.records
    assert all(list(v) == list(COLUMNS) for v in verdicts)
    assert sum(v["finish_reason"] == "refusal" for v in verdicts) == truth.by_finish()["refusal"]
    # The problems go to stderr, so stdout stays one JSON object per line.
    assert b"bad records" in result.stderr


def test_csv_has_a_header_and_one_row_per_record(corpus: tuple[Path, Truth]) -> None:
    root, truth = corpus
    result = run(str(root), "--csv")
    rows = list(csv.reader(io.StringIO(result.stdout.decode())))
    assert tuple(rows[0]) == COLUMNS
    assert len(rows) == truth.records + 1


def test_parquet_holds_every_record(corpus: tuple[Path, Truth], tmp_path: Path) -> None:
    root, truth = corpus
    target = tmp_path / "verdicts.parquet"
    result = run(str(root), "--parquet", str(target))
    assert result.returncode == 0, result.stderr
    table = pq.read_table(target)
    assert table.num_rows == truth.records
    assert tuple(table.column_names) == COLUMNS
    finishes = table.column("finish_reason").to_pylist()
    assert finishes.count("content_filter") == truth.by_finish()["content_filter"]


def test_resubmit_lists_refused_batch_requests_with_their_recommended_model(
    corpus: tuple[Path, Truth], tmp_path: Path
) -> None:
    root, truth = corpus
    target = tmp_path / "resubmit.jsonl"
    result = run(str(root), "--resubmit", str(target))
    assert result.returncode == 0, result.stderr
    lines = [orjson.loads(line) for line in target.read_bytes().splitlines()]
    assert len(lines) == truth.resubmit
    # Never the model that refused: that one would only refuse again.
    assert {line["recommended_model"] for line in lines} == {"claude-opus-4-8"}
    assert all(line["model"] != line["recommended_model"] for line in lines)
    assert all(line["custom_id"].startswith("request-") for line in lines)


def test_the_chart_is_a_png_or_an_svg(corpus: tuple[Path, Truth], tmp_path: Path) -> None:
    root, _ = corpus
    png, svg = tmp_path / "rates.png", tmp_path / "rates.svg"
    assert run(str(root), "--chart", str(png)).returncode == 0
    assert run(str(root), "--chart", str(svg)).returncode == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = svg.read_text()
    assert "<svg" in text
    assert "Refusal and filter rates by model" in text
    # Each model's bar says how many records it rests on.
    assert re.search(r"openai:gpt-4o-2024-08-06 \(n=\d+\)", text)


def test_fail_on_rate_exits_1_only_above_the_rate(corpus: tuple[Path, Truth]) -> None:
    root, truth = corpus
    by_finish = truth.by_finish()
    rate = (by_finish["refusal"] + by_finish["content_filter"]) / truth.records
    above = run(str(root), "--fail-on-rate", f"{100 * rate - 1:.2f}%")
    below = run(str(root), "--fail-on-rate", f"{rate + 0.01:.4f}")
    assert above.returncode == 1
    assert b"were refused or filtered, above --fail-on-rate" in above.stderr
    assert below.returncode == 0


def test_progress_shows_records_per_second_on_stderr(corpus: tuple[Path, Truth]) -> None:
    root, _ = corpus
    result = run(str(root), "--progress", "--json")
    assert b"records/s" in result.stderr


def test_bad_usage_gets_one_line_and_exit_code_2(tmp_path: Path) -> None:
    cases = [
        ([str(tmp_path / "nope.jsonl")], b"does not exist"),
        ([str(tmp_path), "--json", "--csv"], b"--json and --csv both print to standard output"),
        ([str(tmp_path), "--chart", "x.pdf"], b"must end in .png or .svg"),
        ([str(tmp_path), "--fail-on-rate", "lots"], b"expected a rate from 0 to 1"),
        ([str(tmp_path), "--engine", "dask"], b"--engine dask needs --scheduler"),
        ([str(tmp_path), "--scheduler", "tcp://x:1"], b"--scheduler works with --engine dask"),
    ]
    for args, message in cases:
        result = run(*args)
        assert result.returncode == 2, args
        assert message in result.stderr, (args, result.stderr)
        assert b"Traceback" not in result.stderr


def test_provider_text_in_the_table_is_sanitised(tmp_path: Path) -> None:
    body = orjson.loads((FIXTURES / "anthropic/vercel-refusal-cyber.json").read_bytes())
    body["stop_details"]["explanation"] = "Blocked \x1b]0;owned\x07here."
    body["model"] = "evil\x1b[2Jmodel"
    (tmp_path / "r.json").write_bytes(orjson.dumps(body))
    result = run(str(tmp_path))
    assert result.returncode == 0
    assert b"\x1b" not in result.stdout
    assert b"Blocked here." in result.stdout


def test_a_closed_output_pipe_ends_the_scan_quietly(corpus: tuple[Path, Truth]) -> None:
    root, _ = corpus
    proc = subprocess.Popen(
        [sys.executable, "-m", "refusals", "scan", str(root), "--json", "--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    try:
        code = proc.wait(timeout=60)
    finally:
        proc.kill()
    assert orjson.loads(first)["source"].startswith(str(root))
    assert code == 141
    assert b"Traceback" not in proc.stderr.read()


def test_ctrl_c_ends_the_scan_with_code_130(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    write_bench_file(big, 40_000_000)
    proc = subprocess.Popen(
        [sys.executable, "-m", "refusals", "scan", str(big), "--json", "--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()  # the scan is under way
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert err.endswith(b"refusals scan: interrupted\n")
    assert b"Traceback" not in err


def test_real_exec_event_logs_are_scanned_one_record_per_run(tmp_path: Path) -> None:
    for scenario in ("refusal", "refusal-mid-stream", "answer"):
        events = subprocess.run(
            [sys.executable, "-m", "refusals", "exec", "-m", f"mock:{scenario}", "--json", "hi"],
            capture_output=True,
            timeout=120,
            check=False,
        )
        (tmp_path / f"{scenario}.events.jsonl").write_bytes(events.stdout)
    result = run(str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    verdicts = {v["model"]: v for v in map(orjson.loads, result.stdout.splitlines())}
    # An answered run is named by the model asked for (`thread.started`, `mock:answer`); a
    # refused one by the model that declined, as its `refusal` event reports it.
    assert sorted(verdicts) == ["answer", "mock-refusal", "mock-refusal-mid-stream"]
    assert verdicts["answer"]["finish_reason"] == "stop"
    refused, cut = verdicts["mock-refusal"], verdicts["mock-refusal-mid-stream"]
    assert (refused["finish_reason"], refused["stage"]) == ("refusal", "prompt")
    assert (cut["finish_reason"], cut["stage"]) == ("refusal", "output")
    # The notice is carried from the exec log unchanged, not rebuilt.
    log = (tmp_path / "refusal.events.jsonl").read_bytes().splitlines()
    [event] = [e for e in map(orjson.loads, log) if e["type"] == "refusal"]
    assert refused["notice"] == event["notice"]


def test_an_exec_run_a_fallback_answered_counts_as_served_by_a_fallback(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "refusals", "exec", "-m", "mock:refusal", "--json"]
    events = subprocess.run(
        [*command, "--fallback-model", "mock:answer", "hi"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert events.returncode == 0, events.stderr
    (tmp_path / "served.events.jsonl").write_bytes(events.stdout)
    result = run(str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    [verdict] = map(orjson.loads, result.stdout.splitlines())
    assert verdict["finish_reason"] == "stop"
    assert verdict["served_by_fallback"] is True


def _closed_after_one_line(args: list[str]) -> tuple[int, bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "refusals", "scan", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    try:
        code = proc.wait(timeout=60)
    finally:
        proc.kill()
    return code, proc.stderr.read()


def test_a_closed_pipe_is_141_in_one_process_and_for_the_table_too(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    write_bench_file(big, 4_000_000)
    for args in (["--json", "--jobs", "1"], []):
        code, err = _closed_after_one_line([str(big), *args])
        assert code == 141, (args, err)
        # The reader went away: that is no fault of the file being read.
        assert b"unreadable" not in err and b"Traceback" not in err


def test_the_table_is_whole_when_not_on_a_terminal(tmp_path: Path) -> None:
    body = orjson.loads((FIXTURES / "anthropic/vercel-refusal-cyber.json").read_bytes())
    body["model"] = "claude-a-model-name-long-enough-to-wrap-an-eighty-column-table"
    (tmp_path / "r.json").write_bytes(orjson.dumps(body))
    result = run(str(tmp_path))
    assert result.returncode == 0
    lines = result.stdout.decode().splitlines()
    assert any(f"anthropic:{body['model']}" in line and " 1 " in line for line in lines)
