"""A raw HTTP/1.1 server on 127.0.0.1 whose every answer byte is scripted.

`FaultProxy` forwards each request to an upstream (the mock server), so the bytes are a
real provider's wire format, then writes the upstream's answer back with a fault: the
body cut after `cut(body)` bytes, then the connection closed (FIN) or reset (RST). The
upstream's own request log says how often a prompt really reached the provider.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Literal

import httpx

Cut = Callable[[bytes], int]
"""How many bytes of a body to send, given the whole body."""

_HOP_BY_HOP = frozenset(
    {"connection", "content-length", "transfer-encoding", "content-encoding", "keep-alive"}
)


def short_by(n: int) -> Cut:
    """All but the last `n` bytes."""
    return lambda body: max(0, len(body) - n)


def after(marker: bytes, fallback: Cut | None = None) -> Cut:
    """Up to and including the first `marker` (or `fallback` when it is absent)."""

    def cut(body: bytes) -> int:
        at = body.find(marker)
        if at < 0:
            return (fallback or short_by(1))(body)
        return at + len(marker)

    return cut


def through_event(marker: bytes) -> Cut:
    """Up to the end of the SSE event holding `marker` (its blank line included)."""

    def cut(body: bytes) -> int:
        at = body.find(marker)
        assert at >= 0, f"{marker!r} is not in the body"
        end = body.find(b"\n\n", at)
        return len(body) if end < 0 else end + 2

    return cut


def half(body: bytes) -> int:
    return len(body) // 2


class FaultProxy:
    """Forwards to `upstream` and answers with the body cut by `cut`, then `ending`
    (or, with `stall`, the rest of the body after that many seconds)."""

    def __init__(
        self,
        upstream: str,
        cut: Cut,
        ending: Literal["fin", "rst"] = "fin",
        *,
        stall: float = 0.0,
        headers: dict[str, str] | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.cut = cut
        self.ending = ending
        self.timeout = timeout
        self.stall = stall
        self.headers = {k.lower(): v for k, v in (headers or {}).items()}
        """Headers added to (or replacing those of) every answer."""
        """Seconds to wait after the cut part before the rest is sent (0: never sent)."""
        self.requests = 0
        self.bodies: list[bytes] = []
        self.sent: list[bytes] = []
        """The body bytes written back, one entry per request."""
        self._lock = threading.Lock()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(self.timeout)
        try:
            request = _read_request(conn)
            if request is None:
                return
            method, target, headers, body = request
            with self._lock:
                self.requests += 1
                self.bodies.append(body)
            forwarded = {k: v for k, v in headers.items() if k not in _HOP_BY_HOP | {"host"}}
            forwarded["accept-encoding"] = "identity"
            with httpx.Client(timeout=self.timeout) as http:
                reply = http.request(
                    method, self.upstream + target, headers=forwarded, content=body
                )
            payload = reply.content
            head = [f"HTTP/1.1 {reply.status_code} {reply.reason_phrase}"]
            head += [
                f"{k}: {v}"
                for k, v in reply.headers.items()
                if k.lower() not in _HOP_BY_HOP and k.lower() not in self.headers
            ]
            head += [f"{k}: {v}" for k, v in self.headers.items()]
            head += [f"content-length: {len(payload)}", "connection: close", "", ""]
            conn.sendall("\r\n".join(head).encode("latin-1"))
            kept = payload[: self.cut(payload)]
            with self._lock:
                self.sent.append(kept)
            conn.sendall(kept)
            if self.stall:
                # A provider slow to send what follows the cut: the rest comes late.
                self._stop.wait(self.stall)
                conn.sendall(payload[len(kept) :])
            if self.ending == "rst":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        finally:
            conn.close()


def _read_request(conn: socket.socket) -> tuple[str, str, dict[str, str], bytes] | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return method, target, headers, body


class PingServer:
    """Answers every request with a 200 whose body never ends: an SSE `: ping` comment
    every `interval` seconds (a keep-alive), for at most `limit` seconds."""

    def __init__(self, interval: float = 0.1, limit: float = 30.0) -> None:
        self.interval = interval
        self.limit = limit
        self.requests = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def __enter__(self) -> PingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        try:
            if _read_request(conn) is None:
                return
            self.requests += 1
            conn.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n"
            )
            ping = b": ping\n\n"
            deadline = time.monotonic() + self.limit
            while time.monotonic() < deadline and not self._stop.wait(self.interval):
                conn.sendall(b"%x\r\n%s\r\n" % (len(ping), ping))
        except OSError:
            pass
        finally:
            conn.close()
