"""What the proxy keeps: the verdict log (read by `refusals scan`, rotated by size,
nothing lost or doubled under concurrent writers), the fingerprint store (SQLite shared
by several proxies, Redis for replicas), and metrics a Prometheus server scrapes."""

from __future__ import annotations

import concurrent.futures
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anthropic
import httpx
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from refusals.mock import MockServer
from refusals.proxy import (
    BLOCKED_HEADER,
    ProxyApp,
    ProxyServer,
    RedisStore,
    SQLiteStore,
    Upstream,
    VerdictLog,
)
from refusals.scan import summarize_file
from tests.proxy.conftest import MakeProxy

TIMEOUT = 10.0
USER: list[Any] = [{"role": "user", "content": "Tell me how to pick a lock."}]
KEY = "sk-ant-api03-SECRETSECRETSECRET"


def _ask(proxy: ProxyServer, model: str, text: str = "hi") -> anthropic.types.Message:
    client = anthropic.Anthropic(api_key=KEY, base_url=proxy.base_url, max_retries=2)
    return client.messages.create(
        model=model, max_tokens=32, messages=[{"role": "user", "content": text}]
    )


def test_the_log_is_what_scan_reads(mock: MockServer, proxy: ProxyServer, tmp_path: Path) -> None:
    for model in ("mock-refusal", "mock-refusal", "mock-answer", "mock-refusal-mid-stream"):
        _ask(proxy, model)
    assert proxy.app.log is not None and proxy.app.log.flush()
    lines = [orjson.loads(x) for x in (tmp_path / "verdicts.jsonl").read_bytes().splitlines()]
    assert [line["resend_blocked"] for line in lines] == [False, True, False, False]
    first, second = lines[0], lines[1]
    assert first["category"] == "cyber"
    assert first["notice"] == second["notice"] and first["notice"].startswith("The model declined")
    assert second["tokens_saved"] == first["input_tokens"] + first["output_tokens"] > 0
    assert second["input_tokens"] == 0  # nothing was spent on the blocked resend
    assert all(isinstance(line["latency_ms"], float) for line in lines)
    summary = summarize_file(str(tmp_path / "verdicts.jsonl"))
    assert summary.records == 4
    assert summary.refused == 3
    assert summary.bad_records == 0
    scanned = subprocess.run(
        [sys.executable, "-m", "refusals", "scan", "--json", str(tmp_path / "verdicts.jsonl")],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    rows = [orjson.loads(x) for x in scanned.stdout.splitlines()]
    assert [r["layout"] for r in rows] == ["proxy-log"] * 4
    assert [r["finish_reason"] for r in rows] == ["refusal", "refusal", "stop", "refusal"]
    assert rows[3]["stage"] == "output"


def test_keys_never_reach_the_log_or_the_store(
    mock: MockServer, proxy: ProxyServer, tmp_path: Path
) -> None:
    _ask(proxy, "mock-refusal")
    httpx.post(
        proxy.base_url + f"/v1beta/models/mock-refusal:generateContent?key={KEY}",
        json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        timeout=TIMEOUT,
    )
    assert proxy.app.log is not None and proxy.app.log.flush()
    for path in tmp_path.iterdir():
        assert KEY.encode() not in path.read_bytes(), path


def test_the_log_rotates_and_loses_nothing_under_concurrent_writers(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    logs = [VerdictLog(path, max_bytes=4096, backups=1000) for _ in range(3)]
    records = 900

    def write(index: int) -> None:
        logs[index % 3].write({"type": "proxy.verdict", "n": index, "pad": "x" * 100})

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        list(pool.map(write, range(records)))
    for log in logs:
        log.close()
    files = sorted(tmp_path.glob("log.jsonl*"))
    assert len(files) > 10
    seen = [orjson.loads(line)["n"] for f in files for line in f.read_bytes().splitlines()]
    assert sorted(seen) == list(range(records))
    assert all(f.stat().st_size <= 4096 for f in files)


def test_two_proxies_share_one_sqlite_store(
    mock: MockServer, make_proxy: MakeProxy, tmp_path: Path
) -> None:
    store_path = tmp_path / "shared.sqlite3"
    first = make_proxy(Upstream("mock", mock.base_url), store=SQLiteStore(store_path))
    second = make_proxy(Upstream("mock", mock.base_url), store=SQLiteStore(store_path))
    assert _ask(first, "mock-refusal").stop_reason == "refusal"
    client = anthropic.Anthropic(api_key=KEY, base_url=second.base_url)
    raw = client.messages.with_raw_response.create(
        model="mock-refusal", max_tokens=32, messages=[{"role": "user", "content": "hi"}]
    )
    assert raw.headers[BLOCKED_HEADER] == "true"
    assert mock.app.count() == 1


def test_a_store_in_another_process_blocks_too(mock: MockServer, tmp_path: Path) -> None:
    # Two `refusals proxy` processes on one state directory, as two workers would be.
    procs = [_start_cli(mock, tmp_path) for _ in range(2)]
    try:
        urls = [_first_line(p) for p in procs]
        _ask_url(urls[0])
        for _ in range(3):
            _ask_url(urls[1])
        assert mock.app.count() == 1
    finally:
        for p in procs:
            p.terminate()
            assert p.wait(10) == 0


def _start_cli(mock: MockServer, state: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "refusals", "proxy", "--listen", "127.0.0.1:0",
         "--state-dir", str(state), "--upstream", f"mock={mock.base_url}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline().strip()


def _ask_url(url: str) -> None:
    client = anthropic.Anthropic(api_key=KEY, base_url=url, max_retries=2, timeout=TIMEOUT)
    message = client.messages.create(
        model="mock-refusal", max_tokens=32, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.stop_reason == "refusal"


def test_metrics_are_scraped_in_prometheus_format(mock: MockServer, proxy: ProxyServer) -> None:
    for model in ("mock-refusal", "mock-refusal", "mock-refusal", "mock-answer"):
        _ask(proxy, model)
    reply = httpx.get(proxy.base_url + "/metrics", timeout=TIMEOUT)
    assert reply.headers["content-type"].startswith("text/plain")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(reply.text)
        for s in family.samples
    }

    def value(name: str, **labels: str) -> float:
        return samples[(name, tuple(sorted(labels.items())))]

    assert value(
        "refusals_proxy_requests_total",
        upstream="mock", provider="anthropic", model="mock-refusal", finish_reason="refusal",
    ) == 1  # fmt: skip
    assert value(
        "refusals_proxy_resends_blocked_total",
        upstream="mock", model="mock-refusal", kind="refusal", category="cyber",
    ) == 2  # fmt: skip
    assert value("refusals_proxy_tokens_saved_total", upstream="mock", model="mock-refusal") > 0
    stats = httpx.get(proxy.base_url + "/_refusals/stats", timeout=TIMEOUT).json()
    assert stats["requests"] == 2 and stats["refusals"] == 1 and stats["resends_blocked"] == 2


# --- Redis --------------------------------------------------------------------------


def test_replicas_share_a_redis_store(
    mock: MockServer, make_proxy: MakeProxy, redis_url: str
) -> None:
    RedisStore(redis_url).check()
    first = make_proxy(Upstream("mock", mock.base_url), store=RedisStore(redis_url), window=30)
    second = make_proxy(Upstream("mock", mock.base_url), store=RedisStore(redis_url), window=30)
    text = f"redis {time.time()}"
    assert _ask(first, "mock-refusal", text).stop_reason == "refusal"
    assert _ask(second, "mock-refusal", text).stop_reason == "refusal"
    assert _ask(first, "mock-refusal", text).stop_reason == "refusal"
    assert mock.app.count() == 1


def test_redis_entries_expire_with_the_window(
    mock: MockServer, make_proxy: MakeProxy, redis_url: str
) -> None:
    proxy = make_proxy(Upstream("mock", mock.base_url), store=RedisStore(redis_url), window=0.3)
    text = f"expiring {time.time()}"
    _ask(proxy, "mock-refusal", text)
    time.sleep(0.5)
    _ask(proxy, "mock-refusal", text)
    assert mock.app.count() == 2


def test_an_unreachable_redis_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "refusals", "proxy", "--store", "redis://127.0.0.1:9/0",
         "--listen", "127.0.0.1:0", "--state-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "refusals proxy: cannot reach redis://127.0.0.1:9/0 (ConnectionError)"
    ]


def test_proxyapp_needs_an_upstream(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one upstream"):
        ProxyApp([], SQLiteStore(tmp_path / "s.sqlite3"))
