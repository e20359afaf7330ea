"""Benchmark: incremental stream decoding against the floor of splitting and parsing lines.

For each stream, in one process and one run:
  floor  split the bytes into lines and `orjson.loads` every `data:` line (or every line
         of a JSON-lines stream): no framing rules, no interpretation;
  ours   `refusals.transport.streams.StreamDecoder` fed the same bytes in 4 KiB chunks, as
         they arrive from a socket, through to the final `LLMResponse`;
  sdk    the official SDK's own stream parsing of the same bytes (openai for OpenAI streams,
         anthropic for Anthropic ones): its `Stream` over an httpx2 response that yields the
         bytes in 4 KiB chunks, iterating every event object it builds (no network; the
         client is never asked to send anything).
Streams: the largest recorded one (an Anthropic pause_turn stream of 256 KB with
thinking, server tool blocks and many deltas), recorded OpenAI chat and Responses streams,
and long streams made by repeating the text deltas of recorded ones (Anthropic and OpenAI
chat, 20,000 deltas each).

Memory: peak traced allocation while decoding a synthetic stream of N and of 4N text
deltas, minus the size of the accumulated content: it must not grow with the number of
events.

floor, ours and sdk take turns within every repeat (A B A B …), and each ratio is paired
(computed within a repeat, then summarised as min / median / max). Needs the bench extra
(pip install -e '.[bench]') for the sdk column.

Run: python bench/bench_stream.py [--repeats N] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from refusals.transport.streams import StreamDecoder

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
CHUNK = 4096


def floor(data: bytes) -> int:
    count = 0
    for line in data.split(b"\n"):
        if line.startswith(b"data:"):
            payload = line[5:]
            if payload.strip() != b"[DONE]":
                orjson.loads(payload)
                count += 1
        elif line.startswith(b"{"):
            orjson.loads(line)
            count += 1
    return count


def ours(data: bytes) -> int:
    decoder = StreamDecoder()
    for start in range(0, len(data), CHUNK):
        decoder.feed(data[start : start + CHUNK])
    decoder.close()
    response = decoder.response
    return len(response.content or "")


def anthropic_long(deltas: int) -> bytes:
    head = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
        b'"type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5",'
        b'"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":1}}}'
        b"\n\n"
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"text","text":""}}\n\n'
    )
    delta = (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"The quick brown fox jumps over the dog. "}}\n\n'
    )
    tail = (
        b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"refusal",'
        b'"stop_sequence":null,"stop_details":{"type":"refusal","category":"cyber",'
        b'"explanation":"Blocked."}},"usage":{"output_tokens":900}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    return head + delta * deltas + tail


def openai_long(deltas: int) -> bytes:
    def chunk(delta: bytes, finish: bytes = b"null") -> bytes:
        return (
            b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,'
            b'"model":"gpt-4o","choices":[{"index":0,"delta":' + delta + b',"logprobs":null,'
            b'"finish_reason":' + finish + b"}]}\n\n"
        )

    body = chunk(b'{"role":"assistant","content":""}')
    body += chunk(b'{"content":"The quick brown fox jumps over the dog. "}') * deltas
    body += chunk(b"{}", b'"stop"') + b"data: [DONE]\n\n"
    return body


Runner = Callable[[bytes], int]
TARGET = 1.5  # issue 14: stream decoding at most 1.5x its floor, at the median
SDK_TARGET = 30.0  # issue 14: at least 30x faster than the openai SDK's stream parsing


def sdk_runners() -> tuple[dict[str, Runner], list[str]]:
    """Each SDK's stream parsing by wire format ("openai", "anthropic"), and notes on any
    SDK that is not installed."""
    runners: dict[str, Runner] = {}
    notes: list[str] = []
    try:
        import httpx2
    except ImportError:
        return runners, ["httpx2 not installed: no sdk figures"]

    class Chunks(httpx2.SyncByteStream):
        def __init__(self, data: bytes) -> None:
            self.data = data

        def __iter__(self) -> Any:
            for start in range(0, len(self.data), CHUNK):
                yield self.data[start : start + CHUNK]

    # Never sent a request: the address only has to be well formed.
    url = "http://127.0.0.1:9/v1"
    request = httpx2.Request("POST", url)

    def runner(stream: Any, client: Any, cast_to: Any) -> Runner:
        def run(data: bytes) -> int:
            response = httpx2.Response(200, stream=Chunks(data), request=request)
            return sum(1 for _ in stream(cast_to=cast_to, response=response, client=client))

        return run

    try:
        from openai import OpenAI
        from openai._streaming import Stream as OpenAIStream
        from openai.types.chat import ChatCompletionChunk
        from openai.types.responses import ResponseStreamEvent
    except ImportError:
        notes.append("openai SDK not installed: no sdk figure for OpenAI streams")
    else:
        client = OpenAI(api_key="bench", base_url=url)
        runners["openai chat"] = runner(OpenAIStream, client, ChatCompletionChunk)
        runners["openai responses"] = runner(OpenAIStream, client, ResponseStreamEvent)
    try:
        from anthropic import Anthropic
        from anthropic._streaming import Stream as AnthropicStream
        from anthropic.types import RawMessageStreamEvent
    except ImportError:
        notes.append("anthropic SDK not installed: no sdk figure for Anthropic streams")
    else:
        messages = Anthropic(api_key="bench", base_url=url)
        runners["anthropic"] = runner(AnthropicStream, messages, RawMessageStreamEvent)
    return runners, notes


def interleaved(
    runners: dict[str, Runner], data: bytes, repeats: int, budget: float
) -> dict[str, list[float]]:
    """Seconds per run of each candidate in each repeat, taking turns (A B A B …)."""
    numbers: dict[str, int] = {}
    for name, run in runners.items():
        run(data)
        start = time.perf_counter()
        calls = 0
        while time.perf_counter() - start < budget / 10 or calls == 0:
            run(data)
            calls += 1
        # As many runs as fill the budget: one for a candidate slower than that.
        each = (time.perf_counter() - start) / calls
        numbers[name] = max(1, round(budget / each))
    samples: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(repeats):
        for name, run in runners.items():
            number = numbers[name]
            start = time.perf_counter()
            for _ in range(number):
                run(data)
            samples[name].append((time.perf_counter() - start) / number)
    return samples


def held_over_content(data: bytes) -> tuple[int, int]:
    """Memory the decoder holds after the last chunk, and the content's size in bytes."""
    decoder = StreamDecoder()
    tracemalloc.start()
    for start in range(0, len(data), CHUNK):
        decoder.feed(data[start : start + CHUNK])
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    decoder.close()
    content = len((decoder.response.content or "").encode())
    return held, content


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    budget = 0.05 if args.quick else 0.3

    # (label, SDK that parses it, bytes)
    streams = [
        (
            "anthropic/pause-turn-web-search-stream.sse (recorded)",
            "anthropic",
            (FIXTURES / "anthropic" / "pause-turn-web-search-stream.sse").read_bytes(),
        ),
        (
            "openai-responses/moderation-stream.sse (recorded)",
            "openai responses",
            (FIXTURES / "openai-responses" / "moderation-stream.sse").read_bytes(),
        ),
        (
            "openai-chat/stream-stop.sse (recorded)",
            "openai chat",
            (FIXTURES / "openai-chat" / "stream-stop.sse").read_bytes(),
        ),
        ("anthropic refusal, 20,000 text deltas", "anthropic", anthropic_long(20_000)),
        ("openai chat, 20,000 content deltas", "openai chat", openai_long(20_000)),
    ]
    sdks, notes = sdk_runners()
    for note in notes:
        print(f"note: {note}")
    print(
        "| stream | bytes | events | floor ms | ours ms | sdk ms "
        "| ours/floor min / median / max | sdk/ours min / median / max |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    ratios = []
    vs_sdk: dict[str, list[float]] = {}
    for name, kind, data in streams:
        events = floor(data)
        candidates: dict[str, Runner] = {"floor": floor, "ours": ours}
        if kind in sdks:
            candidates["sdk"] = sdks[kind]
        samples = interleaved(candidates, data, args.repeats, budget)
        paired = [a / b for a, b in zip(samples["ours"], samples["floor"], strict=True)]
        ratio = statistics.median(paired)
        ratios.append(ratio)
        base = statistics.median(samples["floor"])
        mine = statistics.median(samples["ours"])
        sdk_ms = sdk_ratio = "-"
        if "sdk" in samples:
            faster = [a / b for a, b in zip(samples["sdk"], samples["ours"], strict=True)]
            vs_sdk.setdefault(kind.split()[0], []).append(statistics.median(faster))
            sdk_ms = f"{statistics.median(samples['sdk']) * 1e3:.2f}"
            sdk_ratio = f"{min(faster):.1f} / {statistics.median(faster):.1f} / {max(faster):.1f}x"
        print(
            f"| {name} | {len(data):,} | {events:,} | {base * 1e3:.2f} | {mine * 1e3:.2f} "
            f"| {sdk_ms} | {min(paired):.2f} / {ratio:.2f} / {max(paired):.2f}x | {sdk_ratio} |"
        )
    median = statistics.median(ratios)
    verdict = "met" if median <= TARGET else "NOT met"
    print(
        f"\nours/floor over {len(ratios)} streams: min {min(ratios):.2f}x, median "
        f"{median:.2f}x, max {max(ratios):.2f}x; target median <= {TARGET}x: {verdict}"
    )
    for sdk, faster in vs_sdk.items():
        line = (
            f"{sdk} sdk/ours over {len(faster)} streams: min {min(faster):.1f}x, median "
            f"{statistics.median(faster):.1f}x, max {max(faster):.1f}x"
        )
        if sdk == "openai":
            met = "met" if statistics.median(faster) >= SDK_TARGET else "NOT met"
            line += f"; target median >= {SDK_TARGET:.0f}x: {met}"
        print(line)

    print("\n| memory: stream | deltas | held KiB | content KiB | held / content |")
    print("|---|---:|---:|---:|---:|")
    overheads = []
    for label, make in (("anthropic", anthropic_long), ("openai chat", openai_long)):
        for deltas in (5_000, 20_000, 80_000):
            held, content = held_over_content(make(deltas))
            overheads.append(held / content)
            print(
                f"| {label} | {deltas:,} | {held / 1024:,.1f} | {content / 1024:,.1f} "
                f"| {held / content:.3f} |"
            )
    print(
        f"\nheld / content from {min(overheads):.3f} to {max(overheads):.3f}: the decoder keeps"
        " the accumulated\ncontent (a UTF-8 buffer with its growth slack) and nothing per event."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
