"""Scans of s3:// URLs (files, prefixes, globs), read by fsspec from a real S3-compatible
server on 127.0.0.1 (moto's server mode), on the local engine and on a Dask LocalCluster:
the same summary and records as a scan of the same files on disk."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import fsspec
import orjson
import pyarrow.parquet as pq
import pytest
from distributed import Client, LocalCluster
from moto.server import ThreadedMotoServer

from refusals.scan import ScanRecord, scan_dask, scan_local
from refusals.scan._engine import prepare_parquet_dir
from refusals.scan.corpus import Truth

BUCKET = "refusals-logs"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


@pytest.fixture(scope="module")
def s3(corpus_module: tuple[Path, Truth]) -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    saved = {name: os.environ.get(name) for name in (*CREDENTIALS, "FSSPEC_S3_ENDPOINT_URL")}
    os.environ.update({**CREDENTIALS, "FSSPEC_S3_ENDPOINT_URL": endpoint})
    # fsspec reads FSSPEC_* into its configuration at import; read it again.
    fsspec.config.set_conf_env(fsspec.config.conf)
    client = boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id="testing", aws_secret_access_key="testing",
    )  # fmt: skip
    client.create_bucket(Bucket=BUCKET)
    root, _ = corpus_module
    for path in sorted(root.rglob("*")):
        if path.is_file():
            client.upload_file(str(path), BUCKET, f"corpus/{path.relative_to(root)}")
    yield endpoint
    fsspec.config.conf.pop("s3", None)
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    server.stop()


@pytest.fixture(scope="module")
def corpus_module(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Truth]:
    from refusals.scan.corpus import generate  # noqa: PLC0415

    root = tmp_path_factory.mktemp("s3-corpus")
    return root, generate(root, records=80)


def _rows(records: list[ScanRecord], root: str) -> list[tuple[object, ...]]:
    # The source differs (a path, a URL); everything else must not.
    return sorted((r.source.split(root, 1)[-1], *r.row()[1:]) for r in records)


def test_a_prefix_on_s3_scans_as_the_directory_on_disk(
    s3: str, corpus_module: tuple[Path, Truth]
) -> None:
    root, truth = corpus_module
    on_disk: list[ScanRecord] = []
    on_s3: list[ScanRecord] = []
    local = scan_local([str(root)], jobs=1, sink=on_disk.append)
    remote = scan_local([f"s3://{BUCKET}/corpus"], jobs=1, sink=on_s3.append)
    assert remote.records == local.records == truth.records
    assert remote.by_finish == local.by_finish
    assert _rows(on_s3, "corpus/") == _rows(on_disk, f"{root}/")


def test_a_glob_and_the_dask_engine_read_s3_from_the_workers(
    s3: str, corpus_module: tuple[Path, Truth]
) -> None:
    root, _ = corpus_module
    pattern = f"s3://{BUCKET}/corpus/batches/*"
    local = scan_local([str(root / "batches")], jobs=1)
    with (
        LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        Client(cluster, timeout=30) as client,  # type: ignore[no-untyped-call]
    ):
        remote = scan_dask([pattern], client)
    assert remote.records == local.records > 0
    assert remote.by_finish == local.by_finish


def test_an_object_split_into_parts_reads_as_the_file_on_disk(
    s3: str, corpus_module: tuple[Path, Truth]
) -> None:
    # Each part of an object is a byte range read through its own window on the remote
    # file (seeks and ranged reads), by this process and by the Dask workers.
    root, _ = corpus_module
    plain = root / "batches" / "openai-batch-output.jsonl"
    url = f"s3://{BUCKET}/corpus/batches/openai-batch-output.jsonl"
    chunk = 4096
    assert plain.stat().st_size > 8 * chunk
    on_disk: list[ScanRecord] = []
    on_s3: list[ScanRecord] = []
    local = scan_local([str(plain)], jobs=1, sink=on_disk.append)
    remote = scan_local([url], jobs=2, sink=on_s3.append, chunk_bytes=chunk)
    assert remote.records == local.records > 0
    # The file's two bad lines, at the same line numbers whatever part they fell in.
    assert [(p.line, p.message) for p in remote.problems] == [
        (p.line, p.message) for p in local.problems
    ]
    assert len(local.problems) == 2
    assert [r.row()[1:] for r in on_s3] == [r.row()[1:] for r in on_disk]
    with (
        LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        Client(cluster, timeout=30) as client,  # type: ignore[no-untyped-call]
    ):
        counted = scan_dask([url], client, chunk_bytes=chunk)
    assert counted.records == local.records
    assert counted.by_finish == local.by_finish


def test_the_cli_scans_an_s3_url(
    s3: str, corpus_module: tuple[Path, Truth], tmp_path: Path
) -> None:
    _, truth = corpus_module
    target = tmp_path / "summary.json"
    result = subprocess.run(
        [sys.executable, "-m", "refusals", "scan", f"s3://{BUCKET}/corpus",
         "--summary-json", str(target)],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, **CREDENTIALS, "FSSPEC_S3_ENDPOINT_URL": s3},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert orjson.loads(target.read_bytes())["records"] == truth.records


def test_a_missing_object_is_reported_not_fatal(s3: str) -> None:
    summary = scan_local([f"s3://{BUCKET}/corpus/nothing-here.jsonl"], jobs=1)
    assert summary.records == 0
    assert summary.problems and "nothing-here" in summary.problems[0].source


def test_the_dask_workers_write_their_parquet_parts_to_s3(
    s3: str, corpus_module: tuple[Path, Truth]
) -> None:
    _, truth = corpus_module
    on_disk: list[ScanRecord] = []
    scan_local([f"s3://{BUCKET}/corpus"], jobs=1, sink=on_disk.append)
    out = f"s3://{BUCKET}/verdicts/run-1"
    prepare_parquet_dir(out)
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False,  # type: ignore[no-untyped-call]
                     dashboard_address=None) as cluster,
        Client(cluster) as client,  # type: ignore[no-untyped-call]
    ):  # fmt: skip
        scan_dask([f"s3://{BUCKET}/corpus"], client, parquet_dir=out)
    fs = fsspec.filesystem("s3")
    names = sorted(fs.ls(out.removeprefix("s3://")))
    assert names and all(name.rsplit("/", 1)[-1].startswith("part-") for name in names)
    rows: list[tuple[object, ...]] = []
    for name in names:
        with fs.open(name, "rb") as handle:
            rows += [tuple(row.values()) for row in pq.read_table(handle).to_pylist()]
    assert len(rows) == truth.records
    assert rows == [record.row() for record in on_disk]
