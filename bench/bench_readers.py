"""Benchmark: the readers on every fixture, in mixed order, against floors measured beside them.

The corpus is every response body, HTTP error body and stream under `tests/fixtures` and
`../shared/fixtures` (each distinct file once; hand-written ones are marked `written/`):
a `.json` file is a body when `normalize` reads it (with the status its name carries,
`error-429-...`), else it is an expected-output file and is left out; `.sse`,
`.chunks.txt` and `.ndjson` files are streams. Every repeat takes the whole corpus in a
new random order, formats mixed, and times each item once: the floor, then ours. Times
are CPU time (`time.thread_time_ns`) less the timer's own cost; an item's figure is the
median over the repeats, and the ratio is ours over the floor.

Floors: `orjson.loads` of a body; for a stream, splitting it into lines and
`orjson.loads` of each event. Baselines where installed: the openai SDK's own stream
parsing (`openai._streaming.Stream` over recorded OpenAI streams) and LiteLLM's
conversion of a Chat Completions or Anthropic body.

Targets (issue 18), each printed as met or missed: 2xx bodies <= 1.5x the floor at the
median, blocked bodies with details <= 2x, HTTP error bodies <= 3x, no body over 4x;
streams <= 2x their floor at the median, none over 4x, and a short stream (one or two
events) under 20 µs above its floor; the openai SDK at least 20x slower on recorded
OpenAI streams; LiteLLM at least 20x slower.

Lower bound, for bodies: the floor (decoding the bytes) plus building the objects a
reader returns, from constants, measured beside them (`LLMResponse` and its `Usage`; for
an error also the `ProviderError` and `StopDetails`, after the provider's message went
through `bounded_message`, the redaction every error message gets), with no reading
logic at all. No reader that returns an `LLMResponse` can cost less; a target below this
bound cannot be met by making the readers faster.

Run: python bench/bench_readers.py [--repeats N]
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from refusals import FinishReason, normalize
from refusals.model import ErrorKind, ProviderError, StopDetails, new_response, new_usage
from refusals.providers import NormalizeError
from refusals.providers._common import bounded_message
from refusals.transport.streams import StreamDecoder

ROOT = Path(__file__).resolve().parents[1]
SOURCES = (ROOT / "tests" / "fixtures", ROOT.parent / "shared" / "fixtures")
STREAM_SUFFIXES = (".sse", ".chunks.txt", ".ndjson")
_STATUS = re.compile(r"error-(\d{3})")
CHUNK = 4096


@dataclass
class Item:
    name: str
    kind: str  # "body", "blocked", "error", "stream"
    data: bytes
    status: int | None = None
    events: int = 0
    ours: Callable[[], Any] = field(default=lambda: None)
    floor: Callable[[], Any] = field(default=lambda: None)
    bound: Callable[[], Any] | None = None
    baselines: dict[str, Callable[[], Any]] = field(default_factory=dict)


def stream_floor(data: bytes) -> int:
    count = 0
    for line in data.split(b"\n"):
        if line.startswith(b"data:"):
            payload = line[5:]
            if payload.strip() != b"[DONE]":
                orjson.loads(payload)
                count += 1
        elif line.startswith((b"{", b"[")):
            orjson.loads(line)
            count += 1
    return count


def stream_ours(data: bytes) -> int:
    decoder = StreamDecoder()
    for start in range(0, len(data), CHUNK):
        decoder.feed(data[start : start + CHUNK])
    decoder.close()
    return len(decoder.response.content or "")


def corpus() -> list[Item]:
    items: list[Item] = []
    seen: set[bytes] = set()
    for source in SOURCES:
        if not source.is_dir():
            continue
        for path in sorted(source.rglob("*")):
            if not path.is_file():
                continue
            data = path.read_bytes()
            digest = hashlib.sha256(data).digest()
            if digest in seen:
                continue
            name = f"{source.parent.name}/{path.relative_to(source)}"
            item = _item(name, path, data)
            if item is not None:
                seen.add(digest)
                items.append(item)
    return items


def _item(name: str, path: Path, data: bytes) -> Item | None:
    if path.name.endswith(STREAM_SUFFIXES):
        events = stream_floor(data)
        if not events:
            return None
        return Item(
            name,
            "stream",
            data,
            events=events,
            ours=lambda: stream_ours(data),
            floor=lambda: stream_floor(data),
        )
    if path.suffix != ".json":
        return None
    match = _STATUS.search(path.name)
    status = int(match.group(1)) if match and int(match.group(1)) >= 400 else None
    try:
        result = normalize(data, status=status)
    except (NormalizeError, ValueError):
        return None  # an expected-output file, not a wire payload
    if status is not None or path.name.startswith("error"):
        kind = "error"
    elif result.finish_reason in (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER):
        kind = "blocked"
    else:
        kind = "body"
    message = result.error.message if result.error is not None else None
    return Item(
        name,
        kind,
        data,
        status=status,
        ours=lambda: normalize(data, status=status),
        floor=lambda: orjson.loads(data),
        bound=partial(lower_bound, data, status, message if kind == "error" else None),
    )


def lower_bound(data: bytes, status: int | None, message: str | None) -> Any:
    """Building what a reader of `data` returns, with no reading logic (the decode is the
    floor's, added to this when the bound is given)."""
    error = None
    details: list[str] = []
    if status is not None or message is not None:
        text = bounded_message(message or "")
        error = ProviderError(ErrorKind.POLICY, status, "code", text)
        details.append(str(StopDetails(explanation=text)))
    usage = new_usage(0, 0, 0, 0, [])
    finish = FinishReason.ERROR if error is not None else FinishReason.STOP
    return new_response(
        None, [], None, details, usage, finish, None, "model", "id", "p", "api", False, error
    )


def add_baselines(items: list[Item]) -> list[str]:
    notes: list[str] = []
    try:
        sys.path.insert(0, str(ROOT / "bench"))
        from bench_normalize import litellm_parsers
        from bench_stream import sdk_runners
    finally:
        sys.path.pop(0)
    runners, more = sdk_runners()
    notes += more
    parsers, more = litellm_parsers()
    notes += more
    for item in items:
        folder = item.name.split("/")[1]
        if item.kind == "stream" and item.name.endswith(".sse"):
            wire = {"openai-chat": "openai chat", "openai-responses": "openai responses"}
            runner = runners.get(wire.get(folder, ""))
            if runner is not None and _works(partial(runner, item.data)):
                item.baselines["openai sdk"] = partial(runner, item.data)
        if item.kind in ("body", "blocked"):
            family = "anthropic" if folder == "anthropic" else "chat"
            chat_like = folder in ("openai-chat", "openrouter") or (
                folder == "azure" and b'"chat.completion"' in item.data
            )
            parse = parsers.get(family) if folder == "anthropic" or chat_like else None
            if parse is not None and _works(partial(parse, item.data)):
                item.baselines["litellm"] = partial(parse, item.data)
    return notes


def _works(call: Callable[[], Any]) -> bool:
    try:
        call()
    except Exception:
        return False
    return True


def _timer_cost() -> int:
    samples = []
    for _ in range(2000):
        start = time.thread_time_ns()
        samples.append(time.thread_time_ns() - start)
    return int(statistics.median(samples))


def measure(items: list[Item], repeats: int, seed: int = 18) -> dict[str, dict[str, float]]:
    """Median µs per item and per measured thing ("floor", "ours", baselines)."""
    cost = _timer_cost()
    samples: dict[str, dict[str, list[float]]] = {
        item.name: {key: [] for key in _measured(item)} for item in items
    }
    rng = random.Random(seed)
    order = list(items)
    clock = time.thread_time_ns
    for item in items:  # warm every path once
        item.floor()
        item.ours()
    for _ in range(repeats):
        rng.shuffle(order)
        for item in order:
            slot = samples[item.name]
            for key, call in _measured(item).items():
                start = clock()
                call()
                slot[key].append(max(clock() - start - cost, 1) / 1000)
    return {
        name: {key: statistics.median(values) for key, values in slot.items()}
        for name, slot in samples.items()
    }


def _measured(item: Item) -> dict[str, Callable[[], Any]]:
    calls = {"floor": item.floor, "ours": item.ours}
    if item.bound is not None:
        calls["bound"] = item.bound
    return {**calls, **item.baselines}


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main() -> int:
    # LiteLLM logs a warning for every finish reason it does not know (the fixtures hold
    # some on purpose); the benchmark's output is its table.
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=41)
    options = parser.parse_args()
    items = corpus()
    notes = add_baselines(items)
    figures = measure(items, options.repeats)
    print(f"{len(items)} distinct fixtures, {options.repeats} repeats in mixed order, CPU time")
    for note in notes:
        print(f"note: {note}")
    print("\n| item | kind | bytes | floor µs | ours µs | ours/floor |")
    print("|---|---|---:|---:|---:|---:|")
    ratios: dict[str, list[tuple[float, str]]] = {}
    for item in sorted(items, key=lambda i: (i.kind, i.name)):
        f = figures[item.name]
        ratio = f["ours"] / f["floor"]
        ratios.setdefault(item.kind, []).append((ratio, item.name))
        print(
            f"| {item.name} | {item.kind} | {len(item.data)} | {f['floor']:.2f} | "
            f"{f['ours']:.2f} | {ratio:.2f}x |"
        )
    print()
    targets = {"body": 1.5, "blocked": 2.0, "error": 3.0, "stream": 2.0}
    labels = {
        "body": "2xx bodies",
        "blocked": "blocked bodies",
        "error": "HTTP error bodies",
        "stream": "streams",
    }
    for kind in ("body", "blocked", "error", "stream"):
        values = sorted(ratios.get(kind, []))
        if not values:
            continue
        median = statistics.median(v for v, _ in values)
        worst, worst_name = values[-1]
        print(
            f"{labels[kind]} ({len(values)}): median {median:.2f}x (target <= {targets[kind]}x: "
            f"{verdict(median <= targets[kind])}), max {worst:.2f}x ({worst_name}; target "
            f"<= 4x: {verdict(worst <= 4.0)})"
        )
        bounds = sorted(
            1 + figures[i.name]["bound"] / figures[i.name]["floor"]
            for i in items
            if i.kind == kind and i.bound is not None
        )
        if bounds:
            least = statistics.median(bounds)
            print(
                f"  lower bound (decode + the objects returned, no reading logic): median "
                f"{least:.2f}x, max {bounds[-1]:.2f}x; the median target is "
                f"{'above' if targets[kind] > least else 'BELOW'} it"
            )
    short = [i for i in items if i.kind == "stream" and i.events <= 2]
    if short:
        over = [figures[i.name]["ours"] - figures[i.name]["floor"] for i in short]
        print(
            f"short streams ({len(short)}, 1-2 events): median {statistics.median(over):.1f} µs "
            f"above the floor, max {max(over):.1f} (target < 20 µs: {verdict(max(over) < 20)})"
        )
    for baseline, target in (("openai sdk", 20.0), ("litellm", 20.0)):
        pairs = [
            figures[i.name][baseline] / figures[i.name]["ours"]
            for i in items
            if baseline in i.baselines
        ]
        if pairs:
            median = statistics.median(pairs)
            print(
                f"{baseline}/ours over {len(pairs)} items: median {median:.1f}x, min "
                f"{min(pairs):.1f}x (target >= {target}x at the median: "
                f"{verdict(median >= target)})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
