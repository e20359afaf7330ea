"""`scan_local` on a generated corpus of every layout gets the ground-truth counts."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import refusals
from refusals.scan import ScanRecord, Summary, Task, plan, scan_local
from refusals.scan._sources import GZIP_MAGIC, ZSTD_MAGIC, _part
from refusals.scan.corpus import FIXTURES, Truth, generate


def _groups(summary: Summary) -> dict[tuple[str | None, ...], int]:
    return {key: row[0] for key, row in summary.groups.items()}


def test_every_layout_is_counted_as_its_ground_truth(corpus: tuple[Path, Truth]) -> None:
    root, truth = corpus
    summary = scan_local([str(root)], jobs=1)
    assert (summary.records, summary.bad_records) == (truth.records, truth.bad_records)
    assert summary.by_finish == truth.by_finish()
    assert _groups(summary) == dict(truth.groups)
    assert summary.bad_records == truth.bad_records
    assert summary.file_errors == 0
    assert summary.totals()["fallbacks"] == truth.fallbacks


def test_records_of_every_layout_appear(corpus: tuple[Path, Truth]) -> None:
    root, _ = corpus
    layouts: set[str] = set()
    scan_local([str(root)], jobs=1, sink=lambda record: layouts.add(record.layout))
    assert layouts == {"openai-batch", "anthropic-batch", "jsonl", "json", "stream", "exec-events"}


def test_parts_and_processes_give_the_same_summary_and_records(
    corpus: tuple[Path, Truth],
) -> None:
    root, _ = corpus
    one: list[ScanRecord] = []
    many: list[ScanRecord] = []
    alone = scan_local([str(root)], jobs=1, sink=one.append)
    # 64 KiB parts split the plain batch file into several tasks across two processes.
    split = scan_local([str(root)], jobs=2, sink=many.append, chunk_bytes=64 * 1024)
    assert split == alone
    assert [r.row() for r in many] == [r.row() for r in one]


def test_bad_records_are_reported_with_the_file_and_line_that_hold_them(
    corpus: tuple[Path, Truth],
) -> None:
    root, truth = corpus
    summary = scan_local([str(root)], jobs=2, chunk_bytes=64 * 1024)
    assert len(summary.problems) == truth.bad_records
    plain = root / "batches" / "openai-batch-output.jsonl"
    lines = plain.read_bytes().split(b"\n")
    found = {lines[p.line - 1] for p in summary.problems if p.source == str(plain)}
    assert found == {b"this line is not JSON", b"[1, 2, 3]"}


def test_record_lines_point_at_the_record_they_describe(corpus: tuple[Path, Truth]) -> None:
    root, _ = corpus
    plain = root / "batches" / "openai-batch-output.jsonl"
    lines = plain.read_bytes().split(b"\n")
    records: list[ScanRecord] = []
    scan_local([str(plain)], jobs=2, sink=records.append, chunk_bytes=32 * 1024)
    assert len(records) > 300
    for record in records:
        assert orjson.loads(lines[record.line - 1])["custom_id"] == record.id


def test_the_refused_batch_requests_with_a_recommended_model_are_found(
    corpus: tuple[Path, Truth],
) -> None:
    root, truth = corpus
    records: list[ScanRecord] = []
    scan_local([str(root)], jobs=1, sink=records.append)
    candidates = [
        r
        for r in records
        if r.finish_reason == "refusal"
        and r.recommended_model
        and r.layout.endswith("batch")
        and r.recommended_model != r.model  # a recommendation of itself is no candidate
    ]
    assert truth.resubmit > 0
    assert len(candidates) == truth.resubmit
    assert {r.recommended_model for r in candidates} == {"claude-opus-4-8"}


def test_the_shipped_demo_payloads_are_the_test_fixtures_byte_for_byte() -> None:
    shipped = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.name != "SOURCES.md")
    assert len(shipped) >= 30
    tests_fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    for path in shipped:
        relative = path.relative_to(FIXTURES)
        assert path.read_bytes() == (tests_fixtures / relative).read_bytes(), relative
        assert f"`{relative}`" in (FIXTURES / "SOURCES.md").read_text()


def test_the_demo_corpus_is_written_from_an_installed_copy(tmp_path: Path) -> None:
    # The package alone, away from the source checkout (as site-packages holds it).
    installed = tmp_path / "site"
    shutil.copytree(Path(refusals.__file__).parent, installed / "refusals")
    target = tmp_path / "demo"
    result = subprocess.run(
        [sys.executable, "-m", "refusals", "scan", "--demo-corpus", str(target),
         "--records", "50"],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(installed)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    truth = orjson.loads(result.stdout)
    scanned = subprocess.run(
        [sys.executable, "-m", "refusals", "scan", "--summary-json", str(tmp_path / "s.json"),
         str(target)],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(installed)},
    )  # fmt: skip
    assert scanned.returncode == 0, scanned.stderr
    summary = orjson.loads((tmp_path / "s.json").read_bytes())
    assert summary["records"] == truth["records"] > 0
    again = subprocess.run(
        [sys.executable, "-m", "refusals", "scan", "--demo-corpus", str(target)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert again.returncode == 2 and "not empty" in again.stderr


def test_the_demo_corpus_needs_no_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A plain `pip install .` has no zstandard: the demo's log is then written with gzip
    # (it once stopped with a traceback), and the scan counts what the corpus planted.
    monkeypatch.setitem(sys.modules, "zstandard", None)
    truth = generate(tmp_path / "demo", records=40)
    logs = sorted(path.name for path in (tmp_path / "demo" / "logs").iterdir())
    assert logs == ["responses.jsonl.gz"]
    summary = scan_local([str(tmp_path / "demo")], jobs=1)
    assert (summary.records, summary.bad_records) == (truth.records, truth.bad_records)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
    st.booleans(),
    st.integers(min_value=1, max_value=200),
    st.integers(min_value=1, max_value=5),
)
def test_the_parts_of_a_file_read_each_of_its_lines_once(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[bytes],
    last_newline: bool,
    chunk: int,
    workers: int,
) -> None:
    # A line belongs to the part it starts in, however the part bounds cut it.
    data = b"\n".join(lines) + (b"\n" if last_newline and lines else b"")
    path = tmp_path_factory.mktemp("parts") / "lines.jsonl"
    path.write_bytes(data)
    # Bytes that start as gzip or zstd does are read as such a file, not split into parts.
    assume(not data.startswith((GZIP_MAGIC, ZSTD_MAGIC)))
    read: list[bytes] = []
    for task in plan([str(path)], "jsonl", chunk_bytes=chunk, workers=workers):
        assert isinstance(task, Task)
        with path.open("rb") as stream:
            part = _part(stream, task) if task.end is not None else stream
            read.extend(iter(part.readline, b""))
    pieces = data.split(b"\n")
    expected = [piece + b"\n" for piece in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
    assert read == expected


@pytest.mark.parametrize(
    ("size", "workers", "sizes"),
    [
        (40, 2, [10, 10, 10, 10]),  # 3 parts would leave a worker idle at the end
        (40, 1, [14, 14, 12]),
        (57, 2, [15, 15, 15, 12]),
        (34, 8, [12, 12, 10]),  # 8 parts would be under half a chunk: 3 equal ones
        (16, 2, [16]),
        (33, 2, [9, 9, 9, 6]),
    ],
)
def test_a_file_is_split_into_equal_parts_in_a_multiple_of_the_workers(
    tmp_path: Path, size: int, workers: int, sizes: list[int]
) -> None:
    path = tmp_path / "lines.jsonl"
    path.write_bytes(b"x" * size)
    tasks = list(plan([str(path)], "jsonl", chunk_bytes=16, workers=workers))
    assert all(isinstance(task, Task) for task in tasks)
    assert [task.size for task in tasks if isinstance(task, Task)] == sizes
    bounds = [(task.start, task.end) for task in tasks if isinstance(task, Task)]
    if len(bounds) > 1:
        assert bounds[0][0] == 0 and bounds[-1][1] == size
        assert all(end == start for (_, end), (start, _) in itertools.pairwise(bounds))
