"""Several proxy processes on one store: a prompt in flight in one is not sent by another.

`--workers N` runs N processes on one port; replicas share a Redis store. Each process
claims a prompt in the store before it sends it, so an identical request that lands on
another process waits for that answer (and is answered with the refusal) instead of
reaching the provider a second time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from refusals.mock import MockServer
from refusals.proxy import BLOCKED_HEADER, RedisStore, SQLiteStore, Upstream
from refusals.serving import BackgroundServer
from tests.proxy.conftest import FIXTURES, MakeProxy, Recorded

TIMEOUT = 20.0
REFUSED = FIXTURES / "anthropic" / "stream-refusal-cyber.sse"


def _claims(store: SQLiteStore | RedisStore, other: SQLiteStore | RedisStore) -> None:
    async def run() -> None:
        key = f"k{time.time()}"
        assert await store.claim(key, "a", 30)
        assert not await other.claim(key, "b", 30)  # held by a
        assert not await store.claim(key, "b", 30)
        await other.release(key, "b")  # not b's: a keeps it
        assert not await other.claim(key, "b", 30)
        await store.release(key, "a")
        assert await other.claim(key, "b", 30)
        # A claim whose owner died ends with its time.
        short = key + "-short"
        assert await store.claim(short, "a", 0.2)
        await asyncio.sleep(0.3)
        assert await other.claim(short, "b", 30)
        await store.close()
        await other.close()

    asyncio.run(run())


def test_sqlite_claims_hold_across_connections(tmp_path: Path) -> None:
    path = tmp_path / "blocked.sqlite3"
    _claims(SQLiteStore(path), SQLiteStore(path))


def test_redis_claims_hold_across_clients(redis_url: str) -> None:
    _claims(RedisStore(redis_url), RedisStore(redis_url))


@pytest.mark.parametrize("shared", ["sqlite", "redis"])
def test_a_prompt_in_flight_in_one_proxy_is_not_sent_by_another(
    shared: str, make_proxy: MakeProxy, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    upstream = Recorded()
    upstream.serve(REFUSED)
    upstream.pause_after_first = 0.5  # the refusal comes half a second after the start

    def store() -> SQLiteStore | RedisStore:
        if shared == "redis":
            return RedisStore(request.getfixturevalue("redis_url"))
        return SQLiteStore(tmp_path / "shared.sqlite3")

    with BackgroundServer(upstream, name="recorded-upstream") as server:
        # Two proxies, each its own in-process memory, one store: as two workers are.
        proxies = [make_proxy(Upstream("anthropic", server.base_url), store=store()) for _ in "ab"]
        body = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 64,
            "stream": True,
            "messages": [{"role": "user", "content": f"in flight {shared} {time.time()}"}],
        }

        def send(index: int) -> tuple[int, str | None]:
            reply = httpx.post(
                proxies[index % 2].base_url + "/v1/messages",
                json=body,
                headers={"x-api-key": "k"},
                timeout=TIMEOUT,
            )
            return reply.status_code, reply.headers.get(BLOCKED_HEADER)

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            results = list(pool.map(send, range(6)))
    assert len(upstream.calls) == 1, results
    assert [blocked for _, blocked in results].count("true") == 5
    assert {status for status, _ in results} == {200}


def _proxy_cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "refusals", "proxy", *args]


def test_workers_share_one_port_one_store_and_one_log(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with MockServer() as mock:
        proc = subprocess.Popen(
            _proxy_cli("--workers", "2", "--listen", "127.0.0.1:0", "--state-dir", str(state),
                       "--upstream", f"mock={mock.base_url}"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:") and not url.endswith(":0")
            # Each new connection goes to whichever worker accepts it first.
            pids: set[int] = set()
            deadline = time.monotonic() + TIMEOUT
            while len(pids) < 2 and time.monotonic() < deadline:
                health = httpx.get(url + "/_refusals/health", timeout=TIMEOUT).json()
                pids.add(health["pid"])
            assert len(pids) == 2, "one worker answered every connection"
            body = {"model": "mock-refusal", "messages": [{"role": "user", "content": "hi"}]}

            def send(_: int) -> str | None:
                reply = httpx.post(
                    url + "/v1/chat/completions",
                    json=body,
                    headers={"authorization": "Bearer k"},
                    timeout=TIMEOUT,
                )
                assert reply.json()["choices"][0]["message"]["refusal"]
                blocked: str | None = reply.headers.get(BLOCKED_HEADER)
                return blocked

            first = send(0)
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                resends = list(pool.map(send, range(12)))
        finally:
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "Traceback" not in err and "workers: 2 processes" in err
        assert first is None and resends == ["true"] * 12
        assert mock.app.count() == 1
    lines = (state / "proxy-verdicts.jsonl").read_text().splitlines()
    assert len(lines) == 13  # every worker's lines, written before it stopped
