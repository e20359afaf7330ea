"""Benchmark: `normalize` on recorded HTTP error bodies (where most policy blocks arrive),
against the floor of `orjson.loads` of the same bytes, in shuffled order.

Every fixture whose name carries its status (`error-400-...`, `error-429-...`) is read with
that status, as a client reads an error response. Error messages pass through `redact`,
whose regular expression used to cost about a microsecond per character; its pre-filter
skips it on text that holds no anchor of a secret. Each repeat takes the bodies in a new
random order, floor and ours in turn (A B A B ...); ratios are per body, paired within a
repeat, summarised as min / median / max of the per-body medians.

Run: python bench/bench_error_bodies.py [--repeats N]
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import time
from pathlib import Path

import orjson

from refusals import normalize
from refusals.providers._common import may_hold_secret

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
_STATUS = re.compile(r"error-(\d{3})")
LOOPS = 200


def _bodies() -> list[tuple[str, bytes, int]]:
    found = []
    for path in sorted(FIXTURES.rglob("*.json")):
        match = _STATUS.search(path.name)
        if match and int(match.group(1)) >= 400:
            found.append((str(path.relative_to(FIXTURES)), path.read_bytes(), int(match.group(1))))
    return found


def _time(call: object, loops: int) -> float:
    start = time.perf_counter()
    for _ in range(loops):
        call()  # type: ignore[operator]
    return (time.perf_counter() - start) / loops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    options = parser.parse_args()
    bodies = _bodies()
    ratios: dict[str, list[float]] = {name: [] for name, _, _ in bodies}
    ours_us: dict[str, list[float]] = {name: [] for name, _, _ in bodies}
    rng = random.Random(3)
    for _ in range(options.repeats):
        rng.shuffle(bodies)
        for name, data, status in bodies:
            floor = _time(lambda d=data: orjson.loads(d), LOOPS)
            ours = _time(lambda d=data, s=status: normalize(d, status=s), LOOPS)
            ratios[name].append(ours / floor)
            ours_us[name].append(ours * 1e6)
    medians = {name: statistics.median(values) for name, values in ratios.items()}
    print(f"normalize on {len(bodies)} recorded HTTP error bodies, {options.repeats} repeats")
    print("| body | bytes | ours µs | ours/floor | message may hold a secret |")
    print("|---|---|---|---|---|")
    for name, data, status in sorted(bodies):
        message = normalize(data, status=status).error
        text = message.message if message is not None and message.message else ""
        print(
            f"| {name} | {len(data)} | {statistics.median(ours_us[name]):.1f} | "
            f"{medians[name]:.1f}x | {'yes' if may_hold_secret(text) else 'no'} |"
        )
    values = sorted(medians.values())
    print(
        f"ours/floor, min / median / max of the per-body medians: "
        f"{values[0]:.1f} / {statistics.median(values):.1f} / {values[-1]:.1f}x"
    )


if __name__ == "__main__":
    main()
