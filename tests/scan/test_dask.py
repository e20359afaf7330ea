"""The Dask engine on a LocalCluster gives exactly the local engine's summary."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest
from distributed import Client, LocalCluster

from refusals.scan import ScanRecord, Task, plan, scan_dask, scan_local
from refusals.scan._engine import prepare_parquet_dir
from refusals.scan.corpus import Truth, write_bench_file


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    # Threads in this process, but a real scheduler on a TCP port of 127.0.0.1, so that
    # a `refusals scan` subprocess can connect too.
    with LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address=None,
    ) as local:
        yield local


def test_the_dask_engine_equals_the_local_engine(
    corpus: tuple[Path, Truth], cluster: LocalCluster
) -> None:
    root, truth = corpus
    local = scan_local([str(root)], jobs=2)
    with Client(cluster, timeout=30) as client:  # type: ignore[no-untyped-call]
        distributed = scan_dask([str(root)], client)
    assert distributed == local
    assert distributed.records == truth.records
    assert distributed.by_finish == truth.by_finish()


def test_the_cli_runs_on_a_scheduler_address(
    corpus: tuple[Path, Truth], cluster: LocalCluster, tmp_path: Path
) -> None:
    root, _ = corpus
    target = tmp_path / "summary.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "refusals",
            "scan",
            str(root),
            "--engine",
            "dask",
            "--scheduler",
            cluster.scheduler_address,
            "--summary-json",
            str(target),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert orjson.loads(target.read_bytes()) == scan_local([str(root)], jobs=1).to_json()


def test_per_record_outputs_equal_the_local_engines_in_file_and_line_order(
    corpus: tuple[Path, Truth], cluster: LocalCluster, tmp_path: Path
) -> None:
    root, _ = corpus
    outputs = {}
    for engine in ("local", "dask"):
        extra = ["--engine", "dask", "--scheduler", cluster.scheduler_address]
        result = subprocess.run(
            [sys.executable, "-m", "refusals", "scan", str(root), "--json",
             "--resubmit", str(tmp_path / f"{engine}.resubmit.jsonl"),
             *(extra if engine == "dask" else ["--jobs", "2"])],
            capture_output=True, timeout=120, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        outputs[engine] = (result.stdout, (tmp_path / f"{engine}.resubmit.jsonl").read_bytes())
    assert outputs["dask"] == outputs["local"]
    assert outputs["dask"][0].count(b"\n") > 100


def test_one_large_file_is_split_across_the_workers(cluster: LocalCluster, tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    write_bench_file(big, 3_000_000)
    chunk = 256 * 1024
    # The one file is many tasks, for the two workers to share.
    assert sum(isinstance(t, Task) for t in plan([str(big)], chunk_bytes=chunk)) >= 8
    local_records: list[ScanRecord] = []
    local = scan_local([str(big)], jobs=1, sink=local_records.append, chunk_bytes=chunk)
    dask_records: list[ScanRecord] = []
    with Client(cluster, timeout=30) as client:  # type: ignore[no-untyped-call]
        distributed = scan_dask([str(big)], client, sink=dask_records.append, chunk_bytes=chunk)
    assert distributed == local
    assert [r.line for r in dask_records] == [r.line for r in local_records]
    assert dask_records == local_records
    assert distributed.records > 1000


def test_a_relative_path_is_read_by_workers_whose_directory_is_not_ours(
    corpus: tuple[Path, Truth], cluster: LocalCluster, tmp_path: Path
) -> None:
    # The workers run in this process's directory; the CLI runs in the corpus's parent
    # and names the corpus relatively, as the docs do.
    root, truth = corpus
    target = tmp_path / "summary.json"
    result = subprocess.run(
        [sys.executable, "-m", "refusals", "scan", root.name, "--engine", "dask",
         "--scheduler", cluster.scheduler_address, "--summary-json", str(target)],
        capture_output=True, timeout=120, check=False, cwd=root.parent,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert orjson.loads(target.read_bytes())["records"] == truth.records


def test_an_unreachable_scheduler_is_one_line_and_exit_2_within_the_timeout(
    corpus: tuple[Path, Truth],
) -> None:
    root, _ = corpus
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "refusals", "scan", str(root), "--engine", "dask",
         "--scheduler", "tcp://127.0.0.1:9", "--connect-timeout", "2"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in lines[0]
    assert time.monotonic() - started < 20


def _parts(directory: Path) -> list[dict[str, Any]]:
    """Every row of the part files of a `--parquet-dir`, files in name order."""
    names = sorted(p.name for p in directory.iterdir())
    assert names and all(re.fullmatch(r"part-\d{5}\.parquet", name) for name in names), names
    rows: list[dict[str, Any]] = []
    for name in names:
        rows += pq.read_table(directory / name).to_pylist()
    return rows


def test_the_workers_write_one_parquet_file_per_task_in_file_and_line_order(
    corpus: tuple[Path, Truth], cluster: LocalCluster, tmp_path: Path
) -> None:
    root, truth = corpus
    local = tmp_path / "local.parquet"
    parts = tmp_path / "parts"
    for command in (
        ["--parquet", str(local), "--jobs", "2"],
        ["--engine", "dask", "--scheduler", cluster.scheduler_address,
         "--parquet-dir", str(parts)],
    ):  # fmt: skip
        result = subprocess.run(
            [sys.executable, "-m", "refusals", "scan", str(root), *command],
            capture_output=True, timeout=120, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    rows = _parts(parts)
    assert rows == pq.read_table(local).to_pylist()
    assert len(rows) == truth.records
    assert len(list(parts.iterdir())) > 1  # one file per task, not one gathered file


def test_parts_of_a_split_file_carry_the_lines_of_the_whole_file(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    big = tmp_path / "big.jsonl"
    write_bench_file(big, 2_000_000)
    chunk = 256 * 1024
    local_records: list[ScanRecord] = []
    scan_local([str(big)], jobs=1, sink=local_records.append, chunk_bytes=chunk)
    parts = tmp_path / "parts"
    prepare_parquet_dir(str(parts))
    with Client(cluster, timeout=30) as client:  # type: ignore[no-untyped-call]
        scan_dask([str(big)], client, chunk_bytes=chunk, parquet_dir=str(parts))
    rows = _parts(parts)
    assert len(list(parts.iterdir())) >= 6
    assert [row["line"] for row in rows] == [record.line for record in local_records]
    assert [tuple(row.values()) for row in rows] == [record.row() for record in local_records]


def test_parquet_dir_needs_the_dask_engine_and_a_new_or_empty_directory(
    corpus: tuple[Path, Truth], cluster: LocalCluster, tmp_path: Path
) -> None:
    root, _ = corpus
    used = tmp_path / "used"
    used.mkdir()
    (used / "old.parquet").write_bytes(b"x")
    for extra, expected in (
        ([], "--parquet-dir is written by the Dask workers"),
        (["--engine", "dask", "--scheduler", cluster.scheduler_address], "is not empty"),
    ):
        result = subprocess.run(
            [sys.executable, "-m", "refusals", "scan", str(root), "--parquet-dir", str(used),
             *extra],
            capture_output=True, timeout=120, check=False,
        )  # fmt: skip
        assert result.returncode == 2
        assert expected in result.stderr.decode()
        assert "Traceback" not in result.stderr.decode()
    assert [p.name for p in used.iterdir()] == ["old.parquet"]  # nothing of it was touched
