"""A mock provider, and proxies in front of it, for the proxy tests.

`recorded` serves real recorded bodies and streams (tests/fixtures) byte for byte, so a
test can compare what the proxy forwards with the bytes a provider sent.
"""

from __future__ import annotations

import asyncio
import gzip
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from refusals.mock import MockApp, MockServer
from refusals.proxy import ProxyApp, ProxyServer, SQLiteStore, Upstream, VerdictLog
from refusals.serving import BackgroundServer, Receive, Scope, Send

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="package")
def shared_mock() -> Iterator[MockServer]:
    with MockServer(MockApp()) as server:
        yield server


@pytest.fixture
def mock(shared_mock: MockServer) -> MockServer:
    shared_mock.app.reset()
    return shared_mock


MakeProxy = Callable[..., ProxyServer]


@pytest.fixture
def make_proxy(tmp_path: Path) -> Iterator[MakeProxy]:
    """Starts proxies (stopped after the test); keyword arguments go to `ProxyApp`."""
    started: list[ProxyServer] = []

    def make(*upstreams: Upstream, store: object = None, **options: object) -> ProxyServer:
        options.setdefault("log", VerdictLog(tmp_path / "verdicts.jsonl"))
        app = ProxyApp(
            list(upstreams),
            store if store is not None else SQLiteStore(tmp_path / "blocked.sqlite3"),  # type: ignore[arg-type]
            **options,  # type: ignore[arg-type]
        )
        server = ProxyServer(app).start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


@pytest.fixture
def proxy(mock: MockServer, make_proxy: MakeProxy) -> ProxyServer:
    """A proxy whose only upstream is the mock."""
    return make_proxy(Upstream("mock", mock.base_url))


@dataclass
class Recorded:
    """An upstream that answers every POST with one recorded file, and counts calls."""

    body: bytes = b""
    media_type: str = "application/json"
    status: int = 200
    gzip: bool = False
    pause_after_first: float = 0.0
    """Seconds to wait after the first chunk of a stream (the rest follows)."""
    calls: list[bytes] = field(default_factory=list)

    def serve(self, path: Path, *, status: int = 200) -> None:
        data = path.read_bytes()
        if path.name.endswith(".chunks.txt"):
            data = b"".join(b"data: " + line + b"\n\n" for line in data.splitlines() if line)
        self.body = data
        self.status = status
        self.media_type = (
            "text/event-stream" if path.suffix in (".sse", ".txt") else "application/json"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.calls.append(body)
        data = gzip.compress(self.body) if self.gzip else self.body
        headers = [(b"content-type", self.media_type.encode()), (b"request-id", b"req_recorded")]
        if self.gzip:
            headers.append((b"content-encoding", b"gzip"))
        streamed = self.media_type == "text/event-stream"
        if not streamed:
            headers.append((b"content-length", str(len(data)).encode()))
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        if streamed and self.pause_after_first:
            cut = data.index(b"\n\n") + 2
            await send({"type": "http.response.body", "body": data[:cut], "more_body": True})
            await asyncio.sleep(self.pause_after_first)
            data = data[cut:]
        await send({"type": "http.response.body", "body": data, "more_body": False})


@pytest.fixture
def recorded() -> Iterator[tuple[Recorded, BackgroundServer]]:
    upstream = Recorded()
    with BackgroundServer(upstream, name="recorded-upstream") as server:
        yield upstream, server


@pytest.fixture(scope="package")
def redis_url() -> Iterator[str]:
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip(
            "redis-server is not installed (Debian's redis-server package; .ci/run installs it)"
        )
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait(10)
