"""Compare the counting scan of two or more source trees in one process, in turns.

On a shared host the floor moves by 30% or more between runs a minute apart, so a
change of 5-10% cannot be seen by running `bench_scan.py` before and after it. This
imports `refusals.scan` once from each tree (`git worktree add /tmp/base <commit>`
gives an older one), then scans the same file with each in turn, the order reversed
every round, beside the `orjson.loads` floor of each round, and prints each tree's
total CPU time over the floors' total.

    .venv/bin/python bench/compare_scan_trees.py /tmp/base/src src --file /tmp/b20.jsonl

Without `--file`, a 20 MB bench file is written to a temporary directory first.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson


def _scanner(tree: str) -> Callable[..., Any]:
    """`scan_local` of the package under `tree`, imported apart from any other tree's."""
    for name in [name for name in sys.modules if name.split(".")[0] == "refusals"]:
        del sys.modules[name]
    sys.path.insert(0, tree)
    try:
        module = importlib.import_module("refusals.scan")
    finally:
        sys.path.remove(tree)
    origin = str(Path(module.__file__ or "").resolve())
    if not origin.startswith(str(Path(tree).resolve())):
        raise SystemExit(f"error: {tree} holds no refusals package (imported {origin})")
    scan: Callable[..., Any] = module.scan_local
    return scan


def _floor(path: str) -> None:
    loads = orjson.loads
    with open(path, "rb", buffering=1 << 20) as lines:
        for line in lines:
            loads(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", help="source directories holding `refusals`")
    parser.add_argument("--file", help="a log to scan (default: a generated 20 MB one)")
    parser.add_argument("--rounds", type=int, default=15, help="turns per tree (15)")
    args = parser.parse_args()
    scanners = [_scanner(tree) for tree in args.trees]
    with tempfile.TemporaryDirectory() as scratch:
        path = args.file
        if path is None:
            from refusals.scan.corpus import write_bench_file

            path = str(Path(scratch) / "bench.jsonl")
            write_bench_file(Path(path), 20_000_000)
        clock = time.process_time
        floors: list[float] = []
        times: list[list[float]] = [[] for _ in scanners]
        for turn in range(args.rounds):
            start = clock()
            _floor(path)
            floors.append(clock() - start)
            order = range(len(scanners)) if turn % 2 == 0 else reversed(range(len(scanners)))
            for index in order:
                start = clock()
                scanners[index]([path], jobs=1)
                times[index].append(clock() - start)
            print(f"round {turn + 1}/{args.rounds}", file=sys.stderr)
    print(f"{args.rounds} rounds; CPU time over the orjson.loads floor's")
    print("| tree | total / floor | median of rounds |")
    print("|---|---:|---:|")
    for tree, spent in zip(args.trees, times, strict=True):
        median = statistics.median(t / f for t, f in zip(spent, floors, strict=True))
        print(f"| {tree} | {sum(spent) / sum(floors):.2f}x | {median:.2f}x |")


if __name__ == "__main__":
    main()
