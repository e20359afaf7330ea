"""Benchmark: `refusals.normalize` over the fixture corpus, against baselines run alongside.

For every recorded non-stream body in tests/fixtures, in one process and one run:
  floor   orjson.loads of the same bytes (no interpretation at all);
  ours    refusals.normalize(bytes) (decode, detect the format, build LLMResponse);
  sdk     the provider's official SDK parsing the same bytes (pydantic model_validate_json),
          where an SDK model exists for that body;
  litellm LiteLLM's own conversion of the decoded body into its ModelResponse, where
          LiteLLM exposes one for that wire format.
Each figure is the median over several repeats of the mean time per call. Ratios are
against the floor or against ours, measured in the same run, so they hold on any machine.

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


def per_call(parse: Parser, body: bytes, repeats: int, budget: float) -> float:
    """Median over `repeats` of the mean seconds per call, each repeat about `budget` s."""
    parse(body)
    start = time.perf_counter()
    calls = 0
    while time.perf_counter() - start < budget / 10:
        parse(body)
        calls += 1
    number = max(1, calls * 10)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            parse(body)
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


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
    rows = []
    files = corpus()
    print(f"{len(files)} recorded bodies from {FIXTURES}", file=sys.stderr)
    for index, (name, body) in enumerate(files, 1):
        print(f"  [{index}/{len(files)}] {name}", file=sys.stderr)
        kind = family(name, body)
        floor = per_call(orjson.loads, body, args.repeats, budget)
        ours = per_call(normalize, body, args.repeats, budget)
        sdk_parse = sdks.get(kind)
        sdk = (
            per_call(sdk_parse, body, args.repeats, budget)
            if sdk_parse and usable(sdk_parse, body)
            else None
        )
        lite_parse = lite.get(kind)
        litellm = (
            per_call(lite_parse, body, args.repeats, budget)
            if lite_parse and usable(lite_parse, body)
            else None
        )
        rows.append((name, len(body), floor, ours, sdk, litellm))

    def us(seconds: float | None) -> str:
        return "-" if seconds is None else f"{seconds * 1e6:9.2f}"

    def ratio(value: float | None) -> str:
        return "-" if value is None else f"{value:7.2f}x"

    print(
        f"| {'file':<52} | {'bytes':>7} | {'floor µs':>9} | {'ours µs':>9} | {'sdk µs':>9} "
        f"| {'litellm µs':>10} | ours/floor | sdk/ours | litellm/ours |"
    )
    print(
        f"|{'-' * 54}|{'-' * 9}|{'-' * 11}|{'-' * 11}|{'-' * 11}|{'-' * 12}|{'-' * 12}|"
        f"{'-' * 10}|{'-' * 14}|"
    )
    for name, size, floor, ours, sdk, litellm in rows:
        print(
            f"| {name:<52} | {size:>7} | {us(floor)} | {us(ours)} | {us(sdk)} | {us(litellm):>10} "
            f"| {ratio(ours / floor):>10} | {ratio(sdk / ours if sdk else None):>8} "
            f"| {ratio(litellm / ours if litellm else None):>12} |"
        )
    vs_floor = [ours / floor for _, _, floor, ours, _, _ in rows]
    vs_sdk = [sdk / ours for _, _, _, ours, sdk, _ in rows if sdk]
    vs_lite = [lite_t / ours for _, _, _, ours, _, lite_t in rows if lite_t]
    total_floor = sum(row[2] for row in rows)
    total_ours = sum(row[3] for row in rows)
    print()
    print(
        f"median ours/floor over {len(rows)} bodies: {statistics.median(vs_floor):.2f}x "
        f"(target <= 2x); whole corpus once: {total_ours / total_floor:.2f}x"
    )
    if vs_sdk:
        print(
            f"median sdk/ours over {len(vs_sdk)} bodies: {statistics.median(vs_sdk):.2f}x "
            f"(target > 1x: ours faster); slowest case {min(vs_sdk):.2f}x"
        )
    if vs_lite:
        print(
            f"median litellm/ours over {len(vs_lite)} bodies: {statistics.median(vs_lite):.2f}x "
            f"(target >= 10x); slowest case {min(vs_lite):.2f}x"
        )
    for note in notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
