"""Benchmark: `refusals.normalize` over the fixture corpus, against baselines run alongside.

For every recorded non-stream body in tests/fixtures, in one process and one run:
  floor   orjson.loads of the same bytes (no interpretation at all);
  ours    refusals.normalize(bytes) (decode, detect the format, build LLMResponse);
  sdk     the provider's official SDK parsing the same bytes (pydantic model_validate_json),
          where an SDK model exists for that body;
  litellm LiteLLM's own conversion of the decoded body into its ModelResponse, where
          LiteLLM exposes one for that wire format.
The candidates take turns within every repeat (A B A B …); each figure is the median
over the repeats of the mean time per call, and each ratio is paired: computed within a
repeat, then summarised as min / median / max, so it holds on a busy machine.

Run: python bench/bench_normalize.py [--repeats N] [--quick]
Needs the bench extra (pip install -e '.[bench]') for the sdk and litellm columns; they are
left out, with a note, when those packages are missing. Nothing here uses the network:
LiteLLM is told to use its bundled model cost map.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from refusals import normalize

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
warnings.filterwarnings("ignore")

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
Parser = Callable[[bytes], Any]
Timings = dict[str, list[float]]

# Issue 14's targets, on medians measured in one run.
FLOOR_TARGET = 2.0
LITELLM_TARGET = 15.0


def corpus() -> list[tuple[str, bytes]]:
    files = []
    for path in sorted(FIXTURES.rglob("*.json")):
        if "written" in path.parts or path.name.startswith("error-"):
            continue
        files.append((str(path.relative_to(FIXTURES)), path.read_bytes()))
    return files


def family(name: str, body: bytes) -> str:
    folder = name.split("/", 1)[0]
    if folder == "openai-responses" or (folder == "azure" and b'"object":"response"' in body):
        return "responses"
    if folder in ("openai-chat", "azure", "openrouter"):
        return "chat"
    return folder


def sdk_parsers() -> tuple[dict[str, Parser], list[str]]:
    parsers: dict[str, Parser] = {}
    notes: list[str] = []
    try:
        from anthropic.types import Message

        parsers["anthropic"] = Message.model_validate_json
    except ImportError:
        notes.append("anthropic SDK not installed: no sdk figure for Anthropic bodies")
    try:
        from openai.types.chat import ChatCompletion
        from openai.types.responses import Response

        parsers["chat"] = ChatCompletion.model_validate_json
        parsers["responses"] = Response.model_validate_json
    except ImportError:
        notes.append("openai SDK not installed: no sdk figure for OpenAI bodies")
    return parsers, notes


def litellm_parsers() -> tuple[dict[str, Parser], list[str]]:
    try:
        import httpx
        from litellm.litellm_core_utils.llm_response_utils.convert_dict_to_response import (
            convert_to_model_response_object,
        )
        from litellm.llms.anthropic.chat.transformation import AnthropicConfig
        from litellm.types.utils import ModelResponse
    except ImportError:
        return {}, ["litellm not installed: no litellm figures"]

    config = AnthropicConfig()
    raw = httpx.Response(200, request=httpx.Request("POST", "http://127.0.0.1/v1/messages"))

    def chat(body: bytes) -> Any:
        return convert_to_model_response_object(
            response_object=orjson.loads(body), model_response_object=ModelResponse()
        )

    def anthropic(body: bytes) -> Any:
        return config.transform_parsed_response(
            completion_response=orjson.loads(body),
            raw_response=raw,
            model_response=ModelResponse(),
        )

    return {"chat": chat, "anthropic": anthropic}, []


def interleaved(parsers: dict[str, Parser], body: bytes, repeats: int, budget: float) -> Timings:
    """Seconds per call of each parser in each repeat, the parsers taking turns (A B A B …).

    Each parser gets a batch sized to about `budget` s, calibrated once; taking turns inside
    every repeat means a noisy moment slows all candidates alike, so paired ratios hold.
    """
    numbers: dict[str, int] = {}
    for name, parse in parsers.items():
        parse(body)
        start = time.perf_counter()
        calls = 0
        while time.perf_counter() - start < budget / 10:
            parse(body)
            calls += 1
        numbers[name] = max(1, calls * 10)
    samples: Timings = {name: [] for name in parsers}
    for _ in range(repeats):
        for name, parse in parsers.items():
            number = numbers[name]
            start = time.perf_counter()
            for _ in range(number):
                parse(body)
            samples[name].append((time.perf_counter() - start) / number)
    return samples


def paired(samples: Timings, top: str, bottom: str) -> list[float]:
    """The ratio top/bottom in each repeat (both measured side by side in that repeat)."""
    return [a / b for a, b in zip(samples[top], samples[bottom], strict=True)]


def spread(values: list[float]) -> str:
    """min / median / max of ratios, as `1.23 / 1.45 / 1.90x`."""
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}x"


def usable(parse: Parser, body: bytes) -> bool:
    try:
        parse(body)
    except Exception:
        return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats per figure")
    parser.add_argument("--quick", action="store_true", help="short budget, for a smoke run")
    args = parser.parse_args()
    budget = 0.02 if args.quick else 0.1

    sdks, notes = sdk_parsers()
    lite, lite_notes = litellm_parsers()
    notes += lite_notes
    rows: list[tuple[str, int, Timings]] = []
    files = corpus()
    print(f"{len(files)} recorded bodies from {FIXTURES}", file=sys.stderr)
    for index, (name, body) in enumerate(files, 1):
        print(f"  [{index}/{len(files)}] {name}", file=sys.stderr)
        kind = family(name, body)
        candidates: dict[str, Parser] = {"floor": orjson.loads, "ours": normalize}
        sdk_parse = sdks.get(kind)
        if sdk_parse and usable(sdk_parse, body):
            candidates["sdk"] = sdk_parse
        lite_parse = lite.get(kind)
        if lite_parse and usable(lite_parse, body):
            candidates["litellm"] = lite_parse
        rows.append((name, len(body), interleaved(candidates, body, args.repeats, budget)))

    def us(samples: Timings, name: str) -> str:
        values = samples.get(name)
        return "-" if values is None else f"{statistics.median(values) * 1e6:9.2f}"

    def ratio(samples: Timings, top: str, bottom: str) -> str:
        if top not in samples or bottom not in samples:
            return "-"
        return f"{statistics.median(paired(samples, top, bottom)):7.2f}x"

    print(
        f"| {'file':<52} | {'bytes':>7} | {'floor µs':>9} | {'ours µs':>9} | {'sdk µs':>9} "
        f"| {'litellm µs':>10} | ours/floor min / med / max | sdk/ours | litellm/ours |"
    )
    print(
        f"|{'-' * 54}|{'-' * 9}|{'-' * 11}|{'-' * 11}|{'-' * 11}|{'-' * 12}|{'-' * 28}|"
        f"{'-' * 10}|{'-' * 14}|"
    )
    for name, size, samples in rows:
        print(
            f"| {name:<52} | {size:>7} | {us(samples, 'floor')} | {us(samples, 'ours')} "
            f"| {us(samples, 'sdk'):>9} | {us(samples, 'litellm'):>10} "
            f"| {spread(paired(samples, 'ours', 'floor')):>26} "
            f"| {ratio(samples, 'sdk', 'ours'):>8} | {ratio(samples, 'litellm', 'ours'):>12} |"
        )

    def medians(top: str, bottom: str) -> list[float]:
        return [
            statistics.median(paired(samples, top, bottom))
            for _, _, samples in rows
            if top in samples and bottom in samples
        ]

    def verdict(met: bool) -> str:
        return "met" if met else "NOT met"

    vs_floor = medians("ours", "floor")
    vs_sdk = medians("sdk", "ours")
    vs_lite = medians("litellm", "ours")
    total_floor = sum(statistics.median(samples["floor"]) for _, _, samples in rows)
    total_ours = sum(statistics.median(samples["ours"]) for _, _, samples in rows)
    print()
    print(
        f"ours/floor over {len(rows)} bodies, min / median / max of the per-body medians: "
        f"{spread(vs_floor)}; whole corpus once: {total_ours / total_floor:.2f}x"
    )
    print(
        f"target median ours/floor <= {FLOOR_TARGET}x: "
        f"{verdict(statistics.median(vs_floor) <= FLOOR_TARGET)}"
    )
    if vs_sdk:
        print(f"sdk/ours over {len(vs_sdk)} bodies: {spread(vs_sdk)}")
        print(f"target never slower than the sdk (every body > 1x): {verdict(min(vs_sdk) > 1)}")
    if vs_lite:
        print(f"litellm/ours over {len(vs_lite)} bodies: {spread(vs_lite)}")
        print(
            f"target median litellm/ours >= {LITELLM_TARGET}x: "
            f"{verdict(statistics.median(vs_lite) >= LITELLM_TARGET)}"
        )
    for note in notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
