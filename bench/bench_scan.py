"""Benchmark `refusals scan`: records per second per core against the floor and against
DuckDB, peak memory for 100 MB and 1 GB of input, the speed-up from 1 to 2 processes, and
the Dask engine against the local one on the same cores.

    python bench/bench_scan.py [--small-mb 100] [--large-mb 1000] [--dir /tmp] [--repeats 3]

Floor: read the same lines and `orjson.loads` each (no classification, one process).
Bound: read them and decode each once with the Struct the scan's typed path needs for it,
picked beforehand (`line_decoders`), one count per line: what a classifier built this way
costs before any detection, verdict or blocked response, so `DuckDB / bound` is the most
any such classifier could gain on DuckDB.
Floor on 2 processes: the same over the parts the local engine plans for 2 processes
(how this host scales the work from 1 to 2 cores, beside the scan's own speed-up).
Ours: `scan_local` over the same file, whole (one process), then in parts of up to 16 MiB on 2
processes, and `scan_dask` on a `distributed.LocalCluster` of 2 single-threaded worker
processes (the same file split the same way). DuckDB: `read_json` with the CASE query
below, on one thread, which must count each finish reason as scan does (checked every
repeat). All take turns within every repeat; each ratio is paired, computed within a
repeat, then given as median (min-max), so it holds on a busy machine. Peak memory is the
maximum RSS of a fresh subprocess that scans each file. The input is generated
(`refusals.scan.corpus.write_bench_file`: unique lines, about 5% blocked) and deleted
afterwards. DuckDB and Dask are skipped, with a note, when not installed
(`pip install duckdb 'refusals[dask]'`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import msgspec
import orjson

from refusals.scan import scan_dask, scan_local
from refusals.scan.corpus import write_bench_file

# The peak is VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forked
# parent, so a child of this (large) process would report the parent's size.
_MEASURE = """
import sys, time
from refusals.scan import scan_local
start = time.perf_counter()
summary = scan_local([sys.argv[1]], jobs=1)
elapsed = time.perf_counter() - start
status = open("/proc/self/status").read().split("VmHWM:", 1)[1]
print(summary.records, elapsed, status.split()[0])
"""


def floor(path: str) -> tuple[int, float]:
    loads = orjson.loads
    start = time.perf_counter()
    count = 0
    with open(path, "rb", buffering=1024 * 1024) as lines:
        for line in lines:
            loads(line)
            count += 1
    return count, time.perf_counter() - start


def _floor_part(task: Any) -> int:
    """`floor` over one part of the scan's plan (the lines that start in its range)."""
    from refusals.scan._sources import _part

    loads = orjson.loads
    count = 0
    with open(task.path, "rb") as stream:
        for line in stream if task.end is None else _part(stream, task):
            loads(line)
            count += 1
    return count


def floor_two(path: str) -> tuple[int, float]:
    """The floor on 2 processes, over the parts the local engine gives them: how this
    host scales the same work from 1 to 2 cores, measured beside the scan's speed-up."""
    from concurrent.futures import ProcessPoolExecutor

    from refusals.scan import Task, plan

    start = time.perf_counter()
    tasks = [item for item in plan([path], "auto", workers=2) if isinstance(item, Task)]
    with ProcessPoolExecutor(max_workers=2) as pool:
        count = sum(pool.map(_floor_part, tasks))
    return count, time.perf_counter() - start


def line_decoders(path: str) -> list[Callable[[bytes], Any]]:
    """For each line, the one decode the scan's typed path cannot do without, picked here
    beforehand: a batch line's plain Structs (its envelope with the body raw when those
    decline it), a bare body's plain Struct (its format's full Struct, else orjson, when
    that declines it). For `bound`."""
    from refusals.providers import struct_reader
    from refusals.scan import _classify

    chosen: list[Callable[[bytes], Any]] = []
    with open(path, "rb", buffering=1024 * 1024) as lines:
        for line in lines:
            tries: list[Callable[[bytes], Any]]
            if b'"custom_id"' in line[:96]:
                tries = [_classify._decode_quick_batch, _classify._decode_envelope]
            else:
                reader = struct_reader(line)
                tries = []
                if reader is not None and reader.plain_body is not None:
                    tries.append(_classify._quick_decoder(reader.plain_body))
                if reader is not None:
                    known = _classify._body_decoders.get(reader.body)
                    tries.append(known or _classify._body_decoder(reader.body))
            for decode in tries:
                try:
                    decode(line)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue
                chosen.append(decode)
                break
            else:
                chosen.append(orjson.loads)
    return chosen


