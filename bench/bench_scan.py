"""Benchmark `refusals scan`: records per second per core against the floor, peak memory
for 100 MB and 1 GB of input, and the speed-up from 1 to 2 processes.

    python bench/bench_scan.py [--small-mb 100] [--large-mb 1000] [--dir /tmp] [--repeats 3]

Floor: read the same lines and `orjson.loads` each (no classification, one process).
Ours: `scan_local` over the same file, whole (one process), then in 16 MiB parts on 2
processes. The three take turns within every repeat (floor, 1 process, 2 processes, …);
each ratio is paired, computed within a repeat, then given as median (min-max), so it
holds on a busy machine. Peak memory is the maximum RSS of a fresh subprocess that
scans each file. The input is generated (`refusals.scan.corpus.write_bench_file`) and
deleted afterwards.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
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
        seconds: dict[str, list[float]] = {"floor": [], "one": [], "two": []}
        for _ in range(args.repeats):
            n_floor, t_floor = floor(small)
            n_one, t_one = ours(small, 1)
            n_two, t_two = ours(small, 2)
            assert n_floor == n_one == n_two == truth.records
            seconds["floor"].append(t_floor)
            seconds["one"].append(t_one)
            seconds["two"].append(t_two)
        n = truth.records
        floors = seconds["floor"]
        # Paired within each repeat: records per second per core over the floor's.
        share = {
            "one": [f / t for f, t in zip(floors, seconds["one"], strict=True)],
            "two": [f / t / 2 for f, t in zip(floors, seconds["two"], strict=True)],
        }
        speedup = [a / b for a, b in zip(seconds["one"], seconds["two"], strict=True)]
        print(f"{args.repeats} repeats; median (min-max), ratios paired within a repeat")
        print("| run | records/s | per core | µs per record per core | of the floor |")
        print("|---|---:|---:|---:|---:|")
        rows = (
            ("floor: read + orjson.loads, 1 process", "floor", 1),
            ("scan, 1 process", "one", 1),
            ("scan, 2 processes", "two", 2),
        )
        for label, key, cores in rows:
            rate = n / statistics.median(seconds[key])
            per_record = statistics.median(seconds[key]) * cores / n * 1e6
            ratio = "100%" if key == "floor" else _spread(share[key], 100) + "%"
            print(f"| {label} | {rate:,.0f} | {rate / cores:,.0f} | {per_record:.2f} | {ratio} |")
        print(f"speed-up from 1 to 2 processes: {_spread(speedup, digits=2)}x")
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
