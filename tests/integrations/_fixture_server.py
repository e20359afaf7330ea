"""A real HTTP server on 127.0.0.1 that answers with recorded provider payloads.

For what the mock provider does not serve: byte-exact recorded bodies, gzip coding, and
bodies that are no provider response. Each reply is chosen by the request's `model`.
"""

from __future__ import annotations

import gzip
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@dataclass(frozen=True)
class Reply:
    body: bytes
    content_type: str = "application/json"
    status: int = 200
    gzip: bool = False

    @classmethod
    def fixture(cls, name: str, status: int = 200, *, gzip: bool = False) -> Reply:
        path = FIXTURES / name
        kind = "text/event-stream" if path.suffix == ".sse" else "application/json"
        return cls(path.read_bytes(), kind, status, gzip)


class FixtureServer:
    """Serves `replies[model]` for any POST; counts requests by model."""

    def __init__(self, replies: dict[str, Reply]) -> None:
        self.replies = replies
        self.counts: Counter[str] = Counter()
        self.base_url = ""

    def count(self, model: str) -> int:
        return self.counts[model]


@contextmanager
def serve(replies: dict[str, Reply]) -> Iterator[FixtureServer]:
    state = FixtureServer(replies)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = orjson.loads(self.rfile.read(length) or b"{}")
            model = str(body.get("model", "")) if isinstance(body, dict) else ""
            state.counts[model] += 1
            reply = state.replies.get(model, Reply(b'{"error": "no such model"}', status=404))
            payload = gzip.compress(reply.body) if reply.gzip else reply.body
            self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            self.send_header("content-length", str(len(payload)))
            if reply.gzip:
                self.send_header("content-encoding", "gzip")
            self.end_headers()
            # Small writes, so that a client reads the body in several chunks.
            for start in range(0, len(payload), 97):
                self.wfile.write(payload[start : start + 97])
                self.wfile.flush()

        def do_GET(self) -> None:
            payload = b'{"data": [{"id": "model-a"}]}'
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