def bound(path: str, decoders: list[Callable[[bytes], Any]]) -> tuple[int, float]:
    """The floor of a classifier of this design: read each line and decode it once with
    the Struct `line_decoders` picked, one count per line; no detection, no verdict, no
    response for a blocked line."""
    counts: dict[Any, int] = {}
    start = time.perf_counter()
    with open(path, "rb", buffering=1024 * 1024) as lines:
        for decode, line in zip(decoders, lines, strict=True):
            decode(line)
            counts[decode] = counts.get(decode, 0) + 1
    return sum(counts.values()), time.perf_counter() - start


def routed(path: str, decoders: list[Callable[[bytes], Any]]) -> tuple[int, float]:
    """`bound` plus the least a classifier that picks its decode by the line's own bytes
    adds: one lookup of its first 16 bytes. No verdict, no count by outcome: a lower
    bound of any per-line classifier in Python, one it cannot reach."""
    heads: dict[bytes, Callable[[bytes], Any]] = {}
    with open(path, "rb", buffering=1024 * 1024) as lines:
        for decode, line in zip(decoders, lines, strict=True):
            heads.setdefault(line[:16], decode)
    counts: dict[Any, int] = {}
    start = time.perf_counter()
    with open(path, "rb", buffering=1024 * 1024) as lines:
        for decode, line in zip(decoders, lines, strict=True):
            heads.get(line[:16])
            decode(line)
            counts[decode] = counts.get(decode, 0) + 1
    return sum(counts.values()), time.perf_counter() - start


def ours(path: str, jobs: int) -> tuple[int, float, dict[str, int]]:
    start = time.perf_counter()
    summary = scan_local([path], jobs=jobs)
    return summary.records, time.perf_counter() - start, dict(summary.by_finish)


def on_dask(path: str, client: Any) -> tuple[int, float, dict[str, int]]:
    start = time.perf_counter()
    summary = scan_dask([path], client)
    return summary.records, time.perf_counter() - start, dict(summary.by_finish)


# What a careful user writes to count verdicts with DuckDB: each layout's and each wire
# format's documented refusal and filter signals, read from typed columns (one parse).
# It is exact on the bench file only because it knows every shape the file holds.
DUCKDB_QUERY = r"""
WITH t AS (
  SELECT * FROM read_json(?, format = 'newline_delimited', ignore_errors = true, columns = {
    custom_id: 'VARCHAR', response: 'STRUCT(status_code INTEGER, body JSON)',
    result: 'STRUCT(type VARCHAR, message JSON, error JSON)',
    choices: 'STRUCT(finish_reason VARCHAR, message STRUCT(refusal VARCHAR))[]',
    type: 'VARCHAR', stop_reason: 'VARCHAR', candidates: 'STRUCT(finishReason VARCHAR)[]',
    promptFeedback: 'STRUCT(blockReason VARCHAR)', stopReason: 'VARCHAR'})
)
SELECT finish, count(*) FROM (SELECT CASE
  WHEN custom_id IS NOT NULL AND result IS NOT NULL THEN CASE result.type
    WHEN 'succeeded' THEN CASE result.message->>'$.stop_reason'
      WHEN 'end_turn' THEN 'stop' WHEN 'stop_sequence' THEN 'stop'
      WHEN 'max_tokens' THEN 'length' WHEN 'tool_use' THEN 'tool_calls'
      WHEN 'refusal' THEN 'refusal' ELSE 'error' END
    WHEN 'errored' THEN CASE WHEN regexp_matches(result.error->>'$.error.message',
      '(?i)blocked by.*(content filter|policy)') THEN 'content_filter' ELSE 'error' END
    ELSE 'error' END
  WHEN custom_id IS NOT NULL THEN CASE
    WHEN response IS NULL THEN 'error'
    WHEN response.status_code >= 400 THEN CASE
      WHEN response.body->>'$.error.code' = 'content_policy_violation' THEN 'content_filter'
      ELSE 'error' END
    WHEN response.body->>'$.object' = 'response' THEN CASE
      WHEN response.body->>'$.incomplete_details.reason' = 'content_filter'
        THEN 'content_filter'
      WHEN response.body->>'$.status' = 'failed' THEN 'error'
      WHEN json_contains(response.body->'$.output[*].content[*].type', '"refusal"')
        THEN 'refusal'
      WHEN response.body->>'$.incomplete_details.reason' = 'max_output_tokens' THEN 'length'
      ELSE 'stop' END
    WHEN response.body->>'$.choices[0].message.refusal' IS NOT NULL THEN 'refusal'
    ELSE coalesce(response.body->>'$.choices[0].finish_reason', 'error') END
  WHEN choices IS NOT NULL THEN CASE
    WHEN choices[1].message.refusal IS NOT NULL THEN 'refusal'
    ELSE choices[1].finish_reason END
  WHEN candidates IS NOT NULL OR promptFeedback IS NOT NULL THEN CASE
    WHEN promptFeedback.blockReason IS NOT NULL THEN 'content_filter'
    WHEN candidates[1].finishReason IN ('SAFETY', 'RECITATION', 'BLOCKLIST',
      'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY') THEN 'content_filter'
    WHEN candidates[1].finishReason = 'MAX_TOKENS' THEN 'length'
    WHEN candidates[1].finishReason = 'STOP' THEN 'stop' ELSE 'error' END
  WHEN stopReason IS NOT NULL THEN CASE stopReason
    WHEN 'end_turn' THEN 'stop' WHEN 'stop_sequence' THEN 'stop'
    WHEN 'guardrail_intervened' THEN 'content_filter'
    WHEN 'content_filtered' THEN 'content_filter'
    WHEN 'max_tokens' THEN 'length' WHEN 'tool_use' THEN 'tool_calls' ELSE 'error' END
  WHEN type = 'message' THEN CASE stop_reason
    WHEN 'end_turn' THEN 'stop' WHEN 'stop_sequence' THEN 'stop'
    WHEN 'max_tokens' THEN 'length' WHEN 'tool_use' THEN 'tool_calls'
    WHEN 'refusal' THEN 'refusal' ELSE 'error' END
  ELSE 'error' END AS finish FROM t) GROUP BY finish
"""


