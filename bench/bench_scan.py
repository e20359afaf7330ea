"""Benchmark `refusals scan`: records per second per core against the floor, peak memory
for 100 MB and 1 GB of input, and the speed-up from 1 to 2 processes.

    python bench/bench_scan.py [--small-mb 100] [--large-mb 1000] [--dir /tmp]

Floor: read the same lines and `orjson.loads` each (no classification, one process).
Ours: `scan_local` over the same file, whole (one process), then in 16 MiB parts on 2
processes. Peak memory is the maximum RSS of a fresh subprocess that scans each file.
The input is generated (`refusals.scan.corpus.write_bench_file`) and deleted afterwards.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

import orjson

from refusals.scan import scan_local
from refusals.scan.corpus import write_bench_file

_MEASURE = """
import resource, sys, time
from refusals.scan import scan_local
start = time.perf_counter()
summary = scan_local([sys.argv[1]], jobs=1)
elapsed = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(summary.records, elapsed, rss)
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


def ours(path: str, jobs: int) -> tuple[int, float]:
    start = time.perf_counter()
    summary = scan_local([path], jobs=jobs)
    return summary.records, time.perf_counter() - start


def peak_rss(path: str) -> tuple[int, float, int]:
    """Records, seconds and peak RSS in KiB of a subprocess scanning `path` on one core."""
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, path], capture_output=True, check=True, timeout=3600
    ).stdout.split()
    return int(out[0]), float(out[1]), int(out[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small-mb", type=int, default=100)
    parser.add_argument("--large-mb", type=int, default=1000)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    args = parser.parse_args()
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
        n_floor, t_floor = floor(small)
        n_one, t_one = ours(small, 1)
        n_two, t_two = ours(small, 2)
        assert n_floor == n_one == n_two == truth.records
        print("| run | records/s | per core | of the floor |")
        print("|---|---:|---:|---:|")
        print(
            f"| floor: read + orjson.loads, 1 process | {n_floor / t_floor:,.0f} | "
            f"{n_floor / t_floor:,.0f} | 100% |"
        )
        print(
            f"| scan, 1 process | {n_one / t_one:,.0f} | {n_one / t_one:,.0f} | "
            f"{100 * t_floor / t_one:.1f}% |"
        )
        print(
            f"| scan, 2 processes | {n_two / t_two:,.0f} | {n_two / t_two / 2:,.0f} | "
            f"{100 * t_floor / t_two / 2:.1f}% |"
        )
        print(f"speed-up from 1 to 2 processes: {t_one / t_two:.2f}x")
        write_bench_file(large, args.large_mb * 1_000_000, seed=1)
        print("| input | records | seconds | peak RSS |")
        print("|---|---:|---:|---:|")
        for path in (small, large):
            records, seconds, rss = peak_rss(path)
            print(
                f"| {os.path.getsize(path) / 1e6:,.0f} MB | {records:,} | {seconds:.1f} | "
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
