"""Each layout, compression and failure mode, on real recorded payloads."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import jsonschema
import orjson
import pytest
import zstandard

from refusals import NormalizeError, normalize, notice
from refusals.scan import ScanRecord, scan_local, sniff_layout, summarize_file
from refusals.scan._classify import _served_by_fallback
from refusals.scan.corpus import exec_run

FIXTURES = Path(__file__).parent.parent / "fixtures"


def _records(*paths: Path, layout: str = "auto") -> list[ScanRecord]:
    found: list[ScanRecord] = []
    scan_local([str(p) for p in paths], jobs=1, sink=found.append, layout=layout)
    return found


def _fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def test_an_openai_batch_line_with_a_responses_body_is_read_as_responses(tmp_path: Path) -> None:
    body = orjson.loads(_fixture("openai-responses/written/refusal.json"))
    line = {
        "id": "b1",
        "custom_id": "task-9",
        "error": None,
        "response": {"status_code": 200, "request_id": "req_1", "body": body},
    }
    path = tmp_path / "out.jsonl"
    path.write_bytes(orjson.dumps(line) + b"\n")
    [record] = _records(path)
    expected = normalize(body)
    assert (record.id, record.layout, record.provider) == (
        "task-9",
        "openai-batch",
        "openai-responses",
    )
    assert record.finish_reason == "refusal"
    assert record.notice == notice(expected)


def test_an_openai_batch_error_status_reads_the_body_as_an_error(tmp_path: Path) -> None:
    body = orjson.loads(_fixture("openai-chat/written/error-content-policy-violation.json"))
    line = {"custom_id": "c", "response": {"status_code": 400, "body": body}, "error": None}
    path = tmp_path / "out.jsonl"
    path.write_bytes(orjson.dumps(line) + b"\n")
    [record] = _records(path)
    assert (record.finish_reason, record.stage) == ("content_filter", "prompt")
    assert record.notice == notice(normalize(body, provider="openai", status=400))


def test_anthropic_batch_results_of_every_type_are_counted(tmp_path: Path) -> None:
    message = orjson.loads(_fixture("anthropic/vercel-refusal-cyber.json"))
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    lines = [
        {"custom_id": "a", "result": {"type": "succeeded", "message": message}},
        {"custom_id": "b", "result": {"type": "errored", "error": error}},
        {"custom_id": "c", "result": {"type": "canceled"}},
        {"custom_id": "d", "result": {"type": "expired"}},
    ]
    path = tmp_path / "results.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    records = _records(path)
    assert [(r.id, r.finish_reason, r.raw_finish_reason) for r in records] == [
        ("a", "refusal", "refusal"),
        ("b", "error", "overloaded_error"),
        ("c", "error", "canceled"),
        ("d", "error", "expired"),
    ]
    assert (records[0].category, records[0].recommended_model) == ("cyber", "claude-fable-5")


def test_a_recorded_stream_is_one_record_with_the_decoders_verdict(tmp_path: Path) -> None:
    path = tmp_path / "refusal.sse.gz"
    path.write_bytes(gzip.compress(_fixture("anthropic/stream-refusal-cyber.sse")))
    [record] = _records(path)
    assert (record.layout, record.finish_reason, record.category) == ("stream", "refusal", "cyber")


def test_a_json_lines_stream_is_recognised_as_a_stream() -> None:
    head = _fixture("anthropic/vercel-refusal-cyber.chunks.txt")[:4096]
    assert sniff_layout(head) == "stream"
    [record] = _records(FIXTURES / "anthropic/vercel-refusal-cyber.chunks.txt")
    assert record.finish_reason == "refusal"


def test_zstd_files_are_read_transparently(tmp_path: Path) -> None:
    body = _fixture("gemini/finish-safety-blocked.json").replace(b"\n", b"")
    path = tmp_path / "log.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(body + b"\n" + body + b"\n"))
    records = _records(path)
    assert [r.finish_reason for r in records] == ["content_filter", "content_filter"]


def test_a_truncated_gzip_is_reported_and_the_other_files_are_scanned(tmp_path: Path) -> None:
    line = orjson.dumps(orjson.loads(_fixture("anthropic/stop-sequence.json"))) + b"\n"
    whole = gzip.compress(line * 2000)
    (tmp_path / "cut.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "fine.jsonl").write_bytes(line * 3)
    summary = scan_local([str(tmp_path)], jobs=1)
    [problem] = summary.problems
    assert problem.source == str(tmp_path / "cut.jsonl.gz")
    assert problem.line == 0
    assert problem.message.startswith("the compressed file is truncated")
    assert summary.file_errors == 1
    assert 3 < summary.records < 2003  # the fine file, and what came before the cut


def test_an_unreadable_file_is_reported_and_the_rest_scanned(tmp_path: Path) -> None:
    (tmp_path / "gone.jsonl").symlink_to(tmp_path / "missing.jsonl")
    (tmp_path / "ok.json").write_bytes(_fixture("openai-chat/refusal.json"))
    summary = scan_local([str(tmp_path)], jobs=1)
    assert (summary.records, summary.refused, summary.file_errors) == (1, 1, 1)
    assert summary.problems[0].source == str(tmp_path / "gone.jsonl")


def test_a_pretty_printed_document_is_one_record() -> None:
    [record] = _records(FIXTURES / "anthropic/vercel-refusal-cyber.json")
    assert (record.layout, record.line, record.finish_reason) == ("json", 1, "refusal")


def test_format_forces_the_layout_and_other_lines_become_bad_records(tmp_path: Path) -> None:
    body = orjson.dumps(orjson.loads(_fixture("openai-chat/refusal.json")))
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(body + b"\n" + body + b"\n")
    summary = summarize_file(str(path), layout="anthropic-batch")
    assert (summary.records, summary.bad_records) == (0, 2)
    assert [p.line for p in summary.problems] == [1, 2]


def test_an_exec_event_log_is_one_record_per_run(tmp_path: Path) -> None:
    path = tmp_path / "run.events.jsonl"
    events = [
        *exec_run("t1", "success"),
        *exec_run("t2", "refused"),
        *exec_run("t3", "content_filtered"),
    ]
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events[:-1]))  # t3 never ends
    records = _records(path)
    assert [(r.id, r.finish_reason) for r in records] == [
        ("t1", "stop"),
        ("t2", "refusal"),
        ("t3", "content_filter"),
    ]
    refused = records[1]
    response = normalize(_fixture("anthropic/written/stream-refusal-cyber.json"))
    assert refused.notice == notice(response)
    assert (refused.provider, refused.model, refused.category) == (
        "anthropic",
        "claude-opus-4-7",
        "cyber",
    )


def test_an_exec_event_of_an_odd_type_outside_a_run_is_skipped_not_fatal(
    tmp_path: Path,
) -> None:
    # An event whose `type` is a list, outside a run of a log read as exec events (the
    # layout forced), once stopped the whole file with
    # "cannot decompress: unhashable type: 'list'" and lost the runs after it.
    path = tmp_path / "run.events.jsonl"
    odd = [{"type": ["thread.started"]}, {"type": {"a": 1}}]
    events = [*exec_run("t0", "success"), *odd, *exec_run("t1", "refused")]
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    summary = scan_local([str(path)], layout="exec-events", jobs=1)
    assert summary.file_errors == 0
    assert (summary.records, summary.refused) == (2, 1)


@pytest.mark.parametrize("name", ["a.jsonl", "b.jsonl.gz"])
def test_blank_lines_are_skipped_not_counted(tmp_path: Path, name: str) -> None:
    body = orjson.dumps(orjson.loads(_fixture("openai-chat/length.json")))
    data = b"\n" + body + b"\n\n" + body + b"\n"
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    summary = summarize_file(str(path))
    assert (summary.records, summary.bad_records) == (2, 0)
    assert os.path.exists(path)


def test_the_generated_exec_events_follow_the_published_schema() -> None:
    schema = orjson.loads((Path(__file__).parents[2] / "docs/exec-events.schema.json").read_bytes())
    for outcome in ("success", "refused", "content_filtered"):
        for event in exec_run("t", outcome):
            jsonschema.validate(event, schema)


def test_the_quick_fallback_check_agrees_with_the_response_on_every_fixture() -> None:
    checked = served = 0
    for path in sorted(FIXTURES.rglob("*.json")):
        try:
            response = normalize(path.read_bytes())
        except NormalizeError:
            continue  # error bodies that need their status; not what this checks
        checked += 1
        served += response.served_by_fallback
        assert _served_by_fallback(response) == response.served_by_fallback, path
    assert checked > 150
    assert served >= 4


def test_blank_lines_are_skipped_and_empty_objects_are_bad_records(tmp_path: Path) -> None:
    log = tmp_path / "filler.jsonl"
    refusal = orjson.dumps(orjson.loads(_fixture("openai-chat/refusal.json")))
    log.write_bytes(b"\n{}\n  \n" + refusal + b"\n{ }\r\n{}")
    summary = scan_local([str(log)], jobs=1)
    assert (summary.records, summary.refused, summary.bad_records) == (1, 1, 3)
    assert [(p.line, p.message) for p in summary.problems] == [
        (2, "unrecognised JSON object (keys: none)"),
        (5, "unrecognised JSON object (keys: none)"),
        (6, "unrecognised JSON object (keys: none)"),
    ]