def on_duckdb(path: str, con: Any) -> tuple[int, float, dict[str, int]]:
    start = time.perf_counter()
    rows = con.execute(DUCKDB_QUERY, [path]).fetchall()
    elapsed = time.perf_counter() - start
    counts: dict[str, int] = dict(rows)
    return sum(counts.values()), elapsed, counts


def _optional(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        print(f"({name} is not installed: its rows are left out)")
        return None


def peak_rss(path: str) -> tuple[int, float, int]:
    """Records, seconds and peak RSS in KiB of a subprocess scanning `path` on one core."""
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, path], capture_output=True, check=True, timeout=3600
    ).stdout.split()
    return int(out[0]), float(out[1]), int(out[2])


def _spread(values: list[float], scale: float = 1.0, digits: int = 1) -> str:
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{mid * scale:.{digits}f} ({low * scale:.{digits}f}-{high * scale:.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small-mb", type=int, default=100)
    parser.add_argument("--large-mb", type=int, default=1000)
    parser.add_argument(
        "--dir", default=tempfile.gettempdir(), help="Where to write the inputs (made if missing)."
    )
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    small = os.path.join(args.dir, "refusals-bench-scan-small.jsonl")
    large = os.path.join(args.dir, "refusals-bench-scan-large.jsonl")
    try:
        truth = write_bench_file(small, args.small_mb * 1_000_000)
        size = os.path.getsize(small)
        print(
            f"input: {size / 1e6:.0f} MB, {truth.records} records, "
            f"{size / truth.records:.0f} bytes per record on average"
        )
        floor(small)  # warm the page cache
        duckdb, distributed = _optional("duckdb"), _optional("distributed")
        con: Any = None
        client: Any = None
        cluster: Any = None
        if duckdb is not None:
            con = duckdb.connect()
            con.execute("SET threads = 1")
        if distributed is not None:
            cluster = distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
            )
            client = distributed.Client(cluster)
        runs: dict[str, Callable[[], tuple[int, float, dict[str, int]]]] = {
            "one": lambda: ours(small, 1),
            "two": lambda: ours(small, 2),
        }
        if con is not None:
            runs["duckdb"] = lambda: on_duckdb(small, con)
        if client is not None:
            runs["dask"] = lambda: on_dask(small, client)
        decoders = line_decoders(small)
        seconds: dict[str, list[float]] = {
            "floor": [],
            "floor2": [],
            "bound": [],
            "routed": [],
            **{key: [] for key in runs},
        }
        expected = truth.by_finish()
        for _ in range(args.repeats):
            n_floor, t_floor = floor(small)
            assert n_floor == truth.records
            seconds["floor"].append(t_floor)
            n_floor, t_floor = floor_two(small)
            assert n_floor == truth.records
            seconds["floor2"].append(t_floor)
            n_bound, t_bound = bound(small, decoders)
            assert n_bound == truth.records
            seconds["bound"].append(t_bound)
            n_bound, t_bound = routed(small, decoders)
            assert n_bound == truth.records
            seconds["routed"].append(t_bound)
            for key, run in runs.items():
                records, elapsed, counts = run()
                assert records == truth.records, (key, records)
                assert counts == expected, (key, counts, expected)
                seconds[key].append(elapsed)
        if client is not None:
            client.close()
            cluster.close()
        n = truth.records
        floors = seconds["floor"]
        cores = {"floor2": 2, "bound": 1, "routed": 1, "one": 1, "two": 2, "duckdb": 1, "dask": 2}
        # Paired within each repeat: records per second per core over the floor's.
        share = {
            key: [f / t / cores[key] for f, t in zip(floors, seconds[key], strict=True)]
            for key in ("floor2", "bound", "routed", *runs)
        }
        speedup = [a / b for a, b in zip(seconds["one"], seconds["two"], strict=True)]
        host = [a / b for a, b in zip(floors, seconds["floor2"], strict=True)]
        print(f"{args.repeats} repeats; median (min-max), ratios paired within a repeat")
        print(f"counts per finish reason, equal in every run: {expected}")
        print("| run | records/s | per core | µs per record per core | of the floor |")
        print("|---|---:|---:|---:|---:|")
        labels = {
            "floor": "floor: read + orjson.loads, 1 process",
            "floor2": "floor on the scan's parts, 2 processes",
            "bound": "bound: read + one typed decode picked beforehand, 1 process",
            "routed": "bound + a lookup of the line's first 16 bytes, 1 process",
            "one": "scan, 1 process",
            "two": "scan, 2 processes",
            "duckdb": "DuckDB read_json + CASE, 1 thread",
            "dask": "scan --engine dask, LocalCluster 2 x 1 thread",
        }
        for key, taken in seconds.items():
            used = cores.get(key, 1)
            rate = n / statistics.median(taken)
            per_record = statistics.median(taken) * used / n * 1e6
            ratio = "100%" if key == "floor" else _spread(share[key], 100) + "%"
            print(
                f"| {labels[key]} | {rate:,.0f} | {rate / used:,.0f} | {per_record:.2f} | {ratio} |"
            )
        print(f"speed-up from 1 to 2 processes: {_spread(speedup, digits=2)}x")
        print(f"the floor's speed-up from 1 to 2 processes (this host): {_spread(host, digits=2)}x")
        versus = [s / h for s, h in zip(speedup, host, strict=True)]
        print(f"scan's speed-up over the floor's: {_spread(versus, digits=2)}x")
        if "duckdb" in runs:
            versus = [d / o for d, o in zip(seconds["duckdb"], seconds["one"], strict=True)]
            print(f"DuckDB time / scan time, one core each: {_spread(versus, digits=2)}x")
            versus = [d / b for d, b in zip(seconds["duckdb"], seconds["bound"], strict=True)]
            print(f"DuckDB time / the bound's, one core each: {_spread(versus, digits=2)}x")
            versus = [d / b for d, b in zip(seconds["duckdb"], seconds["routed"], strict=True)]
            print(
                "DuckDB time / the bound's with the lookup, one core each: "
                f"{_spread(versus, digits=2)}x"
            )
        spare = [b / o for b, o in zip(seconds["bound"], seconds["one"], strict=True)]
        print(f"the bound's time / scan time, one core each: {_spread(spare, digits=2)}x")
        if "dask" in runs:
            versus = [d / o for d, o in zip(seconds["dask"], seconds["two"], strict=True)]
            print(f"Dask time / local time, two cores each: {_spread(versus, digits=2)}x")
        write_bench_file(large, args.large_mb * 1_000_000, seed=1)
        print("| input | records | seconds | peak RSS |")
        print("|---|---:|---:|---:|")
        for path in (small, large):
            records, elapsed, rss = peak_rss(path)
            print(
                f"| {os.path.getsize(path) / 1e6:,.0f} MB | {records:,} | {elapsed:.1f} | "
                f"{rss / 1024:.1f} MiB |"
            )
        usage = resource.getrusage(resource.RUSAGE_SELF)
        print(f"(this process: peak RSS {usage.ru_maxrss / 1024:.1f} MiB)")
    finally:
        for path in (small, large):
            if os.path.exists(path):
                os.unlink(path)


if __name__ == "__main__":
    main()
