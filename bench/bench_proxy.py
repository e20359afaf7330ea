"""Benchmark: what `refusals proxy` adds in front of a provider, in one run.

Three processes on 127.0.0.1: the mock provider (`refusals mock-server`), the proxy in
front of it (`refusals proxy`, verdict log on, SQLite store), and this client. Every
measurement takes the direct path and the proxied path in turn (A B A B ...), so both see
the same machine load.

  calls    whole-body calls of four wires (Anthropic Messages, OpenAI Chat and Responses,
           Gemini), in shuffled order, answers and refusals mixed, each prompt unique (a
           refused one is forwarded, not answered from the store): the median added per
           call (target: at most 1 ms);
  ttfb     streamed calls of the same wires: time to the first body byte, the median
           added (target: at most 0.2 ms);
  held     200 concurrent slow streams (the mock's `slow` scenario, about 2 s each)
           through the proxy, after 50: the proxy's resident memory at each level
           (target: flat, i.e. no more per stream than a socket's buffers) and every
           stream complete;
  log      after all of it, one log line per proxied model call: none lost, none doubled.

Run: python bench/bench_proxy.py [--calls N] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

WIRES: list[tuple[str, str, dict[str, Any]]] = [
    ("anthropic", "/v1/messages", {"max_tokens": 64}),
    ("openai", "/v1/chat/completions", {}),
    ("responses", "/v1/responses", {}),
    ("gemini", "/v1beta/models/{model}:generateContent", {}),
]
HEADERS = {
    "x-api-key": "bench",
    "authorization": "Bearer bench",
    "x-goog-api-key": "bench",
    "anthropic-version": "2023-06-01",
}


def _request(
    wire: str, path: str, extra: dict[str, Any], *, model: str, text: str, stream: bool
) -> tuple[str, dict[str, Any]]:
    if wire == "gemini":
        if stream:
            path = path.replace(":generateContent", ":streamGenerateContent") + "?alt=sse"
        body: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": text}]}]}
        return path.format(model=model), body
    if wire == "responses":
        body = {"model": model, "input": text}
    else:
        body = {"model": model, "messages": [{"role": "user", "content": text}], **extra}
    if stream:
        body["stream"] = True
    return path, body


def _start(args: list[str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "refusals", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http://"):
        proc.kill()
        raise SystemExit(f"could not start refusals {args[0]}")
    return proc, url


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _calls(
    client: httpx.Client, direct: str, proxy: str, n: int, *, stream: bool, tag: str
) -> list[float]:
    """Per pair, proxied minus direct (seconds): whole call, or time to the first byte."""
    rng = random.Random(tag)
    added: list[float] = []
    for index in range(n):
        wire, path, extra = WIRES[rng.randrange(len(WIRES))]
        model = "mock-refusal" if rng.random() < 0.3 else "mock-answer"
        times = []
        for base in (direct, proxy) if index % 2 == 0 else (proxy, direct):
            text = f"{tag} prompt {index} via {base}"  # unique: never blocked
            url_path, body = _request(wire, path, extra, model=model, text=text, stream=stream)
            started = time.perf_counter()
            if stream:
                with client.stream("POST", base + url_path, json=body, headers=HEADERS) as r:
                    chunks = r.iter_raw()
                    next(chunks)
                    elapsed = time.perf_counter() - started
                    for _ in chunks:
                        pass
            else:
                r = client.post(base + url_path, json=body, headers=HEADERS)
                elapsed = time.perf_counter() - started
            if r.status_code >= 500:
                raise SystemExit(f"{base}{url_path}: HTTP {r.status_code}")
            times.append((base, elapsed))
        by = dict(times)
        added.append(by[proxy] - by[direct])
    return added


async def _held(proxy: str, count: int) -> tuple[int, float]:
    """`count` slow streams at once; (complete streams, seconds)."""
    limits = httpx.Limits(max_connections=None)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def one(i: int) -> bool:
            body = {
                "model": "mock-answer",
                "stream": True,
                "messages": [{"role": "user", "content": f"held {count} {i}"}],
            }
            headers = {**HEADERS, "x-mock-scenario": "slow"}
            async with client.stream(
                "POST", proxy + "/v1/chat/completions", json=body, headers=headers
            ) as r:
                data = b"".join([chunk async for chunk in r.aiter_raw()])
            return r.status_code == 200 and data.rstrip().endswith(b"[DONE]")

        started = time.perf_counter()
        done = await asyncio.gather(*(one(i) for i in range(count)))
        return sum(done), time.perf_counter() - started


def _held_with_rss(proxy: str, pid: int, count: int) -> tuple[int, int, float]:
    peak = [0]

    async def watch(stop: asyncio.Event) -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _rss_kib(pid))
            await asyncio.sleep(0.05)

    async def run() -> tuple[int, float]:
        stop = asyncio.Event()
        watcher = asyncio.create_task(watch(stop))
        result = await _held(proxy, count)
        stop.set()
        await watcher
        return result

    complete, seconds = asyncio.run(run())
    return complete, peak[0], seconds


def _summary(values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    q = statistics.quantiles(ms, n=10)
    return f"median {statistics.median(ms):+.3f} ms  p10 {q[0]:+.3f}  p90 {q[-1]:+.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=600, help="pairs per measurement")
    parser.add_argument("--quick", action="store_true", help="200 pairs")
    options = parser.parse_args()
    n = 200 if options.quick else options.calls
    with tempfile.TemporaryDirectory() as state:
        mock, direct = _start(["mock-server", "--port", "0"])
        proxy_proc, proxy = _start(
            ["proxy", "--listen", "127.0.0.1:0", "--state-dir", state,
             "--upstream", f"mock={direct}"]
        )  # fmt: skip
        try:
            with httpx.Client(timeout=30) as client:
                _calls(client, direct, proxy, 40, stream=False, tag="warm")
                calls = _calls(client, direct, proxy, n, stream=False, tag="calls")
                ttfb = _calls(client, direct, proxy, n, stream=True, tag="ttfb")
            rss_idle = _rss_kib(proxy_proc.pid)
            low = _held_with_rss(proxy, proxy_proc.pid, 50)
            high = _held_with_rss(proxy, proxy_proc.pid, 200)
            time.sleep(0.3)
            log = Path(state) / "proxy-verdicts.jsonl"
            lines = [orjson.loads(x) for x in log.read_bytes().splitlines()]
        finally:
            proxy_proc.terminate()
            mock.terminate()
            proxy_proc.wait(10)
            mock.wait(10)
    expected = 40 + 2 * n + 50 + 200
    ids = [line["fingerprint"] for line in lines]
    print(f"refusals proxy benchmark: {n} pairs per measurement, Python {sys.version.split()[0]}")
    print(f"calls (whole body, 4 wires, 30% refused)   proxy adds {_summary(calls)}")
    print(f"ttfb  (streams, 4 wires)                   proxy adds {_summary(ttfb)}")
    per_stream = (high[1] - low[1]) / 150
    print(
        f"held  idle RSS {rss_idle / 1024:.1f} MiB; 50 streams: peak {low[1] / 1024:.1f} MiB, "
        f"{low[0]}/50 complete in {low[2]:.1f} s; 200 streams: peak {high[1] / 1024:.1f} MiB, "
        f"{high[0]}/200 complete in {high[2]:.1f} s; {per_stream:.1f} KiB per extra stream"
    )
    print(
        f"log   {len(lines)} lines for {expected} proxied model calls; "
        f"{len(ids) - len(set(ids))} doubled (by prompt fingerprint)"
    )
    ok_calls = statistics.median(calls) <= 0.001
    ok_ttfb = statistics.median(ttfb) <= 0.0002
    print(
        f"targets: calls <= 1 ms {'met' if ok_calls else 'MISSED'}; "
        f"ttfb <= 0.2 ms {'met' if ok_ttfb else 'MISSED'}; "
        f"log {'whole' if len(lines) == expected and len(set(ids)) == len(ids) else 'NOT WHOLE'}"
    )


if __name__ == "__main__":
    main()
