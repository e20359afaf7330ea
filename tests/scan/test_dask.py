"""The Dask engine on a LocalCluster gives exactly the local engine's summary."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from distributed import Client, LocalCluster

from refusals.scan import scan_dask, scan_local
from refusals.scan.corpus import Truth


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


def test_per_record_outputs_need_the_local_engine(corpus: tuple[Path, Truth]) -> None:
    root, _ = corpus
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
            "tcp://127.0.0.1:1",
            "--json",
        ],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert b"--engine dask computes the summary only" in result.stderr
