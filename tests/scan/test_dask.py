"""The Dask engine on a LocalCluster gives exactly the local engine's summary."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from distributed import Client, LocalCluster

from refusals.scan import ScanRecord, Task, plan, scan_dask, scan_local
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
